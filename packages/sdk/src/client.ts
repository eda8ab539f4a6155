import { abortable, MemoryTokenCache, type TokenCache, TokenManager } from './auth.ts';
import { MerchantDeliveryError } from './errors.ts';
import { type MerchantOperationId, OPERATIONS, TOKEN_OPERATION } from './operations.ts';
import { INSPECT, maskFields, maskHeaders, scrub } from './redact.ts';
import { BalanceResource } from './resources/balance.ts';
import { QuotesResource } from './resources/quotes.ts';
import { SandboxResource } from './resources/sandbox.ts';
import { TransfersResource } from './resources/transfers.ts';
import { WarehousesResource } from './resources/warehouses.ts';
import { WebhookEndpointsResource } from './resources/webhook-endpoints.ts';
import type { RequestBody, SuccessBody } from './types.ts';

export const SDK_VERSION = '0.1.0';

/** What the debug hooks see: headers and bodies with tokens and secrets masked (first 6 characters and …). */
export interface RequestEvent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** 0 for the first attempt, 1 for the first retry... */
  attempt: number;
}

export interface ResponseEvent {
  method: string;
  url: string;
  status: number;
  statusText: string;
  headers: Record<string, string>;
  body: unknown;
  durationMs: number;
  attempt: number;
}

export interface ClientOptions {
  /** The service's base URL, e.g. https://delivery.example.com */
  baseUrl: string;
  clientId: string;
  /** Keep it server-side: never in a browser, an app, a repository or a log. */
  clientSecret: string;
  /** Where tokens are cached (default: this process's memory). */
  tokenCache?: TokenCache;
  /** How long before expiry a token is replaced (default 60 s; at most half the token's lifetime). */
  refreshMarginSeconds?: number;
  /** Per attempt, covering the response body too (default 30 s). */
  timeoutMs?: number;
  /**
   * Retries after a connection failure or timeout, and of 409 IDEMPOTENCY_KEY_IN_USE (default 2). Only
   * requests that cannot do the work twice are retried: GET, PUT, and POSTs, which always carry an
   * Idempotency-Key that every retry of the call repeats.
   */
  maxNetworkRetries?: number;
  /**
   * Opt-in: retries of 429 and 503 answers (default 0). A retry waits exactly the answer's Retry-After
   * (the service says when its rate-limit window ends), or backs off exponentially when there is none.
   */
  overloadRetries?: number;
  /** A 429/503 asking to wait longer than this is not retried: it is thrown at once, with its retryAfterSeconds (default 60). */
  maxRetryAfterSeconds?: number;
  /** First backoff delay (default 500 ms), doubled per retry with jitter, capped by retryMaxDelayMs (default 8 s). */
  retryBaseDelayMs?: number;
  retryMaxDelayMs?: number;
  /** Another fetch (a proxy agent, instrumentation, tests). */
  fetch?: typeof fetch;
  /** Clock for token expiry (epoch ms); defaults to Date.now. */
  now?: () => number;
  /** Debug hooks, called for every attempt with secrets masked. The SDK itself never logs. */
  onRequest?: (event: RequestEvent) => void;
  onResponse?: (event: ResponseEvent) => void;
}

/** Per call. */
export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** POST only: the key to send (default: a new random key per call, repeated by the call's retries). */
  idempotencyKey?: string;
  maxNetworkRetries?: number;
}

export interface CallInput<O extends MerchantOperationId = MerchantOperationId> {
  path?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined>;
  /** Typed by the operation's request body in openapi.json. */
  body?: RequestBody<O>;
}

export interface RawResult<T> {
  data: T;
  status: number;
  headers: Headers;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  abortable(
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => clearTimeout(timer), { once: true });
    }),
    signal,
  );

const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

/**
 * The Merchant Delivery Service client. One instance per set of credentials, shared by the whole
 * process: it caches the access token, refreshes it ahead of expiry, and retries once with a new one
 * on ACCESS_TOKEN_EXPIRED.
 */
