import type { Kysely } from 'kysely';
import { isDatabaseUnavailable } from '../../db/transaction.ts';
import type { DB, Db } from '../../db/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { idempotencyRepository } from './repository.ts';

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type BeginResult = { kind: 'proceed' } | { kind: 'replay'; response: StoredResponse };

/** A request still IN_PROGRESS after this long is taken to have died (crash, lost connection) and may be retried. */
const ABANDONED_AFTER_MS = 60_000;

/**
 * Idempotency-Key with Stripe's semantics, scoped per merchant: the first request with a key runs and
 * its response is stored; the same key with the same request replays that response; with another
 * request it is IDEMPOTENCY_KEY_REUSED; while the first is still running, IDEMPOTENCY_KEY_IN_USE.
 * Keys live IDEMPOTENCY_TTL_HOURS (at least 24 h).
 */
export class IdempotencyService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  constructor(db: Kysely<DB>, clock: Clock, ttlHours: number) {
    this.#db = db;
    this.#clock = clock;
    this.#ttlMs = ttlHours * 3_600_000;
  }

  async begin(merchantId: string, key: string, requestHash: string): Promise<BeginResult> {
    const now = this.#clock.now();
    let claimed: boolean;
    try {
      claimed = await idempotencyRepository.claim(this.#db, merchantId, key, requestHash, now);
    } catch (err) {
      // The claim may have committed with its answer lost (the connection died): undo it once the database
      // is back, or every retry with this key would be IDEMPOTENCY_KEY_IN_USE until it counts as abandoned.
      if (isDatabaseUnavailable(err)) this.releaseLater(merchantId, key, undefined, now);
      throw err;
    }
    if (claimed) return { kind: 'proceed' };

    const existing = await idempotencyRepository.find(this.#db, merchantId, key);
    if (!existing) return this.begin(merchantId, key, requestHash); // deleted between our two statements
    const expired = existing.created_at <= now - this.#ttlMs;
    const abandoned = existing.state === 'IN_PROGRESS' && existing.updated_at <= now - ABANDONED_AFTER_MS;
    if (expired || abandoned) {
      if (await idempotencyRepository.takeOver(this.#db, existing, requestHash, now)) return { kind: 'proceed' };
      return this.begin(merchantId, key, requestHash);
    }
    if (existing.request_hash !== requestHash) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request; use a new key for a new request');
    }
    if (existing.state === 'IN_PROGRESS') {
      throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed; retry shortly', {
        headers: { 'retry-after': '1' },
      });
    }
    return {
      kind: 'replay',
      response: { status: existing.response_status ?? 200, headers: JSON.parse(existing.response_headers ?? '{}'), body: existing.response_body ?? '' },
    };
  }

  /** Stores the response to replay. Given a transaction, it commits together with the work it describes. */
  async complete(merchantId: string, key: string, response: StoredResponse, db: Db = this.#db): Promise<void> {
    await idempotencyRepository.complete(db, merchantId, key, response.status, JSON.stringify(response.headers), response.body, this.#clock.now());
  }

  /** The request failed in a way worth retrying (5xx): forget the key so a retry runs again. */
  async release(merchantId: string, key: string): Promise<void> {
    await idempotencyRepository.release(this.#db, merchantId, key);
  }

  /**
   * release() failed (the database is away, which is often why the request failed): try again in the
   * background, every 250 ms to 1 s, until it works or the key counts as abandoned anyway. Without it a
   * client retrying with its key would get IDEMPOTENCY_KEY_IN_USE for a minute after the database came back.
   * Safe: a key whose work did commit is DONE (the outcome commits with the work), and release only
   * touches IN_PROGRESS keys.
   */
  releaseLater(merchantId: string, key: string, onGiveUp?: (err: unknown) => void, claimedAt?: number): void {
    const started = Date.now();
    let delay = 250;
    const retry = () => {
      idempotencyRepository.release(this.#db, merchantId, key, claimedAt).catch((err) => {
        if (Date.now() - started + delay >= ABANDONED_AFTER_MS) return onGiveUp?.(err);
        delay = Math.min(delay * 2, 1000);
        setTimeout(retry, delay).unref();
      });
    };
    setTimeout(retry, delay).unref();
  }

  /** Retention: deletes up to `limit` keys older than IDEMPOTENCY_TTL_HOURS (the scheduler calls it). */
  async purgeExpired(limit: number): Promise<number> {
    return idempotencyRepository.deleteOlderThan(this.#db, this.#clock.now() - this.#ttlMs, limit);
  }
}
