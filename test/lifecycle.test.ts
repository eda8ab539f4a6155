import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CompiledQuery, Kysely } from 'kysely';
import { startScheduler } from '../src/background/scheduler.ts';
import type { DB } from '../src/db/types.ts';
import { createTestApp, describeEachStore, ISO_MS_RE, type Merchant, type TestApp, UUID_RE, warehouseBody } from './helpers/app.ts';
import { money, paidTransfer, quote, STANDARD_MINOR, setup, transferBody, WAREHOUSE_META } from './helpers/flow.ts';
import { type PlanStep, postgresPlanSteps, sqlitePlan, statementsSent } from './helpers/stores.ts';

const STATES = ['inProgress', 'courierAssigned', 'pickedUp', 'delivered', 'returning', 'returned', 'cancelled'] as const;
type State = (typeof STATES)[number];

/** How the sandbox's simulated courier reaches each state from inProgress. */
const PATH_TO: Record<State, State[]> = {
  inProgress: [],
  courierAssigned: ['courierAssigned'],
  pickedUp: ['courierAssigned', 'pickedUp'],
  delivered: ['courierAssigned', 'pickedUp', 'delivered'],
  returning: ['courierAssigned', 'pickedUp', 'returning'],
  returned: ['courierAssigned', 'pickedUp', 'returning', 'returned'],
  cancelled: ['cancelled'],
};

/** Written out by hand (not read from the lifecycle table): what the sandbox courier may do from each state. */
const SANDBOX_ALLOWED: Record<State, State[]> = {
  inProgress: ['courierAssigned', 'cancelled'],
  courierAssigned: ['inProgress', 'pickedUp'],
  pickedUp: ['delivered', 'returning'],
  delivered: [],
  returning: ['returned'],
  returned: [],
  cancelled: [],
};

const advance = (t: TestApp, m: Merchant | string, id: string, to: string, extra: Record<string, unknown> = {}) =>
  t.as(m, { method: 'POST', url: `/sandbox/transfer/${id}/advance`, payload: { to, ...extra } });
