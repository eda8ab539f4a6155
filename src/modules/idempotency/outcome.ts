import type { FastifyRequest } from 'fastify';
import { afterCommit, type RecordOutcome } from '../../db/transaction.ts';

/**
 * For a POST that owns an Idempotency-Key: records `status` and the result as the response to replay,
 * inside the service's transaction, so a retry finds it even if the process dies right after the
 * commit. Once that transaction has committed, the request no longer owns the key: the onSend hook
 * (src/http/protected.ts) then has nothing left to store, where it used to write the same answer a
 * second time (one more statement and commit per keyed write). A refusal or a failure, which commits no
 * outcome, is still stored or released there. `asValues` gives the same outcome to a write that stores
 * it in its own one statement instead (PostgreSQL's quote and transfer).
 */
export function recordOutcome<T>(
  request: FastifyRequest,
  status: number,
  headers: (result: T) => Record<string, string> = () => ({}),
): RecordOutcome<T> | undefined {
  const key = request.idempotencyKey;
  if (key === undefined) return undefined;
  const { merchantId } = request.principal;
  const response = (result: T) => ({
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers(result) },
    body: JSON.stringify(result),
  });
  const released = () => {
    if (request.idempotencyKey === key) request.idempotencyKey = undefined;
  };
  const record: RecordOutcome<T> = async (trx, result) => {
    await request.server.services.idempotency.complete(merchantId, key, response(result), trx);
    afterCommit(trx, released);
  };
  record.asValues = (result) => {
    const r = response(result);
    return { merchantId, key, status: r.status, headers: JSON.stringify(r.headers), body: r.body, committed: released };
  };
  return record;
}
