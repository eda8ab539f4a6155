import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TOTP } from 'otpauth';
import { describeEachStore, warehouseBody } from './helpers/app.ts';
import { createMerchantUser, WebClient } from './helpers/people.ts';

/**
 * The dashboard's account pages on the server (app.inject; the browser suite is dashboard-browser):
 * roles checked for every action, CSRF on every state change, escaping, tenant isolation, and what
 * Users, Account (password, two-factor, sessions) and Warehouses change, checked through the API.
 */

const h1 = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];
const formError = (html: string) => /<div class="form-error" role="alert" id="form-error">\s*<p>([^<]*)<\/p>/.exec(html)?.[1];
const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const flashOf = (html: string) => {
  const m = /<p class="flash" role="status">([^<]*)<\/p>/.exec(html);
  return m ? unescapeHtml(m[1]) : undefined;
};
const XSS = '<img src=x onerror=alert(1)>';

const warehouseForm = (overrides: Record<string, string> = {}) => ({
  name: 'Dashboard warehouse',
  nameInt: '',
  address: 'Tverskaya St 7, Moscow',
  city: 'Moscow',
  lat: '55.7601',
  lng: '37.6187',
  contactPhone: '+7 495 111-22-33',
  contactEmail: '',
  ...overrides,
});

describeEachStore('dashboard pages', (ctx) => {
  async function merchantWithPeople(t: ReturnType<typeof ctx>, name = 'Pages shop') {
    const m = await t.merchant(name);
    const admin = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'admin', name: 'Ana Admin' });
    const employee = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'employee', name: 'Emil Employee' });
    const adminWeb = new WebClient(t.app);
    await adminWeb.login(admin.email, admin.password);
    const employeeWeb = new WebClient(t.app);
    await employeeWeb.login(employee.email, employee.password);
    return { m, admin, employee, adminWeb, employeeWeb };
  }

  test('employees: Users is refused on the server (page and every POST, with a valid CSRF token), nothing changes; the navigation hides Users and Developers', async () => {
    const t = ctx();
    const { m, admin, employee, employeeWeb } = await merchantWithPeople(t);
    const account = await employeeWeb.get('/dashboard/account');
    assert.equal(account.statusCode, 200);
    const nav = [...account.body.matchAll(/<li><a href="[^"]+"(?: aria-current="page")?>([^<]+)<\/a><\/li>/g)].map((x) => x[1]);
    assert.deepEqual(nav, ['Deliveries', 'New delivery', 'Warehouses', 'Balance', 'Account']);
    const page = await employeeWeb.get('/dashboard/users');
    assert.equal(page.statusCode, 403);
    assert.equal(h1(page.body), 'Not allowed');
    assert.match(page.body, /Your role does not allow this: ask an admin/);
    const before = await t.services.accounts.listMerchantUsers(m.merchantId);
    for (const [url, fields] of [
      ['/dashboard/users', { email: 'sneaky@example.com', role: 'admin' }],
      [`/dashboard/users/${admin.id}/role`, { role: 'employee' }],
      [`/dashboard/users/${admin.id}/remove`, {}],
      [`/dashboard/users/${admin.id}/reset`, {}],
      [`/dashboard/users/${employee.id}/role`, { role: 'admin' }],
    ] as const) {
      const res = await employeeWeb.post(url, fields);
      assert.equal(res.statusCode, 403, url);
    }
    assert.deepEqual(await t.services.accounts.listMerchantUsers(m.merchantId), before);
    // Employees do manage warehouses.
    await employeeWeb.get('/dashboard/warehouses/new');
    const created = await employeeWeb.post('/dashboard/warehouses', warehouseForm({ name: 'Employee made' }));
    assert.equal(created.statusCode, 303);
  });

  test('admins invite on the Users page (the link is shown once), change a role (their sessions end), and remove a user (their sessions end at once)', async () => {
    const t = ctx();
    const { m, employee, adminWeb, employeeWeb } = await merchantWithPeople(t);
    await adminWeb.get('/dashboard/users');
    const invited = await adminWeb.post('/dashboard/users', { email: 'new.person@example.com', name: 'New Person', role: 'employee' });
    assert.equal(invited.statusCode, 200);
    const url = /<code class="secret" id="one-time-link">([^<]+)<\/code>/.exec(invited.body)?.[1];
    assert.match(url!, /^http:\/\/localhost(:\d+)?\/dashboard\/set-password\?token=[A-Za-z0-9_-]{43}$/);
    assert.equal((await t.services.accounts.checkLink(new URL(url!).searchParams.get('token')!)).person.email, 'new.person@example.com');
    const again = await adminWeb.post('/dashboard/users', { email: employee.email, name: '', role: 'employee' });
    assert.equal(again.statusCode, 409);
    assert.equal(formError(again.body), `${employee.email} already has an account.`);

    const role = await adminWeb.post(`/dashboard/users/${employee.id}/role`, { role: 'admin' });
    assert.equal(role.statusCode, 303);
    assert.equal((await employeeWeb.get('/dashboard/account')).statusCode, 303, 'a role change ends their sessions');
    assert.equal((await t.services.accounts.listMerchantUsers(m.merchantId)).find((u) => u.id === employee.id)?.role, 'admin');
    await employeeWeb.login(employee.email, employee.password);
    assert.equal((await employeeWeb.get('/dashboard/users')).statusCode, 200, 'now an admin');

    await adminWeb.get('/dashboard/users');
    const removed = await adminWeb.post(`/dashboard/users/${employee.id}/remove`);
    assert.equal(removed.statusCode, 303);
    assert.equal(flashOf((await adminWeb.get('/dashboard/users')).body), `${employee.email} is removed; their sessions have ended.`);
    assert.equal((await employeeWeb.get('/dashboard/account')).statusCode, 303, 'the removed user is logged out');
    const login = new WebClient(t.app);
    await login.get('/dashboard/login');
    assert.equal((await login.post('/dashboard/login', { email: employee.email, password: employee.password })).statusCode, 401);
  });

  test('the last admin cannot be demoted or removed; nobody acts on themselves on the Users page', async () => {
    const t = ctx();
    const { m, admin, adminWeb } = await merchantWithPeople(t);
    await adminWeb.get('/dashboard/users');
    const self = await adminWeb.post(`/dashboard/users/${admin.id}/remove`);
    assert.equal(self.statusCode, 403);
    assert.equal(await t.services.accounts.changeRole(m.merchantId, admin.id, 'admin').then((u) => u.role), 'admin');
    await assert.rejects(t.services.accounts.changeRole(m.merchantId, admin.id, 'employee'), { code: 'LAST_ADMIN' });
    await assert.rejects(t.services.accounts.removeMerchantUser(m.merchantId, admin.id), { code: 'LAST_ADMIN' });
  });

  test("CSRF: every state change without the token, with a wrong one, or with another session's is refused (403) and changes nothing", async () => {
    const t = ctx();
    const { m, employee, adminWeb, employeeWeb } = await merchantWithPeople(t);
    await adminWeb.get('/dashboard/warehouses');
    const countWarehouses = async () => (await t.services.warehouses.list(m.merchantId, {})).items.length;
    const before = await countWarehouses();
    const attempts: Array<[string, Record<string, string>]> = [
      ['/dashboard/warehouses', warehouseForm()],
      ['/dashboard/users', { email: 'csrf@example.com', role: 'admin' }],
      [`/dashboard/users/${employee.id}/remove`, {}],
      ['/dashboard/account/sessions/end-all', {}],
      ['/dashboard/account/two-factor/start', {}],
      ['/dashboard/logout', {}],
    ];
    for (const [url, fields] of attempts) {
      for (const token of [null, 'x'.repeat(52), employeeWeb.lastCsrf!]) {
        const res = await adminWeb.post(url, { ...fields, _csrf: token });
        assert.equal(res.statusCode, 403, `${url} with ${token === null ? 'no token' : 'a bad token'}`);
        assert.equal(h1(res.body), 'Form expired');
      }
    }
    // The x-csrf-token header is refused the same way when wrong.
    const header = await t.app.inject({
      method: 'POST',
      url: '/dashboard/warehouses',
      headers: { cookie: adminWeb.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': 'nope' },
      payload: new URLSearchParams(warehouseForm()).toString(),
    });
    assert.equal(header.statusCode, 403);
    assert.equal(await countWarehouses(), before);
    assert.equal((await t.services.accounts.listMerchantUsers(m.merchantId)).length, 2);
    assert.equal((await adminWeb.get('/dashboard/account')).statusCode, 200, 'still logged in');
    assert.equal((await t.services.accounts.pendingTotp(employee.id)) ?? null, null);
  });

  test('warehouses: create, edit, disable, enable through the pages; the API sees each change; bad input re-renders with the problem and changes nothing', async () => {
    const t = ctx();
    const { m, adminWeb } = await merchantWithPeople(t);
    await adminWeb.get('/dashboard/warehouses/new');
    const bad = await adminWeb.post('/dashboard/warehouses', warehouseForm({ name: '', lat: '95', contactEmail: 'not-an-email' }));
    assert.equal(bad.statusCode, 422);
    assert.equal(formError(bad.body), 'Check the marked fields.');
    const problems = [...bad.body.matchAll(/<p class="hint field-problem" id="wh-(\w+)-note">([^<]+)<\/p>/g)].map((x) => [x[1], x[2]]);
    assert.deepEqual(Object.fromEntries(problems), {
      name: 'Name is required',
      lat: 'Latitude must be from -90 to 90',
      contactEmail: 'Contact e-mail is not an e-mail address',
    });
    assert.equal((await t.services.warehouses.list(m.merchantId, {})).items.length, 0);

    const created = await adminWeb.post('/dashboard/warehouses', warehouseForm());
    assert.equal(created.statusCode, 303);
    assert.equal(created.headers.location, '/dashboard/warehouses');
    const list = await t.as(m, { method: 'GET', url: '/warehouses' });
    assert.equal(list.json().length, 1);
    const w = list.json()[0];
    assert.deepEqual(
      {
        name: w.name,
        nameInt: w.nameInt,
        status: w.status,
        address: w.address,
        contactPhone: w.contactPhone,
        contactEmail: w.contactEmail,
        locationMetadata: w.locationMetadata,
      },
      {
        name: 'Dashboard warehouse',
        nameInt: null,
        status: 'ACTIVE',
        address: 'Tverskaya St 7, Moscow',
        contactPhone: '+7 495 111-22-33',
        contactEmail: null,
        locationMetadata: { display_name: 'Tverskaya St 7, Moscow', lat: 55.7601, lng: 37.6187, city: 'Moscow' },
      },
    );
    const page = await adminWeb.get('/dashboard/warehouses');
    assert.equal(flashOf(page.body), 'Warehouse "Dashboard warehouse" is created.');

    const edit = await adminWeb.get(`/dashboard/warehouses/${w.id}`);
    assert.equal(edit.statusCode, 200);
    assert.match(edit.body, /id="wh-lat" name="lat" type="text" autocomplete="off" inputmode="decimal" value="55.7601"/);
    assert.equal((await adminWeb.post(`/dashboard/warehouses/${w.id}`, warehouseForm({ name: 'Renamed', nameInt: 'renamed' }))).statusCode, 303);
    assert.equal((await t.as(m, { method: 'GET', url: `/warehouses/${w.id}` })).json().name, 'Renamed');

    await adminWeb.get('/dashboard/warehouses');
    assert.equal((await adminWeb.post(`/dashboard/warehouses/${w.id}/disable`)).statusCode, 303);
    assert.equal((await t.as(m, { method: 'GET', url: `/warehouses/${w.id}` })).json().status, 'DISABLED');
    assert.equal((await adminWeb.post(`/dashboard/warehouses/${w.id}/enable`)).statusCode, 303);
    const after = (await t.as(m, { method: 'GET', url: `/warehouses/${w.id}` })).json();
    assert.equal(after.status, 'ACTIVE');
    assert.equal(after.nameInt, 'renamed');
  });

  test('a warehouse named <img src=x onerror=alert(1)> renders as text on the list and the edit page', async () => {
    const t = ctx();
    const { m, adminWeb } = await merchantWithPeople(t);
    const w = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: XSS, address: `"><script>alert(2)</script>` }) })).json();
    for (const url of ['/dashboard/warehouses', `/dashboard/warehouses/${w.id}`]) {
      const res = await adminWeb.get(url);
      assert.equal(res.statusCode, 200);
      assert.ok(!res.body.includes(XSS), url);
      assert.ok(!res.body.includes('<script>alert(2)'), url);
      assert.ok(res.body.includes('&lt;img src=x onerror=alert(1)&gt;'), url);
    }
  });

  test("another merchant's warehouse id in the URL answers the same 404 page as a random id, and nothing changes", async () => {
    const t = ctx();
    const { adminWeb } = await merchantWithPeople(t);
    const other = await t.merchant('Other shop');
    const theirs = (await t.as(other, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'Theirs' }) })).json();
    const random = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    await adminWeb.get('/dashboard/warehouses');
    for (const id of [theirs.id, random, 'not-a-uuid']) {
      const page = await adminWeb.get(`/dashboard/warehouses/${id}`);
      assert.equal(page.statusCode, 404, id);
      assert.equal(h1(page.body), 'Not found');
      for (const action of ['', '/disable', '/enable']) {
        const res = await adminWeb.post(`/dashboard/warehouses/${id}${action}`, warehouseForm({ name: 'Hijacked' }));
        assert.equal(res.statusCode, 404, `${id}${action}`);
      }
    }
    const after = (await t.as(other, { method: 'GET', url: `/warehouses/${theirs.id}` })).json();
    assert.equal(after.name, 'Theirs');
    assert.equal(after.status, 'ACTIVE');
    // Users of another merchant are as invisible.
    const foreignUser = await createMerchantUser(t.app, { merchantId: other.merchantId, role: 'employee' });
    assert.equal((await adminWeb.post(`/dashboard/users/${foreignUser.id}/remove`)).statusCode, 404);
    assert.equal((await t.services.accounts.listMerchantUsers(other.merchantId)).length, 1);
  });

  test('Account: change the password (the current one is required; other sessions end); end one session; log out everywhere', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const phone = new WebClient(t.app, { 'user-agent': 'Mozilla/5.0 (Linux; Android 14) Chrome/130.0 Mobile' });
    const laptop = new WebClient(t.app, { 'user-agent': 'Mozilla/5.0 (Windows NT 10.0) Firefox/132.0' });
    const tablet = new WebClient(t.app);
    await phone.login(u.email, u.password);
    await laptop.login(u.email, u.password);
    await tablet.login(u.email, u.password);
    const account = await laptop.get('/dashboard/account');
    assert.match(account.body, /Firefox on Windows <span class="badge ok">this one<\/span>/);
    assert.match(account.body, /Chrome on Android/);

    const wrong = await laptop.post('/dashboard/account/password', {
      current: 'not my password!',
      password: 'a new passphrase here',
      confirm: 'a new passphrase here',
    });
    assert.equal(wrong.statusCode, 422);
    assert.equal(formError(wrong.body), 'The current password is not right.');
    const phoneSession = [...account.body.matchAll(/name="session" value="([0-9a-f]{64})"/g)].map((x) => x[1]);
    assert.equal(phoneSession.length, 2, 'the two other sessions can be ended');
    await laptop.get('/dashboard/account');
    const endedOne = await laptop.post('/dashboard/account/sessions/end', { session: phoneSession[0] });
    assert.equal(endedOne.statusCode, 303);
    const liveAfterOne = [phone, tablet].filter((c) => c.cookies.has('mds_session'));
    assert.equal(liveAfterOne.length, 2);
    const states = await Promise.all([phone.get('/dashboard/account'), tablet.get('/dashboard/account')]);
    assert.deepEqual(states.map((r) => r.statusCode).sort(), [200, 303]);

    await laptop.get('/dashboard/account');
    const changed = await laptop.post('/dashboard/account/password', {
      current: u.password,
      password: 'a new passphrase here',
      confirm: 'a new passphrase here',
    });
    assert.equal(changed.statusCode, 303);
    assert.equal((await laptop.get('/dashboard/account')).statusCode, 200, 'this session stays');
    assert.equal((await phone.get('/dashboard/account')).statusCode, 303);
    assert.equal((await tablet.get('/dashboard/account')).statusCode, 303);

    const other = new WebClient(t.app);
    await other.login(u.email, 'a new passphrase here');
    await laptop.get('/dashboard/account');
    const everywhere = await laptop.post('/dashboard/account/sessions/end-all');
    assert.equal(everywhere.statusCode, 303);
    assert.equal(everywhere.headers.location, '/dashboard/login');
    assert.equal(flashOf((await laptop.get('/dashboard/login')).body), 'You are logged out everywhere (2 sessions ended).');
    assert.equal((await other.get('/dashboard/account')).statusCode, 303);
    assert.deepEqual(await t.services.accounts.listSessions(u.id), []);
  });

  test('two-factor: enrol with the manual key, log in with a TOTP code (each code once), and with a recovery code (each code once)', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const web = new WebClient(t.app);
    await web.login(u.email, u.password);
    await web.get('/dashboard/account');
    assert.equal((await web.post('/dashboard/account/two-factor/start')).headers.location, '/dashboard/account/two-factor');
    const setup = await web.get('/dashboard/account/two-factor');
    const key = /<code class="secret" id="totp-key">([A-Z2-7 ]+)<\/code>/.exec(setup.body)![1].replace(/ /g, '');
    const uri = /<a href="(otpauth:\/\/totp\/[^"]+)">otpauth link<\/a>/.exec(setup.body)![1].replace(/&amp;/g, '&');
    assert.equal(new URL(uri).searchParams.get('secret'), key);
    const totp = new TOTP({ secret: key });
    const code = (at = t.clock.now()) => totp.generate({ timestamp: at });
    const badCode = await web.post('/dashboard/account/two-factor/confirm', { code: code(t.clock.now() - 5 * 60_000) });
    assert.equal(badCode.statusCode, 422);
    const confirmed = await web.post('/dashboard/account/two-factor/confirm', { code: code() });
    assert.equal(confirmed.statusCode, 200);
    const recovery = [...confirmed.body.matchAll(/<li>([0-9A-Z]{5}-[0-9A-Z]{5})<\/li>/g)].map((x) => x[1]);
    assert.equal(recovery.length, 10);
    const stored = await t.database.db.selectFrom('recovery_codes').selectAll().where('person_id', '=', u.id).execute();
    assert.ok(
      stored.every((r) => !recovery.includes(r.code_hash)),
      'recovery codes are stored hashed',
    );

    // Log in again: the password alone is not enough.
    t.clock.advance(30_000);
    const second = new WebClient(t.app);
    await second.get('/dashboard/login');
    const step = await second.post('/dashboard/login', { email: u.email, password: u.password });
    assert.equal(step.headers.location, '/dashboard/login/second-factor');
    const pendingCookie = second.cookies.get('mds_session')!;
    assert.equal((await second.get('/dashboard/account')).statusCode, 303, 'no page before the second factor');
    await second.get('/dashboard/login/second-factor');
    assert.equal((await second.post('/dashboard/login/second-factor', { code: '000000' })).statusCode, 422);
    const current = code();
    const ok = await second.post('/dashboard/login/second-factor', { code: current });
    assert.equal(ok.statusCode, 303);
    assert.notEqual(second.cookies.get('mds_session'), pendingCookie, 'a new session id once the second factor is done');
    assert.equal((await second.get('/dashboard/account')).statusCode, 200);

    // The same TOTP code does not work twice.
    const third = new WebClient(t.app);
    await third.get('/dashboard/login');
    await third.post('/dashboard/login', { email: u.email, password: u.password });
    await third.get('/dashboard/login/second-factor');
    assert.equal((await third.post('/dashboard/login/second-factor', { code: current })).statusCode, 422);
    // A recovery code works once (in any case, with or without its dash).
    assert.equal((await third.post('/dashboard/login/second-factor', { code: recovery[3].toLowerCase().replace('-', '') })).statusCode, 303);
    const fourth = new WebClient(t.app);
    await fourth.get('/dashboard/login');
    await fourth.post('/dashboard/login', { email: u.email, password: u.password });
    await fourth.get('/dashboard/login/second-factor');
    const reused = await fourth.post('/dashboard/login/second-factor', { code: recovery[3] });
    assert.equal(reused.statusCode, 422);
    assert.equal(formError(reused.body), 'That code is not right: use the current code of your authenticator app, or a recovery code');
    assert.match((await third.get('/dashboard/account')).body, /Recovery codes left: <strong>9<\/strong>/);
  });
});
