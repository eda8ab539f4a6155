import type { FastifyRequest } from 'fastify';
import type { RecordOutcome } from '../../db/transaction.ts';

/**
 * For a POST that owns an Idempotency-Key: records `status` and the result as the response to replay,
 * inside the service's transaction. The onSend hook stores the answer as sent afterwards too (the same
 * data); this copy is what a retry finds if the process dies before that.
 */
export function recordOutcome<T>(
  request: FastifyRequest,
  status: number,
  headers: (result: T) => Record<string, string> = () => ({}),
): RecordOutcome<T> | undefined {
  const key = request.idempotencyKey;
  if (key === undefined) return undefined;
  const { merchantId } = request.principal;
  return (trx, result) =>
    request.server.services.idempotency.complete(
      merchantId,
      key,
      { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers(result) }, body: JSON.stringify(result) },
      trx,
    );
}
