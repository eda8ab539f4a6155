import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileStrict } from '../src/lib/validation.ts';
import { EVENT_CATALOGUE, EVENT_TYPES, type EventType } from '../src/modules/events/catalogue.ts';
import { EVENT_SCHEMAS } from '../src/modules/events/schemas.ts';
import { TRANSITIONS } from '../src/modules/transfers/lifecycle.ts';
import { describeEachStore, type Merchant, type TestApp } from './helpers/app.ts';
import { paidTransfer, setup } from './helpers/flow.ts';

type Event = { type: EventType; state: string | null; data: Record<string, unknown> };

const validators = Object.fromEntries(EVENT_TYPES.map((t) => [t, compileStrict(EVENT_SCHEMAS[t])]));

/** Every event must match its catalogue schema exactly (no undocumented field, every required one). */
function assertMatchesCatalogue(e: Event) {
  const verdict = validators[e.type](e);
  assert.ok(verdict.ok, `${e.type} ${JSON.stringify(e.data)}: ${verdict.ok ? '' : verdict.errors.join('; ')}`);
}

const events = async (t: TestApp, m: Merchant, id: string) => (await t.as(m, { method: 'GET', url: `/transfer/${id}/events` })).json() as Event[];
const advance = (t: TestApp, m: Merchant, id: string, to: string, extra: Record<string, unknown> = {}) =>
  t.as(m, { method: 'POST', url: `/sandbox/transfer/${id}/advance`, payload: { to, ...extra } });

test('the catalogue and the lifecycle agree: every transition emits a catalogued event whose state after is the transition target', () => {
  for (const tr of TRANSITIONS) assert.equal(EVENT_CATALOGUE[tr.event].state, tr.to, `${tr.from} -> ${tr.to} emits ${tr.event}`);
  // Every catalogued event except the ones written outside transitions is emitted by some transition.
  const emitted = new Set(TRANSITIONS.map((t) => t.event));
  assert.deepEqual(
    EVENT_TYPES.filter((t) => !emitted.has(t)),
    ['quote.created', 'transfer.created'],
  );
});

test('the catalogue examples match their own schemas', () => {
  for (const type of EVENT_TYPES) {
    const def = EVENT_CATALOGUE[type];
    assertMatchesCatalogue({ ...eventShell(type, def.state), data: def.example });
  }
});

function eventShell(type: EventType, state: string | null) {
  return {
    id: '01a20059-0b3e-7a4c-9d2e-5b6c7d8e9fa0',
    type,
    transferId: '01a20059-0b3e-7a4c-9d2e-4a5b6c7d8e9f',
    sequence: 1,
    position: 1,
    state,
    occurredAt: '2026-11-21T10:00:00.000Z',
    actor: { type: 'merchant' },
  };
}

describeEachStore('event catalogue: what the service writes is what the catalogue documents', (ctx) => {
  test('every event type, as written by real requests and the operator, matches its catalogue schema', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '5000', 'sandbox');
    const seen = new Set<EventType>();
    const check = async (id: string) => {
      for (const e of await events(t, m, id)) {
        assertMatchesCatalogue(e);
        seen.add(e.type);
      }
    };
    // Delivered: quote.created, transfer.created, courier_assigned, courier_released, picked_up, delivered.
    const a = await paidTransfer(t, m, w.id);
    for (const to of ['courierAssigned', 'inProgress', 'courierAssigned', 'pickedUp', 'delivered'])
      assert.equal((await advance(t, m, a.id, to)).statusCode, 200);
    await check(a.id);
    // Failed then returned.
    const b = await paidTransfer(t, m, w.id);
    for (const to of ['courierAssigned', 'pickedUp']) assert.equal((await advance(t, m, b.id, to)).statusCode, 200);
    assert.equal((await advance(t, m, b.id, 'returning', { reason: 'RECIPIENT_REFUSED' })).statusCode, 200);
    assert.equal((await advance(t, m, b.id, 'returned')).statusCode, 200);
    await check(b.id);
    // Cancelled by the merchant with a comment, and by an operator with a note.
    const c = await paidTransfer(t, m, w.id);
    assert.equal(
      (await t.as(m, { method: 'POST', url: `/transfer/${c.id}/cancel`, payload: { reason: 'OTHER', comment: 'Changed my mind' } })).statusCode,
      200,
    );
    await check(c.id);
    const d = await paidTransfer(t, m, w.id);
    assert.equal((await advance(t, m, d.id, 'courierAssigned')).statusCode, 200);
    await t.services.transfers.operatorAdvance(d.id, 'pickedUp', 'Pickup confirmed by phone');
    await t.services.transfers.operatorCancel(d.id, 'Customer called');
    await check(d.id);
    assert.deepEqual([...seen].sort(), [...EVENT_TYPES].sort(), 'every catalogued type was written and checked');
  });
});
