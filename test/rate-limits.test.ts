import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Response as LightMyRequestResponse } from 'light-my-request';
import { clockStore } from '../src/http/rate-limits.ts';
import { ManualClock } from '../src/lib/clock.ts';
import { createTestApp, describeEachStore, type TestApp, warehouseBody } from './helpers/app.ts';
import { type CliResult, mds } from './helpers/cli.ts';
import { STORES } from './helpers/stores.ts';

const LIMITS = {
  MERCHANT_RATE_LIMIT_PER_MINUTE: '3',
  COURIER_RATE_LIMIT_PER_MINUTE: '60',
  TOKEN_FAILURES_PER_CLIENT: '3',
  TOKEN_FAILURES_PER_ADDRESS: '5',
};

const NOWHERE = '01a20058-cb4a-7657-ba2b-fa105300957e';

/**
 * The RateLimit-Policy and RateLimit fields of an answer, read back: the policy's name, its quota
 * and window, what is left and the seconds until the window ends (all undefined when there are none).
 * Fails on any other form: both are structured-field items naming the same policy.
 */
const limitHeaders = (res: { headers: Record<string, unknown> }) => {
  const policy = res.headers['ratelimit-policy'];
  const state = res.headers.ratelimit;
  if (policy === undefined && state === undefined) return { policy: undefined, limit: undefined, window: undefined, remaining: undefined, reset: undefined };
  const p = /^"([a-z-]+)";q=(\d+);w=(\d+)$/.exec(String(policy));
  const r = /^"([a-z-]+)";r=(\d+);t=(\d+)$/.exec(String(state));
  assert.ok(p && r && p[1] === r[1], `RateLimit-Policy ${policy} and RateLimit ${state}`);
  return { policy: p[1], limit: p[2], window: p[3], remaining: r[2], reset: r[3] };
};

const cliJson = (r: CliResult) => {
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
};

