import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { forbiddenAddress } from '../src/modules/webhooks/destination.ts';
import { deliveryVerdict, RETRY_DELAYS_MS } from '../src/modules/webhooks/policy.ts';
import { signatureHeader } from '../src/modules/webhooks/signing.ts';
import { createTestApp, describeEachStore, type Merchant, type TestApp, UUID_RE } from './helpers/app.ts';
import { quote, quoteBody, setup, transferBody } from './helpers/flow.ts';
import { type Received, startReceiver } from './helpers/receiver.ts';
import { cli } from './helpers/server-process.ts';

const ENV = { WEBHOOK_ALLOW_PRIVATE: 'true' };
const ISO = (ms: number) => new Date(ms).toISOString();

async function createEndpoint(t: TestApp, m: Merchant, url: string, extra: Record<string, unknown> = {}) {
  const res = await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url, ...extra } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

const attempts = async (t: TestApp, m: Merchant, id: string) => {
  const res = await t.as(m, { method: 'GET', url: `/webhook-endpoints/${id}/attempts` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as any[];
};

/**
 * Verifies one received request with the official library; returns the payload it gives back. The
 * library judges webhook-timestamp against Date.now(): while it runs, "now" is the test's moved clock,
 * the time the sender signed at.
 */
let senderNow: () => number = Date.now;
function verify(secret: string, r: Received) {
  const realNow = Date.now;
  Date.now = senderNow;
  try {
    return new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
  } finally {
    Date.now = realNow;
  }
}

describeEachStore(
  'webhooks: delivery, signatures, retries, isolation',
  (ctx) => {
    before(() => {
      senderNow = () => ctx().clock.now();
    });

    test('a sandbox delivery, step by step: every event arrives once, verified by the standardwebhooks library, body { type, timestamp, data: event }', async () => {
      const t = ctx();
      const rx = await startReceiver();
      try {
        const { m, w } = await setup(t, '5000', 'sandbox');
        const ep = await createEndpoint(t, m, `${rx.url}/hook`, { description: 'orders' });
        assert.match(ep.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
        assert.deepEqual(ep, {
          id: ep.id,
          url: `${rx.url}/hook`,
          eventTypes: null,
          description: 'orders',
          status: 'ENABLED',
          disabledReason: null,
          previousSecretExpiresAt: null,
          createdAt: ISO(t.clock.now()),
          updatedAt: ISO(t.clock.now()),
          secret: ep.secret,
        });
        const q = await quote(t, m, w.id);
        const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
        for (const to of ['courierAssigned', 'pickedUp', 'delivered']) {
          const res = await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to } });
          assert.equal(res.statusCode, 200, res.body);
        }
        assert.equal(await t.services.webhookDelivery.runOnce(), 5);
        const timeline = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}/events` })).json();
        assert.equal(rx.received.length, 5);
        const got = rx.received.map((r) => verify(ep.secret, r) as any).sort((a, b) => a.data.sequence - b.data.sequence);
        assert.deepEqual(
          got,
          timeline.map((e: any) => ({ type: e.type, timestamp: e.occurredAt, data: e })),
        );
        assert.deepEqual(rx.received.map((r) => r.headers['webhook-id']).sort(), timeline.map((e: any) => e.id).sort(), 'webhook-id is the event id');
        for (const r of rx.received) {
          assert.equal(r.headers['content-type'], 'application/json');
          assert.match(String(r.headers['webhook-timestamp']), /^\d{10}$/);
          assert.ok(Math.abs(Number(r.headers['webhook-timestamp']) - t.clock.now() / 1000) < 2);
        }
        const list = await attempts(t, m, ep.id);
        assert.equal(list.length, 5);
        assert.deepEqual(list[0], {
          id: list[0].id,
          deliveryId: list[0].deliveryId,
          webhookId: list[0].webhookId,
          eventType: list[0].eventType,
          attempt: 1,
          status: 'succeeded',
          responseStatus: 204,
          responseBody: '',
          error: null,
          durationMs: list[0].durationMs,
          attemptedAt: ISO(t.clock.now()),
          nextAttemptAt: null,
        });
        // Nothing is due any more: a second pass sends nothing.
        assert.equal(await t.services.webhookDelivery.runOnce(), 0);
        assert.ok(!t.logs.some((l) => l.includes(ep.secret)), 'the secret is never logged');
      } finally {
        await rx.close();
      }
    });

    test('the library refuses a tampered body, an old timestamp and a rotated-out secret; during a rotation both secrets verify', async () => {
      const t = ctx();
      const rx = await startReceiver();
      try {
        const { m, w } = await setup(t);
        const ep = await createEndpoint(t, m, rx.url);
        await quote(t, m, w.id);
        await t.services.webhookDelivery.runOnce();
        const r = rx.received[0];
        assert.ok(verify(ep.secret, r));
        assert.throws(() => verify(ep.secret, { ...r, body: r.body.replace('quote.created', 'quote.createD') }), /No matching signature/);
        const old = Math.floor(t.clock.now() / 1000) - 600;
        const id = String(r.headers['webhook-id']);
        const oldHeaders = { ...r.headers, 'webhook-timestamp': String(old), 'webhook-signature': signatureHeader([ep.secret], id, old, r.body) };
        assert.throws(() => verify(ep.secret, { ...r, headers: oldHeaders }), /timestamp too old/);

        const rotated = await t.as(m, { method: 'POST', url: `/webhook-endpoints/${ep.id}/rotate-secret` });
        assert.equal(rotated.statusCode, 200, rotated.body);
        const { secret } = rotated.json();
        assert.notEqual(secret, ep.secret);
        assert.equal(rotated.json().previousSecretExpiresAt, ISO(t.clock.now() + 24 * 3_600_000));
        await quote(t, m, w.id);
        await t.services.webhookDelivery.runOnce();
        const during = rx.received[1];
        assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2, 'two signatures during the rotation');
        assert.ok(verify(secret, during));
        assert.ok(verify(ep.secret, during));

        // 24 h later the old secret no longer signs.
        await t.database.db
          .updateTable('webhook_endpoints')
          .set({ previous_secret_expires_at: t.clock.now() - 1 })
          .where('id', '=', ep.id)
          .execute();
        await quote(t, m, w.id);
        await t.services.webhookDelivery.runOnce();
        const afterRotation = rx.received[2];
        assert.equal(String(afterRotation.headers['webhook-signature']).split(' ').length, 1);
        assert.ok(verify(secret, afterRotation));
        assert.throws(() => verify(ep.secret, afterRotation), /No matching signature/);
      } finally {
        await rx.close();
      }
    });

    test('a retry scheduled by a clock that then jumped back an hour is sent at once, not an hour later; a jump back within 60 s keeps the schedule', async () => {
      const t = ctx();
      let calls = 0;
      const rx = await startReceiver((_r, res) => void res.writeHead(calls++ === 0 ? 500 : 204).end());
      try {
        const { m, w } = await setup(t);
        await createEndpoint(t, m, rx.url);
        t.clock.advance(3_600_000); // the clock runs an hour ahead
        await quote(t, m, w.id);
        assert.equal(await t.services.webhookDelivery.runOnce(), 1, 'the first try fails (500): retry scheduled 5 s later by this clock');
        t.clock.advance(-30_000);
        assert.equal(await t.services.webhookDelivery.runOnce(), 0, 'a jump back of 30 s (instance skew) keeps the schedule');
        t.clock.advance(-3_570_000); // back to the true time
        assert.equal(await t.services.webhookDelivery.runOnce(), 1, 'due at once after the jump back');
        assert.equal(await t.services.webhookDelivery.runOnce(), 0, 'delivered: never again');
        assert.deepEqual(
          rx.received.map((r) => r.headers['webhook-id']),
          [rx.received[0].headers['webhook-id'], rx.received[0].headers['webhook-id']],
        );
      } finally {
        await rx.close();
      }
    });

    test('retries: 500 then 200 delivers once more after 5 s, with the same webhook-id; attempts show both', async () => {
      const t = ctx();
      let calls = 0;
      const rx = await startReceiver((_r, res) => void res.writeHead(calls++ === 0 ? 500 : 200).end(calls === 1 ? 'oops' : 'ok'));
      try {
        const { m, w } = await setup(t);
        const ep = await createEndpoint(t, m, rx.url);
        await quote(t, m, w.id);
        const t0 = t.clock.now();
        assert.equal(await t.services.webhookDelivery.runOnce(), 1);
        t.clock.advance(4_999);
        assert.equal(await t.services.webhookDelivery.runOnce(), 0, 'not before 5 s');
        t.clock.advance(1);
        assert.equal(await t.services.webhookDelivery.runOnce(), 1);
        t.clock.advance(3_600_000);
        assert.equal(await t.services.webhookDelivery.runOnce(), 0, 'delivered: never again');
        assert.equal(rx.received.length, 2);
        assert.equal(rx.received[0].headers['webhook-id'], rx.received[1].headers['webhook-id']);
        assert.equal(rx.received[0].body, rx.received[1].body, 'the same body on every try');
        const [second, first] = await attempts(t, m, ep.id);
        assert.deepEqual(
          [first.attempt, first.status, first.responseStatus, first.responseBody, first.error, first.attemptedAt, first.nextAttemptAt],
          [1, 'failed', 500, 'oops', 'HTTP 500', ISO(t0), ISO(t0 + 5_000)],
        );
        assert.deepEqual([second.attempt, second.status, second.responseStatus, second.nextAttemptAt], [2, 'succeeded', 200, null]);
        assert.equal(first.deliveryId, second.deliveryId);
      } finally {
        await rx.close();
      }
    });

    test('the retry schedule is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, then the delivery fails', () => {
      const now = 1_000_000;
      const delays = Array.from({ length: 9 }, (_, i) => {
        const v = deliveryVerdict(i + 1, { status: 500 }, now);
        return v.kind === 'retry' ? (v.at - now) / 1000 : v.kind;
      });
      assert.deepEqual(delays, [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]);
      assert.deepEqual(deliveryVerdict(10, { status: 500 }, now), { kind: 'exhausted' });
      assert.deepEqual(deliveryVerdict(3, { status: 204 }, now), { kind: 'succeeded' });
      assert.deepEqual(deliveryVerdict(1, { status: 429, retryAfter: '120' }, now), { kind: 'retry', at: now + 120_000 });
      assert.deepEqual(deliveryVerdict(1, { status: 503, retryAfter: new Date(now + 60_000).toUTCString() }, now + 500), { kind: 'retry', at: now + 60_000 });
      assert.deepEqual(deliveryVerdict(1, { status: 429, retryAfter: '9999999' }, now), { kind: 'retry', at: now + 86_400_000 }, 'clamped to 24 h');
      assert.deepEqual(deliveryVerdict(1, { status: 302 }, now), { kind: 'retry', at: now + RETRY_DELAYS_MS[0] }, 'a redirect is a failure');
    });

    test('429 with Retry-After: 120 waits 120 s, not 5 s', async () => {
      const t = ctx();
      let calls = 0;
      const rx = await startReceiver((_r, res) => void (calls++ === 0 ? res.writeHead(429, { 'retry-after': '120' }).end() : res.writeHead(200).end()));
      try {
        const { m, w } = await setup(t);
        const ep = await createEndpoint(t, m, rx.url);
        await quote(t, m, w.id);
        await t.services.webhookDelivery.runOnce();
        t.clock.advance(5_000);
        assert.equal(await t.services.webhookDelivery.runOnce(), 0);
        t.clock.advance(114_999);
        assert.equal(await t.services.webhookDelivery.runOnce(), 0);
        t.clock.advance(1);
        assert.equal(await t.services.webhookDelivery.runOnce(), 1);
        assert.deepEqual(
          (await attempts(t, m, ep.id)).map((a) => [a.responseStatus, a.status]),
          [
            [200, 'succeeded'],
            [429, 'failed'],
          ],
        );
      } finally {
        await rx.close();
      }
    });

    test('410 disables the endpoint (GONE): nothing is queued for it while disabled; enabled again with PUT, its pending delivery resumes', async () => {
      const t = ctx();
      let gone = true;
      const rx = await startReceiver((_r, res) => void res.writeHead(gone ? 410 : 200).end());
      try {
        const { m, w } = await setup(t);
        const ep = await createEndpoint(t, m, rx.url);
        await quote(t, m, w.id);
        await t.services.webhookDelivery.runOnce();
        const after = (await t.as(m, { method: 'GET', url: `/webhook-endpoints/${ep.id}` })).json();
        assert.deepEqual([after.status, after.disabledReason], ['DISABLED', 'GONE']);
        await quote(t, m, w.id);
        t.clock.advance(3_600_000);
        assert.equal(await t.services.webhookDelivery.runOnce(), 0, 'a disabled endpoint gets nothing');
        const test410 = await t.as(m, { method: 'POST', url: `/webhook-endpoints/${ep.id}/test` });
        assert.equal(test410.statusCode, 409);
        assert.equal(test410.json().type, 'WEBHOOK_ENDPOINT_DISABLED');
        gone = false;
        const put = await t.as(m, { method: 'PUT', url: `/webhook-endpoints/${ep.id}`, payload: { url: rx.url } });
        assert.equal(put.statusCode, 200, put.body);
        assert.deepEqual([put.json().status, put.json().disabledReason], ['ENABLED', null]);
        assert.equal(
          await t.services.webhookDelivery.runOnce(),
          1,
          'the pending delivery resumes (events while disabled were not queued: replay recovers them)',
        );
        assert.equal(rx.received.length, 2);
        assert.equal(rx.received[0].headers['webhook-id'], rx.received[1].headers['webhook-id']);
      } finally {
        await rx.close();
      }
    });

    test("an endpoint failing for 5 days is disabled (FAILING_5_DAYS) and the merchant's other endpoint gets webhook.endpoint_disabled", async () => {
      const t = ctx();
      const dead = await startReceiver((_r, res) => void res.writeHead(500).end());
      const ops = await startReceiver();
      try {
        const { m, w } = await setup(t);
        const ep = await createEndpoint(t, m, dead.url);
        const watcher = await createEndpoint(t, m, ops.url, { eventTypes: ['webhook.endpoint_disabled'] });
        const t0 = t.clock.now();
        await quote(t, m, w.id);
        await t.services.webhookDelivery.runOnce();
        for (const delay of RETRY_DELAYS_MS) {
          t.clock.advance(delay);
          assert.equal(await t.services.webhookDelivery.runOnce(), 1);
        }
        assert.equal(dead.received.length, 10, 'the first try and 9 retries');
        assert.equal((await t.as(m, { method: 'GET', url: `/webhook-endpoints/${ep.id}` })).json().status, 'ENABLED', 'not yet 5 days');
        t.clock.advance(t0 + 5 * 86_400_000 - t.clock.now());
        await quote(t, m, w.id);
        await t.services.webhookDelivery.runOnce();
        const now = t.clock.now();
        const disabled = (await t.as(m, { method: 'GET', url: `/webhook-endpoints/${ep.id}` })).json();
        assert.deepEqual([disabled.status, disabled.disabledReason, disabled.updatedAt], ['DISABLED', 'FAILING_5_DAYS', ISO(now)]);
        await ops.waitFor(1);
        assert.equal(ops.received.length, 1, 'the watcher took only webhook.endpoint_disabled');
        const msg = verify(watcher.secret, ops.received[0]) as any;
        assert.deepEqual(msg, {
          type: 'webhook.endpoint_disabled',
          timestamp: ISO(now),
          data: { endpointId: ep.id, url: ep.url, reason: 'FAILING_5_DAYS', failingSince: ISO(t0), disabledAt: ISO(now) },
        });
      } finally {
        await dead.close();
        await ops.close();
      }
    });

    test('ordering: with retries shuffling arrivals, receivers rebuild every transfer from sequence', async () => {
      const t = ctx();
      let n = 0;
      // Every third first try fails, so those events arrive 5 s later, after their successors.
      const seen = new Set<string>();
      const rx = await startReceiver((r, res) => {
        const id = String(r.headers['webhook-id']);
        const fail = !seen.has(id) && n++ % 3 === 0;
        seen.add(id);
        res.writeHead(fail ? 503 : 200).end();
      });
      try {
        const { m, w } = await setup(t, '5000', 'sandbox');
        await createEndpoint(t, m, rx.url);
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          const q = await quote(t, m, w.id);
          const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
          ids.push(tr.id);
          for (const to of i === 2 ? ['cancelled'] : ['courierAssigned', 'pickedUp', i === 0 ? 'delivered' : 'returning']) {
            await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to } });
          }
          await t.services.webhookDelivery.runOnce();
        }
        t.clock.advance(5_000);
        await t.services.webhookDelivery.runOnce();
        // Rebuild: dedupe by webhook-id, group by transfer, order by sequence.
        const byId = new Map<string, any>();
        for (const r of rx.received) byId.set(String(r.headers['webhook-id']), r.json.data);
        const arrivalSequences = rx.received.map((r) => r.json.data.sequence);
        assert.notDeepEqual(
          arrivalSequences,
          [...arrivalSequences].sort((a, b) => a - b),
          'arrivals are out of order',
        );
        for (const id of ids) {
          const events = [...byId.values()].filter((e) => e.transferId === id).sort((a, b) => a.sequence - b.sequence);
          assert.deepEqual(
            events.map((e) => e.sequence),
            events.map((_, i) => i + 1),
            'sequences 1..n, no gap',
          );
          const current = (await t.as(m, { method: 'GET', url: `/transfer/${id}` })).json();
          assert.equal(events.at(-1).state, current.state, 'the last event by sequence is the current state');
        }
      } finally {
        await rx.close();
      }
    });

    test("isolation: one merchant's endpoints never receive another's events; the endpoint API is tenant-scoped", async () => {
      const t = ctx();
      const rxA = await startReceiver();
      const rxB = await startReceiver();
      try {
        const a = await setup(t);
        const b = await setup(t);
        const epA = await createEndpoint(t, a.m, rxA.url);
        const epB = await createEndpoint(t, b.m, rxB.url);
        await quote(t, a.m, a.w.id);
        await quote(t, a.m, a.w.id);
        await quote(t, b.m, b.w.id);
        await t.services.webhookDelivery.runOnce();
        assert.equal(rxA.received.length, 2);
        assert.equal(rxB.received.length, 1);
        for (const r of rxA.received) assert.ok(verify(epA.secret, r));
        for (const r of rxB.received) assert.ok(verify(epB.secret, r));
        const list = (await t.as(b.m, { method: 'GET', url: '/webhook-endpoints' })).json();
        assert.deepEqual(
          list.map((e: any) => e.id),
          [epB.id],
        );
        assert.ok(!('secret' in list[0]), 'the secret is not listed');
        const requests: Array<[string, string, unknown?]> = [
          ['GET', `/webhook-endpoints/${epA.id}`],
          ['PUT', `/webhook-endpoints/${epA.id}`, { url: rxB.url }],
          ['POST', `/webhook-endpoints/${epA.id}/rotate-secret`],
          ['POST', `/webhook-endpoints/${epA.id}/test`],
          ['GET', `/webhook-endpoints/${epA.id}/attempts`],
          ['POST', `/webhook-endpoints/${epA.id}/replay`, { since: ISO(0) }],
          ['POST', `/webhook-endpoints/${epA.id}/redeliver`, { eventId: String(rxA.received[0].headers['webhook-id']) }],
          ['DELETE', `/webhook-endpoints/${epA.id}`],
        ];
        for (const [method, url, payload] of requests) {
          const res = await t.as(b.m, { method: method as 'GET', url, ...(payload ? { payload } : {}) });
          assert.equal(res.statusCode, 404, `${method} ${url}`);
          assert.equal(res.json().type, 'WEBHOOK_ENDPOINT_NOT_FOUND');
        }
        // B cannot redeliver A's event to its own endpoint either.
        const steal = await t.as(b.m, {
          method: 'POST',
          url: `/webhook-endpoints/${epB.id}/redeliver`,
          payload: { eventId: String(rxA.received[0].headers['webhook-id']) },
        });
        assert.equal(steal.statusCode, 404);
        assert.equal(steal.json().type, 'EVENT_NOT_FOUND');
        assert.equal((await t.as(a.m, { method: 'GET', url: `/webhook-endpoints/${epA.id}` })).json().url, epA.url, 'unchanged');
      } finally {
        await rxA.close();
        await rxB.close();
      }
    });

    test("a quote's event reaches exactly the merchant's enabled endpoints that take it, with or without an Idempotency-Key", async () => {
      const t = ctx();
      const rx = await startReceiver();
      try {
        const { m, w } = await setup(t, '5000', 'sandbox');
        const other = await setup(t, '5000', 'sandbox');
        const every = await createEndpoint(t, m, `${rx.url}/every`);
        const quotes = await createEndpoint(t, m, `${rx.url}/quotes`, { eventTypes: ['quote.created', 'transfer.delivered'] });
        const transfers = await createEndpoint(t, m, `${rx.url}/transfers`, { eventTypes: ['transfer.created'] });
        const off = await createEndpoint(t, m, `${rx.url}/off`);
        const disable = await t.as(m, { method: 'PUT', url: `/webhook-endpoints/${off.id}`, payload: { url: `${rx.url}/off`, status: 'DISABLED' } });
        assert.equal(disable.statusCode, 200, disable.body);
        const elsewhere = await createEndpoint(t, other.m, `${rx.url}/elsewhere`);

        const plain = await quote(t, m, w.id);
        const keyed = await t.as(m, { method: 'POST', url: '/options', headers: { 'idempotency-key': 'quote-fan-out-1' }, payload: quoteBody(w.id) });
        assert.equal(keyed.statusCode, 201, keyed.body);
        const replayed = await t.as(m, { method: 'POST', url: '/options', headers: { 'idempotency-key': 'quote-fan-out-1' }, payload: quoteBody(w.id) });
        assert.deepEqual(replayed.json(), keyed.json(), 'the replay answers the same quote and writes nothing');
        await t.services.webhookDelivery.runOnce();

        const sent = async (ep: { id: string }, owner: Merchant) => (await attempts(t, owner, ep.id)).map((a) => a.webhookId).sort();
        const both = [plain.event_id, keyed.json().event_id].sort();
        assert.deepEqual(await sent(every, m), both);
        assert.deepEqual(await sent(quotes, m), both);
        assert.deepEqual(await sent(transfers, m), []);
        assert.deepEqual(await sent(off, m), []);
        assert.deepEqual(await sent(elsewhere, other.m), []);
        assert.equal(rx.received.length, 4);
        for (const r of rx.received) assert.equal(r.json.type, 'quote.created');
      } finally {
        await rx.close();
      }
    });

    test('endpoint API: eventTypes filter, webhook.test, replay since and per-event redelivery (same webhook-id), delete', async () => {
      const t = ctx();
      const rx = await startReceiver();
      try {
        const { m, w } = await setup(t, '5000', 'sandbox');
        const ep = await createEndpoint(t, m, rx.url, { eventTypes: ['transfer.created'] });
        const q = await quote(t, m, w.id);
        const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
        await t.services.webhookDelivery.runOnce();
        assert.deepEqual(
          rx.received.map((r) => r.json.type),
          ['transfer.created'],
          'only the subscribed type',
        );
        const test1 = await t.as(m, { method: 'POST', url: `/webhook-endpoints/${ep.id}/test` });
        assert.equal(test1.statusCode, 202, test1.body);
        assert.match(test1.json().webhookId, UUID_RE);
        await t.services.webhookDelivery.runOnce();
        assert.deepEqual(verify(ep.secret, rx.received[1]), { type: 'webhook.test', timestamp: ISO(t.clock.now()), data: { endpointId: ep.id } });
        assert.equal(rx.received[1].headers['webhook-id'], test1.json().webhookId);

        const replay = await t.as(m, { method: 'POST', url: `/webhook-endpoints/${ep.id}/replay`, payload: { since: ISO(t.clock.now() - 60_000) } });
        assert.deepEqual([replay.statusCode, replay.json()], [202, { queued: 1 }]);
        const events = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}/events` })).json();
        const redeliver = await t.as(m, { method: 'POST', url: `/webhook-endpoints/${ep.id}/redeliver`, payload: { eventId: events[0].id } });
        assert.deepEqual([redeliver.statusCode, redeliver.json()], [202, { queued: 1 }]);
        await t.services.webhookDelivery.runOnce();
        const again = rx.received.slice(2);
        const replayed = again.find((r) => r.headers['webhook-id'] === rx.received[0].headers['webhook-id']);
        assert.equal(replayed?.body, rx.received[0].body, 'a replay keeps the webhook-id and the body');
        assert.ok(
          again.some((r) => r.headers['webhook-id'] === events[0].id),
          'redelivery of quote.created, whatever the filter',
        );

        const put = await t.as(m, {
          method: 'PUT',
          url: `/webhook-endpoints/${ep.id}`,
          payload: { url: `${rx.url}/v2`, description: 'v2', status: 'DISABLED' },
        });
        const { secret: _secret, ...shown } = ep;
        assert.deepEqual(put.json(), {
          ...shown,
          url: `${rx.url}/v2`,
          description: 'v2',
          eventTypes: null,
          status: 'DISABLED',
          disabledReason: 'MERCHANT',
          updatedAt: ISO(t.clock.now()),
        });
        const del = await t.as(m, { method: 'DELETE', url: `/webhook-endpoints/${ep.id}` });
        assert.equal(del.statusCode, 204);
        assert.equal((await t.as(m, { method: 'GET', url: `/webhook-endpoints/${ep.id}` })).statusCode, 404);
        assert.deepEqual((await t.as(m, { method: 'GET', url: '/webhook-endpoints' })).json(), []);
      } finally {
        await rx.close();
      }
    });

    test('answers are cut to 1 KiB, redirects are not followed, a destination that does not answer in time is a failed attempt', async () => {
      const t = ctx();
      const target = await startReceiver();
      const rx = await startReceiver((r, res) => {
        if (r.json.type === 'quote.created' && r.json.data.sequence === 1 && rx.received.length === 1) return void res.writeHead(200).end('x'.repeat(10_000));
        if (rx.received.length === 2) return void res.writeHead(302, { location: `${target.url}/elsewhere` }).end();
        // The third: never answers in time.
      });
      try {
        const { m, w } = await setup(t);
        const ep = await createEndpoint(t, m, rx.url);
        const { WebhookDelivery } = await import('../src/modules/webhooks/delivery.ts');
        const fast = new WebhookDelivery(t.database.db, t.database.dialect, t.clock, {
          timeoutMs: 300,
          allowPrivate: true,
          concurrency: 1,
          endpointConcurrency: 1,
        });
        for (let i = 0; i < 3; i++) {
          await quote(t, m, w.id);
          await fast.runOnce();
        }
        const [timeout, redirect, big] = await attempts(t, m, ep.id);
        assert.deepEqual([big.status, big.responseStatus, big.responseBody.length], ['succeeded', 200, 1024]);
        assert.deepEqual([redirect.status, redirect.responseStatus, redirect.error], ['failed', 302, 'HTTP 302']);
        assert.equal(target.received.length, 0, 'the redirect was not followed');
        assert.deepEqual([timeout.status, timeout.responseStatus, timeout.error], ['failed', null, 'timeout: no answer within 0.3 s']);
        assert.ok(timeout.durationMs >= 290 && timeout.durationMs < 2000, String(timeout.durationMs));
      } finally {
        await rx.close();
        await target.close();
      }
    });
  },
  ENV,
);

