import { type TSchema, Type } from 'typebox';
import { ERRORS, type ErrorCode } from '../lib/errors.ts';
import { component, PROBLEM_VARIANT } from './openapi-components.ts';

/** Shared schema pieces: ids, time stamps, the problem+json envelope and per-route error responses. */

export const Uuid = (description?: string, options: Record<string, unknown> = {}) =>
  Type.String({ format: 'uuid', ...(description ? { description } : {}), ...options });
export const DateTime = (description?: string) =>
  Type.String({ format: 'date-time', ...(description ? { description } : {}), examples: ['2026-11-21T10:00:00.000Z'] });

/** A closed set of string values, emitted as a JSON Schema enum. */
export const StringEnum = <T extends string[]>(values: [...T], options: Record<string, unknown> = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: values, ...options });

/**
 * Text patterns. Control characters have no business in names and addresses, and PostgreSQL refuses
 * NUL in text columns outright, so they are a 400 here rather than a 500 from the database.
 */
export const SINGLE_LINE = '^[^\\u0000-\\u001f\\u007f]*$';
export const MULTI_LINE = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$'; // tabs and line breaks allowed
export const PHONE = '^\\+?[0-9][0-9 ()\\-]{3,30}$';
/** Product keys (tariff and transfer requests). */
export const PRODUCT_KEY = '^[a-z][a-z0-9_]{0,31}$';

/** A single line of text: 1 to `max` characters, no control characters. */
export const Text = (max: number, description?: string) =>
  Type.String({ minLength: 1, maxLength: max, pattern: SINGLE_LINE, ...(description ? { description } : {}) });

/** A telephone number: digits with an optional leading +, spaces, dashes and parentheses. */
export const Phone = (description = 'Digits with optional +, spaces, dashes, parentheses') => Type.String({ pattern: PHONE, maxLength: 32, description });

export const GeoPoint = component(
  'GeoPoint',
  Type.Object(
    {
      type: Type.Literal('Point'),
      coordinates: Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: 'GeoJSON order: [lng, lat]' }),
    },
    { description: 'GeoJSON Point', additionalProperties: false },
  ),
);

/** Ids used by the examples of the OpenAPI document, so that the examples of one flow fit together. */
export const EXAMPLE_IDS = {
  merchant: '01a20057-9d1c-7b2e-8a4f-5c6d7e8f9a0b',
  warehouse: '01a20058-cb4a-7657-ba2b-fa105300957e',
  quote: '01a20059-0b3e-7a4c-9d2e-3f5a6b7c8d9e',
  transfer: '01a20059-0b3e-7a4c-9d2e-4a5b6c7d8e9f',
  event: '01a20059-0b3e-7a4c-9d2e-5b6c7d8e9fa0',
  request: '7d3c5b1e-2f4a-4c8d-9e6f-0a1b2c3d4e5f',
} as const;

const problemProperties = {
  type: Type.String({ description: 'Stable error type identifier, e.g. ACCESS_TOKEN_EXPIRED' }),
  title: Type.String({ description: 'Short summary of the error type; the same for every error of that type' }),
  status: Type.Integer({ description: 'The HTTP status code' }),
  detail: Type.String({ description: 'Human-readable, safe to show' }),
  requestId: Type.String({ description: 'Same as the X-Request-Id response header' }),
  errors: Type.Optional(
    Type.Array(Type.Object({ path: Type.String({ description: 'JSON pointer into the request' }), message: Type.String() }), {
      description: 'VALIDATION_FAILED only: every problem found, each with a JSON pointer into the request',
    }),
  ),
  transferId: Type.Optional(Uuid('QUOTE_ALREADY_USED: the transfer the quote produced')),
  state: Type.Optional(Type.String({ description: 'TRANSFER_NOT_CANCELLABLE, TRANSITION_NOT_ALLOWED: the current state of the transfer' })),
  allowed: Type.Optional(Type.Array(Type.String(), { description: 'TRANSITION_NOT_ALLOWED: the states the transfer can move to now' })),
  balance: Type.Optional(Type.Number({ description: 'INSUFFICIENT_BALANCE: the balance now, in major units' })),
  attemptsLeft: Type.Optional(Type.Integer({ description: 'WRONG_CODE: wrong codes left before the job is locked' })),
  required: Type.Optional(Type.Number({ description: 'INSUFFICIENT_BALANCE: the amount the product costs, in major units' })),
  currency: Type.Optional(Type.String({ description: 'INSUFFICIENT_BALANCE: the currency of balance and required' })),
  error: Type.Optional(Type.String({ description: 'Token endpoint only: RFC 6749 error code' })),
  error_description: Type.Optional(Type.String({ description: 'Token endpoint only: RFC 6749 error description' })),
};

