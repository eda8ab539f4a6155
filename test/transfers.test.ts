import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { quotesRepository } from '../src/modules/quotes/repository.ts';
import { createTestApp, describeEachStore, ISO_MS_RE, type Merchant, type TestApp, warehouseBody } from './helpers/app.ts';
import { DESTINATION, money, paidTransfer, quote, RECIPIENT, STANDARD_MINOR, STANDARD_PRICE, setup, transferBody, WAREHOUSE_META } from './helpers/flow.ts';

async function quoteStatus(t: TestApp, id: string) {
  return (await t.database.db.selectFrom('quotes').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
}

async function countTransfers(t: TestApp, merchantId: string) {
  const rows = await t.database.db.selectFrom('transfers').select('id').where('merchant_id', '=', merchantId).execute();
  return rows.length;
}

describeEachStore('POST /transfer and GET /transfer/{id}', (ctx) => {
  test('consumes the quote, charges the balance with a ledger entry, returns every field; lookup equals creation', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const q = await quote(t, m, w.id);
    const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
    assert.equal(res.statusCode, 201, res.body);
    const tr = res.json();
    assert.equal(res.headers.location, `/transfer/${q.transfer_id}`);
    assert.match(tr.transferCode, /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
    assert.match(tr.trackingCode, /^[A-Za-z0-9_-]{22}$/);
    assert.match(tr.createdAt, ISO_MS_RE);
    assert.deepEqual(tr, {
      id: q.transfer_id,
      state: 'inProgress',
      transferCode: tr.transferCode,
      trackingCode: tr.trackingCode,
      trackingUrl: `/track/${tr.trackingCode}`,
      parcelSize: 'SMALL',
      description: 'Two books',
      pickupLocation: { type: 'Point', coordinates: [0, 0] },
      pickupAddress: 'Null Island 1',
      destinationLocation: { type: 'Point', coordinates: [0.1, 0] },
      destinationAddress: 'Destination 5',
      destinationAddressMetadata: DESTINATION,
      pickupAddressMetaData: WAREHOUSE_META,
      deliveryOptionName: 'Standard delivery',
      paymentTtlMinutes: 30,
      paymentExpiresAt: new Date(t.clock.now() + 30 * 60_000).toISOString(),
      recipientInfo: RECIPIENT,
      source: 'API',
      recipientFullName: 'Anna Ivanova',
      totalPrice: 516,
      currency: 'RUB',
      isFragile: false,
      isPerishable: false,
      senderInfo: { merchantId: m.merchantId, name: 'Shop', warehouseName: 'Main warehouse', phone: '+7 495 000-00-00', email: 'warehouse@example.com' },
      warehouseId: w.id,
      matchmakingId: q.id,
      productKey: 'standard',
      createdAt: new Date(t.clock.now()).toISOString(),
      updatedAt: new Date(t.clock.now()).toISOString(),
      deliveryPin: tr.deliveryPin,
      sandbox: false,
      refundedAmount: 0,
      // The quote's estimates, recomputed at payment: a courier expected in 2 minutes, the parcel 2882 s later.
      estimatedPickupAt: new Date(t.clock.now() + 120_000).toISOString(),
      estimatedDeliveryAt: new Date(t.clock.now() + 120_000 + 2_882_000).toISOString(),
    });
    assert.match(tr.deliveryPin, /^[0-9]{4}$/);
    assert.equal(await quoteStatus(t, q.id), 'consumed');
    const { balance, entries } = await money(t, m);
    assert.equal(balance, '484.00');
    assert.deepEqual(
      entries.map((e) => [e.kind, e.amount, e.balanceAfter, e.transferId]),
      [
        ['TOP_UP', '1000.00', '1000.00', null],
        ['CHARGE', `-${STANDARD_PRICE}`, '484.00', tr.id],
      ],
    );
    const got = await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` });
    assert.equal(got.statusCode, 200);
    assert.deepEqual(got.json(), tr);
  });

  test('express with flags: the frozen discounted price is charged', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '5000');
    const q = await quote(t, m, w.id, { isFragile: true, isPerishable: true, parcelSize: 'MEDIUM' });
    // courier (349.00 + 11.12 * 40.00) * 1.25 = 992.25, + 75.00 + 75.00 = 1142.25; original 1201.25; -10% 120.13 (120.125 rounds up)
    assert.deepEqual(q.products.express.common.price, {
      original_amount: '1201.25',
      payable_amount: '1081.12',
      discount_pct: '10.00',
      courier_fee_total: '1142.25',
      service_fee_total: '49.00',
      stop_fee_total: '10.00',
      discount_amount: '120.13',
    });
    const payable = q.products.express.common.price.payable_amount;
    const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id, { productKey: 'express' }) });
    assert.equal(res.statusCode, 201);
    const tr = res.json();
    assert.equal(tr.totalPrice, Number(payable));
    assert.deepEqual([tr.isFragile, tr.isPerishable, tr.parcelSize, tr.deliveryOptionName], [true, true, 'MEDIUM', 'Express delivery']);
    const { balance } = await money(t, m);
    assert.equal(balance, '3918.88');
  });

  test('a free product (a tariff that prices it at 0.00) is paid with no ledger entry; the transfer and its event are written', async () => {
    const t = ctx();
    const tariff = await t.services.tariffs.current();
    const doc = structuredClone(tariff.document);
    Object.assign(doc.products.standard, { baseFee: 0, perKmFee: 0, serviceFee: 0, stopFee: 0 });
    await t.services.tariffs.set(doc);
    try {
      const { m, w } = await setup(t, '1000');
      const q = await quote(t, m, w.id);
      assert.equal(q.products.standard.common.price.payable_amount, '0.00');
      const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().totalPrice, 0);
      const { balance, entries } = await money(t, m);
      assert.equal(balance, '1000.00');
      assert.deepEqual(
        entries.map((e) => e.kind),
        ['TOP_UP'],
      );
      const events = await t.database.db.selectFrom('events').select('type').where('transfer_id', '=', q.transfer_id).orderBy('sequence').execute();
      assert.deepEqual(
        events.map((e) => e.type),
        ['quote.created', 'transfer.created'],
      );
      assert.equal(await quoteStatus(t, q.id), 'consumed');
    } finally {
      await t.services.tariffs.set(tariff.document); // restore for the other tests of this suite
    }
  });

  test('QUOTE_ALREADY_USED: 409 with the transfer id; nothing changes', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id);
    const first = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
    assert.equal(first.statusCode, 201);
    const before = await money(t, m);
    const again = await t.as(m, {
      method: 'POST',
      url: '/transfer',
      headers: { 'x-request-id': 'used' },
      payload: transferBody(q.id, { productKey: 'express' }),
    });
    assert.equal(again.statusCode, 409);
    assert.deepEqual(again.json(), {
      type: 'QUOTE_ALREADY_USED',
      title: 'Quote already used',
      status: 409,
      detail: `The quote was already used by transfer ${q.transfer_id}`,
      requestId: 'used',
      transferId: q.transfer_id,
    });
    assert.deepEqual(await money(t, m), before);
    assert.equal(await countTransfers(t, m.merchantId), 1);
  });

  test("QUOTE_NOT_FOUND: random id and another merchant's quote are indistinguishable", async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const other = await setup(t);
    const q = await quote(t, m, w.id);
    const random = '01a20058-cb4a-7657-ba2b-fa105300957e';
    const mine = await t.as(other.m, { method: 'POST', url: '/transfer', headers: { 'x-request-id': 'nf' }, payload: transferBody(q.id) });
    const none = await t.as(other.m, { method: 'POST', url: '/transfer', headers: { 'x-request-id': 'nf' }, payload: transferBody(random) });
    assert.equal(mine.statusCode, 404);
    assert.deepEqual(mine.json(), { type: 'QUOTE_NOT_FOUND', title: 'Quote not found', status: 404, detail: `No quote ${q.id}`, requestId: 'nf' });
    assert.deepEqual({ ...(none.json() as object), detail: '' }, { ...(mine.json() as object), detail: '' });
    assert.equal(await quoteStatus(t, q.id), 'pending', "A's quote is untouched");
    assert.equal((await money(t, other.m)).balance, '5000.00');
  });

  test('QUOTE_EXPIRED after QUOTE_TTL_SECONDS: 422, the quote and the balance unchanged', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id);
    t.clock.advance(900_000 - 1);
    const q2 = await quote(t, m, w.id);
    assert.equal((await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).statusCode, 201, 'valid until the last millisecond');
    t.clock.advance(900_000);
    const res = await t.as(m, { method: 'POST', url: '/transfer', headers: { 'x-request-id': 'exp' }, payload: transferBody(q2.id) });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json(), {
      type: 'QUOTE_EXPIRED',
      title: 'Quote expired',
      status: 422,
      detail: `Quote ${q2.id} expired at ${q2.expiresAt}; request new options`,
      requestId: 'exp',
    });
    assert.equal(await quoteStatus(t, q2.id), 'pending');
    assert.equal((await money(t, m)).balance, (5000 - 516).toFixed(2));
  });

  test('PRODUCT_NOT_AVAILABLE: unknown key or an UNAVAILABLE product; quote stays pending', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id, { destinationLocation: { ...DESTINATION, lng: 0.3 } });
    const unknown = await t.as(m, {
      method: 'POST',
      url: '/transfer',
      headers: { 'x-request-id': 'pna' },
      payload: transferBody(q.id, { productKey: 'teleport' }),
    });
    assert.equal(unknown.statusCode, 422);
    // A key that names a property every object has is still not a product.
    const inherited = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id, { productKey: 'constructor' }) });
    assert.equal(inherited.statusCode, 422);
    assert.equal(inherited.json().detail, 'The quote has no product "constructor"; its products are "standard", "express"');
    assert.equal((await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id, { productKey: '__proto__' }) })).statusCode, 400);
    assert.deepEqual(unknown.json(), {
      type: 'PRODUCT_NOT_AVAILABLE',
      title: 'Product not available',
      status: 422,
      detail: 'The quote has no product "teleport"; its products are "standard", "express"',
      requestId: 'pna',
    });
    const unavailable = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id, { productKey: 'express' }) });
    assert.equal(unavailable.statusCode, 422);
    assert.equal(unavailable.json().detail, 'Product "express" is not available for this quote (DISTANCE_EXCEEDS_RANGE)');
    assert.equal(await quoteStatus(t, q.id), 'pending');
    assert.equal((await money(t, m)).balance, '5000.00');
    assert.equal((await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).statusCode, 201, 'the quote can still be used');
  });

  test('INSUFFICIENT_BALANCE: 402, nothing changes; after a top-up the same quote works', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '515.99');
    const q = await quote(t, m, w.id);
    const res = await t.as(m, { method: 'POST', url: '/transfer', headers: { 'x-request-id': 'poor' }, payload: transferBody(q.id) });
    assert.equal(res.statusCode, 402);
    assert.deepEqual(res.json(), {
      type: 'INSUFFICIENT_BALANCE',
      title: 'Insufficient balance',
      status: 402,
      detail: 'The balance (515.99 RUB) does not cover 516.00 RUB; top up and retry',
      requestId: 'poor',
      balance: 515.99,
      required: 516,
      currency: 'RUB',
    });
    assert.equal(await quoteStatus(t, q.id), 'pending');
    const after = await money(t, m);
    assert.equal(after.balance, '515.99');
    assert.equal(after.entries.length, 1);
    assert.equal(await countTransfers(t, m.merchantId), 0);
    await t.services.merchants.topUp(m.merchantId, 1);
    assert.equal((await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).statusCode, 201);
    assert.equal((await money(t, m)).balance, '0.00');
  });

  test('a warehouse disabled after quoting: 422 WAREHOUSE_DISABLED, nothing charged', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id);
    await t.as(m, { method: 'PUT', url: `/warehouses/${w.id}`, payload: warehouseBody({ status: 'DISABLED', locationMetadata: WAREHOUSE_META }) });
    const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().type, 'WAREHOUSE_DISABLED');
    assert.equal(await quoteStatus(t, q.id), 'pending');
    assert.equal((await money(t, m)).balance, '5000.00');
  });

  test('validation: 400 with paths, nothing consumed', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id);
    const cases: Array<[Record<string, unknown>, Array<{ path: string; message: string }>]> = [
      [transferBody(q.id, { recipientInfo: { firstName: 'A', lastName: 'B' } }), [{ path: '/recipientInfo/phone', message: 'is required' }]],
      [transferBody(q.id, { matchmakingId: 'nope' }), [{ path: '/matchmakingId', message: 'must match format "uuid"' }]],
      [transferBody(q.id, { totalPrice: 0 }), [{ path: '/totalPrice', message: 'is not a known field' }]],
      [
        transferBody(q.id, { productKey: '' }),
        [{ path: '/productKey', message: 'must be a product key: a lower-case letter, then up to 31 lower-case letters, digits or underscores' }],
      ],
    ];
    for (const [payload, errors] of cases) {
      const res = await t.as(m, { method: 'POST', url: '/transfer', payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.deepEqual(res.json().errors, errors);
    }
    assert.equal(await quoteStatus(t, q.id), 'pending');
  });

  test("GET /transfer/{id}: another merchant's transfer is 404 like a random id; non-UUID is 400", async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const other = await t.merchant('Other');
    const q = await quote(t, m, w.id);
    const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
    const theirs = await t.as(other, { method: 'GET', url: `/transfer/${tr.id}`, headers: { 'x-request-id': 'x' } });
    const none = await t.as(other, { method: 'GET', url: '/transfer/01a20058-cb4a-7657-ba2b-fa105300957e', headers: { 'x-request-id': 'x' } });
    assert.equal(theirs.statusCode, 404);
    assert.deepEqual(theirs.json(), { type: 'TRANSFER_NOT_FOUND', title: 'Transfer not found', status: 404, detail: `No transfer ${tr.id}`, requestId: 'x' });
    assert.deepEqual({ ...(none.json() as object), detail: '' }, { ...(theirs.json() as object), detail: '' });
    const bad = await t.as(m, { method: 'GET', url: '/transfer/123' });
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json().errors, [{ path: '/transferId', message: 'must match format "uuid"' }]);
  });
});

describeEachStore(
  'transfers under real concurrency',
  (ctx) => {
    test('50 concurrent POST /transfer on one quote: exactly one 201, 49 × 409, charged once', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const q = await quote(t, m, w.id);
      const token = await t.token(m);
      const results = await Promise.all(Array.from({ length: 50 }, () => t.http(token, 'POST', '/transfer', transferBody(q.id))));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [201, ...Array(49).fill(409)]);
      for (const r of results.filter((r) => r.status === 409)) {
        assert.equal(r.body.type, 'QUOTE_ALREADY_USED');
        assert.equal(r.body.transferId, q.transfer_id);
      }
      assert.equal(await countTransfers(t, m.merchantId), 1);
      const { balance, entries } = await money(t, m);
      assert.equal(balance, '484.00');
      assert.equal(entries.filter((e) => e.kind === 'CHARGE').length, 1);
    });

    test('20 concurrent transfers on distinct quotes, balance for only 5: exactly 5 succeed, balance ends at 0', async () => {
      const t = ctx();
      const { m, w } = await setup(t, ((5 * STANDARD_MINOR) / 100).toFixed(2));
      const quotes = [];
      for (let i = 0; i < 20; i++) quotes.push(await quote(t, m, w.id));
      const token = await t.token(m);
      const results = await Promise.all(quotes.map((q) => t.http(token, 'POST', '/transfer', transferBody(q.id))));
      const ok = results.filter((r) => r.status === 201);
      assert.equal(ok.length, 5);
      assert.ok(
        results.every((r) => r.status === 201 || (r.status === 402 && r.body.type === 'INSUFFICIENT_BALANCE')),
        JSON.stringify(results.map((r) => r.status)),
      );
      const { balance, entries } = await money(t, m);
      assert.equal(balance, '0.00');
      assert.equal(entries.filter((e) => e.kind === 'CHARGE').length, 5);
      assert.ok(
        entries.every((e) => Number(e.balanceAfter) >= 0),
        'never negative at any point of the ledger',
      );
      assert.equal(await countTransfers(t, m.merchantId), 5);
      const consumed = await t.database.db.selectFrom('quotes').select('id').where('merchant_id', '=', m.merchantId).where('status', '=', 'consumed').execute();
      assert.equal(consumed.length, 5, 'refused transfers left their quotes pending');
    });
  },
  {},
  { pgbouncer: true },
);

describeEachStore('transfer codes', (ctx) => {
  test('a colliding transferCode is redrawn: the transfer succeeds, nothing is charged twice', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const codes = ['AAAA-AAAA', 'AAAA-AAAA', 'BBBB-BBBB'];
    const { TransfersService } = await import('../src/modules/transfers/service.ts');
    const service = new TransfersService(t.database.db, t.clock, {
      paymentTtlMinutes: 30,
      assignmentTimeoutMinutes: 60,
      sandboxStepSeconds: 0,
      transferCode: () => codes.shift() ?? 'CCCC-CCCC',
    });
    const q1 = await quote(t, m, w.id);
    const q2 = await quote(t, m, w.id);
    const first = await service.create(m.merchantId, transferBody(q1.id) as never);
    const second = await service.create(m.merchantId, transferBody(q2.id) as never);
    assert.equal(first.transferCode, 'AAAA-AAAA');
    assert.equal(second.transferCode, 'BBBB-BBBB');
    assert.equal(await countTransfers(t, m.merchantId), 2);
    const { entries } = await money(t, m);
    assert.equal(entries.filter((e) => e.kind === 'CHARGE').length, 2);
  });
});

describeEachStore(
  'a transfer sees what changed between its read of the quote and its write',
  (ctx, store) => {
    // PostgreSQL reads the quote, then writes in one statement a round trip later; SQLite reads and
    // consumes in one statement under its write lock, so nothing can come between. (A merchant's first
    // payment on an instance always reads its quote, and setup() makes a new merchant for each test.)
    const skip = store === 'sqlite' ? 'SQLite reads and consumes the quote in one statement under its write lock' : false;

    /** Runs `change` right after the transfer's read of its quote, as another request would. */
    async function withChangeAfterRead<T>(change: () => Promise<unknown>, fn: () => Promise<T>): Promise<T> {
      const read = quotesRepository.forTransfer;
      quotesRepository.forTransfer = async (...args) => {
        const found = await read(...args);
        await change();
        return found;
      };
      try {
        return await fn();
      } finally {
        quotesRepository.forTransfer = read;
      }
    }

    test('a warehouse disabled in between: 422 WAREHOUSE_DISABLED, the quote still pending, nothing charged', { skip }, async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const q = await quote(t, m, w.id);
      const disable = () =>
        t.as(m, { method: 'PUT', url: `/warehouses/${w.id}`, payload: warehouseBody({ status: 'DISABLED', locationMetadata: WAREHOUSE_META }) });
      const res = await withChangeAfterRead(disable, () => t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) }));
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(res.json().type, 'WAREHOUSE_DISABLED');
      assert.equal(await quoteStatus(t, q.id), 'pending');
      assert.equal((await money(t, m)).balance, '5000.00');
      assert.equal(await countTransfers(t, m.merchantId), 0);
    });

    test('the balance spent in between: 402 naming the balance the debit saw, the quote still pending, nothing charged', { skip }, async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const q = await quote(t, m, w.id);
      const spend = () => t.services.merchants.adjust(m.merchantId, -60_000, 'Spent meanwhile', { kind: 'cli', machineUser: 'test' });
      const res = await withChangeAfterRead(spend, () => t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) }));
      assert.equal(res.statusCode, 402, res.body);
      assert.deepEqual([res.json().detail, res.json().balance], ['The balance (400.00 RUB) does not cover 516.00 RUB; top up and retry', 400]);
      assert.equal(await quoteStatus(t, q.id), 'pending');
      assert.equal((await money(t, m)).balance, '400.00');
      assert.equal(await countTransfers(t, m.merchantId), 0);
    });

    test('a plan that never holds (as if the endpoints changed before each write) is 503 after three reads: nothing written, the key released; then paid', {
      skip,
    }, async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      assert.equal((await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/a' } })).statusCode, 201);
      const q = await quote(t, m, w.id);
      const pay = () => t.as(m, { method: 'POST', url: '/transfer', headers: { 'idempotency-key': 'never-holds' }, payload: transferBody(q.id) });
      const read = quotesRepository.forTransfer;
      let reads = 0;
      quotesRepository.forTransfer = async (...args) => {
        reads++;
        const found = await read(...args);
        return found && { ...found, endpointsFingerprint: 'changed' };
      };
      let res: Awaited<ReturnType<typeof t.as>>;
      try {
        res = await pay();
      } finally {
        quotesRepository.forTransfer = read;
      }
      assert.equal(res.statusCode, 503, res.body);
      assert.deepEqual([res.json().type, res.headers['retry-after']], ['SERVICE_UNAVAILABLE', '1']);
      assert.equal(reads, 3);
      assert.equal(await quoteStatus(t, q.id), 'pending');
      assert.equal((await money(t, m)).balance, '5000.00');
      assert.equal(await countTransfers(t, m.merchantId), 0);
      const again = await pay();
      assert.equal(again.statusCode, 201, again.body);
      assert.equal(again.headers['idempotent-replayed'], undefined);
      assert.equal((await money(t, m)).balance, (5000 - 516).toFixed(2));
    });

    test('a webhook endpoint disabled in between gets no delivery of transfer.created', { skip }, async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const ep = await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/a' } });
      assert.equal(ep.statusCode, 201, ep.body);
      const q = await quote(t, m, w.id);
      const disable = () => t.as(m, { method: 'PUT', url: `/webhook-endpoints/${ep.json().id}`, payload: { url: 'http://127.0.0.1:9/a', status: 'DISABLED' } });
      const res = await withChangeAfterRead(disable, () => t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) }));
      assert.equal(res.statusCode, 201, res.body);
      const events = (await t.as(m, { method: 'GET', url: `/transfer/${res.json().id}/events` })).json() as Array<{ id: string; type: string }>;
      const created = events.find((e) => e.type === 'transfer.created');
      const deliveries = await t.database.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('message_id', '=', created?.id ?? '')
        .execute();
      assert.equal(deliveries.length, 0);
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'true' },
);

describeEachStore(
  'a transfer of a quote is written from what holds when it is paid, whichever instance changed it',
  (ctx, store) => {
    /** Pays quote `id` on instance `on`; the response. */
    const pay = (on: TestApp, m: Merchant, id: string) => on.as(m, { method: 'POST', url: '/transfer', payload: transferBody(id) });

    /** The endpoints that take the transfer's transfer.created event. */
    async function takers(t: TestApp, m: Merchant, transferId: string): Promise<string[]> {
      const events = (await t.as(m, { method: 'GET', url: `/transfer/${transferId}/events` })).json() as Array<{ id: string; type: string }>;
      const created = events.find((e) => e.type === 'transfer.created');
      assert.ok(created);
      const rows = await t.database.db.selectFrom('webhook_deliveries').select('endpoint_id').where('message_id', '=', created.id).execute();
      return rows.map((r) => r.endpoint_id).sort();
    }

    test('endpoints added and disabled, the merchant renamed and the warehouse disabled on another instance after the quote; a quote paid there first is refused here', async () => {
      const t = ctx();
      // A second instance on the same store. On PostgreSQL this one pays the quotes it wrote without
      // reading them back, so what it planned from is stale after the other's changes.
      const other = await createTestApp(store, { WEBHOOK_ALLOW_PRIVATE: 'true' }, t.store);
      try {
        const { m, w } = await setup(t);
        await paidTransfer(t, m, w.id); // this instance has now read the merchant once

        const q1 = await quote(t, m, w.id);
        const ep = await other.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/hook' } });
        assert.equal(ep.statusCode, 201, ep.body);
        const tr1 = await pay(t, m, q1.id);
        assert.equal(tr1.statusCode, 201, tr1.body);
        assert.deepEqual(await takers(t, m, tr1.json().id), [ep.json().id], 'the endpoint added after the quote takes transfer.created');

        const q1b = await quote(t, m, w.id);
        const ep2 = await other.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/second' } });
        assert.equal(ep2.statusCode, 201, ep2.body);
        const tr1b = await pay(t, m, q1b.id);
        assert.equal(tr1b.statusCode, 201, tr1b.body);
        assert.deepEqual(await takers(t, m, tr1b.json().id), [ep.json().id, ep2.json().id].sort(), 'so does a second one, added while the first was enabled');

        const q2 = await quote(t, m, w.id);
        const off = await other.as(m, {
          method: 'PUT',
          url: `/webhook-endpoints/${ep.json().id}`,
          payload: { url: 'http://127.0.0.1:9/hook', status: 'DISABLED' },
        });
        assert.equal(off.statusCode, 200, off.body);
        const tr2 = await pay(t, m, q2.id);
        assert.equal(tr2.statusCode, 201, tr2.body);
        assert.deepEqual(await takers(t, m, tr2.json().id), [ep2.json().id], 'the endpoint disabled after the quote does not');

        // Renamed as an operator would in the database: the transfer names the merchant as it is now.
        const q3 = await quote(t, m, w.id);
        await other.database.db.updateTable('merchants').set({ name: 'Shop Renamed' }).where('id', '=', m.merchantId).execute();
        const tr3 = await pay(t, m, q3.id);
        assert.equal(tr3.statusCode, 201, tr3.body);
        assert.equal(tr3.json().senderInfo.name, 'Shop Renamed');
        assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr3.json().id}` })).json().senderInfo.name, 'Shop Renamed');

        // Switched to sandbox the same way: the transfer is a sandbox one.
        const q3b = await quote(t, m, w.id);
        const setMode = (mode: 'live' | 'sandbox') => other.database.db.updateTable('merchants').set({ mode }).where('id', '=', m.merchantId).execute();
        await setMode('sandbox');
        const tr3b = await pay(t, m, q3b.id);
        assert.equal(tr3b.statusCode, 201, tr3b.body);
        assert.equal(tr3b.json().sandbox, true);
        await setMode('live');

        const q4 = await quote(t, m, w.id);
        const put = (status: string) =>
          other.as(m, {
            method: 'PUT',
            url: `/warehouses/${w.id}`,
            payload: warehouseBody({ address: 'Null Island 1', status, locationMetadata: WAREHOUSE_META }),
          });
        assert.equal((await put('DISABLED')).statusCode, 200);
        const refused = await pay(t, m, q4.id);
        assert.equal(refused.statusCode, 422, refused.body);
        assert.deepEqual([refused.json().type, refused.json().detail], ['WAREHOUSE_DISABLED', `Warehouse ${w.id} is DISABLED`]);
        assert.equal(await quoteStatus(t, q4.id), 'pending');
        assert.equal((await put('ACTIVE')).statusCode, 200);

        const q5 = await quote(t, m, w.id);
        const there = await pay(other, m, q5.id);
        assert.equal(there.statusCode, 201, there.body);
        const here = await pay(t, m, q5.id);
        assert.equal(here.statusCode, 409, here.body);
        assert.deepEqual([here.json().type, here.json().transferId], ['QUOTE_ALREADY_USED', q5.transfer_id]);
        // A refusal is never given from memory: paid there first, then here for a product it does not offer, it is still "used".
        // (The quote refused above is paid first: that read lets this instance remember the merchant again.)
        assert.equal((await pay(t, m, q4.id)).statusCode, 201);
        const q6 = await quote(t, m, w.id);
        assert.equal((await pay(other, m, q6.id)).statusCode, 201);
        const wrong = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q6.id, { productKey: 'no_such_product' }) });
        assert.equal(wrong.statusCode, 409, wrong.body);
        assert.deepEqual([wrong.json().type, wrong.json().transferId], ['QUOTE_ALREADY_USED', q6.transfer_id]);

        const { balance, entries } = await money(t, m);
        assert.equal(entries.filter((e) => e.kind === 'CHARGE').length, 9, 'the first transfer, tr1, tr1b, tr2, tr3, tr3b, q4, q5 and q6 once each');
        assert.equal(balance, (5000 - 9 * 516).toFixed(2));
        assert.equal(await countTransfers(t, m.merchantId), 9);
      } finally {
        await other.close();
      }
    });

    test('a quote this instance wrote is paid without reading it back; one written elsewhere is read', {
      skip: store === 'sqlite' && 'SQLite consumes and reads the quote in one statement',
    }, async () => {
      const t = ctx();
      const other = await createTestApp(store, {}, t.store);
      const read = quotesRepository.forTransfer;
      let reads = 0;
      quotesRepository.forTransfer = async (...args) => {
        reads++;
        return read(...args);
      };
      try {
        const { m, w } = await setup(t);
        // With an endpoint, so the statement compares the endpoints' fingerprint remembered from the quote.
        assert.equal((await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/a' } })).statusCode, 201);
        await paidTransfer(t, m, w.id);
        assert.equal(reads, 1, "the merchant's first transfer here reads its quote (and the merchant)");
        const mine = await pay(t, m, (await quote(t, m, w.id)).id);
        assert.equal(mine.statusCode, 201, mine.body);
        assert.equal(reads, 1, 'not read back');
        const theirs = await pay(t, m, (await quote(other, m, w.id)).id);
        assert.equal(theirs.statusCode, 201, theirs.body);
        assert.equal(reads, 2, 'read');
        assert.equal((await money(t, m)).balance, (5000 - 3 * 516).toFixed(2));
      } finally {
        quotesRepository.forTransfer = read;
        await other.close();
      }
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'true' },
);

/**
 * Another transaction holds the merchant's balance row as a debit or refund would (FOR NO KEY UPDATE)
 * until release(); waited() returns once some other session waits for it.
 */
async function holdBalanceRow(t: TestApp, merchantId: string) {
  let release!: () => void;
  let locked!: (pid: number) => void;
  const isLocked = new Promise<number>((r) => {
    locked = r;
  });
  const holder = t.database.db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid from merchants where id = ${merchantId} for no key update`.execute(trx);
    locked(rows[0].pid);
    await new Promise<void>((r) => {
      release = r;
    });
  });
  const holderPid = await isLocked;
  return {
    async waited(who: string) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where ${holderPid}::int = any(pg_blocking_pids(pid))`.execute(t.database.db);
        if (rows[0].n > 0) return;
        assert.ok(Date.now() < deadline, `${who} never waited for the balance row`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async release() {
      release();
      await holder;
    },
  };
}

describeEachStore("a merchant's transfers wait on its balance row only for the debit", (ctx, store) => {
  // On PostgreSQL a transfer is one statement, and every transfer of a merchant queues on its balance
  // row. The transfer row (and its event and deliveries) is written before the debit takes that row, so
  // the row is held for the debit, the ledger entry and the commit only. SQLite has one writer anyway.
  const skip = store === 'sqlite' ? 'SQLite serialises every write; there is no row lock to hold for less' : false;

  test('with the balance row locked elsewhere, the waiting transfer has already written its row; then it completes, charged once', { skip }, async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const first = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody((await quote(t, m, w.id)).id) });
    assert.equal(first.statusCode, 201, first.body);
    const q = await quote(t, m, w.id);

    const balanceRow = await holdBalanceRow(t, m.merchantId);
    const pending = t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
    try {
      // Until the transfer's statement waits for the holder (its debit; nothing else it does conflicts).
      await balanceRow.waited('the transfer');
      // A row with the waiting transfer's id and quote (a copy of the first transfer otherwise) must wait
      // for that transaction if, and only if, it has already inserted its own: uncommitted rows are
      // invisible, but their unique keys are not.
      const probe = await t.database.db
        .transaction()
        .execute(async (trx) => {
          await sql`set local lock_timeout = '300ms'`.execute(trx);
          await sql`insert into transfers select (json_populate_record(f, json_build_object(
              'id', ${q.transfer_id}::text, 'quote_id', ${q.id}::text, 'transfer_code', ${randomUUID()}::text, 'tracking_code', ${randomUUID()}::text))).*
            from transfers f where f.id = ${first.json().id}`.execute(trx);
          throw new Error('inserted'); // rolled back: the probe must change nothing
        })
        .catch((err: { code?: string; message?: string }) => err.code ?? err.message);
      assert.equal(probe, '55P03', 'the transfer row was not written before the debit waited (lock_not_available expected)');
    } finally {
      await balanceRow.release();
    }
    const res = await pending;
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().id, q.transfer_id);
    assert.equal((await money(t, m)).balance, ((500_000 - 2 * STANDARD_MINOR) / 100).toFixed(2));
    assert.equal(await countTransfers(t, m.merchantId), 2);
  });

  test('a cancellation with a refund, the balance row locked elsewhere: its event is already written when it waits; then refunded once', { skip }, async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const paid = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody((await quote(t, m, w.id)).id) });
    assert.equal(paid.statusCode, 201, paid.body);
    const id = paid.json().id as string;

    const balanceRow = await holdBalanceRow(t, m.merchantId);
    const pending = t.as(m, { method: 'POST', url: `/transfer/${id}/cancel`, payload: { reason: 'CUSTOMER_REQUESTED' } });
    try {
      await balanceRow.waited('the cancellation');
      // An event with the cancellation's sequence (3: quote.created, transfer.created, then this) must wait
      // for that transaction if, and only if, it has already inserted its own.
      const probe = await t.database.db
        .transaction()
        .execute(async (trx) => {
          await sql`set local lock_timeout = '300ms'`.execute(trx);
          await sql`insert into events (id, merchant_id, transfer_id, sequence, type, state, actor_type, actor_id, actor_name, data, occurred_at)
            select ${randomUUID()}::text, merchant_id, transfer_id, 3, type, state, actor_type, actor_id, actor_name, data, occurred_at
            from events where transfer_id = ${id} and sequence = 2`.execute(trx);
          throw new Error('inserted'); // rolled back: the probe must change nothing
        })
        .catch((err: { code?: string; message?: string }) => err.code ?? err.message);
      assert.equal(probe, '55P03', 'the event was not written before the refund waited (lock_not_available expected)');
    } finally {
      await balanceRow.release();
    }
    const res = await pending;
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().state, 'cancelled');
    assert.equal((await money(t, m)).balance, '5000.00');
    const refunds = (await t.services.merchants.ledger(m.merchantId)).entries.filter((e) => e.kind === 'REFUND');
    assert.deepEqual(
      refunds.map((e) => [e.transferId, e.amount]),
      [[id, STANDARD_PRICE]],
    );
  });
});
