import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely, Transaction } from 'kysely';
import type { DB } from './types.ts';

const MAX_ATTEMPTS = 5;

/**
 * Runs fn in one transaction. Serialization failures and deadlocks (PostgreSQL) and a busy file
 * (SQLite, another process holding the write lock past busy_timeout) are retried a bounded number of
 * times with jittered backoff, so they never reach a client as a 500.
 */
export async function inTransaction<T>(db: Kysely<DB>, fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(fn);
    } catch (err) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(err)) throw err;
      // Full jitter: 0..(10ms * 2^attempt), so colliding transactions spread out.
      await sleep(Math.random() * 10 * 2 ** attempt);
    }
  }
}

export function isRetryable(err: unknown): boolean {
  const e = err as { code?: string; errcode?: number };
  if (e?.code === '40001' || e?.code === '40P01') return true; // serialization_failure, deadlock_detected
  return e?.code === 'ERR_SQLITE_ERROR' && (e.errcode === 5 || e.errcode === 6); // SQLITE_BUSY, SQLITE_LOCKED
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', '57P01', '57P02', '57P03', '53300']);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|connection error|Query read timeout|Client was closed|not queryable/i;

/** The database cannot be reached (down, restarting, connections killed, pool exhausted): a 503, not a 500. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || e.code.startsWith('08'))) return true;
  if (isRetryable(err)) return true; // still conflicting after every retry: ask the client to retry later
  return typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message);
}
