import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
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
 * Every answer of a limited route carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
 * (the library's IETF draft headers); a 429 adds Retry-After.
 */

export const WINDOW_MS = 60_000;

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
}

/** The hooks that limit each scope, and the token endpoint's failure counters. */
export interface RateLimits {
  merchants: onRequestAsyncHookHandler;
  couriers: onRequestAsyncHookHandler;
  tracking: onRequestAsyncHookHandler;
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

export const RATE_LIMIT_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] as const;

const MAX_KEYS = 100_000;

/**
 * The library's in-memory store, on the service's clock. Bounded: past MAX_KEYS the least recently
 * used keys go first (a Map iterates in insertion order; a hit moves its key to the end), so a flood
 * of distinct keys cannot grow memory nor make the limiter forget the keys being counted now.
 */
export function clockStore(clock: Clock) {
  const windows = new Map<string, { current: number; start: number }>();
  const store = {
    incr(key: string, cb: (err: Error | null, res?: { current: number; ttl: number }) => void, timeWindow: number) {
      const now = clock.now();
      let w = windows.get(key);
      if (w) windows.delete(key);
      if (!w || w.start + timeWindow <= now || w.start > now) w = { current: 0, start: now };
      w.current++;
      windows.set(key, w);
      if (windows.size > MAX_KEYS) windows.delete(windows.keys().next().value as string);
      cb(null, { current: w.current, ttl: w.start + timeWindow - now });
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

function setHeaders(reply: FastifyReply, limit: number, remaining: number, resetSeconds: number): void {
  reply.header('ratelimit-limit', limit).header('ratelimit-remaining', remaining).header('ratelimit-reset', resetSeconds);
}

function rateLimited(detail: string, retryAfter: number, extra?: Record<string, unknown>): AppError {
  return new AppError('RATE_LIMITED', detail, { headers: { 'retry-after': String(retryAfter) }, ...(extra ? { extra } : {}) });
}

const address = (request: FastifyRequest) => normalizeIP(request.ip);

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
    errorResponseBuilder: (request, context) => {
      const wait = seconds(context.ttl);
      const who = request.courier ? 'this courier' : request.principal ? 'this merchant' : 'this address';
      return rateLimited(`Too many requests from ${who} (at most ${context.max} a minute); retry in ${wait} s`, wait);
    },
  });

  const off: onRequestAsyncHookHandler = async () => {};
  const limiter = (keyGenerator: (r: FastifyRequest) => string, max: number | ((r: FastifyRequest) => Promise<number>)) =>
    s.enabled ? (app.rateLimit({ keyGenerator, max, timeWindow: WINDOW_MS }) as unknown as onRequestAsyncHookHandler) : off;

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
      (r) => `merchant:${r.principal.merchantId}`,
      async (r) => (await s.merchantLimit(r.principal.merchantId)) ?? s.merchantPerMinute,
    ),
    // Position updates count apart: a courier reporting once a second (60 a minute, below the lowest allowed limit) is never refused.
    couriers: limiter((r) => `courier:${r.courier.courierId}${r.routeOptions.url === '/courier/location' ? ':location' : ''}`, s.courierPerMinute),
    tracking: limiter((r) => `track:${address(r)}`, s.trackingPerMinute),
    tokenAddress: async (request, reply) => {
      const a = await perAddress(request, '', false);
      if (a.remaining === 0 && a.ttl > 0) {
        setHeaders(reply, a.max, 0, seconds(a.ttl));
        throw rateLimited(`Too many failed token requests; retry in ${seconds(a.ttl)} s`, seconds(a.ttl), TOKEN_EXTRA);
      }
      setHeaders(reply, a.max, a.remaining, a.ttl > 0 ? seconds(a.ttl) : windowSeconds);
    },
    tokenFailures: {
      async checkClient(request, reply, clientId) {
        const c = await perClient(request, clientId, false);
        if (c.remaining === 0 && c.ttl > 0) {
          setHeaders(reply, c.max, 0, seconds(c.ttl));
          throw rateLimited(`Too many failed token requests; retry in ${seconds(c.ttl)} s`, seconds(c.ttl), TOKEN_EXTRA);
        }
      },
      async recordFailure(request, reply, clientId) {
        const [a] = await Promise.all([perAddress(request, clientId, true), perClient(request, clientId, true)]);
        setHeaders(reply, a.max, a.remaining, seconds(a.ttl));
      },
    },
  };
}

/**
 * Documents a scope's limit in OpenAPI: the RateLimit headers on every response of its operations,
 * and the 429 RATE_LIMITED answer. Call before the scope's routes are registered.
 */
export function documentRateLimit(scope: FastifyInstance, problemMediaType = 'application/problem+json'): void {
  const headers = {
    'ratelimit-limit': {
      type: 'integer',
      description:
        "Requests the current window (a minute) allows: per merchant, per courier or per address, as the operation says; on the token endpoint, failed attempts from the client's address",
    },
    'ratelimit-remaining': { type: 'integer', description: 'How many of them are left in the current window' },
    'ratelimit-reset': { type: 'integer', description: 'Seconds until the current window ends and the count starts again' },
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
