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
export function startWebhookWorker(opts: { delivery: WebhookDelivery; pollIntervalMs: number; log: Logger }): WebhookWorker {
  const { delivery, log } = opts;
  const { concurrency } = delivery.opts;
  const inFlight = new Map<string, number>(); // endpoint id -> sends in flight
  const running = new Set<Promise<void>>();
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
        const n = (inFlight.get(d.endpoint_id) ?? 1) - 1;
        if (n <= 0) inFlight.delete(d.endpoint_id);
        else inFlight.set(d.endpoint_id, n);
        running.delete(p);
        wake?.(); // a slot is free: look for more work now
      });
    running.add(p);
  };

  const loop = (async () => {
    while (!stopped) {
      const free = concurrency - running.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const batch = await delivery.claim(free, inFlight);
          claimed = batch.length;
          for (const d of batch) start(d);
          failures = 0;
        } catch (err) {
          // The database is away: back off (up to 30 s) and try again; nothing is lost, rows stay pending.
          failures++;
          log.error({ err }, 'webhook worker could not claim deliveries; retrying');
          await nap(Math.min(30_000, opts.pollIntervalMs * 2 ** failures));
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
      await Promise.allSettled([...running]);
    },
  };
}