export class MerchantDeliveryClient {
  readonly warehouses: WarehousesResource;
  readonly quotes: QuotesResource;
  readonly transfers: TransfersResource;
  readonly balance: BalanceResource;
  readonly webhookEndpoints: WebhookEndpointsResource;
  readonly sandbox: SandboxResource;

  readonly #baseUrl: string;
  readonly #clientId: string;
  readonly #secret: string;
  readonly #fetch: typeof fetch;
  readonly #tokens: TokenManager;
  readonly #options: ClientOptions;
  /** Tokens this client has seen, scrubbed from any text that reaches an error. */
  readonly #seen = new Set<string>();

  constructor(options: ClientOptions) {
    if (!options?.baseUrl) throw new TypeError('baseUrl is required');
    if (!options.clientId || !options.clientSecret) throw new TypeError('clientId and clientSecret are required');
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#clientId = options.clientId;
    this.#secret = options.clientSecret;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#options = { ...options, clientSecret: '' };
    this.#tokens = new TokenManager({
      cacheKey: `merchant-delivery:${new URL(this.#baseUrl).origin}:${options.clientId}`,
      cache: options.tokenCache ?? new MemoryTokenCache(),
      refreshMarginMs: (options.refreshMarginSeconds ?? 60) * 1000,
      now: options.now ?? Date.now,
      fetchToken: () => this.#fetchToken(),
    });
    this.warehouses = new WarehousesResource(this);
    this.quotes = new QuotesResource(this);
    this.transfers = new TransfersResource(this);
    this.balance = new BalanceResource(this);
    this.webhookEndpoints = new WebhookEndpointsResource(this);
    this.sandbox = new SandboxResource(this);
  }

  /** Obtains a token now (or confirms the cached one): call it at start-up to fail fast on wrong credentials. */
  async authenticate(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.#tokens.token(options.signal);
  }

  /**
   * Calls a merchant operation by its operationId (method and path from the OPERATIONS table). The
   * resources are built on it; use it directly only for what they do not cover.
   */
  async call<O extends MerchantOperationId>(operationId: O, input: CallInput<O> = {}, options: RequestOptions = {}): Promise<RawResult<SuccessBody<O>>> {
    const op = OPERATIONS[operationId];
    const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = input.path?.[name];
      if (value === undefined) throw new TypeError(`${operationId}: path parameter ${name} is required`);
      return encodeURIComponent(value);
    });
    return this.#request<SuccessBody<O>>(op.method, path, input, options, true);
  }

  async #fetchToken(): Promise<{ accessToken: string; expiresInSeconds: number }> {
    const body = { grant_type: 'client_credentials', client_id: this.#clientId, client_secret: this.#secret };
    const { data } = await this.#request<{ access_token?: unknown; expires_in?: unknown }>(TOKEN_OPERATION.method, TOKEN_OPERATION.path, { body }, {}, false);
    if (typeof data?.access_token !== 'string' || typeof data.expires_in !== 'number') {
      throw new MerchantDeliveryError({
        type: 'INVALID_RESPONSE',
        status: 200,
        detail: 'The token endpoint answered without access_token and expires_in',
        retryable: false,
        method: TOKEN_OPERATION.method,
        path: TOKEN_OPERATION.path,
      });
    }
    this.#remember(data.access_token);
    return { accessToken: data.access_token, expiresInSeconds: data.expires_in };
  }

  async #request<T>(
    method: string,
    path: string,
    input: { query?: CallInput['query']; body?: unknown },
    options: RequestOptions,
    authenticated: boolean,
  ): Promise<RawResult<T>> {
    try {
      return await this.#requestWithRetries<T>(method, path, input, options, authenticated);
    } catch (err) {
      // Aborted while waiting (for the token, or between retries): the same error as an aborted exchange.
      if (err instanceof MerchantDeliveryError || !options.signal?.aborted) throw err;
      throw new MerchantDeliveryError({ type: 'ABORTED', detail: 'The request was aborted by the caller', retryable: false, method, path });
    }
  }

  async #requestWithRetries<T>(
    method: string,
    path: string,
    input: { query?: CallInput['query']; body?: unknown },
    options: RequestOptions,
    authenticated: boolean,
  ): Promise<RawResult<T>> {
    const o = this.#options;
    const url = new URL(this.#baseUrl + path);
    for (const [k, v] of Object.entries(input.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const idempotencyKey = authenticated && method === 'POST' ? (options.idempotencyKey ?? globalThis.crypto.randomUUID()) : undefined;
    // The token endpoint has no side effects; POSTs carry an Idempotency-Key: every request here is safe to repeat.
    const replaySafe = method !== 'POST' || idempotencyKey !== undefined || !authenticated;
    const maxNetworkRetries = options.maxNetworkRetries ?? o.maxNetworkRetries ?? 2;
    const overloadRetries = o.overloadRetries ?? 0;
    const where = { method, path: url.pathname + url.search };
    let networkRetries = 0;
    let overloadCount = 0;
    let refreshedToken = false;

    for (let attempt = 0; ; attempt++) {
      const token = authenticated ? await this.#tokens.token(options.signal) : undefined;
      if (token) this.#remember(token); // tokens from a shared cache too
      const headers: Record<string, string> = { accept: 'application/json', 'user-agent': `merchant-delivery-sdk/${SDK_VERSION}` };
      if (token) headers.authorization = `Bearer ${token}`;
      if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
      if (input.body !== undefined) headers['content-type'] = 'application/json';

      let outcome: { res: Response; text: string } | { error: MerchantDeliveryError };
      outcome = await this.#attempt(method, url, headers, input.body, attempt, options, where, idempotencyKey, replaySafe);
      if ('error' in outcome) {
        const e = outcome.error;
        if (e.type !== 'ABORTED' && replaySafe && networkRetries < maxNetworkRetries) {
          await sleep(this.#backoff(networkRetries++), options.signal);
          continue;
        }
        throw e;
      }
      const { res, text } = outcome;
      if (res.ok) {
        let data: unknown;
        try {
          data = text === '' ? undefined : JSON.parse(text);
        } catch {
          throw new MerchantDeliveryError({ type: 'INVALID_RESPONSE', status: res.status, detail: 'The response is not JSON', retryable: false, ...where });
        }
        return { data: data as T, status: res.status, headers: res.headers };
      }

      const error = this.#problemError(res, text, where, idempotencyKey, replaySafe);
      if (token && error.status === 401 && error.type === 'ACCESS_TOKEN_EXPIRED' && !refreshedToken) {
        // The interface's rule: a new token and exactly one retry.
        refreshedToken = true;
        await this.#tokens.invalidate(token);
        continue;
      }
      if (error.status === 409 && error.type === 'IDEMPOTENCY_KEY_IN_USE' && networkRetries < maxNetworkRetries) {
        await sleep(this.#backoff(networkRetries++, error.retryAfterSeconds), options.signal);
        continue;
      }
      if ((error.status === 429 || error.status === 503) && overloadCount < overloadRetries) {
        const wait = error.retryAfterSeconds;
        if (wait === undefined) {
          await sleep(this.#backoff(overloadCount++), options.signal);
          continue;
        }
        // Waiting less than told would only be refused again; waiting longer than the caller allows is the caller's call.
        if (wait <= (this.#options.maxRetryAfterSeconds ?? 60)) {
          overloadCount++;
          await sleep(wait * 1000, options.signal);
          continue;
        }
      }
      throw error;
    }
  }

  /** One HTTP exchange with its own timeout; failures to get an answer become MerchantDeliveryErrors. */
  async #attempt(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: unknown,
    attempt: number,
    options: RequestOptions,
    where: { method: string; path: string },
    idempotencyKey: string | undefined,
    replaySafe: boolean,
  ): Promise<{ res: Response; text: string } | { error: MerchantDeliveryError }> {
    const o = this.#options;
    const timeoutMs = options.timeoutMs ?? o.timeoutMs ?? 30_000;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort();
    if (options.signal?.aborted) controller.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    this.#hook(o.onRequest, { method, url: url.href, headers: maskHeaders(headers), body: maskFields(body), attempt });
    const started = Date.now();
    try {
      const res = await this.#fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
        redirect: 'error',
      });
      const text = await res.text();
      let shown: unknown = text;
      try {
        shown = text ? JSON.parse(text) : null;
      } catch {
        // not JSON: shown as text
      }
      this.#hook(o.onResponse, {
        method,
        url: url.href,
        status: res.status,
        statusText: res.statusText,
        headers: maskHeaders(res.headers),
        body: maskFields(shown),
        durationMs: Date.now() - started,
        attempt,
      });
      return { res, text };
    } catch (cause) {
      const aborted = options.signal?.aborted === true && !timedOut;
      const type = aborted ? 'ABORTED' : timedOut ? 'TIMEOUT' : 'NETWORK_ERROR';
      const reason = cause instanceof Error ? `${cause.message}${cause.cause instanceof Error ? ` (${cause.cause.message})` : ''}` : String(cause);
      const detail = aborted
        ? 'The request was aborted by the caller'
        : timedOut
          ? `No complete answer within ${timeoutMs} ms`
          : `The connection failed: ${scrub(reason, [this.#secret, ...this.#seen])}`;
      return {
        error: new MerchantDeliveryError({ type, detail, retryable: !aborted && replaySafe, idempotencyKey, ...where, cause: aborted ? undefined : cause }),
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  #problemError(
    res: Response,
    text: string,
    where: { method: string; path: string },
    idempotencyKey: string | undefined,
    replaySafe: boolean,
  ): MerchantDeliveryError {
    let problem: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) problem = parsed as Record<string, unknown>;
    } catch {
      // not a problem body
    }
    const str = (v: unknown) => (typeof v === 'string' ? scrub(v, [this.#secret, ...this.#seen]) : undefined);
    const retryAfter = Number(res.headers.get('retry-after'));
    const type = str(problem?.type) ?? `HTTP_${res.status}`;
    return new MerchantDeliveryError({
      type,
      status: res.status,
      title: str(problem?.title),
      detail: str(problem?.detail) ?? (res.statusText || `HTTP ${res.status}`),
      requestId: str(problem?.requestId) ?? res.headers.get('x-request-id') ?? undefined,
      errors: Array.isArray(problem?.errors) ? (problem.errors as Array<{ path: string; message: string }>) : undefined,
      retryable: (RETRYABLE_STATUS.has(res.status) && replaySafe) || (res.status === 409 && type === 'IDEMPOTENCY_KEY_IN_USE'),
      idempotencyKey,
      retryAfterSeconds: Number.isFinite(retryAfter) && res.headers.has('retry-after') ? retryAfter : undefined,
      problem: problem && (JSON.parse(scrub(JSON.stringify(problem), [this.#secret, ...this.#seen])) as Record<string, unknown>),
      ...where,
    });
  }

  /** Tokens to scrub from any text that reaches an error: the recent ones are those that can leak. */
  #remember(token: string): void {
    this.#seen.delete(token);
    this.#seen.add(token);
    if (this.#seen.size > 16) this.#seen.delete(this.#seen.values().next().value as string);
  }

  #backoff(retry: number, retryAfterSeconds?: number): number {
    const base = this.#options.retryBaseDelayMs ?? 500;
    const max = this.#options.retryMaxDelayMs ?? 8_000;
    if (retryAfterSeconds !== undefined && retryAfterSeconds >= 0) return Math.min(retryAfterSeconds * 1000, max);
    const delay = Math.min(base * 2 ** retry, max);
    return delay / 2 + Math.random() * (delay / 2);
  }

  #hook<E>(hook: ((event: E) => void) | undefined, event: E): void {
    if (!hook) return;
    try {
      hook(event);
    } catch {
      // a failing debug hook never fails the call
    }
  }

  toJSON(): Record<string, unknown> {
    return { baseUrl: this.#baseUrl, clientId: this.#clientId, clientSecret: '[redacted]' };
  }
  [INSPECT](): string {
    return `MerchantDeliveryClient ${JSON.stringify(this.toJSON())}`;
  }
}
