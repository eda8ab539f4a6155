import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore, type TestApp } from './helpers/app.ts';
import { mds } from './helpers/cli.ts';
import { paidTransfer, setup } from './helpers/flow.ts';
import { createMerchantUser, TEST_PASSWORD, WebClient } from './helpers/people.ts';

/**
 * The courier app's pages on the server (app.inject): activation link and phone login, the courier's
 * session as the only way in (login redirect, other kinds refused, CSRF on every change), a job
 * from accept to delivery through the pages with what each step changed read back through the APIs,
 * wrong codes and the lock, and another courier's job answering 404.
 */

const NEAR = { lat: 0.001, lng: 0.001 };
let phones = 0;

/** A courier with an activated account (password set through its activation link); its phone is unique. */
async function courierAccount(t: TestApp, name = 'Ivan Petrov') {
  const phone = `+7 901 ${String(100 + (++phones % 900)).padStart(3, '0')}-${String(Date.now() % 100).padStart(2, '0')}-${String(phones % 100).padStart(2, '0')}`;
  const { courier, clientId, clientSecret } = await t.services.couriers.create(name, phone);
  const link = await t.services.accounts.courierActivationLink(courier.id, 'http://app.test');
  await t.services.accounts.setPasswordWithLink(new URL(link.url).searchParams.get('token')!, TEST_PASSWORD);
  return { courierId: courier.id, clientId, clientSecret, phone };
}

async function loggedIn(t: TestApp, phone: string): Promise<WebClient> {
  const web = new WebClient(t.app);
  await web.get('/courier-app/login');
  const res = await web.post('/courier-app/login', { phone, password: TEST_PASSWORD });
  assert.equal(res.statusCode, 303, res.body.slice(0, 300));
  assert.equal(res.headers.location, '/courier-app/shift');
  return web;
}

async function goOnline(web: WebClient, at = NEAR) {
  await web.get('/courier-app/shift');
  const res = await web.post('/courier-app/shift/status', { online: 'true', lat: String(at.lat), lng: String(at.lng) });
  assert.equal(res.statusCode, 303, res.body.slice(0, 300));
  await web.get(String(res.headers.location)); // shows (and clears) the flash
}

const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');

