import type { TransfersService } from '../modules/transfers/service.ts';

export interface Logger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface Scheduler {
  /** One pass: cancel transfers that found no courier in time, take the sandbox courier's due steps. */
  runOnce(): Promise<{ cancelled: number; sandboxSteps: number }>;
  /** Stops the timer and waits for a pass under way. */
  stop(): Promise<void>;
}

/**
 * Periodic lifecycle work. Safe to run on every instance at once: each change is a conditional update
 * on the transfer's current state, so a transfer is cancelled (and refunded) once however many
 * schedulers see it. Batches are bounded; a full batch runs again at once.
 */
export function startScheduler(opts: { transfers: TransfersService; intervalMs: number; log: Logger; batch?: number }): Scheduler {
  const batch = opts.batch ?? 100;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;

  const runOnce = async () => {
    const cancelled = await opts.transfers.cancelUnassigned(batch);
    const sandboxSteps = await opts.transfers.stepSandbox(batch);
    if (cancelled > 0) opts.log.info({ cancelled }, 'cancelled transfers that found no courier in time');
    return { cancelled, sandboxSteps };
  };

  const tick = async () => {
    let again = false;
    try {
      running = runOnce();
      const r = (await running) as Awaited<ReturnType<typeof runOnce>>;
      again = r.cancelled >= batch || r.sandboxSteps >= batch;
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
