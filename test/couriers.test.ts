import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Courier, describeEachStore, type Merchant, type TestApp } from './helpers/app.ts';
import { mds } from './helpers/cli.ts';
import { documentedOperations } from './helpers/contract.ts';
import { money, paidTransfer, STANDARD_PRICE, setup } from './helpers/flow.ts';

/** Every value in a JSON document, at any depth (the objects and arrays included). */
function valuesIn(document: unknown): unknown[] {
  const values: unknown[] = [];
  JSON.stringify(document, (_key, value) => {
    values.push(value);
    return value;
  });
  return values;
}

/**
 * The PIN as it could leak: the string, and its number when that is still four digits (a PIN with a
 * leading zero would become a small number that a job's own figures, such as 5 code attempts, can equal).
 */
const pinValues = (pin: string): unknown[] => (/^[1-9]/.test(pin) ? [pin, Number(pin)] : [pin]);

/** Couriers wait near the flow's warehouse (0, 0); its destination is 11 km east. */
const NEAR = { lat: 0.001, lng: 0.001 };
const FAR = { lat: 1, lng: 1 };

const get = async (t: TestApp, m: Merchant, id: string) => (await t.as(m, { method: 'GET', url: `/transfer/${id}` })).json();
const act = (t: TestApp, c: Courier | string, id: string, action: string, payload?: Record<string, unknown>) =>
  t.as(c, { method: 'POST', url: `/courier/jobs/${id}/${action}`, ...(payload === undefined ? {} : { payload }) });
