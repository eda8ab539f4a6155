import type { Clock } from '../../lib/clock.ts';

/**
 * Login throttling: failed attempts counted per key (the e-mail as typed, lower-cased, and the client
 * address) in a fixed window; at the limit the key waits for the window to end. Keyed on the e-mail
 * string, not on a person, so an unknown e-mail is throttled exactly like a known one (the answer
 * never tells them apart). In memory, per instance (like the token endpoint's limiter): with N
 * instances an attacker gets at most N times the limit. The map is bounded.
 */
const MAX_KEYS = 100_000;

export class LoginThrottle {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  readonly #windows = new Map<string, { count: number; resetAt: number }>();

  constructor(limit: number, windowMs: number, clock: Clock) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#clock = clock;
  }

  /** Seconds until the key may try again, or 0. */
  retryAfter(key: string): number {
    const w = this.#windows.get(key);
    const now = this.#clock.now();
    if (!w || w.resetAt <= now || w.count < this.#limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  fail(key: string): void {
    const now = this.#clock.now();
    const w = this.#windows.get(key);
    if (w && w.resetAt > now) {
      w.count++;
      return;
    }
    if (this.#windows.size >= MAX_KEYS) {
      for (const [k, old] of this.#windows) if (old.resetAt <= now) this.#windows.delete(k);
      // Still full (a flood of distinct keys): drop the oldest tenth rather than grow without bound.
      let drop = this.#windows.size >= MAX_KEYS ? MAX_KEYS / 10 : 0;
      for (const k of this.#windows.keys()) {
        if (drop-- <= 0) break;
        this.#windows.delete(k);
      }
    }
    this.#windows.set(key, { count: 1, resetAt: now + this.#windowMs });
  }

  /** A successful login clears its account's count (not its address's). */
  clear(key: string): void {
    this.#windows.delete(key);
  }
}
