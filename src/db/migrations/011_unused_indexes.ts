import type { Kysely } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// Two indexes no query uses, which every POST /options and POST /transfer still had to update: every
// lookup of a quote or a transfer by merchant and id goes through the primary key on id (the merchant
// is a filter on that one row), and the merchant's lists use (merchant_id, created_at) and the others.
// The plans, before and after, for every query that could have used them: docs/benchmarks.md.
export function unusedIndexes() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('transfers_merchant_idx').ifExists().execute();
      await db.schema.dropIndex('quotes_merchant_idx').ifExists().execute();
    },
  };
}
