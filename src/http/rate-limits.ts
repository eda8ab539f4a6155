import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify';
import type { Redis } from 'ioredis';
import type { Clock } from '../lib/clock.ts';
import { AppError, type ErrorCode } from '../lib/errors.ts';
import { problemResponses } from '../lib/schemas.ts';

/**
 * The one rate limiter of the service: @fastify/rate-limit, fixed windows of a minute, one flood
 * policy everywhere (count every request in the window; over the limit, 429 RATE_LIMITED with
 * Retry-After until the window ends; no bans, no growing penalties). Its counters live in memory per
 * instance (on the service's clock, so tests and the clock-jump family can move it), or in Redis when
 * REDIS_URL is set, shared by every instance.
 *
 * Who is counted:
 * - merchant API: per merchant (after authentication), MERCHANT_RATE_LIMIT_PER_MINUTE or the
 *   merchant's own limit (`mds merchants set-limit`);
 * - courier API: per courier, COURIER_RATE_LIMIT_PER_MINUTE, with POST /courier/location in a bucket
 *   of its own so that other calls never use up the position updates' budget;
 * - tracking page: per client address, TRACKING_RATE_LIMIT_PER_MINUTE;
 * - token endpoint: failed attempts per address and per client id from that address
 *   (TOKEN_FAILURES_PER_ADDRESS, TOKEN_FAILURES_PER_CLIENT in TOKEN_FAILURE_WINDOW_SECONDS).
 *
 * Every answer of a limited route carries the IETF RateLimit-Policy and RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers, structured fields: `"merchant";q=1200;w=60` and
 * `"merchant";r=1187;t=42`); a 429 adds Retry-After. The library emits the older draft's three
 * RateLimit-Limit/-Remaining/-Reset fields, so its answers (with Redis) are rewritten to these.
 *
 * Why the API's scopes count in memory without the library's hook: that hook is async all the way (the
 * key, the limit and the store's callback each awaited), which cost ~3 KiB of garbage an answer, an
 * eighth of what a single-row read allocated (docs/benchmarks.md, "Tenth pass"). In memory nothing needs
 * to wait, so `countNow` increments the same store synchronously and answers exactly as the library
 * does: the same counts, the same 429 (test/rate-limits.test.ts runs the merchant, courier and tracking
 * scopes with and without Redis). With Redis the library's hook counts, as before.
 */

export const WINDOW_MS = 60_000;
const WINDOW_SECONDS = WINDOW_MS / 1000;

export interface RateLimitSettings {
  enabled: boolean;
  merchantPerMinute: number;
  courierPerMinute: number;
  trackingPerMinute: number;
  tokenFailuresPerClient: number;
  tokenFailuresPerAddress: number;
  tokenFailureWindowMs: number;
  /** Shared counters; undefined: in memory, per instance. */
  redis?: Redis;
  redisPrefix: string;
  clock: Clock;
  /** The merchant's own limit (null: the default); may be cached briefly. */
  merchantLimit: (merchantId: string) => Promise<number | null>;
  /** The same if it is cached now (undefined: not), so that the in-memory count can stay synchronous. */
  cachedMerchantLimit: (merchantId: string) => number | null | undefined;
}

/** The hooks that limit each scope, and the token endpoint's failure counters. */
export interface RateLimits {
  merchants: onRequestHookHandler;
  couriers: onRequestHookHandler;
  tracking: onRequestHookHandler;
  /** Token endpoint, before anything else: refuses an address that has failed too often, and says how many failures it has left. */
  tokenAddress: onRequestAsyncHookHandler;
  tokenFailures: TokenFailures;
}

export interface TokenFailures {
  /** Refuses (429) a client id that has failed too often from this address. */
  checkClient(request: FastifyRequest, reply: FastifyReply, clientId: string): Promise<void>;
  /** Counts a failed attempt against the address and the client id from it. */
  recordFailure(request: FastifyRequest, reply: FastifyReply, clientId: string): Promise<void>;
}

