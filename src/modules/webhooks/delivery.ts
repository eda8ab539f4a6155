import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { inTransaction, isDatabaseUnavailable } from '../../db/transaction.ts';
import type { DB, Dialect } from '../../db/types.ts';
import { type WebhookAttempted, webhookAttempted } from '../../lib/channels.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import { eventsRepository } from '../events/repository.ts';
import { toEvent } from '../events/schemas.ts';
import type { Resolver } from './destination.ts';
import { deliveryVerdict, endpointVerdict, MAX_ATTEMPTS } from './policy.ts';
import { type DeliveryRow, type EndpointRow, webhooksRepository } from './repository.ts';
import { type SendResult, send } from './sender.ts';
import { signatureHeader } from './signing.ts';

export interface DeliveryOptions {
  /** 15 s in production (decisions.md); shorter in tests. */
  timeoutMs: number;
  allowPrivate: boolean;
  /** Deliveries sent at once by one worker, and to one endpoint at once. */
  concurrency: number;
  endpointConcurrency: number;
  resolve?: Resolver;
  log?: { warn(obj: object, msg: string): void };
}

/** A claimed delivery, ready to send: the exact bytes and headers, built before any HTTP happens. */
export interface PreparedSend {
  delivery: DeliveryRow;
  lease: string;
  endpoint: EndpointRow;
  body: string;
  headers: Record<string, string>;
}

/**
 * The dispatcher, in three steps with no database connection held across the HTTP call:
 * claim (a lease on due rows) -> prepare (body, signatures) -> send -> record the outcome as data
 * (an attempt row, the delivery's next state, the endpoint's failure run), conditional on the lease.
 */

export class WebhookDelivery {
  readonly #db: Kysely<DB>;
  readonly #dialect: Dialect;
  readonly #clock: Clock;
  readonly opts: DeliveryOptions;
  /** How long a claim lasts: longer than a whole try, so a live worker's row is never taken from it; a dead worker's comes back after it. */
  readonly leaseMs: number;

  constructor(db: Kysely<DB>, dialect: Dialect, clock: Clock, opts: DeliveryOptions) {
    this.#db = db;
    this.#dialect = dialect;
    this.#clock = clock;
    this.opts = opts;
    this.leaseMs = 2 * opts.timeoutMs + 5_000;
  }

