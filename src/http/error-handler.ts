import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/transaction.ts';
import { AppError, type FieldError, toProblem } from './errors.ts';

/** The one place where errors become HTTP responses. Nothing internal (stack, SQL, secrets) reaches a body. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error);
    if (appError.status >= 500) {
      request.log.error({ err: error }, 'request failed');
    }
    return sendProblem(request, reply, appError);
  });

  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, new AppError('ROUTE_NOT_FOUND', `No endpoint ${request.method} ${request.url.split('?')[0]}`)),
  );
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

/** Errors Fastify raises before routing (a malformed %-escape, an over-long path parameter): the same envelope as every other error. */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
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
            : 'Request';
    const errors = error.validation.map(toFieldError);
    return new AppError('VALIDATION_FAILED', `${where} failed validation: ${errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`, { errors });
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
  if (isDatabaseUnavailable(error)) {
    return new AppError('SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; retry shortly', { headers: { 'retry-after': '1' } });
  }
  return new AppError('INTERNAL_ERROR', 'An unexpected error occurred; report the requestId if it persists');
}

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
  return { path: e.instancePath, message: e.message ?? 'is invalid' };
}
