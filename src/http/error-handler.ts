import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/transaction.ts';
import { AppError, type ErrorCode, type FieldError, toProblem } from '../lib/errors.ts';
import { http } from '../lib/node-http.ts';
import { MULTI_LINE, PHONE, PRODUCT_KEY, SINGLE_LINE } from '../lib/schemas.ts';
import { attachRequestLogger, logCompletion } from './request-logger.ts';

const { STATUS_CODES } = http;

/** The one place where errors become HTTP responses. Nothing internal (stack, SQL, secrets) reaches a body. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error);
    if (appError.status >= 500) {
      request.log.error({ err: error }, 'request failed');
    }
    return sendProblem(request, reply, appError);
  });
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  const oauth = request.routeOptions?.url === TOKEN_ENDPOINT;
  const err = oauth ? asOAuthError(error) : error;
  // RFC 6749 5.2: token endpoint errors are application/json, or standard OAuth clients won't read them.
  reply
    .code(err.status)
    .type(oauth ? 'application/json' : 'application/problem+json')
    .header('x-request-id', request.id);
  for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
  return reply.send(toProblem(err, request.id));
}

export const TOKEN_ENDPOINT = '/auth/token';

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (headers too large, a malformed
 * request line, a timeout): still the problem+json envelope with a request id. Nothing of the raw
 * request is logged (it may carry an Authorization header).
 */
export function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) return;
  const code: ErrorCode =
    err.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'REQUEST_TIMEOUT' : 'VALIDATION_FAILED';
  const detail =
    code === 'HEADERS_TOO_LARGE'
      ? 'The request headers are larger than the limit'
      : code === 'REQUEST_TIMEOUT'
        ? 'The request did not arrive in time'
        : 'The HTTP request is malformed';
  socket.end(rawProblem(new AppError(code, detail)));
}

/** A whole HTTP/1.1 response carrying `error` as problem+json, for answers written straight to a socket (the connection is closed after it). */
export function rawProblem(error: AppError): string {
  const requestId = randomUUID();
  const body = JSON.stringify(toProblem(error, requestId));
  const extra = Object.entries(error.options.headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${extra}Connection: close\r\n\r\n${body}`;
}

/** Errors Fastify raises before routing (a malformed %-escape, an over-long path parameter): the same envelope as every other error. */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  attachRequestLogger(request, reply); // no hook has run for it
  logCompletion(request, reply); // nor does Fastify follow this answer to its end
  const detail = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long' : 'The URL is not valid (bad %-escape)';
  return sendProblem(request, reply, new AppError('VALIDATION_FAILED', detail, { errors: [{ path: '', message: detail }] }));
}

const OAUTH_ERRORS: Partial<Record<AppError['code'], string>> = { INVALID_CLIENT: 'invalid_client', UNSUPPORTED_GRANT_TYPE: 'unsupported_grant_type' };

/**
 * On the token endpoint every client error is an RFC 6749 error: the problem fields stay, `error` and
 * `error_description` are always there, and what would elsewhere be VALIDATION_FAILED (malformed
 * JSON, an empty body) is INVALID_REQUEST.
 */
function asOAuthError(err: AppError): AppError {
  if (err.status >= 500 || err.options.extra?.error) return err;
  const code = err.code === 'VALIDATION_FAILED' ? 'INVALID_REQUEST' : err.code;
  const detail = err.code === 'UNSUPPORTED_MEDIA_TYPE' ? 'Send the token request as application/json or application/x-www-form-urlencoded' : err.detail;
  return new AppError(code, detail, {
    ...err.options,
    errors: undefined,
    extra: { ...err.options.extra, error: OAUTH_ERRORS[code] ?? 'invalid_request', error_description: detail },
  });
}

function toAppError(error: FastifyError): AppError {
  if (error instanceof AppError) return error;
  if (error.validation) {
    const where =
      error.validationContext === 'body'
        ? 'Request body'
        : error.validationContext === 'querystring'
          ? 'Query string'
          : error.validationContext === 'params'
            ? 'Path parameter'
            : error.validationContext === 'headers'
              ? 'Request header'
              : 'Request';
    const prefix = error.validationContext === 'headers' ? '/headers' : '';
    const errors = error.validation.slice(0, MAX_FIELD_ERRORS).map((e) => {
      const f = toFieldError(e as AjvError);
      return { ...f, path: prefix + f.path };
    });
    const more = error.validation.length > errors.length ? ` (and ${error.validation.length - errors.length} more)` : '';
    return new AppError('VALIDATION_FAILED', `${where} failed validation: ${errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}${more}`, { errors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send request bodies as application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than the limit');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('VALIDATION_FAILED', 'The request body is empty; send a JSON object', { errors: [{ path: '', message: 'must be a JSON object' }] });
  }
  if (error.statusCode === 400 && (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || /JSON/i.test(error.message))) {
    return new AppError('VALIDATION_FAILED', 'The request body is not valid JSON', { errors: [{ path: '', message: 'malformed JSON' }] });
  }
  // Text the database cannot store (e.g. NUL in PostgreSQL) that got past the schemas: the client's fault, not a 500.
  if (error.code === '22021' || error.code === '22P05') {
    return new AppError('VALIDATION_FAILED', 'The request contains characters that cannot be stored', {
      errors: [{ path: '', message: 'invalid characters' }],
    });
  }
  if (isDatabaseUnavailable(error)) {
    return new AppError('SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; retry shortly', { headers: { 'retry-after': '1' } });
  }
  return new AppError('INTERNAL_ERROR', 'An unexpected error occurred; report the requestId if it persists');
}

const PATTERN_MESSAGES: Record<string, string> = {
  [SINGLE_LINE]: 'must not contain control characters',
  [MULTI_LINE]: 'must not contain control characters other than tabs and line breaks',
  [PHONE]: 'must be a phone number: digits with an optional leading +, spaces, dashes, parentheses',
  [PRODUCT_KEY]: 'must be a product key: a lower-case letter, then up to 31 lower-case letters, digits or underscores',
};

/** A huge body of unknown fields must not produce a response ten times its size. */
const MAX_FIELD_ERRORS = 20;

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

function toFieldError(e: AjvError): FieldError {
  if (e.keyword === 'required') return { path: `${e.instancePath}/${String(e.params.missingProperty)}`, message: 'is required' };
  if (e.keyword === 'additionalProperties') {
    return { path: `${e.instancePath}/${String(e.params.additionalProperty)}`, message: 'is not a known field' };
  }
  if (e.keyword === 'enum') return { path: e.instancePath, message: `must be one of ${(e.params.allowedValues as unknown[]).join(', ')}` };
  if (e.keyword === 'pattern' && PATTERN_MESSAGES[e.params.pattern as string])
    return { path: e.instancePath, message: PATTERN_MESSAGES[e.params.pattern as string] };
  return { path: e.instancePath, message: e.message ?? 'is invalid' };
}
