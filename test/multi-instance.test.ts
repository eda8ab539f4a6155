import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { type Kysely, sql } from 'kysely';
import { inTransaction, MAX_ATTEMPTS } from '../src/db/transaction.ts';
import type { DB } from '../src/db/types.ts';
import { registerErrorHandling } from '../src/http/error-handler.ts';
import { AppError } from '../src/lib/errors.ts';
import { parseMajorAmount } from '../src/lib/money.ts';
import {
  ApiClient,
  cli,
  createMerchant,
  fetchToken,
  type HttpResult,
  merchantTotals,
  openStore,
  payableMinor,
  pool,
  type ServerProcess,
  type StoreAccess,
  startServerProcess,
  tally,
} from './helpers/server-process.ts';
import { adminQuery, createStore, PGBOUNCER_URL, postgresOnly, type StoreName, type TestStore } from './helpers/stores.ts';

const SKIP_PG = postgresOnly('multi-instance and real-PostgreSQL retry tests');

const RETRY_CHANNEL = 'mds:transaction-retry';

/** Collects what inTransaction publishes on every retry in this process. */
function watchRetries() {
  const seen: Array<{ attempt: number; code: string; delayMs: number }> = [];
  const listener = (m: unknown) => void seen.push(m as (typeof seen)[number]);
  subscribe(RETRY_CHANNEL, listener);
  return { seen, stop: () => unsubscribe(RETRY_CHANNEL, listener) };
}

/** A Kysely stand-in whose transactions run fn with a dummy transaction: enough for inTransaction. */
function fakeDb(): Kysely<DB> {
  return { transaction: () => ({ execute: (fn: (trx: unknown) => Promise<unknown>) => fn({}) }) } as unknown as Kysely<DB>;
}

const pgError = (code: string) => Object.assign(new Error(`simulated ${code}`), { code });

describe('inTransaction: bounded, jittered retry of serialization failures and deadlocks', () => {
  test('retries 40001, 40P01 and SQLITE_BUSY with jittered backoff, then returns the result', async () => {
    const retries = watchRetries();
    try {
      const failures = [pgError('40001'), pgError('40P01'), Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode: 5 })];
      let attempts = 0;
      const result = await inTransaction(fakeDb(), async () => {
        attempts++;
        const failure = failures.shift();
        if (failure) throw failure;
        return 'committed';
      });
      assert.equal(result, 'committed');
      assert.equal(attempts, 4);
      assert.deepEqual(
        retries.seen.map((r) => [r.attempt, r.code]),
        [
          [1, '40001'],
          [2, '40P01'],
          [3, 'ERR_SQLITE_ERROR'],
        ],
      );
      for (const r of retries.seen)
        assert.ok(r.delayMs >= 0 && r.delayMs <= 10 * 2 ** r.attempt, `delay ${r.delayMs} ms within the jitter window of attempt ${r.attempt}`);
    } finally {
      retries.stop();
    }
  });

  test(`gives up after ${MAX_ATTEMPTS} attempts (well under a second) and the client gets 503 SERVICE_UNAVAILABLE, not 500`, async () => {
    let attempts = 0;
    const started = performance.now();
    await assert.rejects(
      inTransaction(fakeDb(), async () => {
        attempts++;
        throw pgError('40001');
      }),
      { code: '40001' },
    );
    assert.equal(attempts, MAX_ATTEMPTS);
    assert.ok(performance.now() - started < 1000, 'the whole backoff is bounded');

    const app = Fastify({ logger: false, genReqId: (req) => String(req.headers['x-request-id']) });
    registerErrorHandling(app);
    app.get('/always-conflicting', () => inTransaction(fakeDb(), async () => Promise.reject(pgError('40001'))));
    app.get('/always-deadlocked', () => inTransaction(fakeDb(), async () => Promise.reject(pgError('40P01'))));
    for (const url of ['/always-conflicting', '/always-deadlocked']) {
      const res = await app.inject({ method: 'GET', url, headers: { 'x-request-id': 'rid-retry' } });
      assert.equal(res.statusCode, 503, url);
      assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
      assert.equal(res.headers['retry-after'], '1');
      assert.deepEqual(res.json(), {
        type: 'SERVICE_UNAVAILABLE',
        title: 'Service unavailable',
        status: 503,
        detail: 'The service is temporarily unavailable; retry shortly',
        requestId: 'rid-retry',
      });
    }
    await app.close();
  });

  test('business refusals and other errors are not retried', async () => {
    for (const error of [new AppError('QUOTE_ALREADY_USED', 'used'), pgError('23505'), new Error('boom')]) {
      let attempts = 0;
      await assert.rejects(
        inTransaction(fakeDb(), async () => {
          attempts++;
          throw error;
        }),
        (e) => e === error,
      );
      assert.equal(attempts, 1, String(error));
    }
  });
});

