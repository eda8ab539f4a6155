import { randomInt } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { newId } from '../../lib/ids.ts';
import { minorToNumber } from '../../lib/money.ts';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// The transfer lifecycle: merchant mode (live or sandbox), transfer states after inProgress, refunds,
// and the events table (the timeline, and the outbox webhooks are delivered from).
export function lifecycle(dialect: Dialect) {
  const int64 = dialect === 'postgres' ? 'bigint' : 'integer';
  const STATES = `'inProgress', 'courierAssigned', 'pickedUp', 'delivered', 'returning', 'returned', 'cancelled'`;

  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('merchants')
        .addColumn('mode', 'text', (c) => c.notNull().defaultTo('live').check(sql`mode in ('live', 'sandbox')`))
        .execute();

      // SQLite adds one column per ALTER TABLE.
      const add = (name: string, type: string, build: (c: any) => any = (c) => c) =>
        db.schema
          .alterTable('transfers')
          .addColumn(name, type as any, build)
          .execute();
      await add('mode', 'text', (c) => c.notNull().defaultTo('live').check(sql`mode in ('live', 'sandbox')`));
      await add('delivery_pin', 'text', (c) => c.notNull().defaultTo(''));
      await add('courier_id', 'text');
      await add('courier_name', 'text');
      await add('cancellation_fee', int64, (c) => c.notNull().defaultTo(0).check(sql`cancellation_fee >= 0`));
      await add('return_fee', int64, (c) => c.notNull().defaultTo(0).check(sql`return_fee >= 0`));
      await add('refunded_amount', int64, (c) => c.notNull().defaultTo(0).check(sql`refunded_amount >= 0`));
      await add('cancellation', 'text'); // JSON: reason, comment, actor, refund
      await add('delivery_failure', 'text'); // JSON: reason, comment
      // Last event sequence of the transfer: quote.created is 1, transfer.created 2. Incremented by the
      // same conditional UPDATE that changes the state, so sequences are gapless under any concurrency.
      await add('last_sequence', int64, (c) => c.notNull().defaultTo(2));
      // When the sandbox's simulated courier takes its next automatic step (null: none planned).
      await add('next_step_at', int64);
      if (dialect === 'postgres') {
        await sql`alter table transfers add constraint transfers_state_check check (state in (${sql.raw(STATES)}))`.execute(db);
      }
      // Listing (newest first, by merchant), the scheduler's scans.
      await db.schema.createIndex('transfers_merchant_created_idx').on('transfers').columns(['merchant_id', 'created_at']).execute();
      await db.schema.createIndex('transfers_state_created_idx').on('transfers').columns(['state', 'created_at']).execute();
      await db.schema.createIndex('transfers_next_step_idx').on('transfers').column('next_step_at').execute();

      await db.schema
        .createTable('events')
        .addColumn('position', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('merchant_id', 'text', (c) => c.notNull().references('merchants.id'))
        .addColumn('transfer_id', 'text', (c) => c.notNull())
        .addColumn('sequence', int64, (c) => c.notNull().check(sql`sequence >= 1`))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('state', 'text')
        .addColumn('actor_type', 'text', (c) => c.notNull().check(sql`actor_type in ('merchant', 'courier', 'operator', 'system')`))
        .addColumn('actor_id', 'text')
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('occurred_at', int64, (c) => c.notNull())
        .addUniqueConstraint('events_transfer_sequence_uq', ['transfer_id', 'sequence'])
        .execute();
      await db.schema.createIndex('events_merchant_position_idx').on('events').columns(['merchant_id', 'position']).execute();

      // Existing data: every transfer gets a delivery PIN, every quote its quote.created event and every
      // transfer its transfer.created event, so timelines start at sequence 1 for old rows too.
      const quotes = await db
        .selectFrom('quotes')
        .select(['id', 'merchant_id', 'warehouse_id', 'transfer_id', 'event_id', 'expires_at', 'created_at'])
        .execute();
      for (const q of quotes) {
        await db
          .insertInto('events')
          .values({
            id: q.event_id,
            merchant_id: q.merchant_id,
            transfer_id: q.transfer_id,
            sequence: 1,
            type: 'quote.created',
            state: null,
            actor_type: 'merchant',
            actor_id: null,
            data: JSON.stringify({ quoteId: q.id, warehouseId: q.warehouse_id, expiresAt: new Date(Number(q.expires_at)).toISOString() }),
            occurred_at: q.created_at,
          })
          .execute();
      }
      const transfers = await db.selectFrom('transfers').select(['id', 'merchant_id', 'total_amount', 'currency', 'created_at']).execute();
      for (const t of transfers) {
        await db
          .updateTable('transfers')
          .set({ delivery_pin: String(randomInt(10_000)).padStart(4, '0') })
          .where('id', '=', t.id)
          .execute();
        await db
          .insertInto('events')
          .values({
            id: newId(),
            merchant_id: t.merchant_id,
            transfer_id: t.id,
            sequence: 2,
            type: 'transfer.created',
            state: 'inProgress',
            actor_type: 'merchant',
            actor_id: null,
            data: JSON.stringify({ totalPrice: minorToNumber(Number(t.total_amount)), currency: t.currency }),
            occurred_at: t.created_at,
          })
          .execute();
      }
    },
  };
}
