import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely, Transaction } from 'kysely';
import { retryChannel, type TransactionRetry } from '../lib/channels.ts';
import type { DB } from './types.ts';

/**
 * Writes a successful outcome (the Idempotency-Key response) inside the business transaction that
 * produced it, so a crash between the commit and the answer cannot leave the key without a response
 * to replay (and a retry would then run the work twice). Called inside inTransaction, so it may
 * register afterCommit hooks on that transaction; or, through asValues, stored by the write's own
 * one statement.
 */
export type RecordOutcome<T> = ((trx: Transaction<DB>, result: T) => Promise<void>) & {
  /**
   * The same outcome as values, for a write that stores it in its own one statement (PostgreSQL's
   * quote and transfer): no transaction to open, and a transfer holds the merchant's balance row for
   * that statement only. committed() must be called once that statement has committed.
   */
  asValues: (result: T) => StoredOutcome;
};

/** An Idempotency-Key's outcome as a statement stores it (idempotency_keys' columns). */
export interface StoredOutcome {
  merchantId: string;
  key: string;
  status: number;
  headers: string;
  body: string;
  committed(): void;
}

export const MAX_ATTEMPTS = 5;

const afterCommitHooks = new WeakMap<Transaction<DB>, Array<() => void>>();

/**
 * Runs fn once the transaction has committed (never if it rolls back or is retried): for what must
 * only count or wake up for committed work (metrics, the webhook worker). Only transactions run by
 * inTransaction call the hooks.
 */
export function afterCommit(trx: Transaction<DB>, fn: () => void): void {
  const hooks = afterCommitHooks.get(trx);
  if (hooks) hooks.push(fn);
  else afterCommitHooks.set(trx, [fn]);
}

/**
 * Runs fn in one transaction. Serialization failures and deadlocks (PostgreSQL) and a busy file
 * (SQLite, another process holding the write lock past busy_timeout) are retried a bounded number of
 * times with jittered backoff, so they never reach a client as a 500.
 */
export async function inTransaction<T>(
  db: Kysely<DB>,
  fn: (trx: Transaction<DB>) => Promise<T>,
  beforeCommit?: (trx: Transaction<DB>, result: T) => Promise<void>,
): Promise<T> {
  return withRetries(async () => {
    let current: Transaction<DB> | undefined;
    const result = await db.transaction().execute(async (trx) => {
      current = trx;
      const r = await fn(trx);
      await beforeCommit?.(trx, r); // e.g. the Idempotency-Key outcome: it commits with the work or not at all
      return r;
    });
    for (const hook of (current && afterCommitHooks.get(current)) ?? []) hook();
    return result;
  });
}

/**
 * Runs fn, again after a serialization failure, a deadlock or a busy file, as inTransaction does: for
 * one statement that commits by itself (PostgreSQL's one-statement quote and transfer).
 */
export async function withRetries<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(err)) throw err;
      // Full jitter: 0..(10ms * 2^attempt), so colliding transactions spread out.
      const delayMs = Math.random() * 10 * 2 ** attempt;
      if (retryChannel.hasSubscribers)
        retryChannel.publish({ attempt, code: (err as { code?: string }).code, delayMs: Math.round(delayMs) } satisfies TransactionRetry);
      await sleep(delayMs);
    }
  }
}

export function isRetryable(err: unknown): boolean {
  const e = err as { code?: string; errcode?: number };
  if (e?.code === '40001' || e?.code === '40P01') return true; // serialization_failure, deadlock_detected
  return e?.code === 'ERR_SQLITE_ERROR' && (e.errcode === 5 || e.errcode === 6); // SQLITE_BUSY, SQLITE_LOCKED
}

const UNAVAILABLE_CODES = new Set([
  ...['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'],
  ...['57P01', '57P02', '57P03'], // admin_shutdown (pg_terminate_backend), crash_shutdown, cannot_connect_now
  '57014', // query_canceled: statement_timeout
  '55P03', // lock_not_available: lock_timeout
  '25006', // read_only_sql_transaction: connected to a standby, e.g. during a failover
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|connection error|Query read timeout|Client was closed|not queryable/i;

/** SQLite's primary result codes (the low byte of an extended one) that mean the disk, not the request: SQLITE_IOERR, SQLITE_FULL. */
const SQLITE_STORAGE_CODES = new Set([10, 13]);

/**
 * The database cannot be reached or cannot write (down, restarting, connections killed, pool exhausted,
 * a statement or lock timeout, SQLite's disk full): a 503 with Retry-After, not a 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; errcode?: number; message?: string };
  if (!e || typeof e !== 'object') return false;
  if (e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number' && SQLITE_STORAGE_CODES.has(e.errcode & 0xff)) return true;
  // 08: connection exceptions; 53: insufficient resources (too many connections, disk full, out of memory).
  if (typeof e.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || /^(08|53)[0-9A-Z]{3}$/.test(e.code))) return true;
  if (isRetryable(err)) return true; // still conflicting after every retry: ask the client to retry later
  return typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message);
}

/** A unique constraint on `column` was violated (PostgreSQL 23505, or SQLite's UNIQUE constraint failure). */
export function isUniqueViolation(err: unknown, column: string): boolean {
  const e = err as { code?: string; errcode?: number; message?: string; constraint?: string; detail?: string };
  if (e?.code === '23505') return `${e.constraint ?? ''} ${e.detail ?? ''}`.includes(column);
  return e?.code === 'ERR_SQLITE_ERROR' && typeof e.message === 'string' && e.message.includes('UNIQUE constraint failed') && e.message.includes(`.${column}`);
}