const cancel = (
  t: TestApp,
  m: Merchant | string,
  id: string,
  body: Record<string, unknown> = { reason: 'CUSTOMER_REQUESTED' },
  headers: Record<string, string> = {},
) => t.as(m, { method: 'POST', url: `/transfer/${id}/cancel`, headers, payload: body });
const events = async (t: TestApp, m: Merchant, id: string) => {
  const res = await t.as(m, { method: 'GET', url: `/transfer/${id}/events` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Array<{ id: string; type: string; sequence: number; state: string | null; actor: { type: string }; data: Record<string, unknown> }>;
};
const get = async (t: TestApp, m: Merchant, id: string) => (await t.as(m, { method: 'GET', url: `/transfer/${id}` })).json();

/** The live courier API arrives with the courier issue; until then its moves are made through the service, as it will. */
const courierMove = (t: TestApp, id: string, to: State, firstName = 'Ivan') =>
  t.services.transfers.transition(id, { to, actor: { type: 'courier', courier: { id: 'c-1', firstName } } });

async function assertGapless(t: TestApp, m: Merchant, id: string) {
  const list = await events(t, m, id);
  assert.deepEqual(
    list.map((e) => e.sequence),
    list.map((_, i) => i + 1),
    'sequences are 1..n with no gaps',
  );
  return list;
}

describeEachStore('transfer lifecycle: events, cancellation, refunds', (ctx) => {
  test('a new transfer: updatedAt, a 4-digit deliveryPin, no refund yet; its timeline is quote.created (1) then transfer.created (2)', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id);
    const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
    assert.equal(tr.updatedAt, tr.createdAt);
    assert.match(tr.deliveryPin, /^\d{4}$/);
    assert.equal(tr.refundedAmount, 0);
    assert.equal(tr.sandbox, false);
    assert.equal('cancellation' in tr || 'courier' in tr, false);
    const list = await events(t, m, tr.id);
    assert.equal(list.length, 2);
    const [created, paid] = list as any[];
    assert.deepEqual(created, {
      id: q.event_id,
      type: 'quote.created',
      transferId: tr.id,
      sequence: 1,
      position: created.position,
      state: null,
      occurredAt: created.occurredAt,
      actor: { type: 'merchant' },
      data: { quoteId: q.id, warehouseId: w.id, expiresAt: q.expiresAt },
    });
    assert.deepEqual(paid, {
      id: paid.id,
      type: 'transfer.created',
      transferId: tr.id,
      sequence: 2,
      position: paid.position,
      state: 'inProgress',
      occurredAt: tr.createdAt,
      actor: { type: 'merchant' },
      data: {
        totalPrice: 516,
        currency: 'RUB',
        productKey: 'standard',
        warehouseId: w.id,
        estimatedPickupAt: tr.estimatedPickupAt,
        estimatedDeliveryAt: tr.estimatedDeliveryAt,
      },
    });
    assert.match(paid.id, UUID_RE);
    assert.match(created.occurredAt, ISO_MS_RE);
    assert.ok(paid.position > created.position, 'global positions ascend');
  });

  test('cancel in inProgress: 200 with the cancellation, the whole price refunded as a REFUND entry; a second cancel is 409 naming state cancelled', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    t.clock.advance(60_000);
    const res = await cancel(t, m, tr.id, { reason: 'CUSTOMER_REQUESTED', comment: 'buyer changed mind' });
    assert.equal(res.statusCode, 200, res.body);
    const at = new Date(t.clock.now()).toISOString();
    assert.deepEqual(res.json(), {
      ...tr,
      state: 'cancelled',
      updatedAt: at,
      refundedAmount: 516,
      estimatedPickupAt: null,
      estimatedDeliveryAt: null,
      cancellation: { reason: 'CUSTOMER_REQUESTED', comment: 'buyer changed mind', actor: 'merchant', refundAmount: 516, cancelledAt: at },
    });
    assert.deepEqual(await get(t, m, tr.id), res.json(), 'lookup shows the same');
    const { balance, entries } = await money(t, m);
    assert.equal(balance, '1000.00');
    assert.deepEqual(
      entries.map((e) => [e.kind, e.amount, e.balanceAfter, e.transferId]),
      [
        ['TOP_UP', '1000.00', '1000.00', null],
        ['CHARGE', '-516.00', '484.00', tr.id],
        ['REFUND', '516.00', '1000.00', tr.id],
      ],
    );
    const last = (await assertGapless(t, m, tr.id)).at(-1);
    assert.deepEqual(
      { ...last, id: undefined, position: undefined },
      {
        id: undefined,
        position: undefined,
        type: 'transfer.cancelled',
        transferId: tr.id,
        sequence: 3,
        state: 'cancelled',
        occurredAt: at,
        actor: { type: 'merchant' },
        data: {
          previousState: 'inProgress',
          reason: 'CUSTOMER_REQUESTED',
          comment: 'buyer changed mind',
          refundAmount: 516,
          currency: 'RUB',
          estimatedPickupAt: null,
          estimatedDeliveryAt: null,
        },
      },
    );

    const again = await t.as(m, { method: 'POST', url: `/transfer/${tr.id}/cancel`, headers: { 'x-request-id': 'again' }, payload: { reason: 'OTHER' } });
    assert.equal(again.statusCode, 409);
    assert.deepEqual(again.json(), {
      type: 'TRANSFER_NOT_CANCELLABLE',
      title: 'Transfer not cancellable',
      status: 409,
      detail: `Transfer ${tr.id} is already cancelled`,
      requestId: 'again',
      state: 'cancelled',
    });
    assert.equal((await money(t, m)).entries.length, 3, 'no second refund');
    assert.equal((await events(t, m, tr.id)).length, 3, 'no second event');
  });

  test('cancel in courierAssigned refunds the price less the cancellation fee (516.00 - 50.00); the courier first name shows until then', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    await courierMove(t, tr.id, 'courierAssigned', 'Ivan');
    const assigned = await get(t, m, tr.id);
    assert.deepEqual(assigned.courier, { firstName: 'Ivan' });
    assert.equal(assigned.state, 'courierAssigned');
    const res = await cancel(t, m, tr.id, { reason: 'DELIVERY_TOO_SLOW' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().refundedAmount, 466);
    assert.equal(res.json().cancellation.refundAmount, 466);
    assert.equal('comment' in res.json().cancellation, false);
    const { balance, entries } = await money(t, m);
    assert.equal(balance, '950.00', 'only the 50.00 fee is kept');
    assert.deepEqual(entries.at(-1)?.amount, '466.00');
    const list = await assertGapless(t, m, tr.id);
    assert.deepEqual(
      list.map((e) => [e.type, e.state, e.actor.type]),
      [
        ['quote.created', null, 'merchant'],
        ['transfer.created', 'inProgress', 'merchant'],
        ['transfer.courier_assigned', 'courierAssigned', 'courier'],
        ['transfer.cancelled', 'cancelled', 'merchant'],
      ],
    );
    assert.deepEqual(list[2].data, {
      previousState: 'inProgress',
      courier: { firstName: 'Ivan' },
      estimatedPickupAt: assigned.estimatedPickupAt,
      estimatedDeliveryAt: assigned.estimatedDeliveryAt,
    });
  });

  test('after pickup the merchant cannot cancel: 409 TRANSFER_NOT_CANCELLABLE with state pickedUp, nothing changes', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    await courierMove(t, tr.id, 'courierAssigned');
    await courierMove(t, tr.id, 'pickedUp');
    const before = await get(t, m, tr.id);
    const res = await t.as(m, { method: 'POST', url: `/transfer/${tr.id}/cancel`, headers: { 'x-request-id': 'late' }, payload: { reason: 'OTHER' } });
    assert.equal(res.statusCode, 409);
    assert.deepEqual(res.json(), {
      type: 'TRANSFER_NOT_CANCELLABLE',
      title: 'Transfer not cancellable',
      status: 409,
      detail: `Transfer ${tr.id} is pickedUp: it can be cancelled only before pickup`,
      requestId: 'late',
      state: 'pickedUp',
    });
    assert.deepEqual(await get(t, m, tr.id), before);
    assert.equal((await money(t, m)).balance, '484.00');
    assert.equal((await events(t, m, tr.id)).length, 4);
  });

  test('delivered keeps the whole price; returned refunds the price less the return fee (516.00 - 100.00), with the failure reason', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1032');
    const delivered = await paidTransfer(t, m, w.id);
    for (const to of ['courierAssigned', 'pickedUp', 'delivered'] as const) await courierMove(t, delivered.id, to);
    assert.equal((await get(t, m, delivered.id)).refundedAmount, 0);

    const returned = await paidTransfer(t, m, w.id);
    await courierMove(t, returned.id, 'courierAssigned');
    await courierMove(t, returned.id, 'pickedUp');
    await t.services.transfers.transition(returned.id, { to: 'returning', actor: { type: 'courier' }, reason: 'RECIPIENT_UNAVAILABLE', comment: 'no answer' });
    await courierMove(t, returned.id, 'returned');
    const r = await get(t, m, returned.id);
    assert.equal(r.state, 'returned');
    assert.equal(r.refundedAmount, 416);
    assert.deepEqual(r.deliveryFailure, { reason: 'RECIPIENT_UNAVAILABLE', comment: 'no answer' });
    const { balance, entries } = await money(t, m);
    assert.equal(balance, '416.00');
    assert.deepEqual(entries.at(-1)?.kind, 'REFUND');
    const list = await assertGapless(t, m, returned.id);
    // Going back, the pickup's time stays and nothing is expected at the destination; once returned, no estimates.
    assert.deepEqual(list.at(-2)?.data, {
      previousState: 'pickedUp',
      reason: 'RECIPIENT_UNAVAILABLE',
      comment: 'no answer',
      estimatedPickupAt: r.pickedUpAt,
      estimatedDeliveryAt: null,
    });
    assert.deepEqual(list.at(-1)?.data, {
      previousState: 'returning',
      refundAmount: 416,
      currency: 'RUB',
      returnFee: 100,
      estimatedPickupAt: null,
      estimatedDeliveryAt: null,
    });
  });

  test('Idempotency-Key on cancel: the same key replays the 200; a refusal changes nothing', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    const first = await cancel(t, m, tr.id, undefined, { 'idempotency-key': 'cancel-1' });
    const replay = await cancel(t, m, tr.id, undefined, { 'idempotency-key': 'cancel-1' });
    assert.equal(first.statusCode, 200);
    assert.equal(replay.statusCode, 200);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.json(), first.json());
    assert.equal((await money(t, m)).entries.filter((e) => e.kind === 'REFUND').length, 1);
  });

  test('validation: reason must be one of the codes; unknown fields refused; nothing changes', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    for (const [body, path] of [
      [{ reason: 'BORED' }, '/reason'],
      [{}, '/reason'],
      [{ reason: 'OTHER', refund: 1000 }, '/refund'],
      [{ reason: 'OTHER', comment: '' }, '/comment'],
    ] as const) {
      const res = await cancel(t, m, tr.id, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().type, 'VALIDATION_FAILED');
      assert.equal(res.json().errors[0].path, path);
    }
    assert.equal((await get(t, m, tr.id)).state, 'inProgress');
  });

  test("isolation: another merchant's cancel, events and sandbox advance see nothing (404 like a random id); its list does not show the transfer", async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    const other = await t.merchant('Other', '1000', 'sandbox');
    const random = '01a20059-0b3e-7a4c-9d2e-000000000000';
    for (const id of [tr.id, random]) {
      const c = await t.as(other, { method: 'POST', url: `/transfer/${id}/cancel`, headers: { 'x-request-id': 'x' }, payload: { reason: 'OTHER' } });
      assert.deepEqual(
        [c.statusCode, c.json()],
        [404, { type: 'TRANSFER_NOT_FOUND', title: 'Transfer not found', status: 404, detail: `No transfer ${id}`, requestId: 'x' }],
      );
      const e = await t.as(other, { method: 'GET', url: `/transfer/${id}/events`, headers: { 'x-request-id': 'x' } });
      assert.deepEqual([e.statusCode, e.json()], [404, c.json()]);
      const a = await t.as(other, {
        method: 'POST',
        url: `/sandbox/transfer/${id}/advance`,
        headers: { 'x-request-id': 'x' },
        payload: { to: 'courierAssigned' },
      });
      assert.deepEqual([a.statusCode, a.json()], [404, c.json()]);
    }
    const list = await t.as(other, { method: 'GET', url: '/transfer' });
    assert.deepEqual(list.json(), []);
    assert.equal((await get(t, m, tr.id)).state, 'inProgress');
    assert.equal((await money(t, m)).balance, '484.00');
  });

  test('GET /transfer: newest first, filters by state, warehouse and creation time, pages with Link', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '5000');
    const w2 = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'Second', locationMetadata: WAREHOUSE_META }) })).json();
    const made: any[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(await paidTransfer(t, m, i < 3 ? w.id : w2.id));
      t.clock.advance(1000);
    }
    await cancel(t, m, made[1].id);
    const all = await t.as(m, { method: 'GET', url: '/transfer' });
    assert.equal(all.statusCode, 200);
    assert.equal(all.headers.link, undefined);
    assert.deepEqual(
      all.json().map((x: { id: string }) => x.id),
      [...made].reverse().map((x) => x.id),
    );
    assert.deepEqual(all.json()[3], await get(t, m, made[1].id), 'items are whole transfers');

    const cancelled = (await t.as(m, { method: 'GET', url: '/transfer?state=cancelled' })).json();
    assert.deepEqual(
      cancelled.map((x: { id: string }) => x.id),
      [made[1].id],
    );
    const second = (await t.as(m, { method: 'GET', url: `/transfer?warehouseId=${w2.id}` })).json();
    assert.deepEqual(
      second.map((x: { id: string }) => x.id),
      [made[4].id, made[3].id],
    );
    const window = (await t.as(m, { method: 'GET', url: `/transfer?createdFrom=${made[1].createdAt}&createdTo=${made[3].createdAt}` })).json();
    assert.deepEqual(
      window.map((x: { id: string }) => x.id),
      [made[2].id, made[1].id],
    );

    const seen: string[] = [];
    let url: string | undefined = '/transfer?limit=2&state=inProgress';
    let pages = 0;
    while (url) {
      const page = await t.as(m, { method: 'GET', url });
      assert.equal(page.statusCode, 200);
      seen.push(...page.json().map((x: { id: string }) => x.id));
      const link = page.headers.link as string | undefined;
      url = link ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined;
      if (url) assert.match(url, /^\/transfer\?limit=2&state=inProgress&cursor=/);
      pages++;
    }
    assert.equal(pages, 2);
    assert.deepEqual(seen, [made[4].id, made[3].id, made[2].id, made[0].id]);

    const leap = await t.as(m, { method: 'GET', url: '/transfer?createdFrom=2026-11-23T23:59:60Z' });
    assert.equal(leap.statusCode, 400, 'a leap second is a valid date-time but not a comparable time');
    assert.deepEqual(leap.json().errors, [{ path: '/createdFrom', message: 'must be an ISO 8601 date-time such as 2026-11-21T10:00:00.000Z' }]);
    const bad = await t.as(m, { method: 'GET', url: '/transfer?cursor=bm9wZQ' });
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json().errors, [{ path: '/cursor', message: 'is not a valid cursor' }]);
  });

  test('GET /balance: balance, currency and ledger newest first with transfer ids, paged; equals the ledger sum', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    t.clock.advance(1000);
    await cancel(t, m, tr.id);
    const res = await t.as(m, { method: 'GET', url: '/balance' });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(body, {
      balance: 1000,
      currency: 'RUB',
      sandbox: false,
      entries: [
        { id: body.entries[0].id, kind: 'REFUND', amount: 516, balanceAfter: 1000, transferId: tr.id, note: null, createdAt: body.entries[0].createdAt },
        { id: body.entries[1].id, kind: 'CHARGE', amount: -516, balanceAfter: 484, transferId: tr.id, note: null, createdAt: tr.createdAt },
        {
          id: body.entries[2].id,
          kind: 'TOP_UP',
          amount: 1000,
          balanceAfter: 1000,
          transferId: null,
          note: 'opening balance',
          createdAt: body.entries[2].createdAt,
        },
      ],
    });
    const page1 = await t.as(m, { method: 'GET', url: '/balance?limit=2' });
    assert.equal(page1.json().entries.length, 2);
    const next = /^<([^>]+)>; rel="next"$/.exec(page1.headers.link as string)?.[1] as string;
    const page2 = await t.as(m, { method: 'GET', url: next });
    assert.deepEqual(page2.json().entries, [body.entries[2]]);
    assert.equal(page2.headers.link, undefined);
  });

  test('INSUFFICIENT_BALANCE names the balance and the price', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '100');
    const q = await quote(t, m, w.id);
    const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
    assert.equal(res.statusCode, 402);
    assert.deepEqual([res.json().balance, res.json().required, res.json().currency], [100, STANDARD_MINOR / 100, 'RUB']);
  });
});

