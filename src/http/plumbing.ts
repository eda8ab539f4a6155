import { randomUUID } from 'node:crypto';
import type { FastifyRequest, RawRequestDefaultExpression } from 'fastify';
import { AppError } from '../lib/errors.ts';

/** Request-level plumbing that buildApp wires in: logging hygiene, request ids, proxies, body guards. */

/** Never in a log line: credentials, tokens, and the headers that carry them. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'client_secret',
  'clientSecret',
  'access_token',
  '*.client_secret',
  '*.clientSecret',
  '*.access_token',
  '*.authorization',
  'err.rawPacket',
];

// A client that puts a secret in the query string (a mistake, but a likely one) must not get it logged.
const SECRET_QUERY = /([?&](?:client_secret|access_token|token|code|password)=)[^&]*/gi;

export function serializeRequest(req: FastifyRequest) {
  return { method: req.method, url: req.url.replace(SECRET_QUERY, '$1[REDACTED]'), host: req.host, remoteAddress: req.ip };
}

export const trustHops =
  (hops: number) =>
  (_address: string, hop: number): boolean =>
    hop < hops;

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echo a sane incoming X-Request-Id (so a merchant can correlate), otherwise make one. */
export function requestId(req: RawRequestDefaultExpression): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Bodies are read as UTF-8 and uncompressed: say so (415) instead of misreading another charset or a gzip body. */
export function refuseUnreadableBody(request: FastifyRequest): void {
  const charset = /;\s*charset="?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
  if (charset && charset.toLowerCase() !== 'utf-8' && charset.toLowerCase() !== 'utf8') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Send request bodies as UTF-8, not ${charset}`);
  }
  const encoding = request.headers['content-encoding'];
  if (encoding && encoding.toLowerCase() !== 'identity') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${encoding} is not supported; send the body uncompressed`);
  }
}