/** The policies' names in the RateLimit fields: which count an answer reports. */
export type Policy = 'merchant' | 'courier' | 'courier-location' | 'tracking' | 'token-failures' | 'token-failures-client';

const MAX_KEYS = 100_000;

/**
 * The library's in-memory store, on the service's clock. Bounded: past MAX_KEYS the least recently
 * used keys go first (a Map iterates in insertion order; a hit moves its key to the end), so a flood
 * of distinct keys cannot grow memory nor make the limiter forget the keys being counted now.
 */
export function clockStore(clock: Clock) {
  const windows = new Map<string, { current: number; start: number }>();
  const store = {
    /** Counts one request under key: how many the window holds now, and the ms left in it. */
    hit(key: string, timeWindow: number): { current: number; ttl: number } {
      const now = clock.now();
      let w = windows.get(key);
      if (w) windows.delete(key);
      if (!w || w.start + timeWindow <= now || w.start > now) w = { current: 0, start: now };
      w.current++;
      windows.set(key, w);
      if (windows.size > MAX_KEYS) windows.delete(windows.keys().next().value as string);
      return { current: w.current, ttl: w.start + timeWindow - now };
    },
    // The library's store interface.
    incr(key: string, cb: (err: Error | null, res?: { current: number; ttl: number }) => void, timeWindow: number) {
      cb(null, store.hit(key, timeWindow));
    },
    read(key: string, cb: (err: Error | null, res?: { current: number; ttl: number }) => void, timeWindow: number) {
      const now = clock.now();
      const w = windows.get(key);
      if (!w || w.start + timeWindow <= now || w.start > now) cb(null, { current: 0, ttl: 0 });
      else cb(null, { current: w.current, ttl: w.start + timeWindow - now });
    },
    // One map for every limiter: their keys carry their own prefix.
    child: () => store,
  };
  return store;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * The two fields of draft-ietf-httpapi-ratelimit-headers: RateLimit-Policy (the quota q in a window of
 * w seconds) and RateLimit (r left, t seconds until the window ends), both naming the policy counted.
 */
function setHeaders(reply: FastifyReply, policy: Policy, limit: number, remaining: number, resetSeconds: number, windowSeconds: number): void {
  reply.header('ratelimit-policy', `"${policy}";q=${limit};w=${windowSeconds}`).header('ratelimit', `"${policy}";r=${remaining};t=${resetSeconds}`);
}

const DRAFT_FIELDS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] as const;

/**
 * The library's older-draft fields (its hook, with Redis) rewritten as setHeaders' two. When Redis
 * failed (skipOnError) the library counted nothing and still sends a window that ends now (reset 0):
 * then no fields at all, as when the limits are off, rather than a full quota that means nothing.
 */
function rewriteLibraryHeaders(reply: FastifyReply, policy: Policy, windowSeconds: number): void {
  const [limit, remaining, reset] = DRAFT_FIELDS.map((name) => reply.getHeader(name));
  if (limit === undefined) return;
  for (const name of DRAFT_FIELDS) reply.removeHeader(name);
  if (Number(reset) > 0) setHeaders(reply, policy, Number(limit), Number(remaining), Number(reset), windowSeconds);
}

function rateLimited(detail: string, retryAfter: number, extra?: Record<string, unknown>): AppError {
  return new AppError('RATE_LIMITED', detail, { headers: { 'retry-after': String(retryAfter) }, ...(extra ? { extra } : {}) });
}

const address = (request: FastifyRequest) => normalizeIP(request.ip);

const who = (request: FastifyRequest) => (request.courier ? 'this courier' : request.principal ? 'this merchant' : 'this address');

/** The library's 429 for a scope: its detail names who is counted, and Retry-After the seconds left. */
const tooMany = (request: FastifyRequest, max: number, ttl: number) =>
  rateLimited(`Too many requests from ${who(request)} (at most ${max} a minute); retry in ${seconds(ttl)} s`, seconds(ttl));

/**
 * Counts the request in the in-memory store and sets the RateLimit fields from the same counts as the
 * library's hook (remaining never below 0, reset in whole seconds); over the limit, the 429 to answer with.
 */
