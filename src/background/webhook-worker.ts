import { eventCommitted } from '../lib/channels.ts';
import type { WebhookDelivery } from '../modules/webhooks/delivery.ts';
import type { DeliveryRow } from '../modules/webhooks/repository.ts';
import type { Logger } from './scheduler.ts';

export interface WebhookWorker {
  /** Stops claiming and waits for the sends in flight to be recorded (each is bounded by the timeout). */
  stop(): Promise<void>;
}

/**
 * The webhook worker: claims due deliveries (leases) up to the global concurrency, at most
 * `endpointConcurrency` per endpoint, sends them and records each outcome; polls when idle. One slow
 * or dead endpoint holds at most its own few slots for at most the timeout, so other endpoints (and
 * merchants) keep flowing. Any number of workers may run (in `mds serve` and `mds worker`): the lease
 * gives each attempt to one of them.
 */
const MAX_BACKOFF_MS = 2_000;
const SLOW_AFTER_MS = 1_000;
/** How long an endpoint stays "slow" after its last slow send, unless it answers in time meanwhile. */
const SLOW_MEMORY_MS = 60_000;
/** Slow sends allowed beyond `concurrency`, as a multiple of it (a bound on open sockets). */
const MAX_SLOW = 8;

export function startWebhookWorker(opts: { delivery: WebhookDelivery; pollIntervalMs: number; log: Logger }): WebhookWorker {
  const { delivery, log } = opts;
  const { concurrency } = delivery.opts;
  const inFlight = new Map<string, number>(); // endpoint id -> sends in flight
  const running = new Map<Promise<void>, { endpointId: string; startedAt: number }>();
  const slowSince = new Map<string, number>(); // endpoint id -> when a send to it was last seen slow
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
        if (took < SLOW_AFTER_MS) slowSince.delete(d.endpoint_id); // it answers in time again
        const n = (inFlight.get(d.endpoint_id) ?? 1) - 1;
        if (n <= 0) inFlight.delete(d.endpoint_id);
        else inFlight.set(d.endpoint_id, n);
        running.delete(p);
        wake?.(); // a slot is free: look for more work now
      });
    running.set(p, { endpointId: d.endpoint_id, startedAt: performance.now() });
  };

  /**
   * A send unanswered after SLOW_AFTER_MS stops counting against `concurrency` (up to MAX_SLOW of them), and
   * its endpoint gets no further send until it answers: receivers that accept and never answer, however
   * many, then hold sockets (each until the timeout) but never the slots of endpoints that do answer.
   */
  const capacity = () => {
    const now = performance.now();
    for (const [id, at] of slowSince) if (now - at > SLOW_MEMORY_MS) slowSince.delete(id);
    let slow = 0;
    for (const r of running.values()) {
      if (now - r.startedAt >= SLOW_AFTER_MS) slowSince.set(r.endpointId, now);
      if (slowSince.has(r.endpointId)) slow++; // a send to an endpoint known to be slow counts as slow from its start
    }
    const fast = running.size - slow;
    const free = concurrency - fast - Math.max(0, slow - MAX_SLOW * concurrency);
    // A slow endpoint: one send at a time, none while one is out.
    const cap = delivery.opts.endpointConcurrency;
    const busy = new Map(inFlight);
    for (const id of slowSince.keys()) busy.set(id, (inFlight.get(id) ?? 0) > 0 ? cap : cap - 1);
    return { free, busy };
  };

  const loop = (async () => {
    while (!stopped) {
      const { free, busy } = capacity();
      let claimed = 0;
      if (free > 0) {
        try {
          const batch = await delivery.claim(free, busy);
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

  // An event committed in this process: look for its deliveries now rather than at the next poll.
  const onCommit = () => wake?.();
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