const current = async (t: TestApp, c: Courier) => (await t.as(c, { method: 'GET', url: '/courier/jobs/current' })).json();
const openJobs = async (t: TestApp, c: Courier, radiusKm?: number) => {
  const res = await t.as(c, { method: 'GET', url: `/courier/jobs${radiusKm ? `?radiusKm=${radiusKm}` : ''}` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Array<{ transferId: string }>;
};

describeEachStore(
  'couriers: jobs from accept to delivery',
  (ctx) => {
    test('end to end over HTTP: the merchant pays, a courier accepts, picks up with the transferCode, delivers with the PIN; lookup and events show each step', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const c = await t.courier('Ivan Petrov', NEAR);

      const jobs = (await t.http(c, 'GET', '/courier/jobs')).body;
      const job = jobs.find((j: { transferId: string }) => j.transferId === tr.id);
      assert.deepEqual(job, {
        transferId: tr.id,
        pickup: { name: 'Main warehouse', address: 'Null Island 1', location: { lat: 0, lng: 0 }, contactPhone: '+7 495 000-00-00' },
        destination: { city: 'Gulf', approximateLocation: { lat: 0, lng: 0.1 } },
        distanceToPickupKm: 0.2,
        deliveryDistanceKm: 11.1,
        parcelSize: 'SMALL',
        isFragile: false,
        isPerishable: false,
        payout: 477,
        currency: 'RUB',
        createdAt: tr.createdAt,
      });
      for (const secret of [tr.transferCode, 'Ivanova', '+7 900 000-00-00', 'Destination 5']) {
        assert.equal(JSON.stringify(jobs).includes(secret), false, `an open job never shows ${secret}`);
      }
      // The PIN and the merchant's price are looked for as values, not substrings: ids and timestamps may
      // well contain "516" or the PIN's four digits.
      const jobValues = valuesIn(jobs);
      for (const value of [...pinValues(tr.deliveryPin), 516, '516', STANDARD_PRICE]) {
        assert.equal(jobValues.includes(value), false, `an open job never shows ${JSON.stringify(value)}`);
      }

      const accepted = await t.http(c, 'POST', `/courier/jobs/${tr.id}/accept`);
      assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
      assert.deepEqual(accepted.body, {
        ...job,
        state: 'courierAssigned',
        destination: { city: 'Gulf', address: 'Destination 5', location: { lat: 0, lng: 0.1 } },
        recipient: { name: 'Anna Ivanova', phone: '+7 900 000-00-00' },
        description: 'Two books',
        codeAttemptsLeft: 5,
        locked: false,
      });
      const acceptedValues = valuesIn(accepted.body);
      assert.equal(
        pinValues(tr.deliveryPin).some((pin) => acceptedValues.includes(pin)),
        false,
        'couriers never see the PIN',
      );
      assert.equal(JSON.stringify(accepted.body).includes(tr.transferCode), false, 'nor the transferCode');
      assert.deepEqual((await get(t, m, tr.id)).courier, { firstName: 'Ivan' });

      const picked = await t.http(c, 'POST', `/courier/jobs/${tr.id}/pickup`, { transferCode: tr.transferCode.toLowerCase().replace('-', '') });
      assert.equal(picked.status, 200, JSON.stringify(picked.body));
      assert.equal(picked.body.state, 'pickedUp');
      assert.deepEqual(
        (await current(t, c)).map((j: { transferId: string; state: string }) => [j.transferId, j.state]),
        [[tr.id, 'pickedUp']],
      );

      const delivered = await t.http(c, 'POST', `/courier/jobs/${tr.id}/deliver`, { deliveryPin: tr.deliveryPin });
      assert.equal(delivered.status, 200, JSON.stringify(delivered.body));
      assert.equal(delivered.body.state, 'delivered');
      assert.equal('recipient' in delivered.body, false, 'the recipient is gone once delivered');
      assert.deepEqual(await current(t, c), []);

      const final = await get(t, m, tr.id);
      assert.deepEqual([final.state, final.refundedAmount, final.courier], ['delivered', 0, { firstName: 'Ivan' }]);
      const events = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}/events` })).json();
      assert.deepEqual(
        events.map((e: { type: string; actor: unknown; sequence: number }) => [e.sequence, e.type, e.actor]),
        [
          [1, 'quote.created', { type: 'merchant' }],
          [2, 'transfer.created', { type: 'merchant' }],
          [3, 'transfer.courier_assigned', { type: 'courier', id: c.courierId, name: 'Ivan' }],
          [4, 'transfer.picked_up', { type: 'courier', id: c.courierId, name: 'Ivan' }],
          [5, 'transfer.delivered', { type: 'courier', id: c.courierId, name: 'Ivan' }],
        ],
      );
      assert.equal(JSON.stringify(events).includes('Petrov'), false, "merchants never see the courier's last name");
      const withoutActors = events.map(({ actor: _, ...rest }: { actor: unknown }) => rest);
      assert.equal(JSON.stringify(withoutActors).includes(c.courierId), false, "the courier's id is only the actor of its own moves");
    });

    test('a failed delivery ends returned: the merchant is refunded the price less the return fee', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const c = await t.courier('Olga', NEAR);
      await act(t, c, tr.id, 'accept');
      await act(t, c, tr.id, 'pickup', { transferCode: tr.transferCode });
      const failed = await act(t, c, tr.id, 'fail', { reason: 'RECIPIENT_UNAVAILABLE', comment: 'nobody home' });
      assert.equal(failed.json().state, 'returning');
      assert.equal('recipient' in failed.json(), false);
      const back = await act(t, c, tr.id, 'return', { transferCode: tr.transferCode });
      assert.equal(back.statusCode, 200, back.body);
      assert.equal(back.json().state, 'returned');
      const final = await get(t, m, tr.id);
      assert.deepEqual(
        [final.state, final.refundedAmount, final.deliveryFailure],
        ['returned', 416, { reason: 'RECIPIENT_UNAVAILABLE', comment: 'nobody home' }],
      );
      const { balance, entries } = await money(t, m);
      assert.equal(balance, '900.00', '1000 - 516 + 416: the 100.00 return fee is kept');
      assert.deepEqual(entries.at(-1)?.kind, 'REFUND');
    });

    test('release gives the job back to everyone; a courier holds at most MAX_JOBS_PER_COURIER (1) jobs', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '2000');
      const a = await paidTransfer(t, m, w.id);
      const b = await paidTransfer(t, m, w.id);
      const c = await t.courier('Anna', NEAR);
      assert.equal((await act(t, c, a.id, 'accept')).statusCode, 200);
      const second = await t.as(c, { method: 'POST', url: `/courier/jobs/${b.id}/accept`, headers: { 'x-request-id': 'cap' } });
      assert.equal(second.statusCode, 409);
      assert.deepEqual(second.json(), {
        type: 'TOO_MANY_JOBS',
        title: 'Too many jobs',
        status: 409,
        detail: 'A courier can hold at most 1 active job; deliver or release one first',
        requestId: 'cap',
      });
      assert.ok(!(await openJobs(t, c)).some((j) => j.transferId === a.id), 'a taken job is not open');
      const released = await act(t, c, a.id, 'release');
      assert.equal(released.json().state, 'inProgress');
      assert.equal((await get(t, m, a.id)).courier, undefined);
      assert.ok(
        (await openJobs(t, c)).some((j) => j.transferId === a.id),
        'open again',
      );
      assert.equal((await act(t, c, b.id, 'accept')).statusCode, 200, 'the cap counts active jobs only');
    });

    test('one courier accepting two jobs at once with a cap of 1: exactly one is accepted', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '2000');
      const [a, b] = [await paidTransfer(t, m, w.id), await paidTransfer(t, m, w.id)];
      const c = await t.courier('Boris', NEAR);
      const results = await Promise.all([a, b].map((tr) => t.http(c, 'POST', `/courier/jobs/${tr.id}/accept`)));
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 409]);
      assert.equal(results.find((r) => r.status === 409)?.body.type, 'TOO_MANY_JOBS');
      assert.equal((await current(t, c)).length, 1);
    });

    test('jobs near the courier only, nearest first; offline couriers are told to go online; sandbox transfers are never offered', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '2000');
      const live = await paidTransfer(t, m, w.id);
      const sandbox = await setup(t, '2000', 'sandbox');
      const play = await paidTransfer(t, sandbox.m, sandbox.w.id);
      const near = await t.courier('Near', NEAR);
      const far = await t.courier('Far', FAR);
      const ids = (await openJobs(t, near)).map((j) => j.transferId);
      assert.ok(ids.includes(live.id));
      assert.ok(!ids.includes(play.id), 'sandbox transfers are driven by the simulated courier only');
      assert.ok(!(await openJobs(t, far)).some((j) => j.transferId === live.id), '157 km away: not within 5 km');
      assert.ok((await openJobs(t, far, 50)).length === 0, 'nor within 50 km');
      const sandboxAccept = await act(t, near, play.id, 'accept');
      assert.deepEqual([sandboxAccept.statusCode, sandboxAccept.json().type], [404, 'TRANSFER_NOT_FOUND']);

      const offline = await t.courier('Sleepy');
      const res = await t.as(offline, { method: 'GET', url: '/courier/jobs', headers: { 'x-request-id': 'off' } });
      assert.deepEqual(
        [res.statusCode, res.json()],
        [
          409,
          {
            type: 'COURIER_OFFLINE',
            title: 'Courier offline',
            status: 409,
            detail: 'Go online with PUT /courier/status (with your position) to see and accept jobs',
            requestId: 'off',
          },
        ],
      );
      const noPosition = await t.as(offline, { method: 'PUT', url: '/courier/status', payload: { online: true } });
      assert.equal(noPosition.statusCode, 400);
      assert.deepEqual(noPosition.json().errors, [
        { path: '/lat', message: 'is required when online is true' },
        { path: '/lng', message: 'is required when online is true' },
      ]);
    });

    test('status and position: PUT /courier/status, POST /courier/location keeps one position a second, accepts (204) and drops sooner ones, no event', async () => {
      const t = ctx();
      const c = await t.courier('Pavel', NEAR);
      const wentOnline = new Date(t.clock.now()).toISOString();
      const status = (await t.as(c, { method: 'GET', url: '/courier/status' })).json();
      assert.deepEqual(status, {
        id: c.courierId,
        firstName: 'Pavel',
        online: true,
        location: { lat: NEAR.lat, lng: NEAR.lng, updatedAt: wentOnline },
        activeJobs: 0,
        maxJobs: 1,
      });
      // The first update in the same second as going online: accepted, not stored (it used to be a 429).
      const sameSecond = await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat: 0.001, lng: 0.001 } });
      assert.equal(sameSecond.statusCode, 204, sameSecond.body);
      assert.equal(sameSecond.body, '');
      assert.deepEqual((await t.as(c, { method: 'GET', url: '/courier/status' })).json().location, { lat: NEAR.lat, lng: NEAR.lng, updatedAt: wentOnline });
      t.clock.advance(1000);
      const moved = await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat: 0.002, lng: 0.003 } });
      assert.equal(moved.statusCode, 204);
      assert.equal(moved.body, '');
      const keptAt = new Date(t.clock.now()).toISOString();
      const tooSoon = await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat: 0.004, lng: 0.005 } });
      assert.equal(tooSoon.statusCode, 204, 'sooner than a second: accepted, not stored');
      const after = (await t.as(c, { method: 'GET', url: '/courier/status' })).json();
      assert.deepEqual(after.location, { lat: 0.002, lng: 0.003, updatedAt: keptAt });
      assert.deepEqual((await t.as(c, { method: 'GET', url: '/courier/status' })).json().activeJobs, 0);
      const offline = await t.as(c, { method: 'PUT', url: '/courier/status', payload: { online: false } });
      assert.equal(offline.json().online, false);
    });

    test('a courier on a normal cadence (every 250 ms for 5 s) is never refused and one position a second is kept; only a flood (more than 10 in one second) is a 429', async () => {
      const t = ctx();
      const c = await t.courier('Olga', NEAR);
      // Start on a second boundary at least a second after going online, so the first update is kept.
      t.clock.advance(2000 - (t.clock.now() % 1000));
      const kept: string[] = [];
      for (let i = 1; i <= 20; i++) {
        const lat = 0.0001 * i;
        const res = await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat, lng: 0 } });
        assert.equal(res.statusCode, 204, `update ${i}: ${res.body}`);
        const loc = (await t.as(c, { method: 'GET', url: '/courier/status' })).json().location;
        if (loc.lat === lat) kept.push(loc.updatedAt);
        t.clock.advance(250);
      }
      assert.equal(kept.length, 5, 'one position a second kept over 5 s');
      for (let i = 1; i < kept.length; i++) assert.ok(Date.parse(kept[i]) - Date.parse(kept[i - 1]) >= 1000);

      // A flood: 10 reports in one second are accepted, the 11th and later are 429 and change nothing.
      t.clock.advance(1000 - (t.clock.now() % 1000));
      const before = (await t.as(c, { method: 'GET', url: '/courier/status' })).json().location;
      const answers = [];
      for (let i = 0; i < 12; i++) answers.push(await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat: 1 + i / 1000, lng: 1 } }));
      assert.deepEqual(
        answers.map((a) => a.statusCode),
        [204, 204, 204, 204, 204, 204, 204, 204, 204, 204, 429, 429],
      );
      const flood = answers[10];
      assert.equal(flood.headers['retry-after'], '1');
      assert.deepEqual(
        { ...(flood.json() as Record<string, unknown>), requestId: undefined },
        {
          type: 'RATE_LIMITED',
          title: 'Too many requests',
          status: 429,
          detail: 'Send your position at most 10 times a second (one a second is kept)',
          requestId: undefined,
        },
      );
      const during = (await t.as(c, { method: 'GET', url: '/courier/status' })).json().location;
      assert.deepEqual(during, { lat: 1, lng: 1, updatedAt: new Date(t.clock.now()).toISOString() }, 'the first of the second was kept');
      assert.notDeepEqual(during, before);
      t.clock.advance(1000);
      const next = await t.as(c, { method: 'POST', url: '/courier/location', payload: { lat: 2, lng: 2 } });
      assert.equal(next.statusCode, 204, 'the next second is accepted again');
      assert.equal((await t.as(c, { method: 'GET', url: '/courier/status' })).json().location.lat, 2);
    });
  },
  { AUTH_CACHE_TTL_MS: '0' },
);

describeEachStore(
  'couriers: codes, locks and races',
  (ctx) => {
    test('wrong transferCode or PIN: 422 with attempts left; the fifth locks the job (423) until the CLI unlocks it', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const c = await t.courier('Dmitri', NEAR);
      await act(t, c, tr.id, 'accept');
      for (let left = 4; left >= 1; left--) {
        const res = await t.as(c, {
          method: 'POST',
          url: `/courier/jobs/${tr.id}/pickup`,
          headers: { 'x-request-id': 'wrong' },
          payload: { transferCode: 'AAAA-AAAA' },
        });
        assert.equal(res.statusCode, 422);
        assert.deepEqual(res.json(), {
          type: 'WRONG_CODE',
          title: 'Wrong code',
          status: 422,
          detail: `The transferCode is wrong; ${left} attempt${left === 1 ? '' : 's'} left before the job is locked`,
          requestId: 'wrong',
          attemptsLeft: left,
        });
      }
      const fifth = await t.as(c, {
        method: 'POST',
        url: `/courier/jobs/${tr.id}/pickup`,
        headers: { 'x-request-id': 'lock' },
        payload: { transferCode: 'AAAA-AAAA' },
      });
      assert.equal(fifth.statusCode, 423);
      assert.deepEqual(fifth.json(), {
        type: 'JOB_LOCKED',
        title: 'Job locked',
        status: 423,
        detail: `Transfer ${tr.id} is locked after 5 wrong codes; call support to unlock it`,
        requestId: 'lock',
      });
      const right = await act(t, c, tr.id, 'pickup', { transferCode: tr.transferCode });
      assert.equal(right.statusCode, 423, 'even the right code waits for support');
      assert.equal((await act(t, c, tr.id, 'release')).statusCode, 423);
      assert.equal((await get(t, m, tr.id)).state, 'courierAssigned');
      assert.deepEqual((await current(t, c))[0].locked, true);

      const unlock = await mds(t, 'couriers', 'unlock', tr.id);
      assert.equal(unlock.code, 0, unlock.stderr);
      assert.equal(unlock.stdout.trim(), `Transfer ${tr.id} unlocked: the courier has 5 attempts again`);
      assert.equal((await act(t, c, tr.id, 'pickup', { transferCode: tr.transferCode })).statusCode, 200);
      const wrongPin = await act(t, c, tr.id, 'deliver', { deliveryPin: tr.deliveryPin === '0000' ? '1111' : '0000' });
      assert.deepEqual([wrongPin.statusCode, wrongPin.json().attemptsLeft], [422, 4]);
      assert.equal((await act(t, c, tr.id, 'deliver', { deliveryPin: tr.deliveryPin })).json().state, 'delivered');
    });

    test('a code sent at the wrong moment costs no attempt: 409 TRANSITION_NOT_ALLOWED', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const c = await t.courier('Egor', NEAR);
      await act(t, c, tr.id, 'accept');
      const early = await act(t, c, tr.id, 'deliver', { deliveryPin: tr.deliveryPin });
      assert.deepEqual([early.statusCode, early.json().type, early.json().state], [409, 'TRANSITION_NOT_ALLOWED', 'courierAssigned']);
      assert.equal((await current(t, c))[0].codeAttemptsLeft, 5);
    });

    test('a new holder starts with 5 attempts: one courier typing wrong codes and releasing cannot lock the job for the next', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const [a, b] = [await t.courier('Saboteur', NEAR), await t.courier('Honest', NEAR)];
      await act(t, a, tr.id, 'accept');
      for (let i = 0; i < 4; i++) await act(t, a, tr.id, 'pickup', { transferCode: 'AAAA-AAAA' });
      assert.equal((await current(t, a))[0].codeAttemptsLeft, 1);
      await act(t, a, tr.id, 'release');
      const taken = await act(t, b, tr.id, 'accept');
      assert.equal(taken.json().codeAttemptsLeft, 5);
      const typo = await act(t, b, tr.id, 'pickup', { transferCode: 'BBBB-BBBB' });
      assert.deepEqual([typo.statusCode, typo.json().attemptsLeft], [422, 4]);
    });

    test('a locked job released by support is open again with a clean slate; accepting a job you hold answers it again', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const [a, b] = [await t.courier('Locked', NEAR), await t.courier('Next', NEAR)];
      const first = await act(t, a, tr.id, 'accept');
      assert.equal((await act(t, a, tr.id, 'accept')).statusCode, 200, 'a retried accept is not an error');
      assert.deepEqual((await act(t, a, tr.id, 'accept')).json(), first.json());
      for (let i = 0; i < 5; i++) await act(t, a, tr.id, 'pickup', { transferCode: 'AAAA-AAAA' });
      assert.equal((await current(t, a))[0].locked, true);
      assert.ok(!(await openJobs(t, b)).some((j) => j.transferId === tr.id), 'a locked job is not open');
      const released = await mds(t, 'transfers', 'advance', tr.id, '--to', 'inProgress', '--reason', 'courier stuck, job reopened');
      assert.equal(released.code, 0, released.stderr);
      assert.ok(
        (await openJobs(t, b)).some((j) => j.transferId === tr.id),
        'open again after support released it',
      );
      const taken = await act(t, b, tr.id, 'accept');
      assert.equal(taken.statusCode, 200, taken.body);
      assert.deepEqual([taken.json().locked, taken.json().codeAttemptsLeft], [false, 5]);
    });

    test('20 couriers accept one job concurrently: exactly one 200, 19 x 409 JOB_TAKEN, one event', async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const couriers = await Promise.all(Array.from({ length: 20 }, (_, i) => t.courier(`Courier${i} X`, NEAR)));
      const tokens = await Promise.all(couriers.map((c) => t.token(c)));
      const results = await Promise.all(tokens.map((token) => t.http(token, 'POST', `/courier/jobs/${tr.id}/accept`)));
      assert.deepEqual(results.map((r) => r.status).sort(), [200, ...Array(19).fill(409)]);
      for (const r of results.filter((x) => x.status === 409)) {
        assert.deepEqual(r.body, {
          type: 'JOB_TAKEN',
          title: 'Job taken',
          status: 409,
          detail: `Transfer ${tr.id} is no longer open: another courier took it, or it ended`,
          requestId: r.body.requestId,
        });
      }
      const winner = couriers[results.findIndex((r) => r.status === 200)];
      const events = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}/events` })).json();
      assert.equal(events.filter((e: { type: string }) => e.type === 'transfer.courier_assigned').length, 1);
      assert.deepEqual((await get(t, m, tr.id)).courier, { firstName: winner === undefined ? '' : `Courier${couriers.indexOf(winner)}` });
      for (const c of couriers) assert.equal((await current(t, c)).length, c === winner ? 1 : 0);
    });

    test("a courier never sees or moves another courier's job (404 like a random id)", async () => {
      const t = ctx();
      const { m, w } = await setup(t, '1000');
      const tr = await paidTransfer(t, m, w.id);
      const holder = await t.courier('Holder', NEAR);
      const other = await t.courier('Other', NEAR);
      await act(t, holder, tr.id, 'accept');
      const random = '01a20059-0b3e-7a4c-9d2e-000000000000';
      for (const [action, body] of [
        ['release', undefined],
        ['pickup', { transferCode: tr.transferCode }],
        ['deliver', { deliveryPin: tr.deliveryPin }],
        ['fail', { reason: 'OTHER' }],
        ['return', { transferCode: tr.transferCode }],
      ] as const) {
        for (const id of [tr.id, random]) {
          const res = await t.as(other, {
            method: 'POST',
            url: `/courier/jobs/${id}/${action}`,
            headers: { 'x-request-id': 'x' },
            ...(body ? { payload: body } : {}),
          });
          assert.deepEqual(
            [res.statusCode, res.json()],
            [404, { type: 'TRANSFER_NOT_FOUND', title: 'Transfer not found', status: 404, detail: `No transfer ${id}`, requestId: 'x' }],
            `${action} ${id}`,
          );
        }
      }
      assert.deepEqual(await current(t, other), []);
      assert.equal((await get(t, m, tr.id)).state, 'courierAssigned');
      assert.equal((await current(t, holder))[0].codeAttemptsLeft, 5, "another courier's codes cost the holder nothing");
    });
  },
  { AUTH_CACHE_TTL_MS: '0' },
  { pgbouncer: true },
);

