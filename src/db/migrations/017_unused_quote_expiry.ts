import { type Kysely, sql } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// 016's index of pending quotes (`where status = 'pending'`) served the retention purge, but any statement
// that stated `status = 'pending'` could take it too, and PostgreSQL's planner did so for a payment's quote
// when its statistics said almost no quote was pending: every pending quote read to find one by its id
// (docs/benchmarks.md, "Twenty-ninth" and "Thirtieth pass"). Its replacement holds the same quotes, those never
// used (a consume sets consumed_at with the status, in the same statement), under a condition that only
// the purge states, so a lookup written the natural way (`status = 'pending'`) never matches it.
// On a large PostgreSQL `quotes` table build it beforehand (docs/deployment.md):
//   create index concurrently if not exists quotes_unused_expiry_idx on quotes (expires_at) where consumed_at is null;
export function unusedQuoteExpiry() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createIndex('quotes_unused_expiry_idx')
        .ifNotExists()
        .on('quotes')
        .column('expires_at')
        .where(sql.ref('consumed_at'), 'is', null)
        .execute();
      await db.schema.dropIndex('quotes_pending_expiry_idx').ifExists().execute();
    },
  };
}