describeEachStore(
  'transfer lifecycle: races on real requests',
  (ctx) => {
    test('50 concurrent cancels of one transfer: one 200, 49 x 409, one refund, one event', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const results = await Promise.all(Array.from({ length: 50 }, () => t.http(m, 'POST', `/transfer/${tr.id}/cancel`, { reason: 'DUPLICATE' })));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, ...Array(49).fill(409)]);
      for (const r of results.filter((x) => x.status === 409)) assert.deepEqual([r.body.type, r.body.state], ['TRANSFER_NOT_CANCELLABLE', 'cancelled']);
      const { balance, entries } = await money(t, m);
      assert.equal(balance, '1000.00');
      assert.equal(entries.filter((e) => e.kind === 'REFUND').length, 1);
      const list = await assertGapless(t, m, tr.id);
      assert.equal(list.filter((e) => e.type === 'transfer.cancelled').length, 1);
    });

    test('cancel racing the courier pickup: exactly one wins; a refund if and only if cancelled; events gapless', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '10000', 'sandbox');
      const outcomes = new Set<string>();
      for (let i = 0; i < 8; i++) {
        const tr = await paidTransfer(t, m, w.id);
        assert.equal((await advance(t, m, tr.id, 'courierAssigned')).statusCode, 200);
        const before = (await money(t, m)).balance;
        const [c, a] = await Promise.all([
          t.http(m, 'POST', `/transfer/${tr.id}/cancel`, { reason: 'OTHER' }),
          t.http(m, 'POST', `/sandbox/transfer/${tr.id}/advance`, { to: 'pickedUp' }),
        ]);
        assert.equal([c.status, a.status].filter((s) => s === 200).length, 1, `one winner: ${c.status} ${a.status}`);
        const final = await get(t, m, tr.id);
        const after = (await money(t, m)).balance;
        if (c.status === 200) {
          outcomes.add('cancelled');
          assert.deepEqual([final.state, a.status, a.body.type, a.body.state], ['cancelled', 409, 'TRANSITION_NOT_ALLOWED', 'cancelled']);
          assert.equal(Number(after) - Number(before), 466, 'refund less the cancellation fee');
        } else {
          outcomes.add('pickedUp');
          assert.deepEqual([final.state, c.status, c.body.type, c.body.state], ['pickedUp', 409, 'TRANSFER_NOT_CANCELLABLE', 'pickedUp']);
          assert.equal(after, before, 'no refund');
        }
        await assertGapless(t, m, tr.id);
      }
      assert.ok(outcomes.size >= 1);
    });

    test('events stay gapless and ordered when many transfers of one merchant move at once', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '20000', 'sandbox');
      const trs = await Promise.all(Array.from({ length: 10 }, () => paidTransfer(t, m, w.id)));
      await Promise.all(
        trs.map(async (tr, i) => {
          for (const to of i % 2
            ? ['courierAssigned', 'inProgress', 'courierAssigned', 'pickedUp', 'delivered']
            : ['courierAssigned', 'pickedUp', 'returning', 'returned']) {
            const r = await t.http(m, 'POST', `/sandbox/transfer/${tr.id}/advance`, { to });
            assert.equal(r.status, 200, JSON.stringify(r.body));
          }
        }),
      );
      for (const tr of trs) {
        const list = await assertGapless(t, m, tr.id);
        for (let i = 1; i < list.length; i++) assert.ok((list[i] as any).position > (list[i - 1] as any).position);
      }
      const { balance } = await money(t, m);
      assert.equal(balance, String((20000 - 10 * 516 + 5 * 416).toFixed(2)));
    });
  },
  {},
  { pgbouncer: true },
);

