import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestApp, describeEachStore, type TestApp, UUID_RE, warehouseBody } from './helpers/app.ts';
import { DESTINATION, quote, quoteBody, setup, transferBody, WAREHOUSE_META } from './helpers/flow.ts';

async function quoteStatus(t: TestApp, id: string) {
  return (await t.database.db.selectFrom('quotes').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
}

/** Quotes: POST /options prices every product from a warehouse and freezes the prices until expiresAt. */

describeEachStore('POST /options', (ctx, store) => {
  test('creates a pending quote with every product priced; prices frozen until expiresAt', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const res = await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(w.id) });
    assert.equal(res.statusCode, 201);
    assert.match(res.headers['content-type'] as string, /^application\/json/);
    const q = res.json();
    for (const id of [q.id, q.transfer_id, q.event_id]) assert.match(id, UUID_RE);
    assert.equal(new Set([q.id, q.transfer_id, q.event_id]).size, 3);
    assert.deepEqual(q, {
      id: q.id,
      transfer_id: q.transfer_id,
      event_id: q.event_id,
      currency: 'RUB',
      distanceMeters: 11_120,
      expiresAt: new Date(t.clock.now() + 900_000).toISOString(),
      products: {
        standard: {
          status: 'AVAILABLE',
          unavailableReason: null,
          name: 'Standard delivery',
          // The travel-time model: a courier in 2 minutes, then 11.12 km × 1.35 at 20 km/h (2702 s) plus 3 minutes at the door.
          estimatedPickupAt: new Date(t.clock.now() + 120_000).toISOString(),
          estimatedDeliveryAt: new Date(t.clock.now() + 120_000 + 2_882_000).toISOString(),
          fees: { cancellation: '50.00', return: '100.00' },
          common: {
            pattern: 'standard',
            router_id: 'city-standard',
            tags: ['standard', 'same_day'],
            price: {
              original_amount: '516.00',
              payable_amount: '516.00',
              discount_pct: '0.00',
              courier_fee_total: '477.00',
              service_fee_total: '29.00',
              stop_fee_total: '10.00',
              discount_amount: '0.00',
            },
          },
        },
        express: {
          status: 'AVAILABLE',
          unavailableReason: null,
          name: 'Express delivery',
          // Express is faster (25 km/h): 2162 s on the way.
          estimatedPickupAt: new Date(t.clock.now() + 120_000).toISOString(),
          estimatedDeliveryAt: new Date(t.clock.now() + 120_000 + 2_342_000).toISOString(),
          fees: { cancellation: '75.00', return: '150.00' },
          common: {
            pattern: 'express',
            router_id: 'city-express',
            tags: ['express', 'within_2_hours'],
            price: {
              original_amount: '852.80',
              payable_amount: '767.52',
              discount_pct: '10.00',
              courier_fee_total: '793.80',
              service_fee_total: '49.00',
              stop_fee_total: '10.00',
              discount_amount: '85.28',
            },
          },
        },
      },
    });
    assert.equal(await quoteStatus(t, q.id), 'pending');
  });

  test('a product out of its range is UNAVAILABLE with a reason; beyond every range is OUT_OF_SERVICE_AREA and stores nothing', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id, { destinationLocation: { ...DESTINATION, lng: 0.3 } }); // 33.4 km: express (25 km) out
    assert.equal(q.products.standard.status, 'AVAILABLE');
    assert.equal(q.products.express.status, 'UNAVAILABLE');
    assert.equal(q.products.express.unavailableReason, 'DISTANCE_EXCEEDS_RANGE');
    const before = await t.database.db.selectFrom('quotes').select('id').where('merchant_id', '=', m.merchantId).execute();
    const far = await t.as(m, {
      method: 'POST',
      url: '/options',
      headers: { 'x-request-id': 'far' },
      payload: quoteBody(w.id, { destinationLocation: { ...DESTINATION, lng: 1 } }),
    });
    assert.equal(far.statusCode, 422);
    assert.deepEqual(far.json(), {
      type: 'OUT_OF_SERVICE_AREA',
      title: 'Destination out of service area',
      status: 422,
      detail: "The destination is 111.2 km from the warehouse, beyond every product's range",
      requestId: 'far',
    });
    // Also when another reason is what a product reports first (express takes neither CURBSIDE nor EXTRA_LARGE).
    for (const other of [{ deliveryType: 'CURBSIDE' }, { parcelSize: 'EXTRA_LARGE' }]) {
      const res = await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(w.id, { ...other, destinationLocation: { ...DESTINATION, lng: 1 } }) });
      assert.equal(res.statusCode, 422, JSON.stringify(other));
      assert.equal(res.json().type, 'OUT_OF_SERVICE_AREA');
    }
    const after = await t.database.db.selectFrom('quotes').select('id').where('merchant_id', '=', m.merchantId).execute();
    assert.equal(after.length, before.length);
  });

  test('a DISABLED warehouse cannot be quoted from: 422 WAREHOUSE_DISABLED', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    await t.as(m, { method: 'PUT', url: `/warehouses/${w.id}`, payload: warehouseBody({ status: 'DISABLED', locationMetadata: WAREHOUSE_META }) });
    const res = await t.as(m, { method: 'POST', url: '/options', headers: { 'x-request-id': 'dis' }, payload: quoteBody(w.id) });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json(), {
      type: 'WAREHOUSE_DISABLED',
      title: 'Warehouse disabled',
      status: 422,
      detail: `Warehouse ${w.id} is DISABLED and cannot be quoted from`,
      requestId: 'dis',
    });
  });

  test('validation: enumerated parcelSize and deliveryType, required fields, unknown fields, coordinates', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const cases: Array<[Record<string, unknown>, Array<{ path: string; message: string }>]> = [
      [quoteBody(w.id, { parcelSize: 'HUGE' }), [{ path: '/parcelSize', message: 'must be one of SMALL, MEDIUM, LARGE, EXTRA_LARGE' }]],
      [quoteBody(w.id, { deliveryType: 'DRONE' }), [{ path: '/deliveryType', message: 'must be one of DOOR_TO_DOOR, CURBSIDE' }]],
      [quoteBody(w.id, { warehouseId: 'abc' }), [{ path: '/warehouseId', message: 'must match format "uuid"' }]],
      [quoteBody(w.id, { isFragile: 'yes' }), [{ path: '/isFragile', message: 'must be boolean' }]],
      [quoteBody(w.id, { destinationLocation: { lat: 91, lng: 0, display_name: 'x' } }), [{ path: '/destinationLocation/lat', message: 'must be <= 90' }]],
      [quoteBody(w.id, { price: 1 }), [{ path: '/price', message: 'is not a known field' }]],
      [
        { warehouseId: w.id },
        [
          { path: '/destinationLocation', message: 'is required' },
          { path: '/parcelSize', message: 'is required' },
          { path: '/deliveryType', message: 'is required' },
        ],
      ],
    ];
    for (const [payload, errors] of cases) {
      const res = await t.as(m, { method: 'POST', url: '/options', payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.deepEqual(res.json().errors, errors, JSON.stringify(payload));
    }
    const count = await t.database.db.selectFrom('quotes').select('id').where('merchant_id', '=', m.merchantId).execute();
    assert.equal(count.length, 0, 'no quote was stored');
  });

  test('a new tariff prices new quotes; existing quotes keep their frozen prices', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const old = await quote(t, m, w.id);
    const current = await t.services.tariffs.current();
    const doc = structuredClone(current.document);
    doc.products.standard.serviceFee = 9_900;
    const { version } = await t.services.tariffs.set(doc);
    assert.ok(version >= 1);
    const fresh = await quote(t, m, w.id);
    assert.equal(fresh.products.standard.common.price.service_fee_total, '99.00');
    assert.equal(fresh.products.standard.common.price.payable_amount, '586.00');
    const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(old.id) });
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().totalPrice, 516);
    await t.services.tariffs.set(current.document); // restore for the other tests of this suite
  });

  test('a quote is priced from the warehouse, tariff and webhook endpoints as they are now, whichever instance changed them since the last one', async () => {
    const t = ctx();
    // A second instance on the same store: what this one remembers from its last quote is stale after its changes.
    const other = await createTestApp(store, { WEBHOOK_ALLOW_PRIVATE: 'true' }, t.store);
    const tariff = await t.services.tariffs.current();
    try {
      const { m, w } = await setup(t);
      const first = await quote(t, m, w.id);
      assert.equal(first.distanceMeters, 11_120);

      const put = (body: Record<string, unknown>) => other.as(m, { method: 'PUT', url: `/warehouses/${w.id}`, payload: warehouseBody(body) });
      assert.equal((await put({ locationMetadata: { ...WAREHOUSE_META, lng: 0.05 } })).statusCode, 200);
      assert.equal((await quote(t, m, w.id)).distanceMeters, 5_560, 'priced from where the warehouse is now');
      // A change that leaves the price as it was still reaches the quote's pickup snapshot.
      assert.equal((await put({ name: 'Renamed', locationMetadata: { ...WAREHOUSE_META, lng: 0.05 } })).statusCode, 200);
      const renamed = await quote(t, m, w.id);
      assert.equal(renamed.distanceMeters, 5_560, 'the same price as before the rename');
      const stored = await t.database.db.selectFrom('quotes').select('pickup').where('id', '=', renamed.id).executeTakeFirstOrThrow();
      assert.equal(JSON.parse(stored.pickup).name, 'Renamed', 'the pickup as the warehouse is now');
      // Changed by hand, by no instance: PostgreSQL's write sees the row's new revision and reads it again.
      await t.database.db.updateTable('warehouses').set({ name: 'Renamed by hand' }).where('id', '=', w.id).execute();
      const byHand = await quote(t, m, w.id);
      const storedByHand = await t.database.db.selectFrom('quotes').select('pickup').where('id', '=', byHand.id).executeTakeFirstOrThrow();
      assert.equal(JSON.parse(storedByHand.pickup).name, 'Renamed by hand', 'the pickup as it was changed by hand');

      const doc = structuredClone(tariff.document);
      doc.products.standard.serviceFee = 9_900;
      await other.services.tariffs.set(doc);
      assert.equal((await quote(t, m, w.id)).products.standard.common.price.service_fee_total, '99.00', 'priced with the tariff in force');

      const takers = async () => {
        const announced = await quote(t, m, w.id);
        const rows = await t.database.db.selectFrom('webhook_deliveries').select('endpoint_id').where('message_id', '=', announced.event_id).execute();
        return rows.map((d) => d.endpoint_id).sort();
      };
      const ep = await other.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/hook' } });
      assert.equal(ep.statusCode, 201, ep.body);
      assert.deepEqual(await takers(), [ep.json().id], 'the new endpoint takes the event (priced before without any)');
      const second = await other.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/second' } });
      assert.equal(second.statusCode, 201, second.body);
      assert.deepEqual(await takers(), [ep.json().id, second.json().id].sort(), 'both endpoints take it (priced before with one)');
      const disabled = await other.as(m, {
        method: 'PUT',
        url: `/webhook-endpoints/${ep.json().id}`,
        payload: { url: 'http://127.0.0.1:9/hook', status: 'DISABLED' },
      });
      assert.equal(disabled.statusCode, 200, disabled.body);
      assert.deepEqual(await takers(), [second.json().id], 'a disabled endpoint no longer takes it');
      for (const id of [ep.json().id, second.json().id]) {
        assert.equal((await other.as(m, { method: 'DELETE', url: `/webhook-endpoints/${id}` })).statusCode, 204);
      }
      assert.deepEqual(await takers(), [], 'with the endpoints gone, no deliveries');

      assert.equal((await put({ status: 'DISABLED', locationMetadata: WAREHOUSE_META })).statusCode, 200);
      const refused = await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(w.id) });
      assert.equal(refused.statusCode, 422, refused.body);
      assert.equal(refused.json().type, 'WAREHOUSE_DISABLED');

      assert.equal((await put({ status: 'ACTIVE', locationMetadata: WAREHOUSE_META })).statusCode, 200);
      assert.equal((await quote(t, m, w.id)).distanceMeters, 11_120, 'quoted again once ACTIVE');
      const all = await t.database.db.selectFrom('quotes').select('id').where('merchant_id', '=', m.merchantId).execute();
      assert.equal(all.length, 10, 'one row per answered quote, none for the refusal');
    } finally {
      await t.services.tariffs.set(tariff.document); // restore for the other tests of this suite
      await other.close();
    }
  });

  test("another merchant cannot quote from A's warehouse (404 WAREHOUSE_NOT_FOUND)", async () => {
    const t = ctx();
    const { w } = await setup(t);
    const other = await t.merchant('Other');
    const res = await t.as(other, { method: 'POST', url: '/options', headers: { 'x-request-id': 'w' }, payload: quoteBody(w.id) });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { type: 'WAREHOUSE_NOT_FOUND', title: 'Warehouse not found', status: 404, detail: `No warehouse ${w.id}`, requestId: 'w' });
  });
});
