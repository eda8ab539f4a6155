import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startDispatcher, WOKEN_PASS_GAP_MS } from '../src/background/dispatcher.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { iso, ManualClock } from '../src/lib/clock.ts';
import type { AppError } from '../src/lib/errors.ts';
import { createServices } from '../src/services.ts';
import { type Courier, createTestApp, TEST_SIGNING_KEYS, type TestApp, UUID_RE } from './helpers/app.ts';
import { paidTransfer, setup } from './helpers/flow.ts';
import { adminQuery, postgresOnly, STORES, type StoreName } from './helpers/stores.ts';

const SKIP_PG = postgresOnly('LISTEN reconnection');

/** The flow's warehouse is at (0, 0); these couriers wait 0.16, 1.6 and 2.4 km from it (all within the first 3 km). */
const NEAR = { lat: 0.001, lng: 0.001 };
const MID = { lat: 0.01, lng: 0.01 };
const FAR = { lat: 0.015, lng: 0.015 };
const TTL_MS = 30_000;

/** A fresh app per test: the dispatcher's pass sees every transfer and courier of its store. */
async function withApp(store: StoreName, fn: (t: TestApp) => Promise<void>, env: Record<string, string> = {}) {
  const t = await createTestApp(store, env);
  try {
    await fn(t);
  } finally {
    await t.close();
  }
}

const offers = async (t: TestApp, c: Courier) => {
  const res = await t.as(c, { method: 'GET', url: '/courier/offers' });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Array<Record<string, any>>;
};
const answer = (t: TestApp, c: Courier, offerId: string, what: 'accept' | 'decline') => t.as(c, { method: 'POST', url: `/courier/offers/${offerId}/${what}` });
const assignedEvents = async (t: TestApp, transferId: string) =>
  (await t.services.transfers.events(undefined, transferId)).filter((e) => e.type === 'transfer.courier_assigned');

/**
 * Another instance on a's store with its own clock. PostgreSQL: a second app. SQLite: one process owns
 * the file (two connections in one process would wait on each other's write lock with the event loop
 * blocked), so the second dispatcher shares a's connection, as a second process would share the file.
 */
async function secondInstance(a: TestApp) {
  if (a.store.name !== 'sqlite') {
    const b = await createTestApp(a.store.name, {}, a.store);
    return {
      clock: b.clock,
      dispatch: b.services.dispatch,
      acceptJob: async (c: Courier, id: string) => (await b.as(c, { method: 'POST', url: `/courier/jobs/${id}/accept` })).statusCode,
      close: () => b.close(),
    };
  }
  const clock = new ManualClock(a.clock.now());
  const config = loadConfig({ NODE_ENV: 'test', TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS, ...a.store.env });
  const services = createServices({ config, database: a.database, clock, signingKeys: parseSigningKeys(TEST_SIGNING_KEYS) });
  return {
    clock,
    dispatch: services.dispatch,
    acceptJob: (c: Courier, id: string) =>
      services.couriers.accept(c.courierId, id).then(
        () => 200,
        (err) => (err as AppError).status,
      ),
    close: async () => {},
  };
}

