// What every merchant request reads besides its own work (the credential's status, the merchant's own
// request limit) is kept for a moment and read once at a time: requests that arrive while it is being
// read wait for that read instead of each sending their own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseConnection } from 'kysely';
import { ExpiringCache } from '../src/lib/expiring-cache.ts';
import { describeEachStore } from './helpers/app.ts';

test('a value is read once for every request that asks while it is being read, and kept for its time', async () => {
  const cache = new ExpiringCache<string | null>(200);
  const reads: Array<PromiseWithResolvers<string | null>> = [];
  const read = (key: string) => {
    assert.equal(key, 'k');
    const d = Promise.withResolvers<string | null>();
    reads.push(d);
    return d.promise;
  };
  assert.equal(cache.peek('k'), undefined);
  const asked = Array.from({ length: 20 }, () => cache.get('k', read));
  assert.equal(reads.length, 1);
  reads[0].resolve(null); // a value may be null ("none"): kept like any other
  assert.deepEqual(await Promise.all(asked), Array(20).fill(null));
  assert.equal(cache.peek('k'), null);
  assert.equal(cache.get('k', read), null, 'kept: answered at once, without a promise');
  assert.equal(reads.length, 1);
  await sleep(250);
  assert.equal(cache.peek('k'), undefined, 'expired');
  const again = cache.get('k', read);
  assert.equal(reads.length, 2);
  reads[1].resolve('v2');
  assert.equal(await again, 'v2');
});

test('a failed read fails every request that waited for it, and is not kept', async () => {
  const cache = new ExpiringCache<number>(60_000);
  let reads = 0;
  const failing = Promise.withResolvers<number>();
  const readFailing = () => {
    reads++;
    return failing.promise;
  };
  const first = [cache.get('k', readFailing), cache.get('k', readFailing)];
  failing.reject(new Error('database away'));
  for (const p of first) await assert.rejects(p as Promise<number>, /database away/);
  assert.equal(reads, 1);
  assert.equal(cache.peek('k'), undefined);
  const readSeven = async () => {
    reads++;
    return 7;
  };
  assert.equal(await cache.get('k', readSeven), 7);
  assert.equal(reads, 2);
});

test('forget() during a read: those who asked get its answer, the next request reads again and only that answer is kept', async () => {
  const cache = new ExpiringCache<string>(60_000);
  const before = Promise.withResolvers<string>();
  const early = cache.get('k', () => before.promise);
  cache.forget('k'); // e.g. the credential revoked on this instance meanwhile
  const after = Promise.withResolvers<string>();
  let readsAfter = 0;
  const late = cache.get('k', () => {
    readsAfter++;
    return after.promise;
  });
  assert.equal(readsAfter, 1, 'a request after forget() does not join the read that started before it');
  before.resolve('active');
  assert.equal(await early, 'active');
  assert.equal(cache.peek('k'), undefined, 'the read from before forget() is not kept');
  after.resolve('revoked');
  assert.equal(await late, 'revoked');
  assert.equal(cache.peek('k'), 'revoked');
});

test('with a time of 0 nothing is kept or shared: every request reads', async () => {
  const cache = new ExpiringCache<number>(0);
  let reads = 0;
  const read = async () => ++reads;
  assert.deepEqual(await Promise.all([cache.get('k', read), cache.get('k', read), cache.get('k', read)]), [1, 2, 3]);
  assert.equal(cache.peek('k'), undefined);
});

describeEachStore(
  'the credential and the merchant limit behind a request',
  (ctx) => {
    test('thirty requests that find neither remembered wait for one read of each, then all are answered', async () => {
      const t = ctx();
      const m = await t.merchant('Remembered reads shop');
      const token = await t.token(m); // issuing reads the credential, but does not keep it for requests
      // Each read is held at the database, as a slow round trip would hold it, until every request has
      // asked for it: the credential first (authentication), then the merchant's limit (the rate limit).
      const gates = { credential: Promise.withResolvers<void>(), limit: Promise.withResolvers<void>() };
      const held = { credential: 0, limit: 0 };
      const asked = { credential: 0, limit: 0 };
      const executor = t.database.db.getExecutor();
      const provideConnection = executor.provideConnection.bind(executor);
      const wrapped = new WeakSet<DatabaseConnection>();
      executor.provideConnection = (consumer) =>
        provideConnection((connection) => {
          if (!wrapped.has(connection)) {
            wrapped.add(connection);
            const executeQuery = connection.executeQuery.bind(connection);
            connection.executeQuery = async (q) => {
              const which = /from "credentials" where "client_id"/.test(q.sql)
                ? 'credential'
                : /"rate_limit_per_minute" from "merchants"/.test(q.sql)
                  ? 'limit'
                  : undefined;
              if (which && (q.parameters as unknown[]).includes(which === 'credential' ? m.clientId : m.merchantId)) {
                held[which]++;
                await gates[which].promise;
              }
              return executeQuery(q);
            };
          }
          return consumer(connection);
        });
      // Who asked: every request authenticates, and every one that finds no limit kept asks for it.
      const { auth, merchants } = t.services;
      const authenticateNow = auth.authenticateNow;
      const rateLimitOf = merchants.rateLimitOf;
      auth.authenticateNow = (header) => {
        asked.credential++;
        return authenticateNow.call(auth, header);
      };
      merchants.rateLimitOf = (merchantId) => {
        asked.limit++;
        return rateLimitOf.call(merchants, merchantId);
      };
      // Quickly, or not at all: a value is kept 1 s from when its read started.
      const until = async (what: string, done: () => boolean) => {
        for (let i = 0; i < 50 && !done(); i++) await sleep(5);
        assert.ok(done(), `${what}: ${JSON.stringify({ asked, held })}`);
      };
      try {
        const answers = Array.from({ length: 30 }, () => t.as(token, { method: 'GET', url: '/warehouses' }));
        await until('all 30 authenticating while the credential is read', () => asked.credential === 30 && held.credential === 1);
        assert.equal(held.credential, 1);
        gates.credential.resolve();
        await until('all 30 asking for the limit while it is read', () => asked.limit === 30 && held.limit === 1);
        assert.equal(held.limit, 1);
        gates.limit.resolve();
        const done = await Promise.all(answers);
        assert.deepEqual(
          done.map((r) => r.statusCode),
          Array(30).fill(200),
        );
        assert.deepEqual(held, { credential: 1, limit: 1 });
        // Kept: the next request reads neither.
        assert.equal((await t.as(token, { method: 'GET', url: '/warehouses' })).statusCode, 200);
        assert.deepEqual(held, { credential: 1, limit: 1 });
      } finally {
        gates.credential.resolve();
        gates.limit.resolve();
        executor.provideConnection = provideConnection;
        auth.authenticateNow = authenticateNow;
        merchants.rateLimitOf = rateLimitOf;
      }
    });
  },
  { AUTH_CACHE_TTL_MS: '1000' },
);
