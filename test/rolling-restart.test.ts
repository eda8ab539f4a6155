import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  createMerchant,
  fetchToken,
  type HttpResult,
  http,
  merchantTotals,
  openStore,
  quoteBody,
  type ServerProcess,
  type StoreAccess,
  startServerProcess,
  tally,
  transferBody,
} from './helpers/server-process.ts';
import { createStore, postgresOnly, type TestStore } from './helpers/stores.ts';

const SKIP_PG = postgresOnly('rolling restart');

/**
 * A client that follows the documented retry rules: every POST carries an Idempotency-Key that it
 * reuses on every retry; a network failure (connection refused or reset while an instance restarts),
 * a 503 or a 409 IDEMPOTENCY_KEY_IN_USE is retried, on the other instance, after a short pause.
 * What it reports as a failure is what such a client would really see.
 */
class RetryingClient {
  readonly urls: () => string[];
  readonly token: string;
  retries = 0;
  constructor(urls: () => string[], token: string) {
    this.urls = urls;
    this.token = token;
  }
  async call(method: string, path: string, body?: unknown): Promise<HttpResult> {
    const headers: Record<string, string> = method === 'POST' ? { 'idempotency-key': randomUUID() } : {};
    let last: HttpResult | undefined;
    for (let attempt = 0; attempt < 8; attempt++) {
      const urls = this.urls();
      const res = await http(urls[(attempt + Math.floor(Math.random() * 2)) % urls.length], method, path, {
        token: this.token,
        body,
        headers,
        timeoutMs: 20_000,
      });
      const retry = res.status === 0 || res.status === 503 || (res.status === 409 && res.body?.type === 'IDEMPOTENCY_KEY_IN_USE');
      if (!retry) return res;
      last = res;
      this.retries++;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
    return last as HttpResult;
  }
}

describe('rolling restart of two instances on one PostgreSQL', { skip: SKIP_PG }, () => {
  let store: TestStore;
  let access: StoreAccess;
  const servers: ServerProcess[] = [];
  // The load is as fast as the machine allows, and a 429 is not what this suite is about: the merchant's
  // limit (1 200 a minute by default) is lifted so that a faster service or machine cannot reach it.
  const serverEnv = () => ({ ...store.env, MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000' });

  before(async () => {
    store = await createStore('postgres');
    access = await openStore(store.env);
    servers.push(await startServerProcess({ env: serverEnv() }), await startServerProcess({ env: serverEnv() }));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await access?.close();
    await store?.cleanup();
  });

  test('each instance restarted in turn (SIGTERM, drain, start) under mixed load: no failure a retrying client sees, no duplicate transfer, money exact', async (t) => {
    const m = await createMerchant(access, 'Rolling shop', '10000000');
    const token = await fetchToken(servers[0].url, m.clientId, m.clientSecret);
    const live = () => servers.filter((s) => s.alive()).map((s) => s.url);
    const client = new RetryingClient(live, token);
    const wh = await client.call('POST', '/warehouses', {
      name: 'Rolling warehouse',
      address: 'Tverskaya St 1, Moscow',
      locationMetadata: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136 },
    });
    assert.equal(wh.status, 201);
    const warehouseId = wh.body.id as string;

    let running = true;
    const outcomes: string[] = [];
    const paid = new Set<string>();
    const worker = async (n: number) => {
      for (let i = 0; running; i++) {
        const kind = (n + i) % 5;
        if (kind < 3) {
          const res = await client.call('GET', i % 2 ? '/warehouses' : `/warehouses/${warehouseId}`);
          outcomes.push(`read ${res.status}`);
        } else {
          const q = await client.call('POST', '/options', quoteBody(warehouseId, i));
          outcomes.push(`options ${q.status}`);
          if (q.status !== 201) continue;
          const t = await client.call('POST', '/transfer', transferBody(q.body.id));
          outcomes.push(`transfer ${t.status}`);
          if (t.status === 201) paid.add(t.body.id);
        }
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, (_, n) => worker(n)));

    for (const i of [0, 1]) {
      await new Promise((r) => setTimeout(r, 1500));
      const exit = await servers[i].stop(15_000); // SIGTERM: stop accepting, finish in-flight requests, close
      assert.deepEqual(exit, { code: 0, signal: null }, `instance ${i} drained and exited cleanly`);
      await new Promise((r) => setTimeout(r, 300));
      servers[i] = await startServerProcess({ env: serverEnv() });
    }
    await new Promise((r) => setTimeout(r, 1500));
    running = false;
    await load;

    const counts = tally(outcomes);
    t.diagnostic(`outcomes ${JSON.stringify(counts)}; ${client.retries} retries; ${paid.size} transfers paid`);
    const failures = Object.entries(counts).filter(([k]) => !/ (200|201)$/.test(k));
    assert.deepEqual(failures, [], `every request succeeded once retried (${JSON.stringify(counts)}, ${client.retries} retries)`);
    assert.ok(paid.size >= 10, `transfers kept being paid during the restarts (${paid.size})`);
    assert.ok(client.retries > 0, 'the restarts were felt (and absorbed by retries)');
    const totals = await merchantTotals(access, m.merchantId);
    assert.equal(totals.transfers.length, paid.size, 'no duplicate transfer: one per successful POST /transfer');
    assert.equal(totals.charges.length, paid.size, 'one charge per transfer');
    assert.equal(totals.balance, totals.ledgerSum);
    assert.equal(totals.chargedSum, totals.transferredSum);
  });
});
