import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startWebhookWorker } from '../src/background/webhook-worker.ts';
import { openDatabase } from '../src/db/database.ts';
import { inTransaction } from '../src/db/transaction.ts';
import { type EventCommitted, eventCommitted } from '../src/lib/channels.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { appendEvent } from '../src/modules/outbox/outbox.ts';
import { WebhookDelivery } from '../src/modules/webhooks/delivery.ts';
import { createTestApp, describeEachStore } from './helpers/app.ts';
import { quote, setup, transferBody } from './helpers/flow.ts';
import { startReceiver } from './helpers/receiver.ts';
import { BIN, createMerchant, fetchToken, http, openStore, type StoreAccess, startServerProcess } from './helpers/server-process.ts';
import { createStore, POSTGRES_URL, postgresOnly, STORES, type StoreName, type TestStore } from './helpers/stores.ts';

const ARTIFACTS = resolve(import.meta.dirname, '..', 'artifacts');
const quiet = { info() {}, error() {} };

/** `count` events for the merchant, written through the outbox's appendEvent (the fan-out path), 100 per transaction. */
async function writeEvents(access: StoreAccess, merchantId: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  const transfers = Array.from({ length: Math.ceil(count / 100) }, () => newId());
  for (const [ti, transferId] of transfers.entries()) {
    await inTransaction(access.database.db, async (trx) => {
      for (let s = 1; s <= Math.min(100, count - ti * 100); s++) {
        const id = newId();
        ids.push(id);
        await appendEvent(trx, {
          id,
          merchant_id: merchantId,
          transfer_id: transferId,
          sequence: s,
          type: 'transfer.created',
          state: 'inProgress',
          actor_type: 'system',
          actor_id: null,
          actor_name: null,
          data: JSON.stringify({ n: s }),
          occurred_at: Date.now(),
        });
      }
    });
  }
  return ids;
}

async function endpointFor(access: StoreAccess, merchantId: string, url: string) {
  // Registered through the service, as the API does.
  const { WebhooksService } = await import('../src/modules/webhooks/service.ts');
  return new WebhooksService(access.database.db, systemClock, { allowPrivate: true }).create(merchantId, { url });
}

describe('webhook workers: two workers on PostgreSQL, exactly one send per attempt', { skip: postgresOnly('two webhook workers') }, () => {
  test('1,000 events, two workers: every event sent exactly once, one attempt row each, both workers took part', { timeout: 120_000 }, async () => {
    const store = await createStore('postgres');
    const access = await openStore(store.env, 4);
    const rx = await startReceiver(async (_r, res) => {
      await sleep(Math.random() * 4);
      res.writeHead(200).end();
    });
    const pools = [0, 1].map(() => openDatabase({ url: store.url, schema: store.schema, poolSize: 4 }));
    try {
      const m = await createMerchant(access, 'Busy shop', '0');
      await endpointFor(access, m.merchantId, rx.url);
      const ids = await writeEvents(access, m.merchantId, 1000);
      const sent = [0, 0];
      const workers = pools.map((database, i) => {
        const delivery = new WebhookDelivery(database.db, database.dialect, systemClock, {
          timeoutMs: 5_000,
          allowPrivate: true,
          concurrency: 16,
          endpointConcurrency: 8,
        });
        const deliver = delivery.deliver.bind(delivery);
        delivery.deliver = (d) => {
          sent[i]++;
          return deliver(d);
        };
        return startWebhookWorker({ delivery, pollIntervalMs: 20, log: quiet });
      });
      await rx.waitFor(1000, 90_000);
      await sleep(500); // a duplicate would arrive now
      await Promise.all(workers.map((w) => w.stop()));
      const counts = new Map<string, number>();
      for (const r of rx.received) counts.set(String(r.headers['webhook-id']), (counts.get(String(r.headers['webhook-id'])) ?? 0) + 1);
      assert.equal(rx.received.length, 1000, 'no event sent twice');
      assert.deepEqual([...counts.keys()].sort(), [...ids].sort());
      assert.ok(sent[0] > 0 && sent[1] > 0, `both workers delivered: ${sent}`);
      assert.equal(sent[0] + sent[1], 1000);
      const { db } = access.database;
      const attempts = await db.selectFrom('webhook_attempts').select(['delivery_id']).execute();
      assert.equal(attempts.length, 1000);
      assert.equal(new Set(attempts.map((a) => a.delivery_id)).size, 1000);
      const pending = await db.selectFrom('webhook_deliveries').select('id').where('status', '!=', 'succeeded').execute();
      assert.deepEqual(pending, []);
    } finally {
      await Promise.all(pools.map((p) => p.close()));
      await rx.close();
      await access.close();
      await store.cleanup();
    }
  });
});

