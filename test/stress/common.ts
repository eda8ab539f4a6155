import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { ERRORS, type ErrorCode } from '../../src/lib/errors.ts';

/**
 * Shared by the stress families (scripts/stress.ts runs them): the checks every answer must pass and a
 * digest of the business state, to prove that a refused request changed nothing.
 */

/** True in CI (CI=true): the families keep the minimums and stay within the CI time budget. */
export const CI = process.env.CI === 'true' || process.env.CI === '1';

/** The one store-wide digest of business state (idempotency records excluded: business refusals are stored for replay, by design). */
export async function stateDigest(database: Database): Promise<string> {
  const { rows } = await sql<Record<string, unknown>>`
    select
      (select count(*) from merchants) as merchants,
      (select coalesce(sum(balance), 0) from merchants) as balances,
      (select count(*) from credentials where status = 'ACTIVE') as active_credentials,
      (select count(*) from ledger_entries) as ledger,
      (select count(*) from warehouses) as warehouses,
      (select coalesce(max(updated_at), 0) from warehouses) as warehouses_updated,
      (select count(*) from warehouses where status = 'ACTIVE') as active_warehouses,
      (select count(*) from quotes) as quotes,
      (select count(*) from quotes where status = 'consumed') as consumed,
      (select count(*) from transfers) as transfers
  `.execute(database.db);
  return Object.entries(rows[0])
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');
}

export interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

/**
 * Every 4xx/5xx is a problem body the client can rely on: the media type (problem+json, or JSON with
 * RFC 6749 fields on the token endpoint), a known `type` whose status and title match, a `detail`, and
 * the `requestId` of the X-Request-Id header (a replay carries the first request's id in its body).
 */
export function assertProblem(method: string, path: string, res: Answer): void {
  const contentType = String(res.headers['content-type'] ?? '');
  const token = method === 'POST' && path.split('?')[0] === '/auth/token' && res.status !== 404 && res.status !== 405;
  assert.match(contentType, token ? /^application\/json/ : /^application\/problem\+json/, `${res.status} media type ${contentType}`);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(res.body);
  } catch {
    assert.fail(`${res.status} body is not JSON: ${res.body.slice(0, 200)}`);
  }
  assert.ok(Object.hasOwn(ERRORS, String(body.type)), `unknown type ${String(body.type)}`);
  const known = ERRORS[body.type as ErrorCode];
  assert.equal(body.status, res.status, 'status member = HTTP status');
  assert.equal(known.status, res.status, `${String(body.type)} is a ${known.status}`);
  assert.equal(body.title, known.title);
  assert.equal(typeof body.detail, 'string');
  assert.ok((body.detail as string).length > 0);
  assert.equal(typeof body.requestId, 'string');
  if (res.headers['idempotent-replayed'] === undefined) assert.equal(body.requestId, res.headers['x-request-id'], 'requestId = X-Request-Id');
  if (token) assert.equal(typeof body.error, 'string', 'RFC 6749 error');
  if (Array.isArray(body.errors)) assert.ok(body.errors.length <= 20, 'at most 20 field errors');
}

/** A small seeded PRNG (mulberry32) for the process-level families, so a failing seed can be replayed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const tallyInto = (into: Record<string, number>, key: string | number) => {
  into[String(key)] = (into[String(key)] ?? 0) + 1;
};