describeEachStore(
  'rate limits',
  (ctx) => {
    test('merchant API: RateLimit headers on successes and errors; the 4th request in a minute is 429 RATE_LIMITED with Retry-After; the next window serves again', async () => {
      const t = ctx();
      const m = await t.merchant('Flooder');
      const ok = await t.as(m, { method: 'GET', url: '/balance' });
      assert.equal(ok.statusCode, 200);
      assert.deepEqual(limitHeaders(ok), { policy: 'merchant', limit: '3', window: '60', remaining: '2', reset: '60' });
      const notFound = await t.as(m, { method: 'GET', url: `/warehouses/${NOWHERE}` });
      assert.equal(notFound.statusCode, 404);
      assert.deepEqual(limitHeaders(notFound), { policy: 'merchant', limit: '3', window: '60', remaining: '1', reset: '60' });
      t.clock.advance(10_000);
      const invalid = await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: '' }) });
      assert.equal(invalid.statusCode, 400);
      assert.deepEqual(limitHeaders(invalid), { policy: 'merchant', limit: '3', window: '60', remaining: '0', reset: '50' });

      const limited = await t.as(m, { method: 'GET', url: '/balance', headers: { 'x-request-id': 'flood-1' } });
      assert.equal(limited.statusCode, 429);
      const { date, connection, ...headers } = limited.headers;
      assert.deepEqual(headers, {
        'content-type': 'application/problem+json; charset=utf-8',
        'content-length': String(Buffer.byteLength(limited.body)),
        'x-request-id': 'flood-1',
        'ratelimit-policy': '"merchant";q=3;w=60',
        ratelimit: '"merchant";r=0;t=50',
        'retry-after': '50',
      });
      assert.deepEqual(limited.json(), {
        type: 'RATE_LIMITED',
        title: 'Too many requests',
        status: 429,
        detail: 'Too many requests from this merchant (at most 3 a minute); retry in 50 s',
        requestId: 'flood-1',
      });

      // Per merchant: another merchant of the same address is not limited by the flood.
      const other = await t.merchant('Neighbour');
      const neighbour = await t.as(other, { method: 'GET', url: '/balance' });
      assert.equal(neighbour.statusCode, 200);
      assert.deepEqual(limitHeaders(neighbour), { policy: 'merchant', limit: '3', window: '60', remaining: '2', reset: '60' });

      t.clock.advance(50_000);
      const again = await t.as(m, { method: 'GET', url: '/balance' });
      assert.equal(again.statusCode, 200);
      assert.deepEqual(limitHeaders(again), { policy: 'merchant', limit: '3', window: '60', remaining: '2', reset: '60' });
    });

    test('a write refused by the limit does nothing: the warehouse is not created, and the same Idempotency-Key works in the next window', async () => {
      const t = ctx();
      const m = await t.merchant('Writer');
      for (let i = 0; i < 3; i++) assert.equal((await t.as(m, { method: 'GET', url: '/warehouses' })).statusCode, 200);
      const refused = await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody(), headers: { 'idempotency-key': 'wh-1' } });
      assert.equal(refused.statusCode, 429);
      t.clock.advance(60_000);
      const list = await t.as(m, { method: 'GET', url: '/warehouses' });
      assert.deepEqual(list.json(), []);
      const created = await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody(), headers: { 'idempotency-key': 'wh-1' } });
      assert.equal(created.statusCode, 201);
    });

    test("the operator's per-merchant limit (mds merchants set-limit) takes effect; --default returns to the configured default", async () => {
      const t = ctx();
      const m = await t.merchant('Big shop');
      assert.deepEqual(cliJson(await mds(t, 'merchants', 'set-limit', m.merchantId, '--per-minute', '5', '--json')), {
        merchantId: m.merchantId,
        rateLimitPerMinute: 5,
        effectivePerMinute: 5,
      });
      for (let i = 0; i < 5; i++) {
        const res = await t.as(m, { method: 'GET', url: '/balance' });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(limitHeaders(res), { policy: 'merchant', limit: '5', window: '60', remaining: String(4 - i), reset: '60' });
      }
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).statusCode, 429);

      const human = await mds(t, 'merchants', 'set-limit', m.merchantId, '--default');
      assert.equal(human.code, 0, human.stderr);
      assert.equal(
        human.stdout,
        // The CLI reports the default of its own environment (1200 when unset), which the servers share in production.
        `Merchant ${m.merchantId}: 1200 requests a minute (the default, MERCHANT_RATE_LIMIT_PER_MINUTE); every instance applies it within a second\n`,
      );
      await sleep(1100); // the instance's cached limit is at most a second old
      t.clock.advance(60_000);
      const back = await t.as(m, { method: 'GET', url: '/balance' });
      assert.deepEqual(limitHeaders(back), { policy: 'merchant', limit: '3', window: '60', remaining: '2', reset: '60' });

      // Refusals change nothing.
      const usage = await mds(t, 'merchants', 'set-limit', m.merchantId, '--json');
      assert.equal(usage.code, 2);
      assert.deepEqual(JSON.parse(usage.stdout), { error: 'USAGE', message: 'give exactly one of --per-minute N or --default' });
      assert.equal((await mds(t, 'merchants', 'set-limit', m.merchantId, '--per-minute', '0')).code, 2);
      assert.equal((await mds(t, 'merchants', 'set-limit', m.merchantId, '--per-minute', '9', '--default')).code, 2);
      const unknown = await mds(t, 'merchants', 'set-limit', randomUUID(), '--per-minute', '9', '--json');
      assert.equal(unknown.code, 1);
      assert.equal(JSON.parse(unknown.stdout).error, 'MERCHANT_NOT_FOUND');
      await assert.rejects(t.services.merchants.setRateLimit(m.merchantId, 1.5), { code: 'VALIDATION_FAILED' });
      assert.equal(await t.services.merchants.rateLimitOf(m.merchantId), null);
    });

    test('token endpoint: RateLimit headers give the failed attempts left to the address; 429 per address, whole answer; other addresses unaffected', async () => {
      const t = ctx();
      const m = await t.merchant('Tokens');
      const attempt = (secret: string, remoteAddress: string, clientId = m.clientId) =>
        t.request({
          method: 'POST',
          url: '/auth/token',
          remoteAddress,
          headers: { 'x-request-id': 'tok' },
          payload: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
        });
      const address = '198.51.100.20';
      const ok = await attempt(m.clientSecret, address);
      assert.equal(ok.statusCode, 200);
      assert.deepEqual(limitHeaders(ok), { policy: 'token-failures', limit: '5', window: '60', remaining: '5', reset: '60' });
      const wrong = await attempt('sk_wrong', address);
      assert.equal(wrong.statusCode, 401);
      assert.deepEqual(limitHeaders(wrong), { policy: 'token-failures', limit: '5', window: '60', remaining: '4', reset: '60' });
      t.clock.advance(5_000);
      for (let i = 0; i < 4; i++) assert.equal((await attempt('sk_wrong', address, `cli_guess${i}`)).statusCode, 401);
      // Malformed requests from an exhausted address are refused before they are read.
      const limited = await t.request({ method: 'POST', url: '/auth/token', remoteAddress: address, headers: { 'x-request-id': 'tok' }, payload: {} });
      assert.equal(limited.statusCode, 429);
      const { date, connection, ...headers } = limited.headers;
      assert.deepEqual(headers, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(limited.body)),
        'x-request-id': 'tok',
        'ratelimit-policy': '"token-failures";q=5;w=60',
        ratelimit: '"token-failures";r=0;t=55',
        'retry-after': '55',
      });
      assert.deepEqual(limited.json(), {
        type: 'RATE_LIMITED',
        title: 'Too many requests',
        status: 429,
        detail: 'Too many failed token requests; retry in 55 s',
        requestId: 'tok',
        error: 'invalid_request',
        error_description: 'Too many failed token requests',
      });
      const elsewhere = await attempt(m.clientSecret, '198.51.100.21');
      assert.equal(elsewhere.statusCode, 200);
      assert.deepEqual(limitHeaders(elsewhere), { policy: 'token-failures', limit: '5', window: '60', remaining: '5', reset: '60' });
    });

    test("token endpoint: one client id's failures from an address are a quota of their own, and its 429 names that policy", async () => {
      const t = ctx();
      const m = await t.merchant('Guessed');
      const attempt = (secret: string) =>
        t.request({
          method: 'POST',
          url: '/auth/token',
          remoteAddress: '198.51.100.50',
          payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: secret },
        });
      for (let i = 0; i < 3; i++) {
        const wrong = await attempt('sk_wrong');
        assert.equal(wrong.statusCode, 401);
        assert.deepEqual(limitHeaders(wrong), { policy: 'token-failures', limit: '5', window: '60', remaining: String(4 - i), reset: '60' });
      }
      // The address still has failures left; this client id from it has none, even with the right secret.
      const limited = await attempt(m.clientSecret);
      assert.equal(limited.statusCode, 429);
      assert.deepEqual(limitHeaders(limited), { policy: 'token-failures-client', limit: '3', window: '60', remaining: '0', reset: '60' });
    });

    test('courier API: counted per courier; position updates have a bucket of their own, so other calls never use up their once-a-second budget', async () => {
      const t = ctx();
      const c = await t.courier('Olga', { lat: 0, lng: 0 }); // PUT /courier/status: 1 of 60
      for (let i = 0; i < 59; i++) assert.equal((await t.as(c, { method: 'GET', url: '/courier/jobs' })).statusCode, 200);
      const limited = await t.as(c, { method: 'GET', url: '/courier/status' });
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.json().detail, 'Too many requests from this courier (at most 60 a minute); retry in 60 s');
      t.clock.advance(1000);
      const moved = await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat: 0.001, lng: 0.001 } });
      assert.equal(moved.statusCode, 204);
      assert.deepEqual(limitHeaders(moved), { policy: 'courier-location', limit: '60', window: '60', remaining: '59', reset: '60' });
      const other = await t.courier('Pyotr');
      assert.equal((await t.as(other, { method: 'GET', url: '/courier/status' })).statusCode, 200);
    });

    test('tracking page: RateLimit headers per address on the answers, the 404 included', async () => {
      const t = ctx();
      const res = await t.request({ method: 'GET', url: '/track/abc', remoteAddress: '198.51.100.30', headers: { accept: 'application/json' } });
      assert.equal(res.statusCode, 404);
      assert.deepEqual(limitHeaders(res), { policy: 'tracking', limit: '120', window: '60', remaining: '119', reset: '60' });
    });
  },
  LIMITS,
);

