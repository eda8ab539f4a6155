/** Time source. Everything that expires (tokens, quotes, payment windows) reads time from here, so tests can move it. */
export interface Clock {
  now(): number; // epoch milliseconds
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  #now: number;
  constructor(start = Date.parse('2026-11-21T10:00:00.000Z')) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
}

/** ISO 8601 UTC with milliseconds, e.g. 2026-11-21T10:00:00.000Z. */
export const iso = (ms: number): string => new Date(ms).toISOString();
