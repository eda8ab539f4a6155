import type { FastifyRequest } from 'fastify';
import { afterCommit, type RecordOutcome } from '../../db/transaction.ts';

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
  const { merchantId } = request.principal;
  return async (trx, result) => {
    await request.server.services.idempotency.complete(
      merchantId,
      key,
      { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers(result) }, body: JSON.stringify(result) },
      trx,
    );
    afterCommit(trx, () => {
      if (request.idempotencyKey === key) request.idempotencyKey = undefined;
    });
  };
}
