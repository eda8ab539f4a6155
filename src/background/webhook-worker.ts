import { type EventCommitted, eventCommitted } from '../lib/channels.ts';
import type { WebhookDelivery } from '../modules/webhooks/delivery.ts';
import type { DeliveryRow } from '../modules/webhooks/repository.ts';
import type { Logger } from './scheduler.ts';

export interface WebhookWorker {
  /** Stops claiming and waits for the sends in flight to be recorded (each is bounded by the timeout). */
  stop(): Promise<void>;
}

/**
 * The webhook worker: claims due deliveries (leases), sends them and records each outcome; polls when
 * idle. Any number of workers may run (in `mds serve` and `mds worker`): the lease gives each attempt
 * to one of them.
 *
 * Two budgets, so that receivers that accept and never answer, however many, hold sockets (each until
 * the timeout) but never the slots of endpoints that do answer:
 * - endpoints seen answering within SLOW_AFTER_MS share `concurrency` sends, up to `endpointConcurrency` each;
 * - every other endpoint (new, quiet for SLOW_MEMORY_MS, or slow) gets one send at a time, from a budget of
 *   MAX_SLOW x `concurrency` sockets; an answer in time moves it to the first group.
 * A send to an answering endpoint that is still out after SLOW_AFTER_MS marks its endpoint slow.
 * (Before this split, a backlog for 50 hanging endpoints took the shared slots four per endpoint, a wave per
 * SLOW_AFTER_MS, and held a healthy endpoint's deliveries back ~5 s: the webhook-hang fault family.)
 */
const MAX_BACKOFF_MS = 2_000;
const SLOW_AFTER_MS = 1_000;
/** How long an endpoint stays "slow" after its last slow send, unless it answers in time meanwhile. */
const SLOW_MEMORY_MS = 60_000;
/** Sends to endpoints not (or no longer) answering in time, as a multiple of `concurrency` (a bound on open sockets). */
const MAX_SLOW = 8;

export function startWebhookWorker(opts: { delivery: WebhookDelivery; pollIntervalMs: number; log: Logger }): WebhookWorker {
  const { delivery, log } = opts;
  const { concurrency } = delivery.opts;
  const inFlight = new Map<string, number>(); // endpoint id -> sends in flight
  const running = new Map<Promise<void>, { endpointId: string; startedAt: number }>();
  const slowSince = new Map<string, number>(); // endpoint id -> when a send to it was last seen slow
  const answered = new Map<string, number>(); // endpoint id -> when a send to it last answered in time
  let stopped = false;
  let wake: (() => void) | undefined;
  let failures = 0;

  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  const start = (d: DeliveryRow) => {
    inFlight.set(d.endpoint_id, (inFlight.get(d.endpoint_id) ?? 0) + 1);
    const p = delivery
      .deliver(d)
      .then(
        () => {},
        (err) => log.error({ err, deliveryId: d.id }, 'webhook delivery could not be recorded; it is retried when its lease expires'),
      )
      .finally(() => {
        const took = performance.now() - (running.get(p)?.startedAt ?? 0);
        if (took < SLOW_AFTER_MS) {
          slowSince.delete(d.endpoint_id); // it answers in time (again)
          answered.set(d.endpoint_id, performance.now());
        }
        const n = (inFlight.get(d.endpoint_id) ?? 1) - 1;
        if (n <= 0) inFlight.delete(d.endpoint_id);
        else inFlight.set(d.endpoint_id, n);
        running.delete(p);
        wake?.(); // a slot is free: look for more work now
      });
    running.set(p, { endpointId: d.endpoint_id, startedAt: performance.now() });
  };

  /** The free sends of each budget now, and a gate that admits one claim candidate at a time against them. */
  const capacity = () => {
    const now = performance.now();
    for (const [id, at] of slowSince) if (now - at > SLOW_MEMORY_MS) slowSince.delete(id);
    for (const [id, at] of answered) if (now - at > SLOW_MEMORY_MS) answered.delete(id);
    const trusted = (id: string) => answered.has(id) && !slowSince.has(id);
    let fast = 0;
    let other = 0;
    for (const r of running.values()) {
      if (now - r.startedAt >= SLOW_AFTER_MS) slowSince.set(r.endpointId, now);
      if (trusted(r.endpointId)) fast++;
      else other++;
    }
    let freeFast = concurrency - fast;
    let freeOther = MAX_SLOW * concurrency - other;
    const cap = delivery.opts.endpointConcurrency;
    // Endpoints that can take nothing more now: the claim query skips them.
    const busy = new Map(inFlight);
    for (const [id, n] of inFlight) if (!trusted(id) && n > 0) busy.set(id, cap);
    const taken = new Map<string, number>();
    const admit = (id: string) => {
      const n = (inFlight.get(id) ?? 0) + (taken.get(id) ?? 0);
      if (trusted(id) ? n >= cap || freeFast <= 0 : n >= 1 || freeOther <= 0) return false;
      if (trusted(id)) freeFast--;
      else freeOther--;
      taken.set(id, (taken.get(id) ?? 0) + 1);
      return true;
    };
    return { free: Math.max(0, freeFast) + Math.max(0, freeOther), busy, admit };
  };

  const loop = (async () => {
    while (!stopped) {
      const { free, busy, admit } = capacity();
      let claimed = 0;
      if (free > 0) {
        try {
          const batch = await delivery.claim(free, busy, admit);
          claimed = batch.length;
          for (const d of batch) start(d);
          failures = 0;
        } catch (err) {
          // The database is away: back off and try again; nothing is lost, rows stay pending. At most 2 s, so
          // deliveries resume within seconds of the database's return (the fault families measure it).
          failures++;
          log.error({ err }, 'webhook worker could not claim deliveries; retrying');
          await nap(Math.min(MAX_BACKOFF_MS, opts.pollIntervalMs * 2 ** failures));
          continue;
        }
      }
      if (stopped) break;
      if (claimed === 0 || claimed < free) await nap(opts.pollIntervalMs);
    }
  })();

  // An event committed in this process with deliveries: look for them now rather than at the next poll. One
  // without (no endpoint of its merchant takes it) wakes nothing: under a burst of quotes to a merchant with no
  // endpoints, a claim query per wake-up was a fifth of PostgreSQL's work (docs/benchmarks.md, "Fifteenth pass").
  const onCommit = (m: unknown) => {
    if ((m as EventCommitted).deliveries > 0) wake?.();
  };
  eventCommitted.subscribe(onCommit);

  return {
    async stop() {
      eventCommitted.unsubscribe(onCommit);
      stopped = true;
      wake?.();
      await loop;
      await Promise.allSettled([...running.keys()]);
    },
  };
}
