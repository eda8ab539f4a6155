import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCsv } from '../src/lib/csv.ts';
import { describeEachStore, type TestApp } from './helpers/app.ts';
import { createMerchantUser, WebClient } from './helpers/people.ts';
import { startReceiver } from './helpers/receiver.ts';
import { seedMerchant } from './helpers/seed.ts';

/**
 * The dashboard's deliveries, balance and developers pages, server-side (forms over app.inject with
 * real sessions and CSRF tokens), on both stores: what each action changes is checked through the API
 * and the services. The same pages in Chromium: dashboard-browser.test.ts.
 */

async function loggedIn(t: TestApp, merchantId: string, role: 'admin' | 'employee' = 'admin') {
  const person = await createMerchantUser(t.app, { merchantId, role });
  const web = new WebClient(t.app);
  await web.login(person.email, person.password);
  return web;
}

const XSS = '<img src=x onerror=alert(1)>';

describeEachStore(
  'dashboard pages',
  (ctx) => {
    test('the deliveries list: newest first, filters and search, only this merchant; a recipient named like HTML is text', async () => {
      const t = ctx();
      const a = await seedMerchant(t, {
        transfers: 6,
        recipient: (i) => (i === 5 ? { firstName: XSS, lastName: 'Smith', phone: '+7 900 000-00-77' } : undefined),
      });
      const b = await seedMerchant(t, { name: 'Other shop', transfers: 2 });
      const web = await loggedIn(t, a.merchantId, 'employee');
      const res = await web.get('/dashboard/deliveries');
      assert.equal(res.statusCode, 200);
      const links = [...res.body.matchAll(/href="\/dashboard\/deliveries\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
      assert.deepEqual(
        links,
        [...a.transfers].reverse().map((x) => x.id),
      );
      assert.ok(!res.body.includes(XSS), 'the name is escaped');
      assert.ok(res.body.includes('&lt;img src=x onerror=alert(1)&gt;'));
      for (const x of b.transfers) assert.ok(!res.body.includes(x.id));
      const cancelled = await web.get('/dashboard/deliveries?state=cancelled');
      const shown = [...cancelled.body.matchAll(/href="\/dashboard\/deliveries\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
      assert.deepEqual(
        shown,
        [...a.transfers]
          .reverse()
          .filter((x) => x.state === 'cancelled')
          .map((x) => x.id),
      );
      assert.match(cancelled.body, /Cancelled/);
      const byPhone = await web.get(`/dashboard/deliveries?q=${encodeURIComponent('7 900 000 00 77')}`);
      assert.deepEqual(
        [...byPhone.body.matchAll(/href="\/dashboard\/deliveries\/([0-9a-f-]{36})"/g)].map((m) => m[1]),
        [a.transfers[5].id],
      );
      const bad = await web.get('/dashboard/deliveries?q=hello');
      assert.equal(bad.statusCode, 400);
      assert.match(bad.body, /role="alert"/);
      // Another merchant's delivery answers exactly like a random id.
      const theirs = await web.get(`/dashboard/deliveries/${b.transfers[0].id}`);
      const random = await web.get('/dashboard/deliveries/00000000-0000-4000-8000-000000000000');
      assert.equal(theirs.statusCode, 404);
      assert.equal(random.statusCode, 404);
      assert.equal(theirs.body.replace(/nonce="[^"]+"|value="[^"]+"/g, ''), random.body.replace(/nonce="[^"]+"|value="[^"]+"/g, ''));
      assert.equal((await web.get('/dashboard/deliveries/not-an-id')).statusCode, 404);
    });

    test('a double submit of New delivery creates one transfer: both answers lead to it', async () => {
      const t = ctx();
      const a = await seedMerchant(t, { transfers: 0 });
      const web = await loggedIn(t, a.merchantId, 'employee');
      await web.get('/dashboard/deliveries/new');
      const step1 = await web.post('/dashboard/deliveries/new', {
        warehouseId: a.warehouses[0].id,
        address: 'Arbat St 10, Moscow',
        lat: '55.7522',
        lng: '37.5927',
        parcelSize: 'SMALL',
        deliveryType: 'DOOR_TO_DOOR',
      });
      assert.equal(step1.statusCode, 303, step1.body.slice(0, 500));
      const choose = await web.get(String(step1.headers.location));
      assert.equal(choose.statusCode, 200);
      const key = /name="idempotencyKey" value="([^"]+)"/.exec(choose.body)?.[1];
      assert.ok(key);
      const fields = {
        productKey: 'standard',
        firstName: 'Anna',
        lastName: 'Ivanova',
        phone: '+7 900 000-00-01',
        description: 'Two books',
        idempotencyKey: key,
      };
      const before = (await t.as(a, { method: 'GET', url: '/balance' })).json().balance;
      // Both requests in flight at once, the same form (same key, same CSRF token).
      const [r1, r2] = await Promise.all([web.post(String(step1.headers.location), fields), web.post(String(step1.headers.location), fields)]);
      assert.equal(r1.statusCode, 303, r1.body.slice(0, 300));
      assert.equal(r2.statusCode, 303, r2.body.slice(0, 300));
      assert.equal(r1.headers.location, r2.headers.location);
      const list = (await t.as(a, { method: 'GET', url: '/transfer' })).json();
      assert.equal(list.length, 1);
      assert.equal(r1.headers.location, `/dashboard/deliveries/${list[0].id}`);
      assert.equal(list[0].recipientFullName, 'Anna Ivanova');
      const after = (await t.as(a, { method: 'GET', url: '/balance' })).json().balance;
      assert.equal(Math.round((before - after) * 100), Math.round(list[0].totalPrice * 100), 'charged once');
      // A third submit later: the same delivery again, nothing new.
      const r3 = await web.post(String(step1.headers.location), fields);
      assert.equal(r3.headers.location, r1.headers.location);
      assert.equal((await t.as(a, { method: 'GET', url: '/transfer' })).json().length, 1);
    });

    test('refused forms re-render with the reason and change nothing', async () => {
      const t = ctx();
      const a = await seedMerchant(t, { transfers: 0, balance: '1' });
      const web = await loggedIn(t, a.merchantId);
      await web.get('/dashboard/deliveries/new');
      const noCoords = await web.post('/dashboard/deliveries/new', {
        warehouseId: a.warehouses[0].id,
        address: 'Somewhere',
        lat: 'north',
        lng: '',
        parcelSize: 'SMALL',
        deliveryType: 'DOOR_TO_DOOR',
      });
      assert.equal(noCoords.statusCode, 400);
      assert.match(noCoords.body, /Latitude and longitude must be numbers/);
      const step1 = await web.post('/dashboard/deliveries/new', {
        warehouseId: a.warehouses[0].id,
        address: 'Arbat',
        lat: '55.7522',
        lng: '37.5927',
        parcelSize: 'SMALL',
        deliveryType: 'DOOR_TO_DOOR',
      });
      const page = await web.get(String(step1.headers.location));
      const key = /name="idempotencyKey" value="([^"]+)"/.exec(page.body)?.[1] as string;
      const badPhone = await web.post(String(step1.headers.location), {
        productKey: 'standard',
        firstName: 'A',
        lastName: 'B',
        phone: 'call me',
        description: '',
        idempotencyKey: key,
      });
      assert.equal(badPhone.statusCode, 400);
      assert.match(badPhone.body, /Recipient&#39;s phone|Recipient's phone/);
      const poor = await web.post(String(step1.headers.location), {
        productKey: 'standard',
        firstName: 'A',
        lastName: 'B',
        phone: '+7 900 1',
        description: '',
        idempotencyKey: key,
      });
      assert.equal(poor.statusCode, 402);
      assert.match(poor.body, /does not cover/);
      assert.deepEqual((await t.as(a, { method: 'GET', url: '/transfer' })).json(), []);
      assert.equal((await t.as(a, { method: 'GET', url: '/balance' })).json().balance, 1);
    });

    test('cancel shows the refund first, refunds it (checked through the API), and needs the CSRF token', async () => {
      const t = ctx();
      const a = await seedMerchant(t, { transfers: 2 });
      const x = a.transfers[0];
      assert.equal(x.state, 'inProgress');
      const web = await loggedIn(t, a.merchantId, 'employee');
      const page = await web.get(`/dashboard/deliveries/${x.id}`);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, new RegExp(`Cancelling now refunds <strong>${x.totalPrice.toFixed(2)} RUB</strong>`));
      const before = (await t.as(a, { method: 'GET', url: '/balance' })).json().balance;
      const forged = await web.post(`/dashboard/deliveries/${x.id}/cancel`, { _csrf: null, reason: 'CUSTOMER_REQUESTED' });
      assert.equal(forged.statusCode, 403);
      assert.equal((await t.as(a, { method: 'GET', url: `/transfer/${x.id}` })).json().state, 'inProgress');
      const done = await web.post(`/dashboard/deliveries/${x.id}/cancel`, { reason: 'CUSTOMER_REQUESTED', comment: 'changed mind' });
      assert.equal(done.statusCode, 303);
      const after = (await t.as(a, { method: 'GET', url: '/balance' })).json();
      assert.equal(Math.round((after.balance - before) * 100), Math.round(x.totalPrice * 100));
      const api = (await t.as(a, { method: 'GET', url: `/transfer/${x.id}` })).json();
      assert.equal(api.state, 'cancelled');
      assert.deepEqual(api.cancellation.reason, 'CUSTOMER_REQUESTED');
      const again = await web.post(`/dashboard/deliveries/${x.id}/cancel`, { reason: 'CUSTOMER_REQUESTED' });
      assert.equal(again.statusCode, 409);
      assert.match(again.body, /already cancelled/);
    });

    test('the CSV downloads add up: ledger to the balance change, deliveries to the charges', async () => {
      const t = ctx();
      const a = await seedMerchant(t, { transfers: 6 });
      const web = await loggedIn(t, a.merchantId, 'employee');
      const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
      const range = `from=2000-01-01&to=${day(t.clock.now() + 86_400_000)}`;
      const ledger = await web.get(`/dashboard/balance/ledger.csv?${range}`);
      assert.equal(ledger.statusCode, 200);
      assert.match(String(ledger.headers['content-type']), /^text\/csv/);
      assert.match(String(ledger.headers['content-disposition']), /^attachment; filename="ledger-2000-01-01-to-\d{4}-\d{2}-\d{2}\.csv"$/);
      const rows = parseCsv(ledger.body).slice(1);
      const sum = rows.reduce((s, r) => s + Math.round(Number(r[3]) * 100), 0);
      const balance = (await t.as(a, { method: 'GET', url: '/balance' })).json().balance;
      assert.equal(sum, Math.round(balance * 100));
      const deliveries = parseCsv((await web.get(`/dashboard/balance/deliveries.csv?${range}`)).body).slice(1);
      assert.equal(deliveries.length, 6);
      const page = await web.get(`/dashboard/balance?${range}`);
      assert.match(page.body, new RegExp(`Change \\(the ledger CSV's sum\\)</dt><dd>${(sum / 100).toFixed(2)} RUB`));
      const reversed = await web.get('/dashboard/balance/ledger.csv?from=2026-02-01&to=2026-01-01');
      assert.equal(reversed.statusCode, 400);
      assert.match(reversed.body, /must be after from/);
    });

    test('developers: admins only, on the server; a credential made here gets a token; an endpoint gets its test message, logged', async () => {
      const t = ctx();
      const a = await seedMerchant(t, { transfers: 1 });
      const employee = await loggedIn(t, a.merchantId, 'employee');
      assert.equal((await employee.get('/dashboard/developers')).statusCode, 403);
      await employee.get('/dashboard/deliveries'); // a page with a valid CSRF token for the forged posts below
      for (const path of ['/dashboard/developers/credentials', '/dashboard/developers/webhooks']) {
        const res = await employee.post(path, { url: 'http://127.0.0.1:9/x' });
        assert.equal(res.statusCode, 403, path);
      }
      assert.equal((await t.services.credentials.list(a.merchantId)).length, 1);
      assert.deepEqual(await t.services.webhooks.list(a.merchantId), []);

      const admin = await loggedIn(t, a.merchantId, 'admin');
      await admin.get('/dashboard/developers');
      const created = await admin.post('/dashboard/developers/credentials');
      assert.equal(created.statusCode, 200);
      const clientId = /id="client-id">([^<]+)</.exec(created.body)?.[1] as string;
      const secret = /id="secret">([^<]+)</.exec(created.body)?.[1] as string;
      const token = await t.request({
        method: 'POST',
        url: '/auth/token',
        payload: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
      });
      assert.equal(token.statusCode, 200);
      assert.equal((await t.as(token.json().access_token, { method: 'GET', url: `/transfer/${a.transfers[0].id}` })).statusCode, 200);
      assert.ok(!(await admin.get('/dashboard/developers')).body.includes(secret), 'the secret is never shown again');
      await admin.get('/dashboard/developers');
      const revoked = await admin.post(`/dashboard/developers/credentials/${clientId}/revoke`);
      assert.equal(revoked.statusCode, 303);
      assert.equal((await t.as(token.json().access_token, { method: 'GET', url: `/transfer/${a.transfers[0].id}` })).statusCode, 401);

      const receiver = await startReceiver();
      try {
        await admin.get('/dashboard/developers');
        const made = await admin.post('/dashboard/developers/webhooks', { url: receiver.url, description: 'Orders' });
        assert.equal(made.statusCode, 200, made.body.slice(0, 400));
        assert.match(made.body, /whsec_/);
        const [endpoint] = await t.services.webhooks.list(a.merchantId);
        await admin.get(`/dashboard/developers/webhooks/${endpoint.id}`);
        assert.equal((await admin.post(`/dashboard/developers/webhooks/${endpoint.id}/test`)).statusCode, 303);
        await t.services.webhookDelivery.runOnce();
        await receiver.waitFor(1);
        assert.equal(receiver.received[0].json.type, 'webhook.test');
        const log = await admin.get(`/dashboard/developers/webhooks/${endpoint.id}`);
        assert.match(log.body, /webhook\.test/);
        assert.match(log.body, /data-label="Response" class="num">204</);
        // Another merchant's endpoint id: the same 404 as a random one.
        const other = await seedMerchant(t, { name: 'Other', transfers: 0, warehouses: 0 });
        const theirs = await t.services.webhooks.create(other.merchantId, { url: receiver.url });
        assert.equal((await admin.get(`/dashboard/developers/webhooks/${theirs.id}`)).statusCode, 404);
        await admin.get('/dashboard/developers');
        assert.equal((await admin.post(`/dashboard/developers/webhooks/${theirs.id}/test`)).statusCode, 404);
      } finally {
        await receiver.close();
      }
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'true' },
);