export const Problem = component('Problem', Type.Object(problemProperties, { description: 'RFC 9457 problem details' }));

/** The problem envelope of one status: `type` is restricted to the error types the operation can answer with at that status. */
const problemOf = (codes: ErrorCode[]) =>
  Type.Object(
    { ...problemProperties, type: StringEnum(codes, { description: 'Stable error type identifier; clients branch on it, never on `detail`' }) },
    // Documented as the Problem component with `type` narrowed (src/lib/openapi-components.ts).
    { description: 'RFC 9457 problem details', [PROBLEM_VARIANT]: { name: 'Problem', type: problemProperties.type } },
  );

/** An example body per error type: what the service really answers (details as the code words them). */
const oauthError = (error: string, description: string) => ({ error, error_description: description });
const PROBLEM_EXAMPLES: Record<ErrorCode, { detail: string; extra?: Record<string, unknown> }> = {
  VALIDATION_FAILED: {
    detail: 'Request body failed validation: /locationMetadata/lat must be <= 90; /name is required',
    extra: {
      errors: [
        { path: '/locationMetadata/lat', message: 'must be <= 90' },
        { path: '/name', message: 'is required' },
      ],
    },
  },
  INVALID_REQUEST: { detail: 'grant_type is required', extra: oauthError('invalid_request', 'grant_type is required') },
  UNSUPPORTED_GRANT_TYPE: {
    detail: 'Only grant_type=client_credentials is supported',
    extra: oauthError('unsupported_grant_type', 'Only grant_type=client_credentials is supported'),
  },
  INVALID_CLIENT: { detail: 'Unknown client or wrong client secret', extra: oauthError('invalid_client', 'Unknown client or wrong client secret') },
  MISSING_ACCESS_TOKEN: { detail: 'Send the header Authorization: Bearer <access_token>' },
  ACCESS_TOKEN_EXPIRED: { detail: 'The access token has expired; obtain a new one and retry once' },
  INVALID_ACCESS_TOKEN: { detail: 'The access token cannot be verified' },
  CREDENTIALS_NOT_FOUND: { detail: 'The credentials this token was issued for no longer exist' },
  CREDENTIALS_REVOKED: { detail: 'The credentials this token was issued for have been revoked' },
  WRONG_ACTOR: { detail: 'This endpoint is for merchants; a courier token cannot call it' },
  JOB_TAKEN: { detail: `Transfer ${EXAMPLE_IDS.transfer} is no longer open: another courier took it, or it ended` },
  TOO_MANY_JOBS: { detail: 'A courier can hold at most 1 active job; deliver or release one first' },
  COURIER_OFFLINE: { detail: 'Go online with PUT /courier/status (with your position) to see and accept jobs' },
  OFFER_EXPIRED: { detail: 'Offer 01a2005e-1f2a-7b3c-8d4e-5f6a7b8c9d0e is no longer open (expired at 2026-11-21T10:05:30.000Z)' },
  OFFER_NOT_FOUND: { detail: 'No offer 01a2005e-1f2a-7b3c-8d4e-5f6a7b8c9d0e' },
  WRONG_CODE: { detail: 'The transferCode is wrong; 4 attempts left before the job is locked', extra: { attemptsLeft: 4 } },
  JOB_LOCKED: { detail: `Transfer ${EXAMPLE_IDS.transfer} is locked after 5 wrong codes; call support to unlock it` },
  COURIER_NOT_FOUND: { detail: 'No courier 01a20057-9d1c-7b2e-8a4f-5c6d7e8f9a0c' },
  INSUFFICIENT_BALANCE: {
    detail: 'The balance (120.00 RUB) does not cover 314.38 RUB; top up and retry',
    extra: { balance: 120, required: 314.38, currency: 'RUB' },
  },
  ROUTE_NOT_FOUND: { detail: 'No endpoint GET /nowhere; the endpoints are listed at /docs' },
  METHOD_NOT_ALLOWED: { detail: '/auth/token does not support GET; it supports POST' },
  REQUEST_TIMEOUT: { detail: 'The request did not arrive in time' },
  HEADERS_TOO_LARGE: { detail: 'The request headers are larger than the limit' },
  MERCHANT_NOT_FOUND: { detail: 'No merchant 01a20057-9d1c-7b2e-8a4f-5c6d7e8f9a0b' },
  CLIENT_NOT_FOUND: { detail: 'No credential with client id cli_0123456789abcdef01234567' },
  WAREHOUSE_NOT_FOUND: { detail: `No warehouse ${EXAMPLE_IDS.warehouse}` },
  QUOTE_NOT_FOUND: { detail: `No quote ${EXAMPLE_IDS.quote}` },
  TRANSFER_NOT_FOUND: { detail: `No transfer ${EXAMPLE_IDS.transfer}` },
  WEBHOOK_ENDPOINT_NOT_FOUND: { detail: 'No webhook endpoint 01a2005c-3e6b-7d7f-8a5b-8e9fa0b1c2d3' },
  EVENT_NOT_FOUND: { detail: `No event ${EXAMPLE_IDS.event}` },
  TRACKING_CODE_NOT_FOUND: { detail: 'No delivery with this tracking code' },
  WEBHOOK_ENDPOINT_DISABLED: { detail: 'Webhook endpoint 01a2005c-3e6b-7d7f-8a5b-8e9fa0b1c2d3 is disabled (GONE); enable it with PUT first' },
  WEBHOOK_URL_REFUSED: {
    detail: 'The webhook URL https://10.0.0.5/hook is refused: destination refused: 10.0.0.5 is a loopback, private, link-local or reserved address',
  },
  WEBHOOK_ENDPOINT_LIMIT_REACHED: { detail: 'A merchant can have at most 20 webhook endpoints' },
  QUOTE_ALREADY_USED: { detail: `The quote was already used by transfer ${EXAMPLE_IDS.transfer}`, extra: { transferId: EXAMPLE_IDS.transfer } },
  IDEMPOTENCY_KEY_IN_USE: { detail: 'A request with this Idempotency-Key is still being processed; retry shortly' },
  TRANSFER_NOT_CANCELLABLE: {
    detail: `Transfer ${EXAMPLE_IDS.transfer} is pickedUp: it can be cancelled only before pickup`,
    extra: { state: 'pickedUp' },
  },
  TRANSITION_NOT_ALLOWED: {
    detail: `Transfer ${EXAMPLE_IDS.transfer} is inProgress; from there it can move to: courierAssigned, cancelled`,
    extra: { state: 'inProgress', allowed: ['courierAssigned', 'cancelled'] },
  },
  WAREHOUSE_LIMIT_REACHED: { detail: 'A merchant can have at most 1000 warehouses' },
  PAYLOAD_TOO_LARGE: { detail: 'The request body is larger than the limit' },
  UNSUPPORTED_MEDIA_TYPE: { detail: 'Send request bodies as application/json' },
  QUOTE_EXPIRED: { detail: `Quote ${EXAMPLE_IDS.quote} expired at 2026-11-21T10:15:00.000Z; request new options` },
  PRODUCT_NOT_AVAILABLE: { detail: 'Product "express" is not available for this quote (DISTANCE_EXCEEDS_RANGE)' },
  WAREHOUSE_DISABLED: { detail: `Warehouse ${EXAMPLE_IDS.warehouse} is DISABLED and cannot be quoted from` },
  OUT_OF_SERVICE_AREA: { detail: "The destination is 812.4 km from the warehouse, beyond every product's range" },
  IDEMPOTENCY_KEY_REUSED: { detail: 'This Idempotency-Key was used with a different request; use a new key for a new request' },
  RATE_LIMITED: {
    detail: 'Too many failed token requests; retry in 60 s',
    extra: oauthError('invalid_request', 'Too many failed token requests'),
  },
  // Web pages only (people and sessions); no API operation answers them.
  LOGIN_FAILED: { detail: 'Wrong e-mail or password' },
  FORBIDDEN: { detail: 'Your role does not allow this: ask an admin' },
  PERSON_NOT_FOUND: { detail: `No user ${EXAMPLE_IDS.warehouse}` },
  LINK_INVALID: { detail: 'This link is invalid, used or expired: ask an admin for a new one' },
  EMAIL_TAKEN: { detail: 'ana@example.com already has an account' },
  PHONE_TAKEN: { detail: 'Another courier already logs in with +7 900 000-00-00' },
  LAST_ADMIN: { detail: 'A merchant needs at least one admin: make someone else admin first' },
  PASSWORD_REJECTED: { detail: 'The password must be at least 12 characters long' },
  WRONG_PASSWORD: { detail: 'The current password is not right' },
  SECOND_FACTOR_FAILED: { detail: 'That code is not right: use the current code of your authenticator app, or a recovery code' },
  INTERNAL_ERROR: { detail: 'An unexpected error occurred; report the requestId if it persists' },
  SERVICE_UNAVAILABLE: { detail: 'The service is temporarily unavailable; retry shortly' },
};

