/**
 * Values read from the database and kept for `ttlMs` of wall time (not the test-movable business clock),
 * at most `max` of them (all dropped when full). Keys are asked on every request, so a miss is one read
 * at a time per key: the requests that miss while it is under way wait for it instead of each sending
 * their own (at an expiry under 50 connections, up to 50 of the same read). forget() drops a key and the
 * read under way for it: that read still answers the requests that asked before, but is not kept.
 * A read that fails (a 503 when the database is away) fails every request that waited for it, as their
 * own reads would have. With ttlMs 0 nothing is kept and nothing shared: every request reads.
 */
export class ExpiringCache<V> {
  readonly #values = new Map<string, { value: V; until: number }>();
  readonly #reads = new Map<string, Promise<V>>();
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(ttlMs: number, max = 10_000) {
    this.#ttlMs = ttlMs;
    this.#max = max;
  }

  /** The value if it was read within ttlMs; undefined if not (V itself never includes undefined). */
  peek(key: string): V | undefined {
    const hit = this.#values.get(key);
    return hit && hit.until > Date.now() ? hit.value : undefined;
  }

  /** The value kept, or the read under way for it, or a new read. */
  get(key: string, read: (key: string) => Promise<V>): V | Promise<V> {
    const kept = this.peek(key);
    if (kept !== undefined) return kept;
    if (this.#ttlMs <= 0) return read(key);
    const underWay = this.#reads.get(key);
    if (underWay) return underWay;
    // Kept from when the read started, so a value is never kept longer than ttlMs after it was read.
    const started = Date.now();
    const reading: Promise<V> = read(key).then(
      (value) => {
        if (this.#reads.get(key) === reading) {
          this.#reads.delete(key);
          if (this.#values.size >= this.#max) this.#values.clear();
          this.#values.set(key, { value, until: started + this.#ttlMs });
        }
        return value;
      },
      (err: unknown) => {
        if (this.#reads.get(key) === reading) this.#reads.delete(key);
        throw err;
      },
    );
    this.#reads.set(key, reading);
    return reading;
  }

  /** Drops the key's value and its read under way (after a change this instance made: its next request reads again). */
  forget(key: string): void {
    this.#values.delete(key);
    this.#reads.delete(key);
  }
}