  /**
   * Leases up to `limit` due deliveries, respecting the per-endpoint limit given what is already in flight
   * here; `admit`, when given, must also accept each one (the worker's budgets, see webhook-worker.ts).
   */
  async claim(limit: number, inFlight: ReadonlyMap<string, number> = new Map(), admit?: (endpointId: string) => boolean): Promise<DeliveryRow[]> {
    if (limit <= 0) return [];
    const now = this.#clock.now();
    const cap = this.opts.endpointConcurrency;
    const full = [...inFlight].filter(([, n]) => n >= cap).map(([id]) => id);
    const candidates = await webhooksRepository.dueCandidates(this.#db, now, limit * 2, cap, full);
    const taken = new Map<string, number>();
    const ids: string[] = [];
    for (const c of candidates) {
      const n = (inFlight.get(c.endpoint_id) ?? 0) + (taken.get(c.endpoint_id) ?? 0);
      if (n >= cap || ids.length >= limit) continue;
      if (admit && !admit(c.endpoint_id)) continue;
      taken.set(c.endpoint_id, (taken.get(c.endpoint_id) ?? 0) + 1);
      ids.push(c.id);
    }
    return webhooksRepository.claim(this.#db, this.#dialect, ids, now, now + this.leaseMs, randomUUID());
  }

  /** Builds the request: the same body on every try (webhook-id too), a fresh timestamp and signatures per try. */
  async prepare(delivery: DeliveryRow): Promise<PreparedSend | undefined> {
    const endpoint = await webhooksRepository.findEndpointAny(this.#db, delivery.endpoint_id);
    if (!endpoint) return undefined; // deleted since: the cascade removed the delivery too
    let body: string;
    if (delivery.payload !== null) body = delivery.payload;
    else {
      const row = await eventsRepository.atPosition(this.#db, delivery.merchant_id, Number(delivery.event_position));
      if (!row) return undefined;
      const event = toEvent({ ...row, position: Number(row.position) });
      body = JSON.stringify({ type: event.type, timestamp: event.occurredAt, data: event });
    }
    const now = this.#clock.now();
    const timestamp = Math.floor(now / 1000);
    const secrets = [endpoint.secret];
    if (endpoint.previous_secret && (endpoint.previous_secret_expires_at ?? 0) > now) secrets.push(endpoint.previous_secret);
    return {
      delivery,
      lease: delivery.lease!,
      endpoint,
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'mds-webhooks/1.0',
        'webhook-id': delivery.message_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, delivery.message_id, timestamp, body),
      },
    };
  }

  /** prepare -> send -> record, for one claimed delivery. Never throws for an HTTP failure (that is an outcome). */
  async deliver(delivery: DeliveryRow): Promise<SendResult | undefined> {
    const prepared = await this.prepare(delivery);
    if (!prepared) return undefined;
    const result = await send(prepared.endpoint.url, prepared.headers, prepared.body, {
      timeoutMs: this.opts.timeoutMs,
      allowPrivate: this.opts.allowPrivate,
      resolve: this.opts.resolve,
    });
    await this.#recordRetrying(prepared, result);
    return result;
  }

  /**
   * The receiver has answered: that outcome must not be lost because the database was away for a moment
   * (a restart, a full disk). Retried every 250 ms to 1 s while the lease lasts; only then is the delivery
   * left for a later claim (and sent again). The write is conditional on the lease, so a late one is harmless.
   */
  async #recordRetrying(prepared: PreparedSend, result: SendResult): Promise<void> {
    const until = Date.now() + this.leaseMs - this.opts.timeoutMs;
    for (let delay = 250; ; delay = Math.min(delay * 2, 1000)) {
      try {
        return await this.record(prepared, result);
      } catch (err) {
        if (!isDatabaseUnavailable(err) || Date.now() + delay >= until) throw err;
        await sleep(delay);
      }
    }
  }

  /** Records an attempt and its consequences in one transaction; nothing if the lease was lost meanwhile. */
  async record(p: PreparedSend, result: SendResult): Promise<void> {
    const now = this.#clock.now();
    const attempt = p.delivery.attempts + 1;
    const outcome = { status: result.status, retryAfter: result.retryAfter };
    const verdict = deliveryVerdict(attempt, outcome, now);
    const nextAt = verdict.kind === 'retry' ? verdict.at : null;
    let disabled = false;
    let recorded = false;
    await inTransaction(this.#db, async (trx) => {
      const owned = await webhooksRepository.settle(trx, p.delivery.id, p.lease, {
        status: verdict.kind === 'succeeded' ? 'succeeded' : verdict.kind === 'exhausted' ? 'failed' : 'pending',
        attempts: attempt,
        next_attempt_at: nextAt ?? now,
        updated_at: now,
      });
      if (!owned) return;
      recorded = true;
      await webhooksRepository.insertAttempt(trx, {
        id: newId(),
        merchant_id: p.delivery.merchant_id,
        endpoint_id: p.endpoint.id,
        delivery_id: p.delivery.id,
        message_id: p.delivery.message_id,
        event_type: p.delivery.event_type,
        attempt,
        status: verdict.kind === 'succeeded' ? 'succeeded' : 'failed',
        response_status: result.status ?? null,
        response_body: result.body ?? null,
        error: result.error ?? (result.status !== undefined && verdict.kind !== 'succeeded' ? `HTTP ${result.status}` : null),
        duration_ms: result.durationMs,
        next_attempt_at: nextAt,
        created_at: now,
      });
      // The endpoint's failure run, read again inside the transaction (other deliveries to it settle concurrently).
      const endpoint = await webhooksRepository.findEndpointAny(trx, p.endpoint.id);
      if (!endpoint) return;
      const ev = endpointVerdict(endpoint.failing_since === null ? null : Number(endpoint.failing_since), outcome, now);
      const changes: Partial<EndpointRow> = {};
      if (ev.failingSince !== endpoint.failing_since) changes.failing_since = ev.failingSince;
      if (ev.disable && endpoint.status === 'ENABLED') {
        changes.status = 'DISABLED';
        changes.disabled_reason = ev.disable;
        changes.updated_at = now;
      }
      if (Object.keys(changes).length > 0) await webhooksRepository.updateEndpoint(trx, endpoint.merchant_id, endpoint.id, changes);
      if (changes.status === 'DISABLED') {
        disabled = true;
        this.opts.log?.warn({ endpointId: endpoint.id, merchantId: endpoint.merchant_id, reason: ev.disable }, 'webhook endpoint disabled');
        // Tell the merchant's other endpoints, if any: an operational message like svix's endpoint.disabled.
        const messageId = newId();
        const data = { endpointId: endpoint.id, url: endpoint.url, reason: ev.disable, failingSince: iso(ev.failingSince ?? now), disabledAt: iso(now) };
        const payload = JSON.stringify({ type: 'webhook.endpoint_disabled', timestamp: iso(now), data });
        await webhooksRepository.fanOut(
          trx,
          { merchantId: endpoint.merchant_id, messageId, type: 'webhook.endpoint_disabled', eventPosition: null, payload, at: now },
          { except: endpoint.id },
        );
      }
    });
    if (recorded && webhookAttempted.hasSubscribers) webhookAttempted.publish({ outcome: disabled ? 'disabled' : verdict.kind } satisfies WebhookAttempted);
  }

  /**
   * Claims and delivers everything due now, batch after batch, and waits for it (tests and the CLI;
   * the worker runs the same steps continuously). Returns how many attempts were made.
   */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const batch = await this.claim(this.opts.concurrency);
      if (batch.length === 0) return total;
      await Promise.all(batch.map((d) => this.deliver(d)));
      total += batch.length;
    }
  }
}

export { MAX_ATTEMPTS };
