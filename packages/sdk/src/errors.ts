import { INSPECT, maskFields } from './redact.ts';

/** A problem field error (VALIDATION_FAILED): a JSON pointer into the request and what is wrong there. */
export interface FieldError {
  path: string;
  message: string;
}

/**
 * Error types the SDK raises itself, when no problem body came back: the connection failed
 * (`NETWORK_ERROR`), the call's timeout elapsed (`TIMEOUT`), the caller's AbortSignal fired
 * (`ABORTED`), the answer was not the expected JSON (`INVALID_RESPONSE`), or verifyWebhook refused a
 * delivery (`WEBHOOK_VERIFICATION_FAILED`: answer it with 400 and do not process it). Every other `type` is
 * the service's problem type (`ACCESS_TOKEN_EXPIRED`, `QUOTE_ALREADY_USED`, ...).
 */
export type ClientErrorType = 'NETWORK_ERROR' | 'TIMEOUT' | 'ABORTED' | 'INVALID_RESPONSE' | 'WEBHOOK_VERIFICATION_FAILED';

export interface MerchantDeliveryErrorInit {
  type: string;
  status?: number;
  title?: string;
  detail: string;
  requestId?: string;
  errors?: FieldError[];
  retryable: boolean;
  idempotencyKey?: string;
  method?: string;
  path?: string;
  retryAfterSeconds?: number;
  problem?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * The one error class of the SDK. Branch on `type` (stable), never on `detail` (prose).
 * It never holds a token, a secret or a request header: `message`, `toString()`, `util.inspect`
 * and `JSON.stringify` show the same safe fields.
 */
export class MerchantDeliveryError extends Error {
  /** The problem type (`ACCESS_TOKEN_EXPIRED`, `VALIDATION_FAILED`, ...) or a ClientErrorType. */
  readonly type: string;
  /** HTTP status; undefined when no response came back (network error, timeout, abort). */
  readonly status: number | undefined;
  readonly title: string | undefined;
  readonly detail: string;
  /** The service's request id (X-Request-Id): quote it to support. */
  readonly requestId: string | undefined;
  /** VALIDATION_FAILED: every problem found. */
  readonly errors: FieldError[] | undefined;
  /**
   * True when sending the same request again cannot do the work twice and may succeed: a network
   * failure or timeout of a GET/PUT or of a POST repeated with the same `idempotencyKey`, 409
   * IDEMPOTENCY_KEY_IN_USE, 429, 500 and 503. False for business refusals (QUOTE_ALREADY_USED, ...).
   */
  readonly retryable: boolean;
  /** The Idempotency-Key the SDK sent with this POST: pass it again (`{ idempotencyKey }`) to retry safely. */
  readonly idempotencyKey: string | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;
  /** From Retry-After, when the service sent one. */
  readonly retryAfterSeconds: number | undefined;
  /** The whole problem body (extra members such as `transferId`, `state`, `allowed`), fields named like secrets masked. */
  readonly problem: Record<string, unknown> | undefined;

  constructor(init: MerchantDeliveryErrorInit) {
    const where = [init.method && init.path ? `${init.method} ${init.path}` : undefined, init.requestId ? `request ${init.requestId}` : undefined].filter(
      Boolean,
    );
    super(`${init.type}${init.status ? ` (${init.status})` : ''}: ${init.detail}${where.length ? ` [${where.join(', ')}]` : ''}`, { cause: init.cause });
    this.name = 'MerchantDeliveryError';
    this.type = init.type;
    this.status = init.status;
    this.title = init.title;
    this.detail = init.detail;
    this.requestId = init.requestId;
    this.errors = init.errors;
    this.retryable = init.retryable;
    this.idempotencyKey = init.idempotencyKey;
    this.method = init.method;
    this.path = init.path;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.problem = init.problem === undefined ? undefined : (maskFields(init.problem) as Record<string, unknown>);
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      type: this.type,
      status: this.status,
      title: this.title,
      detail: this.detail,
      requestId: this.requestId,
      errors: this.errors,
      retryable: this.retryable,
      idempotencyKey: this.idempotencyKey,
      method: this.method,
      path: this.path,
      retryAfterSeconds: this.retryAfterSeconds,
      problem: this.problem,
    };
  }

  [INSPECT](): string {
    return `${this.stack ?? this.message}\n${JSON.stringify(this.toJSON(), null, 2)}`;
  }
}