describeEachStore('sandbox: the simulated courier', (ctx) => {
  test('every allowed transition and every refused one, from every state (409 names the state and the allowed targets)', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '100000', 'sandbox');
    for (const from of STATES) {
      for (const to of STATES) {
        const tr = await paidTransfer(t, m, w.id);
        for (const step of PATH_TO[from]) assert.equal((await advance(t, m, tr.id, step)).statusCode, 200, `${from}: ${step}`);
        const before = await get(t, m, tr.id);
        const balanceBefore = (await money(t, m)).balance;
        const res = await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, headers: { 'x-request-id': 'adv' }, payload: { to } });
        if (SANDBOX_ALLOWED[from].includes(to)) {
          assert.equal(res.statusCode, 200, `${from} -> ${to}: ${res.body}`);
          assert.equal(res.json().state, to);
        } else {
          assert.equal(res.statusCode, 409, `${from} -> ${to} must be refused`);
          const allowed = SANDBOX_ALLOWED[from];
          assert.deepEqual(res.json(), {
            type: 'TRANSITION_NOT_ALLOWED',
            title: 'Transition not allowed',
            status: 409,
            detail: `Transfer ${tr.id} is ${from}; ${allowed.length ? `from there it can move to: ${allowed.join(', ')}` : 'it cannot move from there'}`,
            requestId: 'adv',
            state: from,
            allowed,
          });
          assert.deepEqual(await get(t, m, tr.id), before, 'a refusal changes nothing');
          assert.equal((await money(t, m)).balance, balanceBefore);
        }
        await assertGapless(t, m, tr.id);
      }
    }
  });

  test('manual paths: release and reassign, failed delivery and return (return fee kept), system cancellation (full refund)', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '2000', 'sandbox');
    const released = await paidTransfer(t, m, w.id);
    for (const to of ['courierAssigned', 'inProgress']) await advance(t, m, released.id, to);
    const r = await get(t, m, released.id);
    assert.deepEqual([r.state, 'courier' in r], ['inProgress', false], 'the courier is gone after a release');

    const failed = await paidTransfer(t, m, w.id);
    for (const to of ['courierAssigned', 'pickedUp']) await advance(t, m, failed.id, to);
    const ret = await advance(t, m, failed.id, 'returning', { reason: 'WRONG_ADDRESS' });
    assert.deepEqual(ret.json().deliveryFailure, { reason: 'WRONG_ADDRESS' });
    const done = (await advance(t, m, failed.id, 'returned')).json();
    assert.deepEqual([done.state, done.refundedAmount], ['returned', 416]);

    const timedOut = await paidTransfer(t, m, w.id);
    const c = (await advance(t, m, timedOut.id, 'cancelled')).json();
    assert.deepEqual([c.state, c.cancellation.actor, c.cancellation.reason, c.refundedAmount], ['cancelled', 'system', 'NO_COURIER_ASSIGNED', 516]);
    assert.equal((await money(t, m)).balance, String((2000 - 516 * 3 + 416 + 516).toFixed(2)));
    const types = (await events(t, m, failed.id)).map((e) => [e.type, e.actor.type]);
    assert.deepEqual(types, [
      ['quote.created', 'merchant'],
      ['transfer.created', 'merchant'],
      ['transfer.courier_assigned', 'courier'],
      ['transfer.picked_up', 'courier'],
      ['transfer.delivery_failed', 'courier'],
      ['transfer.returned', 'courier'],
    ]);
  });

  test('live merchants get 404 from the sandbox endpoint, and their transfers are never moved by the simulated courier', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    assert.equal(tr.sandbox, false);
    const res = await t.as(m, {
      method: 'POST',
      url: `/sandbox/transfer/${tr.id}/advance`,
      headers: { 'x-request-id': 'live' },
      payload: { to: 'courierAssigned' },
    });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), {
      type: 'ROUTE_NOT_FOUND',
      title: 'No such endpoint',
      status: 404,
      detail: 'POST /sandbox/transfer/{transferId}/advance exists for sandbox merchants only; this merchant is live',
      requestId: 'live',
    });
    t.clock.advance(3_600_000 - 1);
    await t.services.transfers.stepSandbox();
    assert.equal((await get(t, m, tr.id)).state, 'inProgress');
  });
});

