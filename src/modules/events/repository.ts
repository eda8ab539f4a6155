import { channel } from 'node:diagnostics_channel';
import type { Transaction } from 'kysely';
import { afterCommit } from '../../db/transaction.ts';
import type { DB, Db, EventsTable } from '../../db/types.ts';
import { webhooksRepository } from '../webhooks/repository.ts';

/** Every committed event is published here as { type, merchantId } (metrics count them). */
export const eventCommitted = channel('mds:event-committed');

export type EventRow = Omit<EventsTable, 'position'> & { position: number };
export type NewEvent = Omit<EventsTable, 'position'>;

/**
 * The events table is the transfer timeline and the outbox webhooks are delivered from. Appending
 * takes a Transaction: an event written apart from the change it describes does not compile.
 */
export const eventsRepository = {
  async append(trx: Transaction<DB>, event: NewEvent): Promise<void> {
    const { position } = await trx.insertInto('events').values(event).returning('position').executeTakeFirstOrThrow();
    // The webhook outbox fan-out, in the same transaction: delivered if and only if the change commits.
    await webhooksRepository.fanOut(trx, {
      merchantId: event.merchant_id,
      messageId: event.id,
      type: event.type,
      eventPosition: Number(position),
      payload: null,
      at: event.occurred_at,
    });
    if (eventCommitted.hasSubscribers) afterCommit(trx, () => eventCommitted.publish({ type: event.type, merchantId: event.merchant_id }));
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
