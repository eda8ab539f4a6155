import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startServer } from '../scripts/lib/server-process.ts';
import { TEST_SIGNING_KEYS } from './helpers/app.ts';
import { ApiClient, fetchToken, openStore, type StoreAccess, startServerProcess } from './helpers/server-process.ts';
import { createStore, STORES, type TestStore } from './helpers/stores.ts';

/** Polls the transfer until it reaches `state` (or the deadline passes); returns the last lookup. */
async function waitForState(api: ApiClient, id: string, state: string, deadlineMs: number) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const res = await api.request('GET', `/transfer/${id}`);
    if (res.body.state === state || Date.now() > until) return res.body;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A sandbox merchant (created in-process on the store), its API client on `url` and a paid sandbox transfer. */
async function sandboxDelivery(access: StoreAccess, url: string) {
  const { credential } = await access.services.merchants.create('Play shop', 100_000, 'sandbox');
  const api = new ApiClient(url, await fetchToken(url, credential.clientId, credential.clientSecret));
  const warehouseId = await api.createWarehouse();
  const quote = await api.options(warehouseId);
  const transfer = await api.transfer(quote.body.id);
  assert.equal(transfer.status, 201, JSON.stringify(transfer.body));
  assert.equal(transfer.body.sandbox, true);
  return { api, transfer: transfer.body as { id: string } };
}

for (const storeName of STORES) {
  describe(`background work in real processes [${storeName}]`, () => {
    let store: TestStore;
    let access: StoreAccess;
    const fast = { SANDBOX_STEP_SECONDS: '1', SCHEDULER_INTERVAL_SECONDS: '1' };

    before(async () => {
      store = await createStore(storeName);
      access = await openStore(store.env); // migrates: with PostgreSQL, servers do not
    });
    after(async () => {
      await access?.close();
      await store?.cleanup();
    });

    test('mds serve runs the scheduler: a sandbox delivery reaches delivered through the API alone', async () => {
      const server = await startServerProcess({ env: { ...store.env, ...fast } });
      try {
        const { api, transfer } = await sandboxDelivery(access, server.url);
        const final = await waitForState(api, transfer.id, 'delivered', 15_000);
        assert.equal(final.state, 'delivered');
        assert.deepEqual(final.courier, { firstName: 'Sandbox' });
        const events = (await api.request('GET', `/transfer/${transfer.id}/events`)).body;
        assert.deepEqual(
          events.map((e: { type: string }) => e.type),
          ['quote.created', 'transfer.created', 'transfer.courier_assigned', 'transfer.picked_up', 'transfer.delivered'],
        );
      } finally {
        await server.stop();
      }
    });

    test('SANDBOX_STEP_SECONDS below the scheduler interval is honoured: with 1 s steps and the default 5 s interval, the first step comes within about 2 s', async () => {
      const server = await startServerProcess({ env: { ...store.env, SANDBOX_STEP_SECONDS: '1' } });
      try {
        const { api, transfer } = await sandboxDelivery(access, server.url);
        const created = Date.now();
        const assigned = await waitForState(api, transfer.id, 'courierAssigned', 2_500);
        assert.equal(assigned.state, 'courierAssigned', `still ${assigned.state} ${Date.now() - created} ms after creation (a 5 s pass would be late)`);
        const final = await waitForState(api, transfer.id, 'delivered', 5_000);
        assert.equal(final.state, 'delivered');
        assert.ok(Date.now() - created < 7_000, 'three 1 s steps, not three 5 s passes');
        assert.match(server.stdout.join('\n'), /"intervalMs":5000,"sandboxStepSeconds":1,"msg":"scheduler started"/);
      } finally {
        await server.stop();
      }
    });

    test('SCHEDULER_ENABLED=false switches it off for an instance; mds worker runs it alone and stops cleanly on SIGTERM', async () => {
      const server = await startServerProcess({ env: { ...store.env, ...fast, SCHEDULER_ENABLED: 'false' } });
      try {
        const { api, transfer } = await sandboxDelivery(access, server.url);
        await new Promise((r) => setTimeout(r, 3_000));
        assert.equal((await api.request('GET', `/transfer/${transfer.id}`)).body.state, 'inProgress', 'nothing moves without a scheduler');

        // The worker has no HTTP port: it is ready when it logs so.
        const worker = startServer({
          env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', LOG_LEVEL: 'info', TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS, ...store.env, ...fast },
          args: ['worker'],
          readyLine: /"msg":"worker running"/,
        });
        await worker.ready;
        try {
          const final = await waitForState(api, transfer.id, 'delivered', 20_000);
          assert.equal(final.state, 'delivered', worker.log());
        } finally {
          const exit = await worker.stop(10_000);
          assert.deepEqual(exit, { code: 0, signal: null }, worker.log());
        }
        assert.match(worker.log(), /worker running/);
      } finally {
        await server.stop();
      }
    });
  });
}