function countNow(
  store: ReturnType<typeof clockStore>,
  request: FastifyRequest,
  reply: FastifyReply,
  policy: Policy,
  key: string,
  max: number,
): AppError | undefined {
  const { current, ttl } = store.hit(key, WINDOW_MS);
  const reset = Math.ceil(ttl / 1000);
  if (current <= max) {
    setHeaders(reply, policy, max, max - current, reset, WINDOW_SECONDS);
    return undefined;
  }
  setHeaders(reply, policy, max, 0, reset, WINDOW_SECONDS);
  return tooMany(request, max, ttl); // its Retry-After comes with it
}

/** Registers the limiter (global: false, so only the hooks below limit anything) and builds the hooks. */
export async function registerRateLimits(app: FastifyInstance, s: RateLimitSettings): Promise<RateLimits> {
  const store = clockStore(s.clock);
  await app.register(rateLimit, {
    global: false,
    enableDraftSpec: true,
    timeWindow: WINDOW_MS,
    // A Redis that is down or slow must not take the API with it: the limit is skipped (and logged by the client's error handler).
    skipOnError: true,
    ...(s.redis
      ? { redis: s.redis, nameSpace: s.redisPrefix }
      : {
          store: function ClockStore() {
            return store;
          } as never,
        }),
    errorResponseBuilder: (request, context) => tooMany(request, context.max, context.ttl),
  });

  const off: onRequestHookHandler = (_request, _reply, done) => done();
  /**
   * A scope's hook: requests counted per policy and whoOf (its count's key is "policy:who"), at most maxOf
   * a minute (a promise only when the limit must be read first). In memory, synchronous whenever the
   * limit is known; with Redis, the library's.
   */
  const limiter = (
    policyOf: (r: FastifyRequest) => Policy,
    whoOf: (r: FastifyRequest) => string,
    maxOf: (r: FastifyRequest) => number | Promise<number>,
  ): onRequestHookHandler => {
    if (!s.enabled) return off;
    if (s.redis) {
      const keyGenerator = (r: FastifyRequest) => `${policyOf(r)}:${whoOf(r)}`;
      const hook = app.rateLimit({ keyGenerator, max: async (r) => maxOf(r), timeWindow: WINDOW_MS }) as unknown as onRequestAsyncHookHandler;
      return (request, reply, done) =>
        void hook.call(app, request, reply).then(
          () => {
            rewriteLibraryHeaders(reply, policyOf(request), WINDOW_SECONDS);
            done();
          },
          (err) => {
            rewriteLibraryHeaders(reply, policyOf(request), WINDOW_SECONDS); // a 429 too
            done(err);
          },
        );
    }
    return (request, reply, done) => {
      const policy = policyOf(request);
      const key = `${policy}:${whoOf(request)}`;
      const max = maxOf(request);
      if (typeof max === 'number') return done(countNow(store, request, reply, policy, key, max));
      max.then((m) => done(countNow(store, request, reply, policy, key, m)), done);
    };
  };

  const failures = (max: number, keyOf: (r: FastifyRequest, clientId: string) => string) => {
    const pending = new WeakMap<FastifyRequest, string>();
    const check = app.createRateLimit({ max, timeWindow: s.tokenFailureWindowMs, keyGenerator: (r) => keyOf(r, pending.get(r) ?? '') });
    return async (request: FastifyRequest, clientId: string, increment: boolean) => {
      pending.set(request, clientId);
      const result = await check(request, { increment });
      if (result.isAllowed) throw new Error('unreachable: no allow list');
      return result;
    };
  };
  const perAddress = failures(s.tokenFailuresPerAddress, (r) => `token-failures:address:${address(r)}`);
  const perClient = failures(s.tokenFailuresPerClient, (r, clientId) => `token-failures:client:${address(r)} ${clientId}`);
  const windowSeconds = seconds(s.tokenFailureWindowMs);
  const TOKEN_EXTRA = { error: 'invalid_request', error_description: 'Too many failed token requests' };

  return {
    merchants: limiter(
      () => 'merchant',
      (r) => r.principal.merchantId,
      (r) => {
        const own = s.cachedMerchantLimit(r.principal.merchantId);
        if (own !== undefined) return own ?? s.merchantPerMinute;
        return s.merchantLimit(r.principal.merchantId).then((read) => read ?? s.merchantPerMinute);
      },
    ),
    // Position updates count apart: a courier reporting once a second (60 a minute, below the lowest allowed limit) is never refused.
    couriers: limiter(
      (r) => (r.routeOptions.url === '/courier/location' ? 'courier-location' : 'courier'),
      (r) => r.courier.courierId,
      () => s.courierPerMinute,
    ),
    tracking: limiter(
      () => 'tracking',
      address,
      () => s.trackingPerMinute,
    ),
    tokenAddress: async (request, reply) => {
      const a = await perAddress(request, '', false);
      if (a.remaining === 0 && a.ttl > 0) {
        setHeaders(reply, 'token-failures', a.max, 0, seconds(a.ttl), windowSeconds);
        throw rateLimited(`Too many failed token requests; retry in ${seconds(a.ttl)} s`, seconds(a.ttl), TOKEN_EXTRA);
      }
      setHeaders(reply, 'token-failures', a.max, a.remaining, a.ttl > 0 ? seconds(a.ttl) : windowSeconds, windowSeconds);
    },
    tokenFailures: {
      async checkClient(request, reply, clientId) {
        const c = await perClient(request, clientId, false);
        if (c.remaining === 0 && c.ttl > 0) {
          // This refusal is the client id's own count (from this address), a quota of its own: named apart.
          setHeaders(reply, 'token-failures-client', c.max, 0, seconds(c.ttl), windowSeconds);
          throw rateLimited(`Too many failed token requests; retry in ${seconds(c.ttl)} s`, seconds(c.ttl), TOKEN_EXTRA);
        }
      },
      async recordFailure(request, reply, clientId) {
        const [a] = await Promise.all([perAddress(request, clientId, true), perClient(request, clientId, true)]);
        setHeaders(reply, 'token-failures', a.max, a.remaining, seconds(a.ttl), windowSeconds);
      },
    },
  };
}

