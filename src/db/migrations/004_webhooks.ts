import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// Webhooks: merchants' endpoints, one delivery row per (message, endpoint) written in the business
// transaction with its event (the outbox fan-out), and one attempt row per HTTP try.
export function webhooks(dialect: Dialect) {
  const int64 = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('event_types', 'text') // JSON array; null: every type
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('ENABLED', 'DISABLED')`))
        .addColumn('disabled_reason', 'text')
        // Stored in clear: signing needs it. Never logged, returned only at creation and rotation.
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('previous_secret', 'text')
        .addColumn('previous_secret_expires_at', int64)
        // Start of the current run of failed attempts (null after a success): 5 days of it disables the endpoint.
        .addColumn('failing_since', int64)
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_endpoints_merchant_idx').on('webhook_endpoints').columns(['merchant_id', 'created_at']).execute();

      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        // The webhook-id: the event id (the same on every retry and replay), or a message id of its own (webhook.test).
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        // The event's position when the message is an event; the body is built from the events row.
        .addColumn('event_position', int64)
        // The whole body for messages that are not events (webhook.test, webhook.endpoint_disabled).
        .addColumn('payload', 'text')
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'succeeded', 'failed')`))
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', int64, (c) => c.notNull())
        // The lease: a worker owns the row until locked_until; a crashed worker's rows come back after it.
        .addColumn('locked_until', int64)
        .addColumn('lease', 'text')
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .execute();
      // The worker's scan: due pending rows, oldest due first.
      await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
      await db.schema.createIndex('webhook_deliveries_endpoint_idx').on('webhook_deliveries').columns(['endpoint_id', 'created_at']).execute();

      await db.schema
        .createTable('webhook_attempts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('merchant_id', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('succeeded', 'failed')`))
        .addColumn('response_status', 'integer')
        .addColumn('response_body', 'text') // at most 1 KiB
        .addColumn('error', 'text')
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', int64)
        .addColumn('created_at', int64, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_attempts_endpoint_idx').on('webhook_attempts').columns(['endpoint_id', 'created_at']).execute();
      await db.schema.createIndex('webhook_attempts_delivery_idx').on('webhook_attempts').column('delivery_id').execute();
    },
  };
}