function spawnWorker(env: Record<string, string>): { child: ChildProcess; lines: string[]; exited: Promise<void> } {
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  child.stdout?.setEncoding('utf8').on('data', (c: string) => lines.push(...c.split('\n')));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => lines.push(...c.split('\n')));
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  return { child, lines, exited };
}

// One store: PostgreSQL when the run has it (the deployment that runs several workers), else SQLite.
for (const storeName of [STORES.at(-1) as StoreName]) {
  describe(`webhook worker crash [${storeName}]`, () => {
    const children: ChildProcess[] = [];
    after(() => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    });

    test('kill -9 of `mds worker` mid-delivery loses nothing: a second worker delivers everything, duplicates share webhook-id and body', {
      timeout: 90_000,
    }, async () => {
      const store: TestStore = await createStore(storeName);
      const access = await openStore(store.env, 2);
      let slow = true;
      const rx = await startReceiver(async (_r, res) => {
        if (slow) await sleep(800); // the worker is killed while it waits for these answers
        res.writeHead(200).end();
      });
      try {
        const m = await createMerchant(access, 'Crashy shop', '0');
        await endpointFor(access, m.merchantId, rx.url);
        const ids = await writeEvents(access, m.merchantId, 30);
        const env = { ...store.env, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_SECONDS: '1', WEBHOOK_POLL_INTERVAL_MS: '50', SANDBOX_STEP_SECONDS: '0' };
        const first = spawnWorker(env);
        children.push(first.child);
        await rx.waitFor(6, 30_000);
        first.child.kill('SIGKILL');
        await first.exited;
        const before = new Set(rx.received.map((r) => String(r.headers['webhook-id'])));
        slow = false;
        const second = spawnWorker(env);
        children.push(second.child);
        // The killed worker's leases expire after 2 x timeout + 5 s = 7 s; then its sends are retried.
        const deadline = Date.now() + 45_000;
        const open = () => access.database.db.selectFrom('webhook_deliveries').select('id').where('status', '!=', 'succeeded').execute();
        while (Date.now() < deadline && (await open()).length > 0) await sleep(200);
        second.child.kill('SIGTERM');
        await second.exited;
        const byId = new Map<string, string[]>();
        for (const r of rx.received) byId.set(String(r.headers['webhook-id']), [...(byId.get(String(r.headers['webhook-id'])) ?? []), r.body]);
        assert.deepEqual(
          [...byId.keys()].sort(),
          [...ids].sort(),
          `every event delivered at least once (${byId.size} of ${ids.length}); worker log: ${first.lines.join('\n')}`,
        );
        const duplicated = [...byId.entries()].filter(([, bodies]) => bodies.length > 1);
        assert.ok(duplicated.length > 0, 'the sends cut by the kill were sent again');
        for (const [id, bodies] of duplicated) {
          assert.ok(before.has(id), 'only messages in flight at the kill are duplicated');
          assert.ok(
            bodies.every((b) => b === bodies[0]),
            'a duplicate is the same message',
          );
        }
        assert.deepEqual(await open(), [], 'every delivery recorded as succeeded');
      } finally {
        await rx.close();
        await access.close();
        await store.cleanup();
      }
    });
  });
}