describe('inTransaction on real PostgreSQL (SERIALIZABLE)', { skip: SKIP_PG }, () => {
  let store: TestStore;
  let access: StoreAccess;
  before(async () => {
    store = await createStore('postgres');
    access = await openStore({ ...store.env, DATABASE_ISOLATION: 'serializable' });
  });
  after(async () => {
    await access?.close();
    await store?.cleanup();
  });

  test('a real serialization failure (40001) is retried and the transaction then commits', async () => {
    const m = await createMerchant(access, 'Serialization', '0');
    const { db } = access.database;
    const retries = watchRetries();
    let attempts = 0;
    try {
      const isolation = await inTransaction(db, async (trx) => {
        attempts++;
        const level = (await sql<{ level: string }>`select current_setting('transaction_isolation') as level`.execute(trx)).rows[0].level;
        await trx.selectFrom('merchants').select('name').where('id', '=', m.merchantId).executeTakeFirstOrThrow(); // takes the snapshot
        if (attempts === 1) await adminQuery(`update ${store.schema}.merchants set name = 'changed meanwhile' where id = $1`, [m.merchantId]);
        await trx
          .updateTable('merchants')
          .set({ name: `written on attempt ${attempts}` })
          .where('id', '=', m.merchantId)
          .execute();
        return level;
      });
      assert.equal(isolation, 'serializable');
    } finally {
      retries.stop();
    }
    assert.equal(attempts, 2);
    assert.deepEqual(
      retries.seen.map((r) => r.code),
      ['40001'],
    );
    const row = await db.selectFrom('merchants').select('name').where('id', '=', m.merchantId).executeTakeFirstOrThrow();
    assert.equal(row.name, 'written on attempt 2');
  });

  test('a real deadlock (40P01) is retried: both transactions commit', async () => {
    const a = await createMerchant(access, 'Deadlock A', '0');
    const b = await createMerchant(access, 'Deadlock B', '0');
    const { db } = access.database;
    const retries = watchRetries();
    // Each transaction locks one row, waits until the other has locked the other row, then wants it.
    let arrived = 0;
    let release!: () => void;
    const bothLocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const crossing = (first: string, second: string) => {
      let attempts = 0;
      return inTransaction(db, async (trx) => {
        attempts++;
        await trx
          .updateTable('merchants')
          .set({ name: `locked by ${first}` })
          .where('id', '=', first)
          .execute();
        if (attempts === 1) {
          if (++arrived === 2) release();
          await bothLocked;
        }
        await trx
          .updateTable('merchants')
          .set({ name: `locked by ${first}` })
          .where('id', '=', second)
          .execute();
        return attempts;
      });
    };
    try {
      const attempts = await Promise.all([crossing(a.merchantId, b.merchantId), crossing(b.merchantId, a.merchantId)]);
      assert.deepEqual(attempts.toSorted(), [1, 2], 'the deadlock victim ran again; the other committed the first time');
    } finally {
      retries.stop();
    }
    assert.ok(
      retries.seen.some((r) => r.code === '40P01'),
      `a deadlock was detected and retried (retries: ${JSON.stringify(retries.seen)})`,
    );
  });
});