describe('RATE_LIMITS_ENABLED=false', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp('sqlite', { ...LIMITS, RATE_LIMITS_ENABLED: 'false' });
  });
  after(async () => t?.close());

  test('no request limit and no RateLimit headers on the merchant API; failed token attempts stay limited', async () => {
    const m = await t.merchant();
    for (let i = 0; i < 10; i++) {
      const res = await t.as(m, { method: 'GET', url: '/balance' });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(limitHeaders(res), { policy: undefined, limit: undefined, window: undefined, remaining: undefined, reset: undefined });
    }
    const wrong = await t.request({
      method: 'POST',
      url: '/auth/token',
      payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: 'sk_wrong' },
    });
    assert.deepEqual(limitHeaders(wrong), { policy: 'token-failures', limit: '5', window: '60', remaining: '4', reset: '60' });
  });
});

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function redisReachable(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

const redisUp = await redisReachable();
// CI installs and starts Redis (.ci/run) and sets REQUIRE_REDIS=1, so there this runs or fails; elsewhere
// a machine without Redis skips it and says why.
if (!redisUp && process.env.REQUIRE_REDIS === '1') throw new Error(`REQUIRE_REDIS=1 but Redis is unreachable at ${REDIS_URL}`);
const skipRedis = redisUp ? false : `Redis is unreachable at ${REDIS_URL} (start redis-server, or set TEST_REDIS_URL)`;

for (const store of STORES) {
  describe(`two instances [${store}]`, () => {
    test("sharing Redis (REDIS_URL), they share each merchant's count", { skip: skipRedis }, async () => {
      // A prefix of its own: parallel runs (and other projects) on the same Redis do not mix counts.
      const env = { ...LIMITS, REDIS_URL, RATE_LIMIT_REDIS_PREFIX: `mds-test:${randomUUID()}:` };
      const a = await createTestApp(store, env);
      const b = await createTestApp(store, env, a.store);
      try {
        const m = await a.merchant('Shared');
        const first = await a.as(m, { method: 'GET', url: '/balance' });
        assert.deepEqual(limitHeaders(first), { policy: 'merchant', limit: '3', window: '60', remaining: '2', reset: '60' });
        assert.equal(limitHeaders(await b.as(m, { method: 'GET', url: '/balance' })).remaining, '1');
        assert.equal(limitHeaders(await a.as(m, { method: 'GET', url: '/balance' })).remaining, '0');
        const limited = await b.as(m, { method: 'GET', url: '/balance' });
        assert.equal(limited.statusCode, 429);
        assert.equal(limited.json().type, 'RATE_LIMITED');
        assert.match(limited.headers['retry-after'] as string, /^(5\d|60)$/);
        // Failed token attempts are shared too.
        const wrong = (t: TestApp) =>
          t.request({
            method: 'POST',
            url: '/auth/token',
            remoteAddress: '198.51.100.40',
            payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: 'sk_wrong' },
          });
        assert.equal(limitHeaders(await wrong(a)).remaining, '4');
        assert.equal(limitHeaders(await wrong(b)).remaining, '3');
      } finally {
        await b.close();
        await a.close();
      }
    });

    test('in memory and in Redis, every limited scope answers alike: the same RateLimit headers, the same whole 429', { skip: skipRedis }, async () => {
      // In memory the scopes count synchronously in the service; with Redis the library's hook does (src/http/rate-limits.ts).
      const env = { ...LIMITS, TRACKING_RATE_LIMIT_PER_MINUTE: '2' };
      const memory = await createTestApp(store, env);
      const redis = await createTestApp(store, { ...env, REDIS_URL, RATE_LIMIT_REDIS_PREFIX: `mds-test:${randomUUID()}:` });
      const answers = async (t: TestApp) => {
        const seen: unknown[] = [];
        const keep = (res: LightMyRequestResponse) => {
          const { date, connection, 'x-request-id': requestId, ...headers } = res.headers;
          // Redis keeps real time: its window may have a second less left than the test clock's.
          if (headers['retry-after'] === '59') headers['retry-after'] = '60';
          if (typeof headers.ratelimit === 'string') headers.ratelimit = headers.ratelimit.replace(/;t=59$/, ';t=60');
          // A success's body holds ids of its own app; a refusal's is compared whole (its detail with the same second's grace).
          const body = res.statusCode >= 400 ? res.json() : undefined;
          if (typeof body?.detail === 'string') body.detail = body.detail.replace(/retry in 59 s$/, 'retry in 60 s');
          seen.push({ status: res.statusCode, headers, ...(body ? { body } : {}) });
        };
        const m = await t.merchant('Alike');
        for (let i = 0; i < 4; i++) keep(await t.as(m, { method: 'GET', url: `/warehouses/${NOWHERE}`, headers: { 'x-request-id': `m${i}` } }));
        // A merchant's own limit: read from the database first, then from the instance's cache.
        const own = await t.merchant('Own limit');
        await t.services.merchants.setRateLimit(own.merchantId, 2);
        for (let i = 0; i < 3; i++) keep(await t.as(own, { method: 'GET', url: '/balance', headers: { 'x-request-id': `o${i}` } }));
        const c = await t.courier('Alike', { lat: 0, lng: 0 }); // PUT /courier/status: 1 of 60
        for (let i = 0; i < 58; i++) assert.equal((await t.as(c, { method: 'GET', url: '/courier/jobs' })).statusCode, 200);
        for (let i = 0; i < 2; i++) keep(await t.as(c, { method: 'GET', url: '/courier/status', headers: { 'x-request-id': `c${i}` } }));
        for (let i = 0; i < 3; i++) {
          keep(
            await t.request({
              method: 'GET',
              url: '/track/abc',
              remoteAddress: '198.51.100.31',
              headers: { accept: 'application/json', 'x-request-id': `t${i}` },
            }),
          );
        }
        return seen;
      };
      try {
        const inMemory = await answers(memory);
        assert.deepEqual(await answers(redis), inMemory);
        // What both answered: each scope's last answer is its 429.
        assert.deepEqual(
          inMemory.map((a) => (a as { status: number }).status),
          [404, 404, 404, 429, 200, 200, 429, 200, 429, 404, 404, 429],
        );
        assert.deepEqual(inMemory[3], {
          status: 429,
          headers: {
            'content-type': 'application/problem+json; charset=utf-8',
            'content-length': '165',
            'ratelimit-policy': '"merchant";q=3;w=60',
            ratelimit: '"merchant";r=0;t=60',
            'retry-after': '60',
          },
          body: {
            type: 'RATE_LIMITED',
            title: 'Too many requests',
            status: 429,
            detail: 'Too many requests from this merchant (at most 3 a minute); retry in 60 s',
            requestId: 'm3',
          },
        });
      } finally {
        await redis.close();
        await memory.close();
      }
    });

    test('with Redis down, requests are served unlimited and carry no RateLimit fields (nothing was counted)', async () => {
      const t = await createTestApp(store, { ...LIMITS, REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_REDIS_PREFIX: `mds-test:${randomUUID()}:` });
      try {
        const m = await t.merchant('No Redis');
        for (let i = 0; i < 4; i++) {
          const res = await t.as(m, { method: 'GET', url: '/balance' });
          assert.equal(res.statusCode, 200, res.body);
          assert.deepEqual(limitHeaders(res), { policy: undefined, limit: undefined, window: undefined, remaining: undefined, reset: undefined });
        }
      } finally {
        await t.close();
      }
    });

    test('without REDIS_URL, each instance counts alone', async () => {
      const a = await createTestApp(store, LIMITS);
      const b = await createTestApp(store, LIMITS, a.store);
      try {
        const m = await a.merchant('Apart');
        for (let i = 0; i < 3; i++) assert.equal((await a.as(m, { method: 'GET', url: '/balance' })).statusCode, 200);
        assert.equal((await a.as(m, { method: 'GET', url: '/balance' })).statusCode, 429);
        const fresh = await b.as(m, { method: 'GET', url: '/balance' });
        assert.equal(fresh.statusCode, 200);
        assert.deepEqual(limitHeaders(fresh), { policy: 'merchant', limit: '3', window: '60', remaining: '2', reset: '60' });
      } finally {
        await b.close();
        await a.close();
      }
    });
  });
}

