import { type SchedulerPass, schedulerPassed } from '../lib/channels.ts';
import type { IdempotencyService } from '../modules/idempotency/service.ts';
import type { QuotesService } from '../modules/quotes/service.ts';
import type { TransfersService } from '../modules/transfers/service.ts';

export interface Logger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export type { SchedulerPass };

export interface Scheduler {
  /** One pass: cancel transfers that found no courier in time, take the sandbox courier's due steps, purge what is past retention. */
  runOnce(): Promise<SchedulerPass>;
  /** Stops the timer and waits for a pass under way. */
  stop(): Promise<void>;
}

/**
 * Periodic lifecycle work. Safe to run on every instance at once: each change is a conditional update
 * on the transfer's current state, so a transfer is cancelled (and refunded) once however many
 * schedulers see it. Batches are bounded; a full batch runs again at once.
 */
export function startScheduler(opts: {
  transfers: TransfersService;
  idempotency: IdempotencyService;
  quotes: QuotesService;
  intervalMs: number;
  log: Logger;
  batch?: number;
}): Scheduler {
  const batch = opts.batch ?? 100;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;

  const runOnce = async (): Promise<SchedulerPass> => {
    const cancelled = await opts.transfers.cancelUnassigned(batch);
    const sandboxSteps = await opts.transfers.stepSandbox(batch);
    // Retention in bounded batches: a large backlog is worked off over several passes, never one long statement.
    const purgedIdempotencyKeys = await opts.idempotency.purgeExpired(batch * 5);
    const purgedQuotes = await opts.quotes.purgeExpired(batch * 5);
    if (cancelled > 0) opts.log.info({ cancelled }, 'cancelled transfers that found no courier in time');
    if (purgedIdempotencyKeys + purgedQuotes > 0) opts.log.info({ purgedIdempotencyKeys, purgedQuotes }, 'purged records past retention');
    const pass = { cancelled, sandboxSteps, purgedIdempotencyKeys, purgedQuotes };
    if (schedulerPassed.hasSubscribers) schedulerPassed.publish(pass); // metrics count passes
    return pass;
  };

  const tick = async () => {
    let again = false;
    try {
      running = runOnce();
      const r = (await running) as SchedulerPass;
      again = r.cancelled >= batch || r.sandboxSteps >= batch || r.purgedIdempotencyKeys >= batch * 5 || r.purgedQuotes >= batch * 5;
    } catch (err) {
      opts.log.error({ err }, 'scheduler pass failed; retrying at the next interval');
    } finally {
      running = undefined;
    }
    if (!stopped) timer = setTimeout(tick, again ? 0 : opts.intervalMs);
  };
  timer = setTimeout(tick, opts.intervalMs);

  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
