import { type TSchema, Type } from 'typebox';
import { ERRORS, type ErrorCode } from './errors.ts';

/** Shared schema pieces: ids, time stamps, the problem+json envelope and per-route error responses. */

export const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) });
export const DateTime = (description?: string) =>
  Type.String({ format: 'date-time', ...(description ? { description } : {}), examples: ['2026-11-21T10:00:00.000Z'] });

/** A closed set of string values, emitted as a JSON Schema enum. */
export const StringEnum = <T extends string[]>(values: [...T], options: Record<string, unknown> = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: values, ...options });

export const GeoPoint = Type.Object(
  {
    type: Type.Literal('Point'),
    coordinates: Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: 'GeoJSON order: [lng, lat]' }),
  },
  { description: 'GeoJSON Point', additionalProperties: false },
);

export const Problem = Type.Object(
  {
    type: Type.String({ description: 'Stable error type identifier, e.g. ACCESS_TOKEN_EXPIRED' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String({ description: 'Human-readable, safe to show' }),
    requestId: Type.String({ description: 'Same as the X-Request-Id response header' }),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String({ description: 'JSON pointer into the request' }), message: Type.String() }))),
    transferId: Type.Optional(Uuid('QUOTE_ALREADY_USED: the transfer the quote produced')),
    error: Type.Optional(Type.String({ description: 'Token endpoint only: RFC 6749 error code' })),
    error_description: Type.Optional(Type.String({ description: 'Token endpoint only: RFC 6749 error description' })),
  },
  { description: 'RFC 9457 problem details' },
);

export const AUTH_ERRORS: ErrorCode[] = [
  'MISSING_ACCESS_TOKEN',
  'ACCESS_TOKEN_EXPIRED',
  'INVALID_ACCESS_TOKEN',
  'CREDENTIALS_NOT_FOUND',
  'CREDENTIALS_REVOKED',
];
export const BODY_ERRORS: ErrorCode[] = ['VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];
export const IDEMPOTENCY_ERRORS: ErrorCode[] = ['IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED'];
const ALWAYS: ErrorCode[] = ['INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'];

/** Response schemas for the error codes a route can return, grouped by status, as problem+json. */
export function errorResponses(codes: ErrorCode[]): Record<number, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...codes, ...ALWAYS]) {
    const status = ERRORS[code].status;
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  }
  const out: Record<number, unknown> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[status] = {
      description: `Error types: ${list.join(', ')}`,
      content: { 'application/problem+json': { schema: Problem } },
    };
  }
  return out;
}

/** A success response in the same explicit content form as errors. */
export function json(schema: TSchema, description: string) {
  return { description, content: { 'application/json': { schema } } };
}

export const IdempotencyHeader = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: 'Makes the POST safe to retry: the same key and body replay the first response for 24 h' }),
  ),
});
