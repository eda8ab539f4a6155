import type { Transaction } from 'kysely';
import type { DB, Db, EventsTable } from '../../db/types.ts';

export type EventRow = Omit<EventsTable, 'position'> & { position: number };
export type NewEvent = Omit<EventsTable, 'position'>;

/**
 * The events table is the transfer timeline and the outbox webhooks are delivered from. Appending
 * takes a Transaction: an event written apart from the change it describes does not compile.
 */
export const eventsRepository = {
  async append(trx: Transaction<DB>, event: NewEvent): Promise<void> {
    await trx.insertInto('events').values(event).execute();
  },

  /** A transfer's timeline, oldest first; scoped to the merchant. */
  async forTransfer(db: Db, merchantId: string, transferId: string): Promise<EventRow[]> {
    return db
      .selectFrom('events')
      .selectAll()
      .where('merchant_id', '=', merchantId)
      .where('transfer_id', '=', transferId)
      .orderBy('sequence')
      .execute() as Promise<EventRow[]>;
  },
};
