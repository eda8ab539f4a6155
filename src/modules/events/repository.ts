import type { Transaction } from 'kysely';
import { insertRow } from '../../db/prepared.ts';
import type { DB, Db, EventsTable } from '../../db/types.ts';

export type EventRow = Omit<EventsTable, 'position'> & { position: number };
export type NewEvent = Omit<EventsTable, 'position'>;

/**
 * The events table: the transfer timeline and the outbox webhooks are delivered from. Rows are written
 * by the outbox (src/modules/outbox), which adds the webhook fan-out in the same transaction; every
 * query of the table lives here. Reads are scoped to the merchant.
 */
export const eventsRepository = {
  /** Inserts the row and returns its global position. Takes a Transaction: an event apart from its change does not compile. */
  async insert(trx: Transaction<DB>, event: NewEvent): Promise<number> {
    const [{ position }] = await insertRow(trx, 'events', event, 'position');
    return Number(position);
  },

  /** A transfer's timeline, oldest first. */
  async forTransfer(db: Db, merchantId: string, transferId: string): Promise<EventRow[]> {
    return db
      .selectFrom('events')
      .selectAll()
      .where('merchant_id', '=', merchantId)
      .where('transfer_id', '=', transferId)
      .orderBy('sequence')
      .execute() as Promise<EventRow[]>;
  },

  async find(db: Db, merchantId: string, eventId: string) {
    return db.selectFrom('events').selectAll().where('merchant_id', '=', merchantId).where('id', '=', eventId).executeTakeFirst();
  },

  async atPosition(db: Db, merchantId: string, position: number) {
    return db.selectFrom('events').selectAll().where('merchant_id', '=', merchantId).where('position', '=', position).executeTakeFirst();
  },

  /** The merchant's events since `since` (ms), in position order, at most `limit`: what a webhook replay re-sends. */
  async since(db: Db, merchantId: string, since: number, limit: number): Promise<Array<{ id: string; type: string; position: number }>> {
    const rows = await db
      .selectFrom('events')
      .select(['id', 'type', 'position'])
      .where('merchant_id', '=', merchantId)
      .where('occurred_at', '>=', since)
      .orderBy('position')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...r, position: Number(r.position) }));
  },
};
