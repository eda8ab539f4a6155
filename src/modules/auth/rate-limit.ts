import type { Clock } from '../../lib/clock.ts';

/**
 * Counts failed token attempts per key (an address, or a client id from an address) in a fixed
 * window. Only failures count: a client that sends its right secret is slowed only when its own
 * address has been failing. In memory, per instance: with N instances an attacker gets at most N
 * times the limit (documented in README). The map is bounded.
 */
const MAX_KEYS = 100_000;

export class FailureLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  readonly #windows = new Map<string, { count: number; resetAt: number }>();

  constructor(limit: number, windowMs: number, clock: Clock) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#clock = clock;
  }

  /** Seconds until the key may try again, or 0 if it may try now. */
  retryAfter(key: string): number {
    const w = this.#windows.get(key);
    const now = this.#clock.now();
    if (!w || w.resetAt <= now || w.count < this.#limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  recordFailure(key: string): void {
    const now = this.#clock.now();
    const w = this.#windows.get(key);
    if (!w || w.resetAt <= now) {
      if (this.#windows.size >= MAX_KEYS) this.#sweep(now);
      this.#windows.set(key, { count: 1, resetAt: now + this.#windowMs });
    } else {
      w.count++;
    }
  }

  #sweep(now: number): void {
    for (const [k, w] of this.#windows) if (w.resetAt <= now) this.#windows.delete(k);
    // Still full (a flood of distinct keys): forget the oldest tenth (a Map iterates in insertion
    // order) rather than grow without bound, or reset everyone's counters at once.
    if (this.#windows.size >= MAX_KEYS) {
      let drop = MAX_KEYS / 10;
      for (const k of this.#windows.keys()) {
        if (drop-- <= 0) break;
        this.#windows.delete(k);
      }
    }
  }
}
