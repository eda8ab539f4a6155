/**
 * The one error type of the service. Services throw AppError with a code; the error handler
 * (http/error-handler.ts) turns it into an application/problem+json response (RFC 9457).
 */

export const ERRORS = {
  VALIDATION_FAILED: { status: 400, title: 'Request validation failed' },
  INVALID_REQUEST: { status: 400, title: 'Invalid token request' },
  UNSUPPORTED_GRANT_TYPE: { status: 400, title: 'Unsupported grant type' },
  INVALID_CLIENT: { status: 401, title: 'Client authentication failed' },
  MISSING_ACCESS_TOKEN: { status: 401, title: 'Missing access token' },
  ACCESS_TOKEN_EXPIRED: { status: 401, title: 'Access token expired' },
  INVALID_ACCESS_TOKEN: { status: 401, title: 'Invalid access token' },
  CREDENTIALS_NOT_FOUND: { status: 401, title: 'Credentials not found' },
  CREDENTIALS_REVOKED: { status: 401, title: 'Credentials revoked' },
  INSUFFICIENT_BALANCE: { status: 402, title: 'Insufficient balance' },
  WRONG_ACTOR: { status: 403, title: 'Wrong kind of actor' },
  ROUTE_NOT_FOUND: { status: 404, title: 'No such endpoint' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  // Operator (CLI) errors; no HTTP route answers them.
  MERCHANT_NOT_FOUND: { status: 404, title: 'Merchant not found' },
  CLIENT_NOT_FOUND: { status: 404, title: 'Client not found' },
  COURIER_NOT_FOUND: { status: 404, title: 'Courier not found' },
  WAREHOUSE_NOT_FOUND: { status: 404, title: 'Warehouse not found' },
  QUOTE_NOT_FOUND: { status: 404, title: 'Quote not found' },
  TRANSFER_NOT_FOUND: { status: 404, title: 'Transfer not found' },
  WEBHOOK_ENDPOINT_NOT_FOUND: { status: 404, title: 'Webhook endpoint not found' },
  EVENT_NOT_FOUND: { status: 404, title: 'Event not found' },
  TRACKING_CODE_NOT_FOUND: { status: 404, title: 'Tracking code not found' },
  OFFER_NOT_FOUND: { status: 404, title: 'Offer not found' },
  QUOTE_ALREADY_USED: { status: 409, title: 'Quote already used' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, title: 'Idempotency key in use' },
  TRANSFER_NOT_CANCELLABLE: { status: 409, title: 'Transfer not cancellable' },
  TRANSITION_NOT_ALLOWED: { status: 409, title: 'Transition not allowed' },
  JOB_TAKEN: { status: 409, title: 'Job taken' },
  TOO_MANY_JOBS: { status: 409, title: 'Too many jobs' },
  COURIER_OFFLINE: { status: 409, title: 'Courier offline' },
  OFFER_EXPIRED: { status: 409, title: 'Offer expired' },
  WRONG_CODE: { status: 422, title: 'Wrong code' },
  JOB_LOCKED: { status: 423, title: 'Job locked' },
  WEBHOOK_ENDPOINT_DISABLED: { status: 409, title: 'Webhook endpoint disabled' },
  WAREHOUSE_LIMIT_REACHED: { status: 422, title: 'Warehouse limit reached' },
  WEBHOOK_URL_REFUSED: { status: 422, title: 'Webhook URL refused' },
  WEBHOOK_ENDPOINT_LIMIT_REACHED: { status: 422, title: 'Webhook endpoint limit reached' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large' },
  QUOTE_EXPIRED: { status: 422, title: 'Quote expired' },
  PRODUCT_NOT_AVAILABLE: { status: 422, title: 'Product not available' },
  WAREHOUSE_DISABLED: { status: 422, title: 'Warehouse disabled' },
  OUT_OF_SERVICE_AREA: { status: 422, title: 'Destination out of service area' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency key reused' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  // People and sessions (web pages; no API route answers them).
  LOGIN_FAILED: { status: 401, title: 'Login failed' },
  FORBIDDEN: { status: 403, title: 'Not allowed' },
  PERSON_NOT_FOUND: { status: 404, title: 'Person not found' },
  LINK_INVALID: { status: 410, title: 'Link invalid or expired' },
  EMAIL_TAKEN: { status: 409, title: 'E-mail already in use' },
  PHONE_TAKEN: { status: 409, title: 'Phone number already in use' },
  LAST_ADMIN: { status: 409, title: 'Last admin' },
  PASSWORD_REJECTED: { status: 422, title: 'Password rejected' },
  WRONG_PASSWORD: { status: 422, title: 'Wrong password' },
  SECOND_FACTOR_FAILED: { status: 422, title: 'Wrong second-factor code' },
  INTERNAL_ERROR: { status: 500, title: 'Internal error' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface FieldError {
  path: string;
  message: string;
}

export interface ErrorOptions {
  /** Validation problems, each with a JSON pointer into the request. */
  errors?: FieldError[];
  /** Extra members of the problem body (e.g. transferId, RFC 6749 error). */
  extra?: Record<string, unknown>;
  /** Extra response headers (WWW-Authenticate, Retry-After). */
  headers?: Record<string, string>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly detail: string;
  readonly options: ErrorOptions;
  constructor(code: ErrorCode, detail: string, options: ErrorOptions = {}) {
    super(`${code}: ${detail}`);
    this.name = 'AppError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.detail = detail;
    this.options = options;
  }
}

export interface Problem {
  type: ErrorCode;
  title: string;
  status: number;
  detail: string;
  requestId: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

export function toProblem(err: AppError, requestId: string): Problem {
  return {
    type: err.code,
    title: ERRORS[err.code].title,
    status: err.status,
    detail: err.detail,
    requestId,
    ...(err.options.errors ? { errors: err.options.errors } : {}),
    ...err.options.extra,
  };
}
