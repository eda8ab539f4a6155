import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// A new ledger entry kind, ADJUSTMENT: finance's signed correction of a balance (e.g. taking back a
// mistaken top-up). The kind CHECK from 001 must allow it. PostgreSQL swaps the named constraint;
// SQLite cannot alter a CHECK, so the table is rebuilt with the same columns, rows and indexes.
const KINDS = `'TOP_UP', 'CHARGE', 'REFUND', 'ADJUSTMENT'`;
const COLUMNS = 'id, merchant_id, kind, amount, balance_after, transfer_id, note, created_at, created_by';

export function ledgerAdjustments(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect === 'postgres') {
        await sql`alter table ledger_entries drop constraint ledger_entries_kind_check`.execute(db);
        await sql`alter table ledger_entries add constraint ledger_entries_kind_check check (kind in (${sql.raw(KINDS)}))`.execute(db);
        return;
      }
      await db.schema
        .createTable('ledger_entries_new')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in (${sql.raw(KINDS)})`))
        .addColumn('amount', 'integer', (c) => c.notNull().check(sql`amount <> 0`))
        .addColumn('balance_after', 'integer', (c) => c.notNull().check(sql`balance_after >= 0`))
        .addColumn('transfer_id', 'text')
        .addColumn('note', 'text')
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('created_by', 'text')
        .execute();
      await sql`insert into ledger_entries_new (${sql.raw(COLUMNS)}) select ${sql.raw(COLUMNS)} from ledger_entries`.execute(db);
      await db.schema.dropTable('ledger_entries').execute();
      await db.schema.alterTable('ledger_entries_new').renameTo('ledger_entries').execute();
      // The indexes of 001 and 007, dropped with the old table.
      await db.schema.createIndex('ledger_merchant_idx').on('ledger_entries').columns(['merchant_id', 'id']).execute();
      await db.schema.createIndex('ledger_transfer_idx').on('ledger_entries').column('transfer_id').execute();
      await db.schema.createIndex('ledger_merchant_created_idx').on('ledger_entries').columns(['merchant_id', 'created_at']).execute();
    },
  };
}
