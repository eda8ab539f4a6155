import { type EventCommitted, eventCommitted } from '../lib/channels.ts';
import type { DispatchPass, DispatchService } from '../modules/dispatch/service.ts';
import type { Logger } from './scheduler.ts';

/** Events after which there may be a transfer to offer at once (a payment, a courier giving a job back). */
const WAKING_EVENTS = new Set(['transfer.created', 'transfer.courier_released']);

export interface Dispatcher {
  runOnce(): Promise<DispatchPass>;
  stop(): Promise<void>;
}

/**
 * The dispatcher loop: a pass every intervalMs, and at once when this process commits a payment or a
 * release, or a courier declines here (other instances' work is found by the periodic pass, or by their
 * own dispatcher). Passes never overlap within a process; across processes the offers' unique indexes
 * keep one open offer per transfer and per courier. A pass less than intervalMs after the last full one
 * makes offers only (DispatchService.runOnce): expiries and withdrawals still run at least once an
 * interval, however often payments wake it.
 */
export function startDispatcher(opts: { dispatch: DispatchService; intervalMs: number; log: Logger }): Dispatcher {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<DispatchPass> | undefined;
  let again = false;
  let stopped = false;
  let lastFull = Number.NEGATIVE_INFINITY;

  const schedule = (ms: number) => {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(tick, ms);
  };
  const tick = async () => {
    if (running) {
      again = true;
      return;
    }
    again = false;
    try {
      const full = performance.now() - lastFull >= opts.intervalMs;
      if (full) lastFull = performance.now();
      running = opts.dispatch.runOnce({ offersOnly: !full });
      const pass = await running;
      if (pass.offered + pass.expired + pass.setOffline > 0) opts.log.info({ ...pass }, 'dispatch pass');
      // A widened search looks again at once (a few passes reach the maximum radius; then nothing widens).
      if (pass.widened > 0) again = true;
    } catch (err) {
      opts.log.error({ err }, 'dispatch pass failed; retrying at the next interval');
    } finally {
      running = undefined;
    }
    schedule(again ? 0 : opts.intervalMs);
  };
  const wake = () => {
    if (running) again = true;
    else schedule(0);
  };
  const onEvent = (m: unknown) => {
    if (WAKING_EVENTS.has((m as EventCommitted).type)) wake();
  };
  eventCommitted.subscribe(onEvent);
  const offWork = opts.dispatch.onWork(wake);
  schedule(0);

  return {
    runOnce: () => opts.dispatch.runOnce(),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      eventCommitted.unsubscribe(onEvent);
      offWork();
      await running?.catch(() => {});
    },
  };
}