// Also through PgBouncer in transaction mode (a database per run there: startup options such as search_path are refused).
for (const storeName of ['postgres', ...(PGBOUNCER_URL ? ['pgbouncer'] : [])] as StoreName[])
  describe(`several instances on one PostgreSQL ${storeName === 'pgbouncer' ? 'database, through PgBouncer (transaction mode)' : 'schema'}`, {
    skip: SKIP_PG,
  }, () => {
    let store: TestStore;
    let access: StoreAccess;
    let servers: ServerProcess[] = [];

    before(async () => {
      store = await createStore(storeName);
      access = await openStore(store.env); // migrates: with PostgreSQL, servers do not
      servers = await Promise.all([startServerProcess({ env: store.env }), startServerProcess({ env: store.env })]);
    });
    after(async () => {
      await Promise.all(servers.map((s) => s.stop()));
      await access?.close();
      await store?.cleanup();
    });

    /** A merchant, its token, its warehouse, and an API client per instance. */
    async function setUp(urls: string[], name: string, opening: string) {
      const m = await createMerchant(access, name, opening);
      const token = await fetchToken(urls[0], m.clientId, m.clientSecret);
      const clients = urls.map((u) => new ApiClient(u, token));
      const warehouseId = await clients[1].createWarehouse();
      return { m, token, clients, warehouseId };
    }

    async function quotes(clients: ApiClient[], warehouseId: string, n: number) {
      return pool(
        4,
        Array.from({ length: n }, (_, i) => async () => {
          const r = await clients[i % clients.length].options(warehouseId, i);
          assert.equal(r.status, 201, JSON.stringify(r.body));
          return r.body as { id: string; transfer_id: string };
        }),
      );
    }

    test('200 concurrent POST /transfer over 20 quotes and both instances: exactly 20 transfers, 180 x 409, exact debit', async (t) => {
      const { m, clients, warehouseId } = await setUp(
        servers.map((s) => s.url),
        'Concurrent merchant',
        '100000',
      );
      const qs = await quotes(clients, warehouseId, 20);
      const prices = qs.map((q) => payableMinor(q));

      const attempts = Array.from({ length: 10 }, (_, k) => qs.map((q, qi) => ({ q, instance: (qi + k) % 2 }))).flat();
      const started = performance.now();
      const results = await Promise.all(attempts.map(({ q, instance }) => clients[instance].transfer(q.id)));
      const elapsedMs = performance.now() - started;

      const statuses = results.map((r) => r.status);
      t.diagnostic(
        `200 transfer attempts in ${elapsedMs.toFixed(0)} ms (${((200 / elapsedMs) * 1000).toFixed(0)} requests/s); statuses ${JSON.stringify(tally(statuses))}`,
      );
      assert.deepEqual(
        results.filter((r) => r.status >= 500 || r.status === 0).map((r) => [r.status, r.body ?? r.error]),
        [],
        'no 5xx, no network failure',
      );
      assert.deepEqual(tally(statuses), { 201: 20, 409: 180 });

      const perInstance = [0, 0];
      qs.forEach((q, qi) => {
        const mine = attempts.map((a, i) => ({ ...a, r: results[i] })).filter((a) => a.q === q);
        const created = mine.filter((a) => a.r.status === 201);
        assert.equal(created.length, 1, `quote ${qi} consumed exactly once`);
        perInstance[created[0].instance]++;
        assert.equal(created[0].r.body.id, q.transfer_id);
        assert.equal(parseMajorAmount(created[0].r.body.totalPrice.toFixed(2)), prices[qi]);
        for (const { r } of mine.filter((a) => a.r.status !== 201)) {
          assert.equal(r.body.type, 'QUOTE_ALREADY_USED');
          assert.equal(r.body.transferId, q.transfer_id);
        }
      });
      t.diagnostic(`transfers created per instance: ${perInstance.join(' / ')}`);
      assert.equal(
        perInstance.reduce((s, n) => s + n, 0),
        20,
      );

      const totals = await merchantTotals(access, m.merchantId);
      const charged = prices.reduce((s, p) => s + p, 0);
      assert.equal(totals.balance, m.openingMinor - charged, 'debited exactly the sum of the 20 prices');
      assert.equal(totals.ledgerSum, totals.balance, 'ledger sum equals balance');
      assert.equal(totals.charges.length, 20);
      assert.equal(totals.transfers.length, 20);
      assert.equal(totals.consumedQuotes, 20);

      // Each transfer is readable on the instance that did not create it.
      for (const r of results.filter((x) => x.status === 201)) {
        for (const c of clients) assert.equal((await c.request('GET', `/transfer/${r.body.id}`)).status, 200);
      }
    });

    test('SERIALIZABLE: real 40001s under concurrent transfers and top-ups are retried; zero 500s; exact totals', async (t) => {
      if (storeName === 'pgbouncer') {
        // DATABASE_ISOLATION is a startup option, which PgBouncer refuses: behind it, set the level on the role or database (docs/deployment.md).
        t.skip('DATABASE_ISOLATION is a connection startup option, not passed through PgBouncer');
        return;
      }
      const env = { ...store.env, DATABASE_ISOLATION: 'serializable', LOG_LEVEL: 'debug' };
      const strict = await Promise.all([startServerProcess({ env }), startServerProcess({ env })]);
      const strictAccess = await openStore(env);
      const retries = watchRetries();
      try {
        const { m, clients, warehouseId } = await setUp(
          strict.map((s) => s.url),
          'Serializable merchant',
          '100000',
        );
        const qs = await quotes(clients, warehouseId, 20);
        const prices = qs.map((q) => payableMinor(q));
        const seen: HttpResult[] = [];
        // A client that honours 503 + Retry-After (shortened here): the contract for SERVICE_UNAVAILABLE.
        const withRetry = async (call: () => Promise<HttpResult>) => {
          for (let i = 0; ; i++) {
            const r = await call();
            seen.push(r);
            if (r.status !== 503 || i === 30) return r;
            await sleep(20 + Math.random() * 80);
          }
        };
        let topUpRetries = 0;
        const topUp = async () => {
          for (;;) {
            try {
              return await strictAccess.services.merchants.topUp(m.merchantId, 10_000, 'concurrent top-up');
            } catch (err) {
              if ((err as { code?: string }).code !== '40001') throw err;
              topUpRetries++; // inTransaction gave up after its bound: the caller retries later, like a client after a 503
              await sleep(20 + Math.random() * 80);
            }
          }
        };
        const attempts = Array.from({ length: 10 }, (_, k) => qs.map((q, qi) => ({ q, instance: (qi + k) % 2 }))).flat();
        const started = performance.now();
        const [results] = await Promise.all([
          Promise.all(attempts.map(({ q, instance }) => withRetry(() => clients[instance].transfer(q.id)))),
          Promise.all(Array.from({ length: 20 }, topUp)),
        ]);
        const elapsedMs = performance.now() - started;

        const serverRetries = strict.flatMap((s) => s.logs().filter((l) => l.msg === 'transaction retried'));
        const gaveUp = seen.filter((r) => r.status === 503).length;
        t.diagnostic(
          `${elapsedMs.toFixed(0)} ms; every answer ${JSON.stringify(tally(seen.map((r) => r.status)))}; ` +
            `retries in the servers ${JSON.stringify(tally(serverRetries.map((l) => String(l.code))))}, in-process top-up retries ${retries.seen.length}, ` +
            `503 after the retry bound ${gaveUp}, top-ups retried by the caller ${topUpRetries}`,
        );
        assert.deepEqual(
          seen.filter((r) => r.status === 0 || (r.status >= 500 && r.status !== 503)),
          [],
          'never a 500 (or a network failure)',
        );
        for (const r of seen.filter((x) => x.status === 503)) assert.equal(r.body.type, 'SERVICE_UNAVAILABLE');
        assert.ok(
          serverRetries.some((l) => l.code === '40001'),
          'the instances really hit serialization failures and retried them',
        );
        assert.deepEqual(tally(results.map((r) => r.status)), { 201: 20, 409: 180 });
        for (const r of results.filter((x) => x.status === 409)) assert.equal(r.body.type, 'QUOTE_ALREADY_USED');

        const totals = await merchantTotals(strictAccess, m.merchantId);
        const charged = prices.reduce((s, p) => s + p, 0);
        assert.equal(totals.balance, m.openingMinor + 20 * 10_000 - charged);
        assert.equal(totals.ledgerSum, totals.balance);
        assert.equal(totals.topUps, m.openingMinor + 20 * 10_000);
        assert.equal(totals.transfers.length, 20);
        assert.equal(totals.consumedQuotes, 20);
        assert.equal(totals.chargedSum, charged);
      } finally {
        retries.stop();
        await strictAccess.close();
        await Promise.all(strict.map((s) => s.stop()));
      }
    });

    test('a credential revoked with the CLI is refused by every instance within 1 s (AUTH_CACHE_TTL_MS)', async (t) => {
      const [a, b] = servers;
      const m = await createMerchant(access, 'Revoked merchant', '0');
      const token = await fetchToken(a.url, m.clientId, m.clientSecret);
      for (const s of servers) assert.equal((await new ApiClient(s.url, token).request('GET', '/warehouses')).status, 200);

      // Keep both instances' caches as fresh as possible, so we measure the worst case.
      let stop = false;
      const refusedAt: Array<number | undefined> = [undefined, undefined]; // wall clock, like revoked_at
      const refusal: Array<HttpResult | undefined> = [undefined, undefined];
      const hammer = async (i: number, url: string) => {
        while (!stop) {
          const r = await new ApiClient(url, token).request('GET', '/warehouses');
          if (r.status !== 200) {
            refusedAt[i] = Date.now();
            refusal[i] = r;
            return;
          }
          await sleep(5);
        }
      };
      const hammering = [hammer(0, a.url), hammer(1, b.url)];
      await sleep(100);
      const revoke = await cli(store.env, ['credentials', 'revoke', m.clientId]);
      assert.equal(revoke.code, 0, revoke.stderr);
      assert.deepEqual(revoke.output, { clientId: m.clientId, status: 'REVOKED' });
      const deadline = setTimeout(() => {
        stop = true;
      }, 3000);
      await Promise.all(hammering);
      clearTimeout(deadline);

      // revoked_at is the CLI's clock just before its UPDATE committed, so this slightly overstates the delay.
      const { revoked_at } = await access.database.db
        .selectFrom('credentials')
        .select('revoked_at')
        .where('client_id', '=', m.clientId)
        .executeTakeFirstOrThrow();
      const delays = refusedAt.map((at) => (at === undefined ? Number.POSITIVE_INFINITY : at - revoked_at!));
      t.diagnostic(`refused ${delays.map((d) => `${d} ms`).join(' / ')} after the revoke (instance A / B)`);
      for (const [i, r] of refusal.entries()) {
        assert.equal(r?.status, 401, `instance ${i} refused`);
        assert.equal(r?.body.type, 'CREDENTIALS_REVOKED');
        assert.ok(delays[i] <= 1000 + 250, `instance ${i} refused within 1 s (+250 ms slack for the commit and one request): ${delays[i]} ms`);
      }
    });
  });
