import { INSPECT } from './redact.ts';

/** A cached access token. `refreshAt` is when the SDK stops using it and fetches a new one (before `expiresAt`). */
export interface CachedToken {
  accessToken: string;
  /** Epoch milliseconds: the end of the token's lifetime (`expires_in` after it was issued). */
  expiresAt: number;
  /** Epoch milliseconds: the refresh point, ahead of expiry by the refresh margin. */
  refreshAt: number;
}

/**
 * Where tokens are kept. The default is process memory; give a shared, secure cache (Redis with TLS
 * and ACLs, a secrets cache...) when several processes use the same credentials, so that they share
 * one token instead of each asking for its own. Keys name the API origin and the client id, never the
 * secret. Errors of the cache are ignored (the SDK then asks the token endpoint).
 */
export interface TokenCache {
  get(key: string): CachedToken | undefined | Promise<CachedToken | undefined>;
  set(key: string, token: CachedToken): void | Promise<void>;
  delete(key: string): void | Promise<void>;
}

/** The default TokenCache: a Map in this process. */
export class MemoryTokenCache implements TokenCache {
  readonly #tokens = new Map<string, CachedToken>();
  get(key: string): CachedToken | undefined {
    return this.#tokens.get(key);
  }
  set(key: string, token: CachedToken): void {
    this.#tokens.set(key, token);
  }
  delete(key: string): void {
    this.#tokens.delete(key);
  }
  toJSON(): string {
    return `MemoryTokenCache(${this.#tokens.size} token${this.#tokens.size === 1 ? '' : 's'})`;
  }
  [INSPECT](): string {
    return this.toJSON();
  }
}

export interface TokenManagerOptions {
  cacheKey: string;
  cache: TokenCache;
  refreshMarginMs: number;
  now: () => number;
  /** Asks the token endpoint; resolves with the token and its lifetime in seconds. */
  fetchToken: () => Promise<{ accessToken: string; expiresInSeconds: number }>;
}

/**
 * The client rules of the interface: one token, cached and reused until shortly before it expires;
 * calls made while a token is being fetched wait for that one request; a token the service calls
 * expired is dropped (only that token: a newer one fetched meanwhile stays).
 */
export class TokenManager {
  readonly #o: TokenManagerOptions;
  #current: CachedToken | undefined;
  #inflight: Promise<CachedToken> | undefined;

  constructor(options: TokenManagerOptions) {
    this.#o = options;
  }

  /** A usable token: the cached one, or the one being fetched, or a new one. */
  async token(signal?: AbortSignal): Promise<string> {
    const now = this.#o.now();
    if (this.#current && now < this.#current.refreshAt) return this.#current.accessToken;
    if (!this.#inflight) {
      this.#inflight = this.#obtain().finally(() => {
        this.#inflight = undefined;
      });
      // Waiters that gave up (aborted) leave no one listening: a failure then is not an unhandled rejection.
      this.#inflight.catch(() => {});
    }
    return (await abortable(this.#inflight, signal)).accessToken;
  }

  /** Forgets `accessToken` (the service answered ACCESS_TOKEN_EXPIRED for it). */
  async invalidate(accessToken: string): Promise<void> {
    if (this.#current?.accessToken === accessToken) this.#current = undefined;
    try {
      const shared = await this.#o.cache.get(this.#o.cacheKey);
      if (shared?.accessToken === accessToken) await this.#o.cache.delete(this.#o.cacheKey);
    } catch {
      // a failing shared cache only costs a token request
    }
  }

  async #obtain(): Promise<CachedToken> {
    try {
      const shared = await this.#o.cache.get(this.#o.cacheKey);
      if (shared && this.#o.now() < shared.refreshAt) {
        this.#current = shared;
        return shared;
      }
    } catch {
      // ignored: ask the token endpoint
    }
    const issuedAt = this.#o.now();
    const { accessToken, expiresInSeconds } = await this.#o.fetchToken();
    const lifetime = expiresInSeconds * 1000;
    // Ahead of expiry by the margin, but never later than half-way for short lifetimes.
    const token: CachedToken = {
      accessToken,
      expiresAt: issuedAt + lifetime,
      refreshAt: issuedAt + Math.min(Math.max(lifetime - this.#o.refreshMarginMs, lifetime / 2), lifetime),
    };
    this.#current = token;
    try {
      await this.#o.cache.set(this.#o.cacheKey, token);
    } catch {
      // ignored: the process keeps its copy
    }
    return token;
  }

  toJSON(): Record<string, unknown> {
    return { cacheKey: this.#o.cacheKey, cached: this.#current !== undefined };
  }
  [INSPECT](): string {
    return `TokenManager ${JSON.stringify(this.toJSON())}`;
  }
}

/** Waits for `promise`, or rejects with the signal's reason when it aborts first (the promise goes on for other waiters). */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