describeEachStore('courier app pages', (ctx) => {
  test('mds couriers create prints a one-time activation link; the courier sets a password there and logs in with the phone number in any spelling', async () => {
    const t = ctx();
    const created = await mds(t, 'couriers', 'create', '--name', 'Olga Smirnova', '--phone', '+7 902 333-44-55', '--json');
    assert.equal(created.code, 0, created.stderr);
    const body = JSON.parse(created.stdout);
    assert.match(body.activationUrl, /^http:\/\/127\.0\.0\.1:\d+\/courier-app\/activate\?token=[\w-]{43}$/);
    const path = new URL(body.activationUrl).pathname + new URL(body.activationUrl).search;

    const web = new WebClient(t.app);
    const page = await web.get(path);
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    assert.match(text(page.body), /Hello Olga Smirnova/);
    const token = new URL(body.activationUrl).searchParams.get('token')!;
    const short = await web.post('/courier-app/activate', { token, password: 'short', confirm: 'short' });
    assert.equal(short.statusCode, 422);
    const set = await web.post('/courier-app/activate', { token, password: TEST_PASSWORD, confirm: TEST_PASSWORD });
    assert.deepEqual([set.statusCode, set.headers.location], [303, '/courier-app/login']);
    const again = await web.get(path);
    assert.equal(again.statusCode, 410, 'the link works once');

    await web.get('/courier-app/login');
    const wrong = await web.post('/courier-app/login', { phone: '79023334455', password: 'not the password at all' });
    assert.equal(wrong.statusCode, 401);
    assert.match(text(wrong.body), /Wrong phone number or password\./);
    const ok = await web.post('/courier-app/login', { phone: '7 (902) 333 44 55', password: TEST_PASSWORD });
    assert.deepEqual([ok.statusCode, ok.headers.location], [303, '/courier-app/shift']);
    const shift = await web.get('/courier-app/shift');
    assert.equal(shift.statusCode, 200);
    assert.match(text(shift.body), /You are offline/);

    const same = await mds(t, 'couriers', 'create', '--name', 'Other', '--phone', '79023334455');
    assert.equal(same.code, 1);
    assert.match(same.stderr, /Another courier already logs in with 79023334455/);
    const reissued = await mds(t, 'couriers', 'activation-link', body.courier.id, '--json');
    assert.equal(JSON.parse(reissued.stdout).purpose, 'reset');
  });

  test("the courier's session is the only way in: no session goes to the login, a merchant user is refused, and every change needs the CSRF token", async () => {
    const t = ctx();
    const anon = new WebClient(t.app);
    for (const path of ['/courier-app/shift', '/courier-app/jobs', '/courier-app/today']) {
      const res = await anon.get(path);
      assert.deepEqual([res.statusCode, res.headers.location], [303, `/courier-app/login?next=${encodeURIComponent(path)}`]);
    }
    const m = await t.merchant('Shop with staff');
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const merchantWeb = new WebClient(t.app);
    await merchantWeb.login(u.email, u.password);
    assert.equal((await merchantWeb.get('/courier-app/shift')).statusCode, 403);
    // A merchant's e-mail and password do not open the courier app either.
    await merchantWeb.get('/courier-app/login');
    assert.equal((await merchantWeb.post('/courier-app/login', { phone: u.email, password: u.password })).statusCode, 401);

    const c = await courierAccount(t);
    const web = await loggedIn(t, c.phone);
    assert.equal((await web.get('/dashboard/deliveries')).statusCode, 403, 'a courier opens no dashboard page');
    await web.get('/courier-app/shift');
    const forged = await web.post('/courier-app/shift/status', { _csrf: null, online: 'true', lat: '0', lng: '0' });
    assert.equal(forged.statusCode, 403);
    assert.equal((await t.services.couriers.status(c.courierId)).online, false, 'a refused form changes nothing');
    const noHeader = await t.app.inject({
      method: 'POST',
      url: '/courier-app/shift/location',
      headers: { cookie: web.cookieHeader(), 'content-type': 'application/json' },
      payload: { lat: 1, lng: 1 },
    });
    assert.equal(noHeader.statusCode, 403);

    await goOnline(web);
    const status = await t.services.couriers.status(c.courierId);
    assert.deepEqual([status.online, status.location?.lat, status.location?.lng], [true, NEAR.lat, NEAR.lng]);
    t.clock.advance(2000);
    const sent = await t.app.inject({
      method: 'POST',
      url: '/courier-app/shift/location',
      headers: { cookie: web.cookieHeader(), 'content-type': 'application/json', 'x-csrf-token': web.lastCsrf! },
      payload: { lat: 0.002, lng: 0.003 },
    });
    assert.equal(sent.statusCode, 204, sent.body);
    assert.deepEqual((await t.services.couriers.status(c.courierId)).location, { lat: 0.002, lng: 0.003, updatedAt: new Date(t.clock.now()).toISOString() });

    const off = await web.post('/courier-app/shift/status', { online: 'false' });
    assert.equal(off.statusCode, 303);
    assert.equal((await t.services.couriers.status(c.courierId)).online, false);
    const noPosition = await web.post('/courier-app/shift/status', { online: 'true' });
    assert.equal(noPosition.statusCode, 422);
    assert.match(text(noPosition.body), /the app needs your position/);

    const out = await web.post('/courier-app/logout', {});
    assert.equal(out.statusCode, 303);
    assert.equal((await web.get('/courier-app/shift')).statusCode, 303, 'logged out');
  });

  test('a job through the pages: take, transfer code, wrong PIN with attempts left, right PIN; the merchant API says delivered and Today sums the payout', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    const c = await courierAccount(t, 'Pavel Orlov');
    const web = await loggedIn(t, c.phone);
    await goOnline(web);

    const list = await web.get('/courier-app/jobs');
    assert.match(text(list.body), /Main warehouse/);
    assert.equal(list.body.includes('Anna Ivanova'), false, 'an open job does not name the recipient');
    const taken = await web.post(`/courier-app/jobs/${tr.id}/accept`);
    assert.deepEqual([taken.statusCode, taken.headers.location], [303, `/courier-app/jobs/${tr.id}`]);
    assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'courierAssigned');

    const job = await web.get(`/courier-app/jobs/${tr.id}`);
    assert.equal(job.statusCode, 200);
    assert.match(job.body, /href="https:\/\/www\.google\.com\/maps\/dir\/\?api=1&amp;destination=0,0&amp;travelmode=driving"/);
    assert.match(job.body, /href="geo:0,0\?q=0,0\(Main%20warehouse\)"/);
    assert.equal(job.body.includes('Anna Ivanova'), false, 'the recipient comes after pickup');

    const wrongCode = await web.post(`/courier-app/jobs/${tr.id}/pickup`, { transferCode: 'AAAA-AAAA' });
    assert.equal(wrongCode.statusCode, 422);
    assert.match(text(wrongCode.body), /That transfer code is wrong: 4 attempts left before the job is locked\./);
    const picked = await web.post(`/courier-app/jobs/${tr.id}/pickup`, { transferCode: tr.transferCode.toLowerCase().replace('-', ' ') });
    assert.equal(picked.statusCode, 303);
    const onTheWay = await web.get(`/courier-app/jobs/${tr.id}`);
    assert.match(text(onTheWay.body), /Anna Ivanova , \+7 900 000-00-00/);
    assert.match(onTheWay.body, /href="tel:\+79000000000"/);

    const wrongPin = await web.post(`/courier-app/jobs/${tr.id}/deliver`, { deliveryPin: tr.deliveryPin === '0000' ? '1111' : '0000' });
    assert.equal(wrongPin.statusCode, 422);
    assert.match(text(wrongPin.body), /That PIN is wrong: 3 attempts left before the job is locked\./);
    const delivered = await web.post(`/courier-app/jobs/${tr.id}/deliver`, { deliveryPin: tr.deliveryPin });
    assert.equal(delivered.statusCode, 303);
    assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'delivered');
    const after = await web.get(`/courier-app/jobs/${tr.id}`);
    assert.equal(after.body.includes('Anna Ivanova'), false, 'the recipient is gone once delivered');
    assert.match(text(after.body), /You earned 477\.00 RUB for this job\./);
    const again = await web.post(`/courier-app/jobs/${tr.id}/deliver`, { deliveryPin: tr.deliveryPin });
    assert.equal(again.statusCode, 303, 'a form sent twice lands on the job as it stands');

    const today = await web.get('/courier-app/today');
    assert.match(text(today.body), /477\.00 RUB 1 delivered\./);
  });

  test('a failed delivery goes back with the code; five wrong codes lock the job and the page says whom to call', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '2000');
    const tr = await paidTransfer(t, m, w.id);
    const c = await courierAccount(t);
    const web = await loggedIn(t, c.phone);
    await goOnline(web);
    await web.post(`/courier-app/jobs/${tr.id}/accept`);
    await web.get(`/courier-app/jobs/${tr.id}`);
    assert.equal((await web.post(`/courier-app/jobs/${tr.id}/pickup`, { transferCode: tr.transferCode })).statusCode, 303);
    await web.get(`/courier-app/jobs/${tr.id}`);
    const noReason = await web.post(`/courier-app/jobs/${tr.id}/fail`, { reason: '' });
    assert.equal(noReason.statusCode, 422);
    const failed = await web.post(`/courier-app/jobs/${tr.id}/fail`, { reason: 'RECIPIENT_UNAVAILABLE', comment: 'Nobody home' });
    assert.equal(failed.statusCode, 303);
    assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'returning');
    const back = await web.get(`/courier-app/jobs/${tr.id}`);
    assert.match(text(back.body), /Return the parcel/);
    for (let i = 0; i < 4; i++) await web.post(`/courier-app/jobs/${tr.id}/return`, { transferCode: 'ZZZZ-ZZZZ' });
    const locked = await web.post(`/courier-app/jobs/${tr.id}/return`, { transferCode: 'ZZZZ-ZZZZ' });
    assert.equal(locked.statusCode, 423);
    assert.match(text(locked.body), /This job is locked .* Call your dispatcher to unlock it\. The warehouse: \+7 495 000-00-00/);
    assert.equal(locked.body.includes('name="transferCode"'), false, 'no code form while locked');
    const right = await web.post(`/courier-app/jobs/${tr.id}/return`, { transferCode: tr.transferCode });
    assert.equal(right.statusCode, 423, 'even the right code waits for the unlock');
    await t.services.couriers.unlock(tr.id);
    await web.get(`/courier-app/jobs/${tr.id}`);
    assert.equal((await web.post(`/courier-app/jobs/${tr.id}/return`, { transferCode: tr.transferCode })).statusCode, 303);
    assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'returned');
    assert.match(text((await web.get('/courier-app/today')).body), /0\.00 RUB 0 delivered, 1 returned/);
  });

  test("another courier sees nothing of the first one's job: its page and every action answer 404 and change nothing; released, it is open to others", async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const tr = await paidTransfer(t, m, w.id);
    const first = await courierAccount(t, 'First Courier');
    const second = await courierAccount(t, 'Second Courier');
    const a = await loggedIn(t, first.phone);
    await goOnline(a);
    await a.post(`/courier-app/jobs/${tr.id}/accept`);
    const b = await loggedIn(t, second.phone);
    await goOnline(b);
    const page = await b.get(`/courier-app/jobs/${tr.id}`);
    assert.equal(page.statusCode, 404);
    const random = await b.get('/courier-app/jobs/0190a0b0-0000-7000-8000-000000000000');
    assert.equal(
      page.body.replace(/nonce="[^"]+"|value="[^"]+"|nonce-[^']+/g, ''),
      random.body.replace(/nonce="[^"]+"|value="[^"]+"|nonce-[^']+/g, ''),
      'the same page as for an id that does not exist',
    );
    assert.equal(page.body.includes('Anna Ivanova') || page.body.includes('Main warehouse'), false);
    for (const [action, fields] of [
      ['pickup', { transferCode: tr.transferCode }],
      ['deliver', { deliveryPin: tr.deliveryPin }],
      ['release', {}],
      ['fail', { reason: 'OTHER' }],
      ['return', { transferCode: tr.transferCode }],
      ['accept', {}],
    ] as const) {
      const res = await b.post(`/courier-app/jobs/${tr.id}/${action}`, fields);
      if (action === 'accept') assert.deepEqual([res.statusCode, res.headers.location], [303, '/courier-app/jobs'], 'a taken job: back to the list');
      else assert.equal(res.statusCode, 404, action);
    }
    assert.equal((await b.get('/courier-app/jobs/not-a-uuid')).statusCode, 404);
    const jobs = await b.get('/courier-app/jobs');
    assert.equal(jobs.body.includes(tr.id), false, 'a taken job is not listed to others');
    const seen = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
    assert.equal(seen.state, 'courierAssigned');
    assert.equal((await t.services.couriers.job(first.courierId, tr.id)).codeAttemptsLeft, 5, "the other courier's tries cost nothing");

    // The first courier gives it back: open again, and now the second can take it (the first one then sees a 404).
    await a.get(`/courier-app/jobs/${tr.id}`);
    const released = await a.post(`/courier-app/jobs/${tr.id}/release`);
    assert.deepEqual([released.statusCode, released.headers.location], [303, '/courier-app/jobs']);
    assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress');
    await b.get('/courier-app/jobs');
    assert.equal((await b.post(`/courier-app/jobs/${tr.id}/accept`)).headers.location, `/courier-app/jobs/${tr.id}`);
    assert.equal((await a.get(`/courier-app/jobs/${tr.id}`)).statusCode, 404);
  });

  test('installable: manifest and service worker under /courier-app/, a CSP that allows them and nothing from elsewhere; a disabled courier is logged out', async () => {
    const t = ctx();
    const manifest = await t.app.inject({ method: 'GET', url: '/courier-app/manifest.webmanifest' });
    assert.equal(manifest.statusCode, 200);
    assert.match(String(manifest.headers['content-type']), /^application\/manifest\+json/);
    const mf = manifest.json();
    assert.deepEqual(
      [mf.start_url, mf.scope, mf.display, mf.icons.map((i: { sizes: string }) => i.sizes)],
      ['/courier-app/shift', '/courier-app/', 'standalone', ['192x192', '512x512']],
    );
    for (const icon of mf.icons) assert.equal((await t.app.inject({ method: 'GET', url: icon.src })).statusCode, 200);
    const sw = await t.app.inject({ method: 'GET', url: '/courier-app/sw.js' });
    assert.equal(sw.statusCode, 200);
    assert.match(String(sw.headers['content-type']), /javascript/);
    assert.match(sw.body, /const PRECACHE = \["\/courier-app\/offline","\/static\/app\.css\?v=/);
    const login = await t.app.inject({ method: 'GET', url: '/courier-app/login' });
    assert.match(String(login.headers['content-security-policy']), /manifest-src 'self'; worker-src 'self'$/);
    assert.match(login.body, /<link rel="manifest" href="\/courier-app\/manifest\.webmanifest">/);
    assert.equal((await t.app.inject({ method: 'GET', url: '/courier-app/offline' })).statusCode, 200);

    const c = await courierAccount(t);
    const web = await loggedIn(t, c.phone);
    await t.services.couriers.setStatus(c.courierId, 'DISABLED');
    const res = await web.get('/courier-app/shift');
    assert.deepEqual([res.statusCode, res.headers.location], [303, '/courier-app/login']);
    const retry = await new WebClient(t.app).get('/courier-app/login');
    assert.equal(retry.statusCode, 200);
    const web2 = new WebClient(t.app);
    await web2.get('/courier-app/login');
    const refused = await web2.post('/courier-app/login', { phone: c.phone, password: TEST_PASSWORD });
    assert.equal(refused.statusCode, 403);
    assert.match(text(refused.body), /Your courier account is disabled/);
  });
});