/**
 * Documents a scope's limit in OpenAPI: the RateLimit-Policy and RateLimit fields on every response of its operations,
 * and the 429 RATE_LIMITED answer. Call before the scope's routes are registered.
 */
export function documentRateLimit(scope: FastifyInstance, problemMediaType = 'application/problem+json'): void {
  const headers = {
    'ratelimit-policy': {
      type: 'string',
      description:
        "The quota counted (IETF draft-ietf-httpapi-ratelimit-headers, a structured field): the policy's name, q the requests its window allows, w the window in seconds, e.g. `\"merchant\";q=1200;w=60`. Policies: `merchant` (per merchant), `courier` and `courier-location` (per courier), `tracking` (per address), `token-failures` (failed token requests from the client's address), `token-failures-client` (on the 429 for one client id's failures from that address)",
    },
    ratelimit: {
      type: 'string',
      description:
        'What is left of that quota: the same policy\'s name, r the requests left in the current window, t the seconds until it ends and the count starts again, e.g. `"merchant";r=1187;t=42`',
    },
  };
  scope.addHook('onRoute', (route) => {
    const schema = route.schema as { hide?: boolean; response?: Record<string, Record<string, unknown>> } | undefined;
    if (!schema?.response || schema.hide) return;
    const tooMany = problemResponses(['RATE_LIMITED' as ErrorCode], {}, problemMediaType)[429] as Record<string, unknown>;
    const response: Record<string, Record<string, unknown>> = { ...schema.response, 429: { ...(schema.response[429] ?? tooMany) } };
    for (const [status, r] of Object.entries(response)) {
      response[status] = { ...r, headers: { ...((r.headers as object) ?? {}), ...headers } };
    }
    route.schema = { ...route.schema, response };
  });
}
