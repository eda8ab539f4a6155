import type { FastifyRequest } from 'fastify';
import type { Transaction } from 'kysely';
import { afterCommit, type RecordOutcome } from '../../db/transaction.ts';
import type { DB } from '../../db/types.ts';
import type { IdempotencyService, StoredResponse } from './service.ts';

/**
 * For a POST that owns an Idempotency-Key: records `status` and the result as the response to replay,
 * inside the service's transaction, so a retry finds it even if the process dies right after the
 * commit. Once that transaction has committed, the request no longer owns the key: the onSend hook
 * (src/http/protected.ts) then has nothing left to store, where it used to write the same answer a
 * second time (one more statement and commit per keyed write). A refusal or a failure, which commits no
 * outcome, is still stored or released there.
 */
export function recordOutcome<T>(
  request: FastifyRequest,
  status: number,
  headers: (result: T) => Record<string, string> = () => ({}),
): RecordOutcome<T> | undefined {
  const key = request.idempotencyKey;
  if (key === undefined) return undefined;
  const response = (result: T) => ({
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers(result) },
    body: JSON.stringify(result),
  });
  return keyOutcome(request.server.services.idempotency, request.principal.merchantId, key, response, () => {
    if (request.idempotencyKey === key) request.idempotencyKey = undefined;
  });
}

/**
 * The response `key` replays, stored with the work that produced it: by complete() in the work's
 * transaction, or (asValues) by the write's own one statement (PostgreSQL's quote and transfer).
 * `committed` runs once it is stored.
 */
export function keyOutcome<T>(
  idempotency: IdempotencyService,
  merchantId: string,
  key: string,
  response: (result: T) => StoredResponse,
  committed: () => void = () => {},
): RecordOutcome<T> {
  return Object.assign(
    async (trx: Transaction<DB>, result: T) => {
      await idempotency.complete(merchantId, key, response(result), trx);
      afterCommit(trx, committed);
    },
    {
      asValues: (result: T) => {
        const r = response(result);
        // As complete() stores them.
        return { merchantId, key, status: r.status, headers: JSON.stringify(r.headers), body: r.body, committed };
      },
    },
  );
}