describeEachStore(
  'the webhook worker looks for deliveries at once only when an event has some',
  (ctx) => {
    test('quotes and payments of a merchant without endpoints publish 0 deliveries and wake no claim; with an endpoint that takes them, 1 each and a claim at once', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const seen: EventCommitted[] = [];
      const listen = (message: unknown) => {
        if ((message as EventCommitted).merchantId === m.merchantId) seen.push(message as EventCommitted);
      };
      let claims = 0;
      // A worker whose claims are only counted, polling once a minute: any claim after its first comes from a wake-up.
      const delivery = {
        opts: { concurrency: 4, endpointConcurrency: 2 },
        claim: async () => {
          claims++;
          return [];
        },
        deliver: async () => {},
      };
      eventCommitted.subscribe(listen);
      const worker = startWebhookWorker({ delivery: delivery as unknown as WebhookDelivery, pollIntervalMs: 60_000, log: quiet });
      try {
        for (let i = 0; i < 50 && claims === 0; i++) await sleep(10);
        assert.equal(claims, 1, 'the first claim, at start');
        const pay = async () => {
          const q = await quote(t, m, w.id);
          const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
          assert.equal(res.statusCode, 201, res.body);
        };
        await pay();
        await sleep(50);
        assert.deepEqual(
          seen.map((e) => [e.type, e.deliveries]),
          [
            ['quote.created', 0],
            ['transfer.created', 0],
          ],
        );
        assert.equal(claims, 1, 'no claim for events nobody takes');

        const res = await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/hook' } });
        assert.equal(res.statusCode, 201, res.body);
        seen.length = 0;
        await pay();
        for (let i = 0; i < 50 && claims < 3; i++) await sleep(10);
        assert.deepEqual(
          seen.map((e) => [e.type, e.deliveries]),
          [
            ['quote.created', 1],
            ['transfer.created', 1],
          ],
        );
        assert.ok(claims >= 2 && claims <= 3, `a claim at once for events with deliveries (${claims - 1})`);
      } finally {
        eventCommitted.unsubscribe(listen);
        await worker.stop();
      }
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'true' },
);

describe('a slow endpoint does not delay other merchants', () => {
  test("20 deliveries to an endpoint that never answers in time; another merchant's delivery still goes out at once", { timeout: 30_000 }, async () => {
    const t = await createTestApp('sqlite', { WEBHOOK_ALLOW_PRIVATE: 'true' });
    const stuck = await startReceiver(async (_r, res) => {
      await sleep(3_000);
      res.writeHead(200).end();
    });
    const fine = await startReceiver();
    try {
      const a = await setup(t);
      const b = await setup(t);
      await t.as(a.m, { method: 'POST', url: '/webhook-endpoints', payload: { url: stuck.url } });
      await t.as(b.m, { method: 'POST', url: '/webhook-endpoints', payload: { url: fine.url } });
      for (let i = 0; i < 20; i++) await quote(t, a.m, a.w.id);
      await quote(t, b.m, b.w.id);
      const delivery = new WebhookDelivery(t.database.db, t.database.dialect, t.clock, {
        timeoutMs: 1_000,
        allowPrivate: true,
        concurrency: 8,
        endpointConcurrency: 2,
      });
      const started = Date.now();
      const worker = startWebhookWorker({ delivery, pollIntervalMs: 20, log: quiet });
      await fine.waitFor(1, 5_000);
      const ms = Date.now() - started;
      await worker.stop();
      assert.ok(ms < 500, `the other merchant's webhook took ${ms} ms`);
      assert.ok(stuck.received.length <= 2, `at most 2 sends in flight to the slow endpoint: ${stuck.received.length}`);
    } finally {
      await stuck.close();
      await fine.close();
      await t.close();
    }
  });
});

describe('endpoints that never answer, however many, do not hold back one that does', () => {
  test('40 hanging endpoints with a backlog each; a healthy endpoint registered after them gets its delivery at once', { timeout: 60_000 }, async () => {
    const t = await createTestApp('sqlite', { WEBHOOK_ALLOW_PRIVATE: 'true' });
    const hanging = await startReceiver(async (_r, res) => {
      await sleep(8_000);
      res.writeHead(200).end();
    });
    const fine = await startReceiver();
    try {
      // Two merchants with 20 endpoints each (the most a merchant may have), 3 events each: 120 deliveries due.
      for (let m = 0; m < 2; m++) {
        const a = await setup(t);
        for (let i = 0; i < 20; i++) await t.as(a.m, { method: 'POST', url: '/webhook-endpoints', payload: { url: `${hanging.url}/${m}/${i}` } });
        for (let q = 0; q < 3; q++) await quote(t, a.m, a.w.id);
      }
      const b = await setup(t);
      await t.as(b.m, { method: 'POST', url: '/webhook-endpoints', payload: { url: fine.url } });
      await quote(t, b.m, b.w.id);
      const delivery = new WebhookDelivery(t.database.db, t.database.dialect, t.clock, {
        timeoutMs: 5_000,
        allowPrivate: true,
        concurrency: 8,
        endpointConcurrency: 4,
      });
      const started = Date.now();
      const worker = startWebhookWorker({ delivery, pollIntervalMs: 20, log: quiet });
      await fine.waitFor(1, 10_000);
      const ms = Date.now() - started;
      await sleep(300);
      const held = hanging.received.length;
      await worker.stop();
      // With the shared slots taken four per hanging endpoint, the healthy one waited ~5 waves of 1 s.
      assert.ok(ms < 500, `the healthy endpoint's delivery took ${ms} ms`);
      // Each hanging endpoint got one send (not four): 40 sockets held, every endpoint tried.
      assert.equal(held, 40, `one send per hanging endpoint: ${held}`);
    } finally {
      await hanging.close();
      await fine.close();
      await t.close();
    }
  });
});

describe('delivery latency, commit to receiver, through `mds serve`', () => {
  test('p50 and p99 over 200 events (written to artifacts/webhook-latency-STORE.json)', { timeout: 90_000 }, async () => {
    const store = await createStore(POSTGRES_URL ? 'postgres' : 'sqlite');
    const access = await openStore(store.env, 2);
    const rx = await startReceiver();
    const server = await startServerProcess({ env: { ...store.env, NODE_ENV: 'test', WEBHOOK_ALLOW_PRIVATE: 'true', SANDBOX_STEP_SECONDS: '0' } });
    try {
      const m = await createMerchant(access, 'Latency shop', '0');
      const token = await fetchToken(server.url, m.clientId, m.clientSecret);
      const ep = await http(server.url, 'POST', '/webhook-endpoints', { token, body: { url: rx.url } });
      assert.equal(ep.status, 201);
      const wh = await http(server.url, 'POST', '/warehouses', {
        token,
        body: { name: 'W', address: 'Tverskaya St 1, Moscow', locationMetadata: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136 } },
      });
      const n = 200;
      for (let i = 0; i < n; i++) {
        const res = await http(server.url, 'POST', '/options', {
          token,
          body: {
            warehouseId: wh.body.id,
            parcelSize: 'SMALL',
            deliveryType: 'DOOR_TO_DOOR',
            destinationLocation: { lat: 55.75, lng: 37.6, display_name: `D ${i}` },
          },
        });
        assert.equal(res.status, 201);
        await sleep(Math.random() * 20);
      }
      await rx.waitFor(n, 30_000);
      // occurredAt is taken inside the transaction, just before its commit: an upper bound of commit-to-arrival.
      const latencies = rx.received.map((r) => r.at - Date.parse(r.json.timestamp)).sort((x, y) => x - y);
      const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)];
      const result = { store: store.name, events: n, pollIntervalMs: 200, p50Ms: pct(50), p90Ms: pct(90), p99Ms: pct(99), maxMs: latencies.at(-1) };
      console.log(`# webhook latency ${JSON.stringify(result)}`);
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(resolve(ARTIFACTS, `webhook-latency-${store.name}.json`), `${JSON.stringify(result, null, 2)}\n`);
      assert.ok(result.p99Ms < 2_000, `p99 ${result.p99Ms} ms`);
    } finally {
      await server.stop();
      await rx.close();
      await access.close();
      await store.cleanup();
    }
  });
});
