import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// People who log in with a browser (merchant users, operators, couriers), their server-side sessions,
// one-time links (invite, reset) and second-factor recovery codes. Every secret a person or a browser
// holds (session id, link token, recovery code) is stored as a SHA-256 hash; passwords as argon2id PHC strings.
export function accounts(dialect: Dialect) {
  const int64 = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('people')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('merchant', 'operator', 'courier')`))
        // merchant users: their merchant; couriers: their courier account; operators: neither.
        .addColumn('merchant_id', 'text', (c) => c.references('merchants.id'))
        .addColumn('courier_id', 'text', (c) => c.references('couriers.id'))
        .addColumn('role', 'text')
        .addColumn('email', 'text') // lower-cased; unique per kind
        .addColumn('phone', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text') // null until the person sets one through an invite link
        // The TOTP key must be readable to check codes (it cannot be hashed); never logged or shown again after enrolment.
        .addColumn('totp_secret', 'text')
        .addColumn('totp_enabled_at', int64)
        .addColumn('totp_last_step', int64) // the last accepted code's time step: a code works once
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .addCheckConstraint('people_merchant_check', sql`(kind = 'merchant') = (merchant_id is not null)`)
        .execute();
      await db.schema.createIndex('people_email_idx').on('people').columns(['kind', 'email']).unique().execute();
      await db.schema.createIndex('people_merchant_idx').on('people').columns(['merchant_id', 'created_at']).execute();

      await db.schema
        .createTable('sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey()) // SHA-256 of the cookie's value
        .addColumn('person_id', 'text', (c) => c.notNull().references('people.id').onDelete('cascade'))
        // 'full', or 'second_factor': the password was right, the TOTP code is still to come.
        .addColumn('stage', 'text', (c) => c.notNull().check(sql`stage in ('full', 'second_factor')`))
        .addColumn('csrf_secret', 'text', (c) => c.notNull())
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('last_seen_at', int64, (c) => c.notNull())
        .addColumn('expires_at', int64, (c) => c.notNull()) // the absolute lifetime
        .addColumn('ip', 'text')
        .addColumn('user_agent', 'text')
        .execute();
      await db.schema.createIndex('sessions_person_idx').on('sessions').columns(['person_id', 'created_at']).execute();
      await db.schema.createIndex('sessions_expiry_idx').on('sessions').column('expires_at').execute();

      await db.schema
        .createTable('one_time_links')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('person_id', 'text', (c) => c.notNull().references('people.id').onDelete('cascade'))
        .addColumn('purpose', 'text', (c) => c.notNull().check(sql`purpose in ('invite', 'reset')`))
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('expires_at', int64, (c) => c.notNull())
        .addColumn('used_at', int64)
        .execute();
      await db.schema.createIndex('one_time_links_person_idx').on('one_time_links').column('person_id').execute();

      await db.schema
        .createTable('recovery_codes')
        .addColumn('code_hash', 'text', (c) => c.primaryKey())
        .addColumn('person_id', 'text', (c) => c.notNull().references('people.id').onDelete('cascade'))
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('used_at', int64)
        .execute();
      await db.schema.createIndex('recovery_codes_person_idx').on('recovery_codes').column('person_id').execute();
    },
  };
}