/** The problem+json body the service sends for `code`, as an OpenAPI example value. */
export function problemExample(code: ErrorCode, override: { detail?: string; extra?: Record<string, unknown> } = {}): Record<string, unknown> {
  const base = PROBLEM_EXAMPLES[code];
  return {
    type: code,
    title: ERRORS[code].title,
    status: ERRORS[code].status,
    detail: override.detail ?? base.detail,
    requestId: EXAMPLE_IDS.request,
    ...(override.extra ?? base.extra),
  };
}

export type ErrorCodeList = ErrorCode[];

/** Every bearer-protected route: the five token errors, and 403 WRONG_ACTOR for the other kind of actor's token. */
export const AUTH_ERRORS: ErrorCode[] = [
  'MISSING_ACCESS_TOKEN',
  'ACCESS_TOKEN_EXPIRED',
  'INVALID_ACCESS_TOKEN',
  'CREDENTIALS_NOT_FOUND',
  'CREDENTIALS_REVOKED',
  'WRONG_ACTOR',
];
export const BODY_ERRORS: ErrorCode[] = ['VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];
export const IDEMPOTENCY_ERRORS: ErrorCode[] = ['IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED'];
const ALWAYS: ErrorCode[] = ['INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'];

/** Error types that come with a Retry-After header (seconds). */
const RETRY_AFTER: ErrorCode[] = ['RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'IDEMPOTENCY_KEY_IN_USE'];

export type ProblemExampleOverrides = Partial<Record<ErrorCode, { detail?: string; extra?: Record<string, unknown> }>>;

/**
 * Response objects for the error codes a route can return (plus INTERNAL_ERROR and SERVICE_UNAVAILABLE,
 * which any route can answer), grouped by status, as problem+json: the `type` enum lists the codes of
 * that status, there is one example body per code, and WWW-Authenticate / Retry-After are documented
 * where the service sends them. `examples` replaces the default example of a code for this route.
 */
export function errorResponses(codes: ErrorCode[], examples: ProblemExampleOverrides = {}, mediaType = 'application/problem+json'): Record<number, unknown> {
  return problemResponses([...codes, ...ALWAYS], examples, mediaType);
}

/** Like errorResponses, but exactly the codes given (for routes that cannot answer every generic error). */
export function problemResponses(codes: ErrorCode[], examples: ProblemExampleOverrides = {}, mediaType = 'application/problem+json'): Record<number, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERRORS[code].status;
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  }
  const out: Record<number, unknown> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const headers: Record<string, { type: 'string'; description: string }> = {};
    if (status === 401) {
      headers['www-authenticate'] = list.includes('INVALID_CLIENT')
        ? { type: 'string', description: 'Basic realm="merchant-delivery" (RFC 6749 section 5.2)' }
        : {
            type: 'string',
            description: 'RFC 6750 challenge: Bearer realm="merchant-delivery", with error="invalid_token" and error_description when a token was sent',
          };
    }
    if (list.some((code) => RETRY_AFTER.includes(code))) {
      headers['retry-after'] = { type: 'string', description: 'Seconds to wait before retrying' };
    }
    out[status] = {
      description: list.map((code) => `\`${code}\`: ${ERRORS[code].title}`).join('; '),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: {
        [mediaType]: {
          schema: problemOf(list),
          examples: Object.fromEntries(list.map((code) => [code, { summary: ERRORS[code].title, value: problemExample(code, examples[code]) }])),
        },
      },
    };
  }
  return out;
}

/** A success response in the same explicit content form as errors, with an example body. */
export function json(schema: TSchema, description: string, example?: unknown) {
  return { description, content: { 'application/json': { schema, ...(example === undefined ? {} : { example }) } } };
}

/** The Link header value announcing the next page of a list: the same query with the next cursor. */
export function nextLink(path: string, query: Record<string, unknown>, cursor: string): string {
  let next = '';
  for (const [k, v] of Object.entries(query)) if (v !== undefined && k !== 'cursor') next += `${formEncode(k)}=${formEncode(String(v))}&`;
  return `<${path}?${next}cursor=${formEncode(cursor)}>; rel="next"`;
}

/** What URLSearchParams writes (application/x-www-form-urlencoded), without building one per answer (it cost ~5 % of a page). */
const formEncode = (text: string): string =>
  encodeURIComponent(text)
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');

export const IdempotencyHeader = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Makes the POST safe to retry: the same key and body replay the first response for 24 h',
      examples: ['3f0e9c6e-order-1042'],
    }),
  ),
});
