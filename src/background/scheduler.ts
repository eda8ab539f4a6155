import { type SchedulerPass, schedulerPassed } from '../lib/channels.ts';
import type { AccountsService } from '../modules/accounts/service.ts';
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
  /** Sessions past their idle or absolute lifetime are deleted here (a presented expired session is refused anyway). */
  accounts?: AccountsService;
  intervalMs: number;
  /**
   * SANDBOX_STEP_SECONDS in ms (0: no automatic steps). When a step is shorter than the interval, the
   * sandbox's due steps are also looked for every half step between the full passes, so a 1 s step
   * happens within about 1.5 s instead of at the next 5 s pass.
   */
  sandboxStepMs?: number;
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
    const purgedSessions = (await opts.accounts?.purgeSessions()) ?? 0;
    if (purgedSessions > 0) opts.log.info({ purgedSessions }, 'deleted expired sessions');
    if (cancelled > 0) opts.log.info({ cancelled }, 'cancelled transfers that found no courier in time');
    if (purgedIdempotencyKeys + purgedQuotes > 0) opts.log.info({ purgedIdempotencyKeys, purgedQuotes }, 'purged records past retention');
    const pass = { cancelled, sandboxSteps, purgedIdempotencyKeys, purgedQuotes };
    if (schedulerPassed.hasSubscribers) schedulerPassed.publish(pass); // metrics count passes
    return pass;
  };

  /** Between full passes, only the sandbox's due steps (a pass of its own in the metrics). */
  const runSandboxSteps = async (): Promise<SchedulerPass> => {
    const pass = { cancelled: 0, sandboxSteps: await opts.transfers.stepSandbox(batch), purgedIdempotencyKeys: 0, purgedQuotes: 0 };
    if (schedulerPassed.hasSubscribers) schedulerPassed.publish(pass);
    return pass;
  };
  const stepMs = opts.sandboxStepMs ?? 0;
  const periodMs = stepMs > 0 && stepMs / 2 < opts.intervalMs ? Math.max(100, stepMs / 2) : opts.intervalMs;
  let lastFullPass = Date.now();

  const tick = async () => {
    let again = false;
    try {
      const full = Date.now() - lastFullPass >= opts.intervalMs - periodMs / 2;
      if (full) lastFullPass = Date.now();
      running = full ? runOnce() : runSandboxSteps();
      const r = (await running) as SchedulerPass;
      again = r.cancelled >= batch || r.sandboxSteps >= batch || r.purgedIdempotencyKeys >= batch * 5 || r.purgedQuotes >= batch * 5;
    } catch (err) {
      opts.log.error({ err }, 'scheduler pass failed; retrying at the next interval');
    } finally {
      running = undefined;
    }
    if (!stopped) timer = setTimeout(tick, again ? 0 : periodMs);
  };
  timer = setTimeout(tick, periodMs);

  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