describeEachStore(
  'couriers and merchants are separate actors',
  (ctx) => {
    test('every merchant route refuses a courier token and every courier route a merchant token: 403 WRONG_ACTOR', async () => {
      const t = ctx();
      const { m } = await setup(t, '10');
      const c = await t.courier('Actor', NEAR);
      const id = '01a20059-0b3e-7a4c-9d2e-4a5b6c7d8e9f';
      let merchantRoutes = 0;
      let courierRoutes = 0;
      for (const { method, path, operation } of documentedOperations()) {
        const security = JSON.stringify(operation.security ?? []);
        const url = path.replace(/\{[^}]+\}/g, id);
        if (security.includes('bearerAuth')) {
          merchantRoutes++;
          const res = await t.as(c, { method: method as 'GET', url, headers: { 'x-request-id': 'actor' }, ...(method === 'GET' ? {} : { payload: {} }) });
          assert.deepEqual(
            [res.statusCode, res.json()],
            [
              403,
              {
                type: 'WRONG_ACTOR',
                title: 'Wrong kind of actor',
                status: 403,
                detail: 'This endpoint is for merchants; a courier token cannot call it',
                requestId: 'actor',
              },
            ],
            `${method} ${path}`,
          );
        } else if (security.includes('courierAuth')) {
          courierRoutes++;
          const res = await t.as(m, { method: method as 'GET', url, headers: { 'x-request-id': 'actor' }, ...(method === 'GET' ? {} : { payload: {} }) });
          assert.deepEqual(
            [res.statusCode, res.json()],
            [
              403,
              {
                type: 'WRONG_ACTOR',
                title: 'Wrong kind of actor',
                status: 403,
                detail: 'This endpoint is for couriers; a merchant token cannot call it',
                requestId: 'actor',
              },
            ],
            `${method} ${path}`,
          );
        }
      }
      assert.ok(merchantRoutes >= 12 && courierRoutes >= 11, `${merchantRoutes} merchant and ${courierRoutes} courier routes checked`);
      const balance = await t.as(c, { method: 'GET', url: '/balance' });
      assert.equal(JSON.stringify(balance.json()).includes('"balance"'), false, 'no merchant balance for couriers');
    });

    test("a disabled courier's tokens fail like revoked credentials; enabling restores them; courier tokens come from POST /auth/token", async () => {
      const t = ctx();
      const c = await t.courier('Gleb', NEAR);
      const token = await t.token(c);
      assert.equal((await t.as(token, { method: 'GET', url: '/courier/status' })).statusCode, 200);
      const disabled = await mds(t, 'couriers', 'disable', c.courierId, '--json');
      assert.equal(disabled.code, 0, disabled.stderr);
      assert.equal(JSON.parse(disabled.stdout).courier.status, 'DISABLED');
      const refused = await t.as(token, { method: 'GET', url: '/courier/status' });
      assert.deepEqual([refused.statusCode, refused.json().type], [401, 'CREDENTIALS_REVOKED']);
      const newToken = await t.request({
        method: 'POST',
        url: '/auth/token',
        payload: { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret },
      });
      assert.deepEqual([newToken.statusCode, newToken.json().error], [401, 'invalid_client']);
      assert.equal((await mds(t, 'couriers', 'enable', c.courierId)).code, 0);
      assert.equal((await t.as(token, { method: 'GET', url: '/courier/status' })).statusCode, 200);
      const list = JSON.parse((await mds(t, 'couriers', 'list', '--json')).stdout);
      const mine = list.couriers.find((x: { id: string }) => x.id === c.courierId);
      assert.deepEqual([mine.name, mine.status, mine.clientId], ['Gleb', 'ACTIVE', c.clientId]);
      assert.equal(JSON.stringify(list).includes(c.clientSecret), false, 'secrets are never listed');
    });

    test('mds couriers create prints working credentials once; bad input is refused like the API would', async () => {
      const t = ctx();
      const created = await mds(t, 'couriers', 'create', '--name', 'Nina Sokolova', '--phone', '+7 900 555-44-33', '--json');
      assert.equal(created.code, 0, created.stderr);
      const body = JSON.parse(created.stdout);
      assert.match(body.clientId, /^cou_[0-9a-f]{24}$/);
      assert.match(body.clientSecret, /^sk_[\w-]{43}$/);
      const token = await t.token({ clientId: body.clientId, clientSecret: body.clientSecret });
      assert.equal((await t.as(token, { method: 'GET', url: '/courier/status' })).json().firstName, 'Nina');
      const bad = await mds(t, 'couriers', 'create', '--name', 'a\nb', '--phone', '+7 900');
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /Courier name must be 1 to 100 characters without control characters/);
      const badPhone = await mds(t, 'couriers', 'create', '--name', 'Ok', '--phone', 'call me');
      assert.match(badPhone.stderr, /Courier phone must be digits/);
    });
  },
  { AUTH_CACHE_TTL_MS: '0' },
);
