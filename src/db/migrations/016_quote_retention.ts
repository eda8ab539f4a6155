import { type Kysely, sql } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// The scheduler purges unused quotes past retention (QUOTE_RETENTION_DAYS) on every pass, by default
// every 5 s: `status = 'pending' and expires_at <= ...`. No index served it, so every pass read the whole
// `quotes` table, consumed quotes included, which stay with their transfers for good: 113 ms at 2 * 10^5
// quotes on SQLite, where it held the event loop, and 84 ms on PostgreSQL (docs/benchmarks.md,
// "Twenty-eighth pass"). With this partial index a pass reads only the pending quotes that are due.
// It holds pending quotes only: a consumed quote's entry goes at once on SQLite, at the next vacuum on
// PostgreSQL. A cost on PostgreSQL: the consume changes `status`, which the index's condition reads, so
// it is never a HOT update (every index of `quotes` gets the new row version). Partial or not, an index
// that finds pending quotes must read `status`; one on `expires_at` alone would walk every consumed
// quote's entry on every pass. Building it locks `quotes` against writes on PostgreSQL: on a large
// table, build it beforehand with
//   create index concurrently if not exists quotes_pending_expiry_idx on quotes (expires_at) where status = 'pending';
// and this migration then finds it (docs/deployment.md).
export function quoteRetention() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await sql`create index if not exists quotes_pending_expiry_idx on quotes (expires_at) where status = 'pending'`.execute(db);
    },
  };
}