for (const store of STORES) {
  describe(`dispatch offers [${store}]`, () => {
    test('the nearest courier gets the offer first, with the job as the job list shows it; the others get none', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const far = await t.courier('Far', FAR);
        const near = await t.courier('Near', NEAR);
        const mid = await t.courier('Mid', MID);
        const tr = await paidTransfer(t, m, w.id);
        const now = t.clock.now();

        const pass = await t.services.dispatch.runOnce();
        assert.deepEqual(pass, { expired: 0, withdrawn: 0, offered: 1, widened: 0, setOffline: 0 });
        const [offer] = await offers(t, near);
        assert.match(offer.id, UUID_RE);
        assert.deepEqual(offer, {
          id: offer.id,
          status: 'open',
          expiresAt: iso(now + TTL_MS),
          distanceMeters: 157,
          // 157 m × 1.35 detour at 20 km/h: 38 s.
          estimatedPickupAt: iso(now + 38_000),
          transferId: tr.id,
          pickup: { name: 'Main warehouse', address: 'Null Island 1', location: { lat: 0, lng: 0 }, contactPhone: '+7 495 000-00-00' },
          destination: { city: 'Gulf', approximateLocation: { lat: 0, lng: 0.1 } },
          distanceToPickupKm: 0.2,
          deliveryDistanceKm: 11.1,
          parcelSize: 'SMALL',
          isFragile: false,
          isPerishable: false,
          payout: offer.payout,
          currency: 'RUB',
          createdAt: tr.createdAt,
        });
        assert.ok(offer.payout > 0);
        assert.deepEqual(await offers(t, mid), []);
        assert.deepEqual(await offers(t, far), []);
        // Another pass makes no second offer while this one is open.
        assert.equal((await t.services.dispatch.runOnce()).offered, 0);
      }));

    test('a pass woken by a payment makes offers only: a due expiry waits for the full pass', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        await t.courier('Near', NEAR); // the first offer goes to the nearest courier
        const mid = await t.courier('Mid', MID);
        const tr = await paidTransfer(t, m, w.id);
        assert.equal((await t.services.dispatch.runOnce({ offersOnly: true })).offered, 1);
        t.clock.advance(TTL_MS);
        // Past its time, but only a full pass expires it (and passes the job on): no offer to the next courier yet.
        assert.deepEqual(await t.services.dispatch.runOnce({ offersOnly: true }), { expired: 0, withdrawn: 0, offered: 0, widened: 0, setOffline: 0 });
        assert.deepEqual(await offers(t, mid), []);
        assert.deepEqual(await t.services.dispatch.runOnce(), { expired: 1, withdrawn: 0, offered: 1, widened: 0, setOffline: 0 });
        assert.equal((await offers(t, mid))[0].transferId, tr.id);
      }));

    test('expiry passes the offer to the next courier; accepting after expiry is 409 OFFER_EXPIRED', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const near = await t.courier('Near', NEAR);
        const mid = await t.courier('Mid', MID);
        const tr = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        const [first] = await offers(t, near);

        t.clock.advance(TTL_MS);
        const pass = await t.services.dispatch.runOnce();
        assert.deepEqual(pass, { expired: 1, withdrawn: 0, offered: 1, widened: 0, setOffline: 0 });
        assert.deepEqual(await offers(t, near), []);
        const [second] = await offers(t, mid);
        assert.equal(second.transferId, tr.id);

        const late = await answer(t, near, first.id, 'accept');
        assert.equal(late.statusCode, 409);
        assert.deepEqual(late.json(), {
          type: 'OFFER_EXPIRED',
          title: 'Offer expired',
          status: 409,
          detail: `Offer ${first.id} is no longer open (expired at ${first.expiresAt})`,
          requestId: late.json().requestId,
        });
        assert.equal((await t.services.transfers.getAny(tr.id)).state, 'inProgress');
      }));

    test('a decline passes the offer on at once, and it never returns to the decliner (nor to one who missed it)', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const near = await t.courier('Near', NEAR);
        const mid = await t.courier('Mid', MID);
        const far = await t.courier('Far', FAR);
        const tr = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        const [a] = await offers(t, near);
        const declined = await answer(t, near, a.id, 'decline');
        assert.equal(declined.statusCode, 200, declined.body);
        assert.deepEqual(declined.json(), { ...a, status: 'declined' });
        // Declining twice: it is no longer open.
        assert.equal((await answer(t, near, a.id, 'decline')).statusCode, 409);

        await t.services.dispatch.runOnce();
        const [b] = await offers(t, mid);
        assert.equal(b.transferId, tr.id);
        t.clock.advance(TTL_MS); // mid misses it
        await t.services.dispatch.runOnce();
        const [c] = await offers(t, far);
        assert.equal(c.transferId, tr.id);
        assert.equal((await answer(t, far, c.id, 'decline')).statusCode, 200);

        // Everyone had it: passes widen the search to the maximum, and nobody is offered it again.
        for (let i = 0; i < 5; i++) await t.services.dispatch.runOnce();
        for (const courier of [near, mid, far]) assert.deepEqual(await offers(t, courier), []);
        // The job list still shows it (the fallback).
        const jobs = (await t.as(near, { method: 'GET', url: '/courier/jobs' })).json() as Array<{ transferId: string }>;
        assert.ok(jobs.some((j) => j.transferId === tr.id));
      }));

    test('three missed offers in a row set a courier offline', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '5000');
        const c = await t.courier('Sleepy', NEAR);
        for (let i = 0; i < 3; i++) await paidTransfer(t, m, w.id);
        const passes = [];
        for (let i = 0; i < 3; i++) {
          await t.services.dispatch.runOnce();
          assert.equal((await offers(t, c)).length, 1, `offer ${i + 1}`);
          t.clock.advance(TTL_MS);
        }
        passes.push(await t.services.dispatch.runOnce());
        assert.deepEqual(passes, [{ expired: 1, withdrawn: 0, offered: 0, widened: 0, setOffline: 1 }]);
        const status = (await t.as(c, { method: 'GET', url: '/courier/status' })).json();
        assert.equal(status.online, false);
        assert.deepEqual(await offers(t, c), []);
      }));

    test('an accepted offer assigns the transfer to that courier: 200 with the job, one courier_assigned event', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const c = await t.courier('Ivan Petrov', NEAR);
        const other = await t.courier('Mid', MID);
        const tr = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        const [offer] = await offers(t, c);
        const res = await answer(t, c, offer.id, 'accept');
        assert.equal(res.statusCode, 200, res.body);
        const job = res.json();
        assert.equal(job.transferId, tr.id);
        assert.equal(job.state, 'courierAssigned');
        assert.deepEqual(job.recipient, { name: 'Anna Ivanova', phone: '+7 900 000-00-00' });
        // Accepting again (a retry after a timeout) answers the job again.
        const again = await answer(t, c, offer.id, 'accept');
        assert.equal(again.statusCode, 200, again.body);
        assert.deepEqual(again.json(), job);

        const transfer = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
        assert.equal(transfer.state, 'courierAssigned');
        assert.deepEqual(transfer.courier, { firstName: 'Ivan' });
        const events = await assignedEvents(t, tr.id);
        assert.equal(events.length, 1);
        assert.deepEqual(events[0].actor, { type: 'courier', id: c.courierId, name: 'Ivan' });
        await t.services.dispatch.runOnce();
        assert.deepEqual(await offers(t, other), []);
        // Someone else's offer id answers like a missing one.
        const stranger = await answer(t, other, offer.id, 'accept');
        assert.equal(stranger.statusCode, 404);
        assert.equal(stranger.json().type, 'OFFER_NOT_FOUND');
      }));

    test('a job taken from the job list withdraws its offer: accepting it then is 409 OFFER_EXPIRED', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const near = await t.courier('Near', NEAR);
        const mid = await t.courier('Mid', MID);
        const tr = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        const [offer] = await offers(t, near);
        assert.equal((await t.as(mid, { method: 'POST', url: `/courier/jobs/${tr.id}/accept` })).statusCode, 200);
        const res = await answer(t, near, offer.id, 'accept');
        assert.equal(res.statusCode, 409);
        assert.equal(res.json().type, 'OFFER_EXPIRED');
        assert.equal((await t.services.dispatch.runOnce()).withdrawn, 1);
        assert.deepEqual(await offers(t, near), []);
      }));

    test('a courier who released the job is never offered it again, and a courier at the job cap gets no offer', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '5000');
        const near = await t.courier('Near', NEAR);
        const mid = await t.courier('Mid', MID);
        const first = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        const [offer] = await offers(t, near);
        assert.equal((await answer(t, near, offer.id, 'accept')).statusCode, 200);
        // Near holds a job (MAX_JOBS_PER_COURIER=1): a second payment goes to mid although near is nearer.
        const second = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        assert.deepEqual(await offers(t, near), []);
        assert.equal((await offers(t, mid))[0].transferId, second.id);
        assert.equal((await answer(t, mid, (await offers(t, mid))[0].id, 'accept')).statusCode, 200);
        // Near gives the first job back: free again, but never offered that one again.
        assert.equal((await t.as(near, { method: 'POST', url: `/courier/jobs/${first.id}/release` })).statusCode, 200);
        for (let i = 0; i < 5; i++) await t.services.dispatch.runOnce();
        assert.deepEqual(await offers(t, near), []);
      }));

    test('a courier going offline gives its open offer up at once (withdrawn, not a miss): the next courier gets it', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const near = await t.courier('Near', NEAR);
        const mid = await t.courier('Mid', MID);
        const tr = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        assert.equal((await offers(t, near)).length, 1);
        assert.equal((await t.as(near, { method: 'PUT', url: '/courier/status', payload: { online: false } })).statusCode, 200);
        assert.deepEqual(await t.services.dispatch.runOnce(), { expired: 0, withdrawn: 1, offered: 1, widened: 0, setOffline: 0 });
        assert.deepEqual(await offers(t, near), []);
        assert.equal((await offers(t, mid))[0].transferId, tr.id);
        const missed = await t.database.db.selectFrom('couriers').select('missed_offers').where('id', '=', near.courierId).executeTakeFirstOrThrow();
        assert.equal(Number(missed.missed_offers), 0);
      }));

    test('20 concurrent accepts and expiries on two instances: one outcome, at most one assignment and one event', () =>
      withApp(store, async (a) => {
        const b = await secondInstance(a);
        try {
          const { m, w } = await setup(a, '20000');
          for (let round = 0; round < 3; round++) {
            const c = await a.courier(`Racer ${round}`, NEAR);
            const rival = await a.courier(`Rival ${round}`, MID);
            const tr = await paidTransfer(a, m, w.id);
            await a.services.dispatch.runOnce();
            const [offer] = await offers(a, c);
            // The other instance's clock is past the offer's time: its dispatcher expires it while a's accepts race it,
            // and a rival takes the job from the job list there.
            b.clock.advance(TTL_MS * (round + 1) + 1);
            const results = await Promise.all([
              ...Array.from({ length: 10 }, () => answer(a, c, offer.id, 'accept')),
              ...Array.from({ length: 9 }, () => b.dispatch.runOnce().then(() => undefined)),
              b.acceptJob(rival, tr.id),
            ]);
            const accepts = results.slice(0, 10).map((r) => (r as { statusCode: number }).statusCode);
            const listAccept = results[19] as number;
            const events = await assignedEvents(a, tr.id);
            const transfer = await a.services.transfers.getAny(tr.id);
            assert.equal(events.length, 1, `round ${round}: exactly one assignment event (${accepts}, list ${listAccept})`);
            assert.equal(transfer.state, 'courierAssigned');
            const status = (await a.database.db.selectFrom('offers').select('status').where('id', '=', offer.id).executeTakeFirstOrThrow()).status;
            assert.ok(
              accepts.every((s) => s === 200 || s === 409),
              `${accepts}`,
            );
            if (accepts.includes(200)) {
              assert.equal(status, 'accepted');
              assert.equal(listAccept, 409);
              // The courier who won, by id and first name (as every courier's move is recorded).
              assert.deepEqual(events[0].actor, { type: 'courier', id: c.courierId, name: 'Racer' });
            } else {
              assert.notEqual(status, 'accepted');
              assert.equal(listAccept, 200);
            }
            // Off shift, so the next round's offer goes to its own racer.
            for (const x of [c, rival]) await a.services.couriers.updateStatus(x.courierId, { online: false });
          }
        } finally {
          await b.close();
        }
      }));

    test('dispatch state survives a restart: an open offer made before is listed and accepted through a new instance', () =>
      withApp(store, async (a) => {
        const { m, w } = await setup(a, '1000');
        const c = await a.courier('Near', NEAR);
        const tr = await paidTransfer(a, m, w.id);
        await a.services.dispatch.runOnce();
        const [offer] = await offers(a, c);
        const b = await createTestApp(store, {}, a.store, { now: a.clock.now() + 1000 });
        try {
          assert.deepEqual(await offers(b, c), [offer]);
          assert.equal((await b.services.dispatch.runOnce()).offered, 0);
          const res = await answer(b, c, offer.id, 'accept');
          assert.equal(res.statusCode, 200, res.body);
          assert.equal((await b.services.transfers.getAny(tr.id)).state, 'courierAssigned');
        } finally {
          await b.close();
        }
      }));

    test('the offer stream delivers an offer made through another instance within a second', () =>
      withApp(store, async (a) => {
        const b = await createTestApp(store, {}, a.store);
        try {
          const { m, w } = await setup(a, '1000');
          const c = await a.courier('Near', NEAR);
          await paidTransfer(a, m, w.id);
          const base = await b.listen();
          const token = await b.token(c);
          const abort = new AbortController();
          const res = await fetch(`${base}/courier/offers/stream`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
          assert.equal(res.status, 200);
          assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
          const reader = res.body!.getReader();
          const decoder = new TextDecoder();
          let text = '';
          const first = await reader.read(); // retry: line, sent once subscribed
          text += decoder.decode(first.value);
          const started = performance.now();
          await a.services.dispatch.runOnce();
          while (!/event: offer\n/.test(text)) {
            const chunk = await Promise.race([
              reader.read(),
              new Promise<never>((_, no) => setTimeout(() => no(new Error(`no offer event in 1 s: ${text}`)), 1000)),
            ]);
            if (chunk.done) break;
            text += decoder.decode(chunk.value);
          }
          const elapsed = performance.now() - started;
          abort.abort();
          const [offer] = await offers(a, c);
          assert.match(text, new RegExp(`event: offer\\nid: ${offer.id}\\ndata: (.+)\\n\\n`));
          const data = JSON.parse(/data: (.+)\n/.exec(text)![1]);
          assert.deepEqual(data, offer);
          assert.ok(elapsed < 1000, `${elapsed} ms`);
        } finally {
          await b.close();
        }
      }));

    test('an operator assigns a waiting transfer to a named courier: courierAssigned, an operator event with the reason, the open offer withdrawn', () =>
      withApp(store, async (t) => {
        const { m, w } = await setup(t, '1000');
        const near = await t.courier('Near', NEAR);
        const chosen = await t.courier('Olga Smirnova', FAR);
        const tr = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        const [offer] = await offers(t, near);
        const assigned = await t.services.dispatch.assign(tr.id, chosen.courierId, 'Regular courier for this shop', { kind: 'cli', machineUser: 'test' });
        assert.equal(assigned.state, 'courierAssigned');
        assert.deepEqual(assigned.courier, { firstName: 'Olga' });
        const [event] = await assignedEvents(t, tr.id);
        assert.deepEqual(
          { actor: event.actor, data: event.data },
          {
            actor: { type: 'operator', id: 'cli:test', name: 'cli (test)' },
            data: {
              previousState: 'inProgress',
              courier: { firstName: 'Olga' },
              comment: 'Regular courier for this shop',
              estimatedPickupAt: assigned.estimatedPickupAt,
              estimatedDeliveryAt: assigned.estimatedDeliveryAt,
            },
          },
        );
        assert.equal((await answer(t, near, offer.id, 'accept')).json().type, 'OFFER_EXPIRED');
        const jobs = (await t.as(chosen, { method: 'GET', url: '/courier/jobs/current' })).json() as Array<{ transferId: string }>;
        assert.deepEqual(
          jobs.map((j) => j.transferId),
          [tr.id],
        );
        // Once assigned, a second assignment is refused with the state.
        await assert.rejects(t.services.dispatch.assign(tr.id, near.courierId, 'again', { kind: 'cli', machineUser: 'test' }), {
          code: 'TRANSITION_NOT_ALLOWED',
        });
      }));
    test('metrics: offers made, accepted, declined and expired, and the time from payment to assignment', async () => {
      const t = await createTestApp(store, {}, undefined, { metrics: true });
      try {
        const { m, w } = await setup(t, '5000');
        const near = await t.courier('Near', NEAR);
        const mid = await t.courier('Mid', MID);
        const tr = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        await answer(t, near, (await offers(t, near))[0].id, 'decline');
        await t.services.dispatch.runOnce();
        t.clock.advance(TTL_MS);
        await t.services.dispatch.runOnce(); // mid misses it; nobody else is near
        await t.services.couriers.updateStatus(near.courierId, { online: true, lat: NEAR.lat, lng: NEAR.lng });
        const other = await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        t.clock.advance(5_000);
        const [offer] = await offers(t, near);
        assert.equal(offer.transferId, other.id);
        assert.equal((await answer(t, near, offer.id, 'accept')).statusCode, 200);
        const text = await t.metrics!.registry.metrics();
        for (const [outcome, n] of [
          ['made', 3],
          ['accepted', 1],
          ['declined', 1],
          ['expired', 1],
        ] as const) {
          assert.match(text, new RegExp(`^mds_offers_total\\{outcome="${outcome}"\\} ${n}$`, 'm'), outcome);
        }
        assert.match(text, /^mds_assignment_wait_seconds_count 1$/m);
        assert.match(text, /^mds_assignment_wait_seconds_sum 5$/m);
        assert.ok(tr.id);
        void mid;
      } finally {
        await t.close();
      }
    });
    test('the background dispatcher offers a payment on its own within a second; an open stream does not hold up the shutdown', async () => {
      const t = await createTestApp(store);
      const dispatcher = startDispatcher({ dispatch: t.services.dispatch, intervalMs: 60_000, log: { info() {}, error() {} } });
      let closed = false;
      try {
        const { m, w } = await setup(t, '1000');
        const c = await t.courier('Near', NEAR);
        const base = await t.listen();
        const res = await fetch(`${base}/courier/offers/stream`, { headers: { authorization: `Bearer ${await t.token(c)}` } });
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let text = decoder.decode((await reader.read()).value);
        const started = performance.now();
        // Woken by the payment's commit, not by its 60 s interval.
        const tr = await paidTransfer(t, m, w.id);
        while (!text.includes('event: offer')) {
          const chunk = await Promise.race([reader.read(), new Promise<never>((_, no) => setTimeout(() => no(new Error(`no offer in 1 s: ${text}`)), 1000))]);
          if (chunk.done) break;
          text += decoder.decode(chunk.value);
        }
        assert.ok(performance.now() - started < 1000);
        assert.equal(JSON.parse(/data: (.+)\n/.exec(text)![1]).transferId, tr.id);
        await dispatcher.stop();
        const closing = performance.now();
        await t.close();
        closed = true;
        assert.ok(performance.now() - closing < 3000, 'the stream ended with the server');
        assert.equal((await reader.read()).done, true);
      } finally {
        await dispatcher.stop();
        if (!closed) await t.close();
      }
    });
  });
}

