import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { iso } from '../src/lib/clock.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { money, paidTransfer, quote, quoteBody, setup, transferBody } from './helpers/flow.ts';
import { STORES, type StoreName } from './helpers/stores.ts';

/** A fresh app per test: the dispatcher's pass sees every transfer and courier of its store. */
async function withApp(store: StoreName, fn: (t: TestApp) => Promise<void>, env: Record<string, string> = {}) {
  const t = await createTestApp(store, env);
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

const MINUTE = 60_000;
const ms = (s: string) => Date.parse(s);
/** Scheduled pickups are offered this long before the window: the expected assign time (120 s) plus crossing DISPATCH_RADIUS_KM (3 km × 1.35 at 20 km/h, 729 s). */
const LEAD_MS = 849_000;

for (const store of STORES) {
  describe(`delivery estimates [${store}]`, () => {
    test('quote products carry estimates: pickup before delivery, later for farther destinations, express sooner than standard', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const now = t.clock.now();
        const near = await quote(t, m, w.id, { destinationLocation: { lat: 0, lng: 0.05, display_name: 'Near', city: 'Gulf' } });
        const far = await quote(t, m, w.id, { destinationLocation: { lat: 0, lng: 0.2, display_name: 'Far', city: 'Gulf' } });
        for (const q of [near, far]) {
          for (const p of Object.values(q.products) as Array<{ estimatedPickupAt: string; estimatedDeliveryAt: string }>) {
            assert.equal(p.estimatedPickupAt, iso(now + 2 * MINUTE), 'a courier expected after the expected assign time');
            assert.ok(ms(p.estimatedDeliveryAt) > ms(p.estimatedPickupAt));
          }
        }
        assert.ok(ms(far.products.standard.estimatedDeliveryAt) > ms(near.products.standard.estimatedDeliveryAt));
        assert.ok(ms(far.products.express.estimatedDeliveryAt) < ms(far.products.standard.estimatedDeliveryAt));
      }));

    test("a transfer's estimates follow the courier: its position before pickup, pickedUpAt and deliveredAt, null once delivered", () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const tr = await paidTransfer(t, m, w.id);
        assert.equal(tr.estimatedPickupAt, iso(t.clock.now() + 2 * MINUTE));
        // 0.02° of latitude: 2224 m from the warehouse, 3002 m of road at 20 km/h = 540 s.
        const c = await t.courier('Ivan Petrov', { lat: 0.02, lng: 0 });
        await t.services.dispatch.runOnce();
        const [offer] = (await t.as(c, { method: 'GET', url: '/courier/offers' })).json();
        assert.equal(offer.estimatedPickupAt, iso(t.clock.now() + 540_000));
        assert.equal((await t.as(c, { method: 'POST', url: `/courier/offers/${offer.id}/accept` })).statusCode, 200);
        const get = async () => (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
        const assigned = await get();
        assert.equal(assigned.estimatedPickupAt, iso(t.clock.now() + 540_000));
        const events = await t.services.transfers.events(undefined, tr.id);
        assert.equal((events.at(-1)!.data as Record<string, unknown>).estimatedPickupAt, assigned.estimatedPickupAt, 'the event carries the estimate');

        // Halfway there a minute later: the estimate comes closer.
        t.clock.advance(MINUTE);
        assert.equal((await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat: 0.01, lng: 0 } })).statusCode, 204);
        const moving = await get();
        assert.equal(moving.estimatedPickupAt, iso(t.clock.now() + 270_000));
        assert.ok(ms(moving.estimatedDeliveryAt) < ms(assigned.estimatedDeliveryAt));

        t.clock.advance(4 * MINUTE);
        await t.services.couriers.pickUp(c.courierId, tr.id, tr.transferCode);
        const picked = await get();
        const pickedAt = iso(t.clock.now());
        assert.equal(picked.pickedUpAt, pickedAt);
        assert.equal(picked.estimatedPickupAt, pickedAt);
        t.clock.advance(30 * MINUTE);
        await t.services.couriers.deliver(c.courierId, tr.id, tr.deliveryPin);
        const done = await get();
        assert.deepEqual(
          {
            pickedUpAt: done.pickedUpAt,
            deliveredAt: done.deliveredAt,
            estimatedPickupAt: done.estimatedPickupAt,
            estimatedDeliveryAt: done.estimatedDeliveryAt,
          },
          { pickedUpAt: pickedAt, deliveredAt: iso(t.clock.now()), estimatedPickupAt: null, estimatedDeliveryAt: null },
        );
      }));

    test('the sandbox courier moves along the way at the model speed: its tracked position and the tracking page', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '5000', 'sandbox');
        const tr = await paidTransfer(t, m, w.id);
        const advance = (to: string) => t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to } });
        await advance('courierAssigned');
        await advance('pickedUp');
        const track = async () => (await t.request({ method: 'GET', url: tr.trackingUrl, headers: { accept: 'application/json' } })).json();
        const xs: number[] = [];
        // 11.12 km × 1.35 at 20 km/h: 2702 s from the warehouse (x 12) to the destination (x 88).
        for (const seconds of [0, 1351, 2702, 4000]) {
          const view = await track();
          xs.push(view.map.courier.x);
          assert.equal(view.map.courier.at, iso(t.clock.now()));
          t.clock.advance(seconds === 4000 ? 0 : [1351, 1351, 1298][xs.length - 1] * 1000);
        }
        assert.deepEqual(xs, [12, 50, 88, 88]);
        const page = await t.request({ method: 'GET', url: tr.trackingUrl, headers: { accept: 'text/html' } });
        assert.match(page.body, /<p class="expected">Expected delivery <time datetime="[^"]+"/);
      }));
  });

  describe(`scheduled pickups [${store}]`, () => {
    test('pickupWindow validation: a 400 naming the field; nothing is quoted', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const now = t.clock.now();
        const body = (start: number, end: number) => quoteBody(w.id, { pickupWindow: { start: iso(start), end: iso(end) } });
        for (const [start, end, path, message] of [
          [now - 10 * MINUTE, now + 20 * MINUTE, '/pickupWindow/start', 'must not be in the past'],
          [now + 8 * 24 * 60 * MINUTE, now + 8 * 24 * 60 * MINUTE + 20 * MINUTE, '/pickupWindow/start', 'must be at most 7 days ahead'],
          [now + 60 * MINUTE, now + 65 * MINUTE, '/pickupWindow/end', 'must be at least 10 minutes after start'],
        ] as const) {
          const res = await t.as(m, { method: 'POST', url: '/options', headers: { 'x-request-id': 'w' }, payload: body(start, end) });
          assert.equal(res.statusCode, 400, res.body);
          assert.deepEqual(res.json(), {
            type: 'VALIDATION_FAILED',
            title: 'Request validation failed',
            status: 400,
            detail: `Request body failed validation: ${path} ${message}`,
            requestId: 'w',
            errors: [{ path, message }],
          });
        }
        const malformed = await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(w.id, { pickupWindow: { start: 'tomorrow' } }) });
        assert.equal(malformed.statusCode, 400);
        assert.deepEqual(
          malformed.json().errors.map((e: { path: string }) => e.path),
          ['/pickupWindow/end', '/pickupWindow/start'],
        );
        const count = await t.database.db
          .selectFrom('quotes')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(count.n), 0);
      }));

    test('a scheduled pickup: estimates inside the window, offered only when the courier can arrive by its start, the assignment timeout from its start', () =>
      withApp(
        store,
        async (t) => {
          const { m, w } = await setup(t, '5000');
          const c = await t.courier('Ivan Petrov', { lat: 0.001, lng: 0.001 });
          const start = t.clock.now() + 3 * 60 * MINUTE;
          const window = { start: iso(start), end: iso(start + 30 * MINUTE) };
          const q = await quote(t, m, w.id, { pickupWindow: window });
          assert.equal(q.products.standard.estimatedPickupAt, window.start);
          const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
          assert.deepEqual(tr.pickupWindow, window);
          assert.equal(tr.estimatedPickupAt, window.start);

          await t.services.dispatch.runOnce();
          assert.deepEqual((await t.as(c, { method: 'GET', url: '/courier/offers' })).json(), []);
          t.clock.advance(start - LEAD_MS - t.clock.now() - 1000);
          await t.services.dispatch.runOnce();
          assert.deepEqual((await t.as(c, { method: 'GET', url: '/courier/offers' })).json(), [], 'not a second early');
          // Nor is it cancelled for want of a courier: the timeout counts from the window's start.
          assert.equal(await t.services.transfers.cancelUnassigned(), 0);
          t.clock.advance(1000);
          await t.services.dispatch.runOnce();
          const [offer] = (await t.as(c, { method: 'GET', url: '/courier/offers' })).json();
          assert.equal(offer.transferId, tr.id);
          // Declined: nobody else; an hour after the window's start the system cancels it (full refund).
          await t.as(c, { method: 'POST', url: `/courier/offers/${offer.id}/decline` });
          t.clock.advance(LEAD_MS + 59 * MINUTE);
          assert.equal(await t.services.transfers.cancelUnassigned(), 0);
          t.clock.advance(MINUTE);
          assert.equal(await t.services.transfers.cancelUnassigned(), 1);
          assert.equal((await t.services.transfers.getAny(tr.id)).state, 'cancelled');
        },
        { ASSIGNMENT_TIMEOUT_MINUTES: '60' },
      ));

    test('the merchant cancels a scheduled pickup before its dispatch starts: a full refund, and it is never offered', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const c = await t.courier('Ivan Petrov', { lat: 0.001, lng: 0.001 });
        const start = t.clock.now() + 24 * 60 * MINUTE;
        const q = await quote(t, m, w.id, { pickupWindow: { start: iso(start), end: iso(start + 60 * MINUTE) } });
        const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
        const res = await t.as(m, { method: 'POST', url: `/transfer/${tr.id}/cancel`, payload: { reason: 'ORDER_CHANGED' } });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().refundedAmount, tr.totalPrice);
        assert.equal((await money(t, m)).balance, '1000.00');
        t.clock.advance(24 * 60 * MINUTE);
        await t.services.dispatch.runOnce();
        assert.deepEqual((await t.as(c, { method: 'GET', url: '/courier/offers' })).json(), []);
      }));
  });
}
