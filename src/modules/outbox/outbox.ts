import type { Transaction } from 'kysely';
import { afterCommit } from '../../db/transaction.ts';
import type { DB } from '../../db/types.ts';
import { type EventCommitted, eventCommitted } from '../../lib/channels.ts';
import { eventsRepository, type NewEvent } from '../events/repository.ts';
import { webhooksRepository } from '../webhooks/repository.ts';

/**
 * The transactional outbox, in one function: the event row and its webhook deliveries (one per
 * enabled endpoint of the merchant that takes the type) are written in the caller's transaction, so
 * an event exists, and is delivered, if and only if the change it describes commits. Taking a
 * Transaction (not a Kysely) makes an event written apart from its change a type error.
 * Once committed, the event is published on `eventCommitted` (metrics count it, the webhook worker wakes).
 */
export async function appendEvent(trx: Transaction<DB>, event: NewEvent): Promise<void> {
  const position = await eventsRepository.insert(trx, event);
  await webhooksRepository.fanOut(trx, {
    merchantId: event.merchant_id,
    messageId: event.id,
    type: event.type,
    eventPosition: position,
    payload: null,
    at: event.occurred_at,
  });
  if (eventCommitted.hasSubscribers)
    afterCommit(trx, () => eventCommitted.publish({ type: event.type, merchantId: event.merchant_id } satisfies EventCommitted));
}
