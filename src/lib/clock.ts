import { readFileSync } from 'node:fs';

/** Time source. Everything that expires (tokens, quotes, payment windows) reads time from here, so tests can move it. */
export interface Clock {
  now(): number; // epoch milliseconds
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * The clock `mds serve` and `mds worker` run on: the system's, except in tests (NODE_ENV=test) that set
 * MDS_CLOCK_OFFSET_FILE, a file holding a whole number of milliseconds added to the system time. The
 * clock fault family moves a real server's wall clock with it (an hour forward and back) without touching
 * the machine's; outside NODE_ENV=test the variable is ignored.
 */
export function clockFromEnv(env: Record<string, string | undefined> = process.env): Clock {
  const file = env.MDS_CLOCK_OFFSET_FILE;
  return env.NODE_ENV === 'test' && file ? new OffsetFileClock(file) : systemClock;
}

/** System time plus the offset in a file, re-read at most every 20 ms (now() runs many times per request). */
export class OffsetFileClock implements Clock {
  readonly #file: string;
  #offset = 0;
  #readAt = Number.NEGATIVE_INFINITY;
  constructor(file: string) {
    this.#file = file;
  }
  now(): number {
    const wall = Date.now();
    if (wall - this.#readAt >= 20 || wall < this.#readAt) {
      this.#readAt = wall;
      try {
        const n = Number(readFileSync(this.#file, 'utf8').trim());
        if (Number.isSafeInteger(n)) this.#offset = n;
      } catch {} // no file: the last offset read stays
    }
    return wall + this.#offset;
  }
}

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

// Lists format the same instants again on every request (created/updated times): remembered, bounded.
// Emptied whole when full: dropping the oldest entry one at a time (keys().next()) walks past every
// entry deleted before it: 6.0 µs a new instant against 1.0 now, and writes keep adding new ones
// (docs/benchmarks.md "Seventeenth pass").
const isoStrings = new Map<number, string>();
const ISO_STRINGS_KEPT = 4096;

/** ISO 8601 UTC with milliseconds, e.g. 2026-11-21T10:00:00.000Z. */
export const iso = (ms: number): string => {
  let text = isoStrings.get(ms);
  if (text === undefined) {
    text = new Date(ms).toISOString();
    if (isoStrings.size >= ISO_STRINGS_KEPT) isoStrings.clear();
    isoStrings.set(ms, text);
  }
  return text;
};