// Sandbox steps every 10 s (the default) in this suite; the automatic mode is driven by the scheduler's pass.
describeEachStore(
  'sandbox automatic mode',
  (ctx) => {
    test('the simulated courier takes a sandbox delivery to delivered, one step per SANDBOX_STEP_SECONDS; a manual advance stops it', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '2000', 'sandbox');
      const auto = await paidTransfer(t, m, w.id);
      assert.equal(auto.sandbox, true);
      const manual = await paidTransfer(t, m, w.id);
      await advance(t, m, manual.id, 'courierAssigned');
      const scheduler = startScheduler({ ...t.services, intervalMs: 3_600_000, log: { info() {}, error() {} } });
      try {
        await scheduler.runOnce();
        assert.equal((await get(t, m, auto.id)).state, 'inProgress', 'not due yet');
        for (const expected of ['courierAssigned', 'pickedUp', 'delivered', 'delivered']) {
          t.clock.advance(10_000);
          await scheduler.runOnce();
          assert.equal((await get(t, m, auto.id)).state, expected);
        }
      } finally {
        await scheduler.stop();
      }
      const delivered = await get(t, m, auto.id);
      assert.deepEqual(delivered.courier, { firstName: 'Sandbox' });
      assert.deepEqual(
        (await events(t, m, auto.id)).map((e) => e.type),
        ['quote.created', 'transfer.created', 'transfer.courier_assigned', 'transfer.picked_up', 'transfer.delivered'],
      );
      assert.equal((await get(t, m, manual.id)).state, 'courierAssigned', 'manual transfers are left alone');
      // Support moving a sandbox transfer takes it off the automatic path too (nothing stays due forever).
      const supported = await paidTransfer(t, m, w.id);
      await t.services.transfers.operatorAdvance(supported.id, 'cancelled', 'support test');
      const due = await t.database.db.selectFrom('transfers').select('next_step_at').where('id', '=', supported.id).executeTakeFirstOrThrow();
      assert.equal(due.next_step_at, null);
      const sb = (await t.as(m, { method: 'GET', url: '/balance' })).json();
      assert.equal(sb.sandbox, true);
    });
  },
  { SANDBOX_STEP_SECONDS: '10' },
);