describe('the background dispatcher', () => {
  test('passes woken by payments make offers only, at most one per 25 ms; a full pass (expiries, withdrawals) still runs once an interval', async () => {
    const passes: Array<{ offersOnly?: boolean; at: number }> = [];
    const started = performance.now();
    const dispatch = {
      runOnce: async (opts: { offersOnly?: boolean } = {}) => {
        passes.push({ ...opts, at: performance.now() - started });
        return { expired: 0, withdrawn: 0, offered: 0, widened: 0, setOffline: 0 };
      },
      onWork: () => () => {},
    };
    const dispatcher = startDispatcher({ dispatch: dispatch as never, intervalMs: 300, log: { info() {}, error() {} } });
    const { eventCommitted } = await import('../src/lib/channels.ts');
    try {
      // A payment every 2 ms for 1 s.
      for (let i = 0; i < 500; i++) {
        eventCommitted.publish({ type: 'transfer.created', merchantId: 'm', deliveries: 0 });
        await new Promise((r) => setTimeout(r, 2));
      }
    } finally {
      await dispatcher.stop();
    }
    const elapsed = performance.now() - started;
    const full = passes.filter((p) => !p.offersOnly);
    assert.equal(passes[0].offersOnly, false, 'the first pass, at start, is full');
    assert.ok(
      passes.length > 20 && passes.length <= 1 + elapsed / (WOKEN_PASS_GAP_MS - 2),
      `woken by the payments, never more often than the gap (${passes.length} passes)`,
    );
    // Timers count whole milliseconds of the event loop's clock: a pass may start up to ~2 ms early by performance.now().
    for (let i = 1; i < passes.length; i++) {
      assert.ok(passes[i].at - passes[i - 1].at >= WOKEN_PASS_GAP_MS - 2, `passes ${i - 1} and ${i}: ${passes[i].at - passes[i - 1].at} ms apart`);
    }
    assert.ok(
      full.length >= Math.max(2, Math.floor(elapsed / 300) - 1) && full.length <= 1 + elapsed / 300,
      `a full pass about every 300 ms over ${elapsed} ms (${full.length})`,
    );
    for (let i = 1; i < full.length; i++) assert.ok(full[i].at - full[i - 1].at >= 300, 'never two full passes within the interval');
  });
});

describe('offer stream over PostgreSQL LISTEN/NOTIFY', () => {
  test('a lost LISTEN connection is replaced: offers made after it are heard again', { skip: SKIP_PG }, () =>
    withApp('postgres', async (t) => {
      const { m, w } = await setup(t, '1000');
      const c = await t.courier('Near', NEAR);
      const heard: string[] = [];
      const stop = await t.services.dispatch.subscribe(c.courierId, (id) => heard.push(id));
      try {
        const channel = t.database.notifications!.channel('offers');
        const killed = await adminQuery(`select pg_terminate_backend(pid) as done from pg_stat_activity where query = 'listen "${channel}"'`);
        assert.equal(killed.rows.length, 1, 'one LISTEN connection for this store');
        await new Promise((r) => setTimeout(r, 1500)); // it reconnects after a second
        await paidTransfer(t, m, w.id);
        await t.services.dispatch.runOnce();
        for (let i = 0; i < 50 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
        const [offer] = await offers(t, c);
        assert.deepEqual(heard, [offer.id]);
      } finally {
        stop();
      }
    }),
  );
});
