import { type EventCommitted, eventCommitted } from '../lib/channels.ts';
import type { DispatchPass, DispatchService } from '../modules/dispatch/service.ts';
import type { Logger } from './scheduler.ts';

/** Events after which there may be a transfer to offer at once (a payment, a courier giving a job back). */
const WAKING_EVENTS = new Set(['transfer.created', 'transfer.courier_released']);
/**
 * Woken passes start at least this far apart: under a burst of payments, one pass offers every transfer
 * paid since the last (at most 40 passes a second, each one statement when nobody is free), instead of
 * one pass per payment back to back. A courier waits at most this much longer for an offer.
 */
export const WOKEN_PASS_GAP_MS = 25;

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
 * interval, however often payments wake it; woken passes start WOKEN_PASS_GAP_MS apart at least.
 */
export function startDispatcher(opts: { dispatch: DispatchService; intervalMs: number; log: Logger }): Dispatcher {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<DispatchPass> | undefined;
  let again = false;
  let stopped = false;
  let lastFull = Number.NEGATIVE_INFINITY;
  let lastStart = Number.NEGATIVE_INFINITY;
  /** When the pending timer fires (performance.now()). */
  let due = Number.POSITIVE_INFINITY;

  const schedule = (ms: number) => {
    clearTimeout(timer);
    due = performance.now() + ms;
    if (!stopped) timer = setTimeout(tick, ms);
  };
  /** The next pass as soon as the gap since the last one allows (never later than one already due). */
  const soon = () => {
    const wait = Math.max(0, Math.ceil(lastStart + WOKEN_PASS_GAP_MS - performance.now()));
    if (performance.now() + wait < due) schedule(wait);
  };
  const tick = async () => {
    due = Number.POSITIVE_INFINITY;
    if (running) {
      again = true;
      return;
    }
    again = false;
    try {
      lastStart = performance.now();
      const full = lastStart - lastFull >= opts.intervalMs;
      if (full) lastFull = lastStart;
      running = opts.dispatch.runOnce({ offersOnly: !full });
      const pass = await running;
      if (pass.offered + pass.expired + pass.setOffline > 0) opts.log.info({ ...pass }, 'dispatch pass');
      // A widened search looks again soon (a few passes reach the maximum radius; then nothing widens).
      if (pass.widened > 0) again = true;
    } catch (err) {
      opts.log.error({ err }, 'dispatch pass failed; retrying at the next interval');
    } finally {
      running = undefined;
    }
    schedule(opts.intervalMs);
    if (again) soon();
  };
  const wake = () => {
    if (running) again = true;
    else soon();
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
