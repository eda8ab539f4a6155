import assert from 'node:assert/strict';
import { userInfo } from 'node:os';
import { test } from 'node:test';
import { describeEachStore, type Merchant, type TestApp } from './helpers/app.ts';
import { mds } from './helpers/cli.ts';
import { paidTransfer, setup } from './helpers/flow.ts';
import { createOperator, WebClient } from './helpers/people.ts';
import { startReceiver } from './helpers/receiver.ts';

/**
 * Events caused by people name the person (actor.id and actor.name): a courier by id and first name
 * only, an operator by person id and display name, the CLI as "cli:<machine user>" / "cli (<machine user>)".
 * The same event document is the timeline entry and the webhook payload; merchants and the system stay
 * { type } alone.
 */

const timeline = async (t: TestApp, m: Merchant, id: string) => {
  const res = await t.as(m, { method: 'GET', url: `/transfer/${id}/events` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Array<{ id: string; type: string; actor: Record<string, string> }>;
};

describeEachStore(
  'events name the people who caused them',
  (ctx) => {
    test("a courier move, an operator cancel from the console and a CLI cancel each name their person, in GET /transfer/{id}/events and in the webhook payload; never a courier's last name", async () => {
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

        // Webhooks carry the same documents: every event, whole, as its payload's data.
        const events = [...(await timeline(t, m, moved.id)), ...(await timeline(t, m, byConsole.id)), ...(await timeline(t, m, byCli.id))];
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
