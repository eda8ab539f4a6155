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
 * Once committed, the event is published on `eventCommitted` (metrics count it; the webhook worker
 * wakes if it has deliveries).
 */
export async function appendEvent(trx: Transaction<DB>, event: NewEvent): Promise<void> {
  const position = await eventsRepository.insert(trx, event);
  published(trx, event, await webhooksRepository.fanOut(trx, message(event, position)));
}

/**
 * The second half of appendEvent, for a caller that inserted the event row itself and already knows who
 * takes it (SQLite's quote, whose read of its warehouse also read the endpoints): their deliveries and
 * the publication after commit.
 */
export async function eventInserted(trx: Transaction<DB>, event: NewEvent, position: number, endpointIds: string[]): Promise<void> {
  await webhooksRepository.deliver(trx, message(event, position), endpointIds);
  published(trx, event, endpointIds.length);
}

const message = (event: NewEvent, position: number) => ({
  merchantId: event.merchant_id,
  messageId: event.id,
  type: event.type,
  eventPosition: position,
  payload: null,
  at: event.occurred_at,
});

/**
 * The event, with the number of webhook deliveries written with it, is published once `trx` commits;
 * without a transaction, the statement that wrote it has committed: now.
 */
export function published(trx: Transaction<DB> | undefined, event: Pick<NewEvent, 'type' | 'merchant_id'>, deliveries: number): void {
  if (!eventCommitted.hasSubscribers) return;
  const publish = () => eventCommitted.publish({ type: event.type, merchantId: event.merchant_id, deliveries } satisfies EventCommitted);
  if (trx) afterCommit(trx, publish);
  else publish();
}