describeEachStore(
  'assignment timeout: the scheduler',
  (ctx, store) => {
    test('two instances with an injected clock: each transfer without a courier after ASSIGNMENT_TIMEOUT_MINUTES is cancelled once, with a full refund', async () => {
      const t = ctx();
      const second = await createTestApp(store, { ASSIGNMENT_TIMEOUT_MINUTES: '60' }, t.store);
      try {
        const { m, w } = await setup(t, '10000');
        const stale = [await paidTransfer(t, m, w.id), await paidTransfer(t, m, w.id), await paidTransfer(t, m, w.id)];
        const assigned = await paidTransfer(t, m, w.id);
        await courierMove(t, assigned.id, 'courierAssigned');
        t.clock.advance(30 * 60_000);
        const fresh = await paidTransfer(t, m, w.id);
        t.clock.advance(30 * 60_000);
        second.clock.advance(t.clock.now() - second.clock.now());

        const counts = await Promise.all([
          t.services.transfers.cancelUnassigned(),
          second.services.transfers.cancelUnassigned(),
          t.services.transfers.cancelUnassigned(),
        ]);
        assert.equal(
          counts.reduce((a, b) => a + b, 0),
          3,
          'three cancellations in all, whichever instance made them',
        );
        for (const s of stale) {
          const got = await get(t, m, s.id);
          assert.deepEqual(
            [got.state, got.cancellation.actor, got.cancellation.reason, got.refundedAmount],
            ['cancelled', 'system', 'NO_COURIER_ASSIGNED', 516],
          );
          const list = await assertGapless(t, m, s.id);
          assert.deepEqual(list.at(-1)?.actor, { type: 'system' });
        }
        assert.equal((await get(t, m, assigned.id)).state, 'courierAssigned', 'a transfer with a courier is left alone');
        assert.equal((await get(t, m, fresh.id)).state, 'inProgress', 'a younger transfer is left alone');
        const { balance, entries } = await money(t, m);
        assert.equal(entries.filter((e) => e.kind === 'REFUND').length, 3);
        assert.equal(balance, String((10000 - 2 * 516).toFixed(2)));
      } finally {
        await second.close();
      }
    });
  },
  {},
  { pgbouncer: true },
);