describe('webhook destinations (SSRF): private addresses refused without WEBHOOK_ALLOW_PRIVATE', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp('sqlite', { WEBHOOK_ALLOW_PRIVATE: 'false' });
  });
  after(async () => t?.close());

  test('forbiddenAddress: loopback, private, link-local, metadata, unspecified, multicast, mapped IPv6; public addresses pass', () => {
    for (const a of [
      '127.0.0.1',
      '127.1.2.3',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::10.0.0.1',
    ]) {
      assert.ok(forbiddenAddress(a), `${a} must be refused`);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(forbiddenAddress(a), undefined, a);
  });

  test('registration refuses 127.0.0.1, 10.x, 169.254.169.254, [::1], mapped IPv6, a name resolving to loopback, and plain http', async () => {
    const m = await t.merchant();
    const urls = [
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]:8443/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://2130706433/hook', // 127.0.0.1 as one number
      'https://localhost/hook',
      'http://93.184.216.34/hook',
      'https://user:pw@93.184.216.34/hook',
    ];
    for (const url of urls) {
      const res = await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url } });
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      assert.equal(res.json().type, 'WEBHOOK_URL_REFUSED');
    }
    assert.deepEqual((await t.as(m, { method: 'GET', url: '/webhook-endpoints' })).json(), []);
  });

  test('the resolved address is checked again at send time: an endpoint that now points at loopback (by IP or by name) gets nothing', async () => {
    const rx = await startReceiver();
    try {
      const m = await t.merchant();
      const port = new URL(rx.url).port;
      const now = t.clock.now();
      // As if registered while the name resolved elsewhere (or by an older, laxer version): straight into the table.
      for (const [i, url] of [`http://127.0.0.1:${port}/`, `http://localhost:${port}/`].entries()) {
        await t.database.db
          .insertInto('webhook_endpoints')
          .values({
            id: `00000000-0000-7000-8000-00000000000${i}`,
            merchant_id: m.merchantId,
            url,
            description: null,
            event_types: null,
            status: 'ENABLED',
            disabled_reason: null,
            secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
            previous_secret: null,
            previous_secret_expires_at: null,
            failing_since: null,
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      const w = (
        await t.as(m, {
          method: 'POST',
          url: '/warehouses',
          payload: { name: 'W', address: 'A', locationMetadata: { display_name: 'A', lat: 0, lng: 0 } },
        })
      ).json();
      await quote(t, m, w.id);
      assert.equal(await t.services.webhookDelivery.runOnce(), 2);
      assert.equal(rx.received.length, 0, 'nothing reached the loopback receiver');
      const errors = await t.database.db
        .selectFrom('webhook_attempts')
        .select(['endpoint_id', 'error', 'status'])
        .where('merchant_id', '=', m.merchantId)
        .orderBy('endpoint_id')
        .execute();
      assert.equal(errors.length, 2);
      assert.match(errors[0].error ?? '', /^destination refused: 127\.0\.0\.1 is a loopback/);
      assert.match(errors[1].error ?? '', /^destination refused: localhost resolves to (127\.0\.0\.1|::1) /);
    } finally {
      await rx.close();
    }
  });
});

// SQLite only: spawning the binary is slow on small machines, and the store makes no difference to the CLI.
describe('webhooks: operator CLI', () => {
  let cliApp: TestApp;
  before(async () => {
    cliApp = await createTestApp('sqlite', ENV);
    senderNow = () => cliApp.clock.now();
  });
  after(async () => cliApp?.close());

  test('operator CLI through the real binary: mds webhooks list, attempts, replay', async () => {
    const t = cliApp;
    const rx = await startReceiver();
    try {
      const { m, w } = await setup(t);
      const ep = await createEndpoint(t, m, rx.url);
      await quote(t, m, w.id);
      await t.services.webhookDelivery.runOnce();
      const env = t.store.env;
      const list = await cli(env, ['webhooks', 'list', '--merchant', m.merchantId]);
      assert.equal(list.code, 0, list.stderr);
      const { secret: _secret, ...shown } = ep;
      assert.deepEqual(list.output, { endpoints: [{ ...shown, merchantId: m.merchantId, pending: 0 }] });
      const attemptsOut = await cli(env, ['webhooks', 'attempts', ep.id]);
      assert.equal(attemptsOut.code, 0, attemptsOut.stderr);
      assert.deepEqual(attemptsOut.output.attempts, await attempts(t, m, ep.id));
      const replay = await cli(env, ['webhooks', 'replay', ep.id, '--since', ISO(t.clock.now() - 1000)]);
      assert.deepEqual([replay.code, replay.output], [0, { queued: 1 }]);
      assert.ok(!JSON.stringify([list.output, attemptsOut.output]).includes(ep.secret), 'operators never see the secret');
    } finally {
      await rx.close();
    }
  });
});
