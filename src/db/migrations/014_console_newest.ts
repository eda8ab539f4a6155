import type { Kysely } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// The operator console's transfers page lists every merchant's newest first (ORDER BY created_at DESC,
// id DESC, filtered by nothing or by dates). No index began with created_at, so each page view read and
// sorted the whole table: 4.3 ms of CPU per page at 10^3 transfers and growing with the table
// (bench/dashboard.ts). With this index the page walks it backwards and stops after 51 rows.
// Building it locks `transfers` against writes on PostgreSQL (migrations run in a transaction, where
// CONCURRENTLY is not allowed): on a large table, build it beforehand with
//   create index concurrently if not exists transfers_created_idx on transfers (created_at, id);
// and this migration then finds it (docs/deployment.md).
export function consoleNewest() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.createIndex('transfers_created_idx').ifNotExists().on('transfers').columns(['created_at', 'id']).execute();
    },
  };
}
