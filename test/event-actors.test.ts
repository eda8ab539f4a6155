import assert from 'node:assert/strict';
import { userInfo } from 'node:os';
import { test } from 'node:test';
import { describeEachStore, type Merchant, type TestApp } from './helpers/app.ts';
import { mds } from './helpers/cli.ts';
import { paidTransfer, setup } from './helpers/flow.ts';
import { createMerchantUser, createOperator, WebClient } from './helpers/people.ts';
import { startReceiver } from './helpers/receiver.ts';

/**
 * Events caused by people name the person (actor.id and actor.name): a courier by id and first name
 * only, an operator by person id and display name, the CLI as "cli:<machine user>" / "cli (<machine user>)",
 * a merchant's user in the dashboard by person id and name. The same event document is the timeline entry
 * and the webhook payload; a merchant's API calls and the system stay { type } alone.
 */

const timeline = async (t: TestApp, m: Merchant, id: string) => {
  const res = await t.as(m, { method: 'GET', url: `/transfer/${id}/events` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Array<{ id: string; type: string; actor: Record<string, string> }>;
};

describeEachStore(
  'events name the people who caused them',
  (ctx) => {
    test("a courier move, an operator cancel from the console, a CLI cancel and a merchant's user in the dashboard each name their person, in GET /transfer/{id}/events and in the webhook payload; never a courier's last name", async () => {
      const t = ctx();
      const rx = await startReceiver();
      try {
        const { m, w } = await setup(t);
        const ep = await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: `${rx.url}/hook` } });
        assert.equal(ep.statusCode, 201, ep.body);

        // A courier accepts and releases a job.
        const moved = await paidTransfer(t, m, w.id);
        const courier = await t.courier('Ivan Petrov', { lat: 0.001, lng: 0.001 });
        for (const action of ['accept', 'release']) {
          const res = await t.as(courier, { method: 'POST', url: `/courier/jobs/${moved.id}/${action}` });
          assert.equal(res.statusCode, 200, res.body);
        }

        // An operator cancels from the console.
        const byConsole = await paidTransfer(t, m, w.id);
        const olga = await createOperator(t.app, t.clock, { role: 'admin', name: 'Olga Admin' });
        const web = new WebClient(t.app);
        await web.loginOperator(olga, t.clock);
        await web.get(`/ops/transfers/${byConsole.id}`);
        assert.equal((await web.post(`/ops/transfers/${byConsole.id}/cancel`, { reason: 'Customer phoned support' })).statusCode, 303);

        // The CLI cancels.
        const byCli = await paidTransfer(t, m, w.id);
        const cli = await mds(t, 'transfers', 'cancel', byCli.id, '--reason', 'Merchant called the hotline');
        assert.equal(cli.code, 0, cli.stderr);
        const user = userInfo().username;

        // A merchant's user quotes, pays and cancels in the dashboard.
        const anna = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'admin', name: 'Anna Shopkeeper' });
        const shop = new WebClient(t.app);
        await shop.login(anna.email, anna.password);
        await shop.get('/dashboard/deliveries/new');
        const step1 = await shop.post('/dashboard/deliveries/new', {
          warehouseId: w.id,
          address: 'Destination 5',
          lat: '0',
          lng: '0.1',
          parcelSize: 'SMALL',
          deliveryType: 'DOOR_TO_DOOR',
        });
        assert.equal(step1.statusCode, 303, step1.body.slice(0, 300));
        await shop.get(String(step1.headers.location));
        const paid = await shop.post(String(step1.headers.location), {
          productKey: 'standard',
          firstName: 'Boris',
          lastName: 'Reader',
          phone: '+7 900 000-00-02',
          description: 'A book',
        });
        assert.equal(paid.statusCode, 303, paid.body.slice(0, 300));
        const byDashboard = String(paid.headers.location).split('/').pop() as string;
        await shop.get(`/dashboard/deliveries/${byDashboard}`);
        const cancelled = await shop.post(`/dashboard/deliveries/${byDashboard}/cancel`, { reason: 'CUSTOMER_REQUESTED' });
        assert.equal(cancelled.statusCode, 303, cancelled.body.slice(0, 300));
        // The pages name her too: the merchant's timeline, and the operator's.
        assert.match((await shop.get(`/dashboard/deliveries/${byDashboard}`)).body, /<span class="hint">by Anna Shopkeeper<\/span>/);
        assert.match((await shop.get(`/dashboard/deliveries/${byCli.id}`)).body, /Paid and created<\/span> <span class="hint">by the API<\/span>/);
        assert.match((await web.get(`/ops/transfers/${byDashboard}`)).body, /Merchant \(Anna Shopkeeper, in the dashboard\)/);

        const merchant = { type: 'merchant' };
        const ivan = { type: 'courier', id: courier.courierId, name: 'Ivan' };
        const actors = async (id: string) => (await timeline(t, m, id)).map((e) => [e.type, e.actor]);
        assert.deepEqual(await actors(moved.id), [
          ['quote.created', merchant],
          ['transfer.created', merchant],
          ['transfer.courier_assigned', ivan],
          ['transfer.courier_released', ivan],
        ]);
        assert.deepEqual(await actors(byConsole.id), [
          ['quote.created', merchant],
          ['transfer.created', merchant],
          ['transfer.cancelled', { type: 'operator', id: olga.id, name: 'Olga Admin' }],
        ]);
        assert.deepEqual(await actors(byCli.id), [
          ['quote.created', merchant],
          ['transfer.created', merchant],
          ['transfer.cancelled', { type: 'operator', id: `cli:${user}`, name: `cli (${user})` }],
        ]);
        const annaActor = { type: 'merchant', id: anna.id, name: 'Anna Shopkeeper' };
        assert.deepEqual(await actors(byDashboard), [
          ['quote.created', annaActor],
          ['transfer.created', annaActor],
          ['transfer.cancelled', annaActor],
        ]);

        // Webhooks carry the same documents: every event, whole, as its payload's data.
        const events = [
          ...(await timeline(t, m, moved.id)),
          ...(await timeline(t, m, byConsole.id)),
          ...(await timeline(t, m, byCli.id)),
          ...(await timeline(t, m, byDashboard)),
        ];
        assert.equal(await t.services.webhookDelivery.runOnce(), events.length);
        await rx.waitFor(events.length);
        const byId = new Map(rx.received.map((r) => [r.json.data.id, r.json]));
        for (const e of events) assert.deepEqual(byId.get(e.id), { type: e.type, timestamp: (e as unknown as { occurredAt: string }).occurredAt, data: e });

        const everything = JSON.stringify([events, rx.received.map((r) => r.body)]);
        assert.equal(everything.includes('Petrov'), false, "merchants never see a courier's last name");
      } finally {
        await rx.close();
      }
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'true' },
);