test('the in-memory store: counts in fixed windows on the service clock, stays bounded in a flood of distinct keys without forgetting recent ones', () => {
  const clock = new ManualClock();
  const store = clockStore(clock);
  const incr = (key: string) => {
    let out: { current: number; ttl: number } | undefined;
    store.incr(key, (_e, r) => (out = r), 60_000);
    return out;
  };
  assert.deepEqual(incr('a'), { current: 1, ttl: 60_000 });
  clock.advance(30_000);
  assert.deepEqual(incr('a'), { current: 2, ttl: 30_000 });
  clock.advance(30_000);
  assert.deepEqual(incr('a'), { current: 1, ttl: 60_000 }, 'a new window');
  clock.advance(-3_600_000); // the clock jumps back an hour: a fresh window, not one that never ends
  assert.deepEqual(incr('a'), { current: 1, ttl: 60_000 });

  for (let i = 0; i < 99_000; i++) incr(`flood-${i}`);
  incr('recent');
  incr('recent');
  for (let i = 99_000; i < 105_000; i++) incr(`flood-${i}`); // passes the 100 000-key bound
  assert.deepEqual(incr('recent'), { current: 3, ttl: 60_000 }, 'a recent key keeps its count through the flood');
  assert.deepEqual(incr('flood-0'), { current: 1, ttl: 60_000 }, 'the oldest keys went first');
});
