import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
export function initial(dialect: Dialect) {
  // Epoch milliseconds and money need 64 bits; SQLite's integer already is.
  const int64 = dialect === 'postgres' ? 'bigint' : 'integer';
  const float = dialect === 'postgres' ? 'double precision' : 'real';

  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('merchants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('balance', int64, (c) => c.notNull().defaultTo(0).check(sql`balance >= 0`))
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('credentials')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('client_id', 'text', (c) => c.notNull().unique())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('ACTIVE', 'REVOKED')`))
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('revoked_at', int64)
        .execute();
      await db.schema.createIndex('credentials_merchant_idx').on('credentials').column('merchant_id').execute();

      await db.schema
        .createTable('ledger_entries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('TOP_UP', 'CHARGE', 'REFUND')`))
        .addColumn('amount', int64, (c) => c.notNull().check(sql`amount <> 0`))
        .addColumn('balance_after', int64, (c) => c.notNull().check(sql`balance_after >= 0`))
        .addColumn('transfer_id', 'text')
        .addColumn('note', 'text')
        .addColumn('created_at', int64, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('ledger_merchant_idx').on('ledger_entries').columns(['merchant_id', 'id']).execute();

      await db.schema
        .createTable('warehouses')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_int', 'text')
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('ACTIVE', 'DISABLED')`))
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('contact_phone', 'text')
        .addColumn('contact_email', 'text')
        .addColumn('location_metadata', 'text', (c) => c.notNull())
        .addColumn('lat', float, (c) => c.notNull())
        .addColumn('lng', float, (c) => c.notNull())
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('warehouses_merchant_idx').on('warehouses').columns(['merchant_id', 'id']).execute();

      await db.schema
        .createTable('tariffs')
        .addColumn('version', int64, (c) => c.primaryKey())
        .addColumn('document', 'text', (c) => c.notNull())
        .addColumn('created_at', int64, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('quotes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('warehouse_id', 'text', (c) => c.notNull().references('warehouses.id'))
        .addColumn('transfer_id', 'text', (c) => c.notNull().unique())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'consumed')`))
        .addColumn('tariff_version', int64, (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('request', 'text', (c) => c.notNull())
        .addColumn('pickup', 'text', (c) => c.notNull())
        .addColumn('products', 'text', (c) => c.notNull())
        .addColumn('expires_at', int64, (c) => c.notNull())
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('consumed_at', int64)
        .execute();
      await db.schema.createIndex('quotes_merchant_idx').on('quotes').columns(['merchant_id', 'id']).execute();

      await db.schema
        .createTable('transfers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        // One transfer per quote, enforced by the database whatever the application does.
        .addColumn('quote_id', 'text', (c) => c.notNull().unique().references('quotes.id'))
        .addColumn('warehouse_id', 'text', (c) => c.notNull().references('warehouses.id'))
        .addColumn('product_key', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('transfer_code', 'text', (c) => c.notNull().unique())
        .addColumn('tracking_code', 'text', (c) => c.notNull().unique())
        .addColumn('total_amount', int64, (c) => c.notNull().check(sql`total_amount >= 0`))
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('payment_ttl_minutes', int64, (c) => c.notNull())
        .addColumn('payment_expires_at', int64, (c) => c.notNull())
        .addColumn('details', 'text', (c) => c.notNull())
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('transfers_merchant_idx').on('transfers').columns(['merchant_id', 'id']).execute();

      await db.schema
        .createTable('idempotency_keys')
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('idempotency_key', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('IN_PROGRESS', 'DONE')`))
        .addColumn('response_status', int64)
        .addColumn('response_headers', 'text')
        .addColumn('response_body', 'text')
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_keys_pk', ['merchant_id', 'idempotency_key'])
        .execute();
      await db.schema.createIndex('idempotency_created_idx').on('idempotency_keys').column('created_at').execute();
    },
  };
}
