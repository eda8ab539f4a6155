import type { Kysely } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// A merchant's transfers, newest first (GET /transfer, the dashboard's list, with or without a state), are
// ordered by (created_at DESC, id DESC). The indexes ended at created_at, so the id tie-break was a sort:
// SQLite built a temporary B-tree for it, and PostgreSQL an incremental sort or, before the table's first
// ANALYZE, a scan of the console's (created_at, id) index filtered by merchant. Ending them with id makes
// the index order the answer's order: the page walks it backwards and stops after limit + 1 rows
// (docs/benchmarks.md, "Sixth pass"). Each replaces the index it extends, so a write updates as many.
// On a large PostgreSQL table build them beforehand, as for 014 (docs/deployment.md):
//   create index concurrently if not exists transfers_merchant_newest_idx on transfers (merchant_id, created_at, id);
//   create index concurrently if not exists transfers_merchant_state_newest_idx on transfers (merchant_id, state, created_at, id);
export function merchantNewest() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.createIndex('transfers_merchant_newest_idx').ifNotExists().on('transfers').columns(['merchant_id', 'created_at', 'id']).execute();
      await db.schema.dropIndex('transfers_merchant_created_idx').ifExists().execute();
      await db.schema
        .createIndex('transfers_merchant_state_newest_idx')
        .ifNotExists()
        .on('transfers')
        .columns(['merchant_id', 'state', 'created_at', 'id'])
        .execute();
      await db.schema.dropIndex('transfers_merchant_state_created_idx').ifExists().execute();
    },
  };
}