describeEachStore(
  'retention: the scheduler purges in bounded batches',
  (ctx) => {
    test('idempotency keys older than IDEMPOTENCY_TTL_HOURS and unused quotes expired for QUOTE_RETENTION_DAYS are purged; consumed quotes and fresh rows stay', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '5000');
      const used = await quote(t, m, w.id);
      await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(used.id) });
      const unused = await Promise.all(Array.from({ length: 7 }, () => quote(t, m, w.id)));
      for (let i = 0; i < 7; i++) {
        await t.as(m, { method: 'POST', url: '/warehouses', headers: { 'idempotency-key': `retention-${i}` }, payload: warehouseBody({ name: `W${i}` }) });
      }
      const count = async () => ({
        keys: (await t.database.db.selectFrom('idempotency_keys').select('idempotency_key').where('merchant_id', '=', m.merchantId).execute()).length,
        quotes: (await t.database.db.selectFrom('quotes').select(['id', 'status']).where('merchant_id', '=', m.merchantId).execute()).map((q) => q.status),
      });
      assert.deepEqual((await count()).keys, 7);
      const scheduler = startScheduler({ ...t.services, intervalMs: 3_600_000, log: { info() {}, error() {} }, batch: 1 });
      try {
        assert.deepEqual(await scheduler.runOnce(), { cancelled: 0, sandboxSteps: 0, purgedIdempotencyKeys: 0, purgedQuotes: 0 }, 'nothing is old yet');
        t.clock.advance(2 * 86_400_000); // past the 24 h key lifetime; the quotes expired 15 min in, not yet 3 days ago
        const first = await scheduler.runOnce();
        assert.deepEqual([first.purgedIdempotencyKeys, first.purgedQuotes], [5, 0], 'batches of 5 x batch');
        t.clock.advance(2 * 86_400_000);
        const second = await scheduler.runOnce();
        assert.deepEqual([second.purgedIdempotencyKeys, second.purgedQuotes], [2, 5]);
        const third = await scheduler.runOnce();
        assert.deepEqual([third.purgedIdempotencyKeys, third.purgedQuotes], [0, 2]);
      } finally {
        await scheduler.stop();
      }
      const after = await count();
      assert.equal(after.keys, 0);
      assert.deepEqual(after.quotes, ['consumed'], 'the consumed quote stays with its transfer');
      assert.ok(unused.length === 7);
    });

    // Every pass runs every 5 s on every instance whatever the tables hold. Before migration 016's index the
    // quote purge read all of `quotes` each time (113 ms at 2 * 10^5 quotes on SQLite, on the event loop).
    test('a pass finds what is due through indexes: it reads none of the tables that grow with traffic whole (the plan of every statement it sends)', async () => {
      const t = ctx();
      const { db } = t.database;
      // Work due in this pass: a live transfer no courier took in time, and a sandbox transfer's next step.
      const live = await setup(t, '5000');
      const unassigned = await paidTransfer(t, live.m, live.w.id);
      t.clock.advance(61 * 60_000); // past ASSIGNMENT_TIMEOUT_MINUTES (60)
      const sandbox = await setup(t, '5000', 'sandbox');
      const stepping = await paidTransfer(t, sandbox.m, sandbox.w.id);
      t.clock.advance(20_000); // past SANDBOX_STEP_SECONDS (10)
      const scheduler = startScheduler({ ...t.services, intervalMs: 3_600_000, log: { info() {}, error() {} } });
      const { result: pass, sent } = await statementsSent(db, () => scheduler.runOnce()).finally(() => scheduler.stop());
      assert.deepEqual([pass.cancelled, pass.sandboxSteps], [1, 1], 'the pass did the due work');
      assert.equal((await get(t, live.m, unassigned.id)).state, 'cancelled');
      assert.equal((await get(t, sandbox.m, stepping.id)).state, 'courierAssigned');
      assert.ok(
        sent.some((q) => /^delete from "quotes"/.test(q.sql)),
        `the quote purge is among them: ${sent.map((q) => q.sql.slice(0, 40)).join(' | ')}`,
      );
      const growing = ['quotes', 'transfers', 'events', 'idempotency_keys', 'ledger_entries', 'webhook_deliveries', 'offers', 'audit_log'];
      for (const q of sent.filter((s) => /^(select|update|delete|with)\b/.test(s.sql))) {
        if (t.database.dialect === 'sqlite') {
          // SEARCH walks an index to what it needs; SCAN reads the whole table (or the whole of one of its indexes).
          const plan = await sqlitePlan(db, q);
          assert.doesNotMatch(plan, new RegExp(`\\bSCAN (${growing.join('|')})\\b`), `${q.sql}\n=> ${plan}`);
        } else {
          const { whole, plan } = await postgresWholeReads(db, q, growing);
          assert.deepEqual(whole, [], `${q.sql}\n=> ${JSON.stringify(plan)}`);
        }
      }
    });
  },
  { QUOTE_RETENTION_DAYS: '3' },
);

/**
 * The steps of PostgreSQL's plan of q that read one of `tables` without an index condition. Whole-table
 * reads are priced out first (a sequential scan, or a hash or merge join's full pass, which a near-empty
 * table's planner prefers), so a step that still reads without a condition has no index to use.
 */
async function postgresWholeReads(db: Kysely<DB>, q: CompiledQuery, tables: string[]): Promise<{ whole: string[]; plan: PlanStep[] }> {
  const plan = await postgresPlanSteps(db, q, ['enable_seqscan', 'enable_hashjoin', 'enable_mergejoin']);
  const whole = plan
    .filter((step) => {
      const table = step['Relation Name'] as string | undefined;
      const type = String(step['Node Type']);
      return table && tables.includes(table) && (type === 'Seq Scan' || (/Index/.test(type) && !step['Index Cond']));
    })
    .map((step) => `${step['Node Type']} on ${step['Relation Name']}`);
  return { whole, plan };
}
