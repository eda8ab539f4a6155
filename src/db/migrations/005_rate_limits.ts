import type { Kysely } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// A merchant's own request limit per minute, set by the operator (`mds merchants set-limit`);
// null: the configured default (MERCHANT_RATE_LIMIT_PER_MINUTE).
export function rateLimits() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('merchants').addColumn('rate_limit_per_minute', 'integer').execute();
    },
    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('merchants').dropColumn('rate_limit_per_minute').execute();
    },
  };
}
