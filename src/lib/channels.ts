import { channel } from 'node:diagnostics_channel';

/**
 * Every diagnostics channel of the service, in one place at the bottom of the layers: the code that
 * does the work publishes (db, modules, background), the cross-cutting layers subscribe (metrics in
 * src/observability, the server's debug log, the webhook worker's wake-up) without the publishers
 * importing them. Publishing costs nothing while nobody subscribes (check hasSubscribers first).
 */

/** A transaction retried after a serialization failure, deadlock or busy database. */
export interface TransactionRetry {
  attempt: number;
  code: string | undefined;
  delayMs: number;
}
export const retryChannel = channel('mds:transaction-retry');

/** An event committed (published after the commit, never for a rolled-back one). */
export interface EventCommitted {
  type: string;
  merchantId: string;
  /** Webhook deliveries written with it (0 when none of the merchant's endpoints takes it). */
  deliveries: number;
}
export const eventCommitted = channel('mds:event-committed');

/** A webhook delivery attempt recorded: succeeded, retry, exhausted, or disabled (it disabled its endpoint). */
export interface WebhookAttempted {
  outcome: 'succeeded' | 'retry' | 'exhausted' | 'disabled';
}
export const webhookAttempted = channel('mds:webhook-attempt');

/** What one scheduler pass did. */
export interface SchedulerPass {
  cancelled: number;
  sandboxSteps: number;
  purgedIdempotencyKeys: number;
  purgedQuotes: number;
}
export const schedulerPassed = channel('mds:scheduler-pass');

/**
 * An offer made to a courier (published after its commit). On SQLite this channel is how the courier's
 * stream hears of it (one process owns the file); on PostgreSQL the offer goes out with NOTIFY instead,
 * so a courier connected to any instance hears of it.
 */
export interface OfferMade {
  courierId: string;
  offerId: string;
}
export const offerMade = channel('mds:offer-made');

/** An offer's outcome (metrics): made, accepted, declined, expired; assigned carries the time from payment to assignment. */
export interface DispatchOutcome {
  outcome: 'made' | 'accepted' | 'declined' | 'expired' | 'assigned';
  /** For 'assigned': milliseconds from the payment (or the pickup window's dispatch start) to the assignment. */
  waitedMs?: number;
}
export const dispatchOutcome = channel('mds:dispatch-outcome');
