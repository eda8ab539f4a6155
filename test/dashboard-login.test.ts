import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startScheduler } from '../src/background/scheduler.ts';
import { describeEachStore } from './helpers/app.ts';
import { createMerchantUser, WebClient } from './helpers/people.ts';

/** Logging in to the dashboard: sessions, their cookie, the login form's answers, logout, expiry. */

describeEachStore('dashboard login and sessions', (ctx) => {
  test('log in: 303 to the dashboard with a new HttpOnly SameSite=Lax session cookie; the layout shows the person and the navigation', async () => {
    const t = ctx();
    const m = await t.merchant('Login shop');
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'admin', name: 'Ana Admin' });
    const web = new WebClient(t.app);
    const page = await web.get('/dashboard/login');
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /^default-src 'none'; script-src 'nonce-[A-Za-z0-9+/=]+'; style-src 'self';/);
    const res = await web.post('/dashboard/login', { email: u.email.toUpperCase(), password: u.password });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, '/dashboard/deliveries');
    const set = String(res.headers['set-cookie']);
    assert.match(set, /mds_session=[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Lax/);
    const home = await web.get('/dashboard/warehouses');
    assert.ok(home.statusCode < 500);
    const account = await web.get('/dashboard/login');
    assert.equal(account.statusCode, 303, 'a logged-in person is sent on from the login page');
  });

  test('wrong password and unknown e-mail get the identical answer', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const web = new WebClient(t.app, { 'x-forwarded-for': '1.1.1.1' });
    await web.get('/dashboard/login');
    const wrong = await web.post('/dashboard/login', { email: u.email, password: 'not the password at all' });
    const unknown = await web.post('/dashboard/login', { email: 'nobody-here@example.com', password: 'not the password at all' });
    assert.equal(wrong.statusCode, 401);
    assert.equal(unknown.statusCode, 401);
    const message = (html: string) => /<div class="form-error" role="alert" id="form-error">\s*<p>([^<]*)<\/p>/.exec(html)?.[1];
    assert.equal(message(wrong.body), 'Wrong e-mail or password.');
    assert.equal(message(unknown.body), 'Wrong e-mail or password.');
    assert.equal(web.cookies.has('mds_session'), false);
  });

  test('session fixation: the session id is always new at login; a planted or previous id never becomes a session', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const web = new WebClient(t.app);
    const planted = 'A'.repeat(43);
    web.cookies.set('mds_session', planted);
    await web.get('/dashboard/login');
    assert.equal(web.cookies.has('mds_session'), false, 'an unknown session cookie is cleared');
    web.cookies.set('mds_session', planted);
    const res = await web.post('/dashboard/login', { email: u.email, password: u.password });
    assert.equal(res.statusCode, 303);
    const first = web.cookies.get('mds_session')!;
    assert.notEqual(first, planted);
    assert.equal(await t.services.accounts.resolveSession(planted), undefined);
    // Logging in again from a logged-in browser: another new id, and the previous session ends.
    await web.get('/dashboard/account');
    const again = await web.post('/dashboard/login', { email: u.email, password: u.password });
    assert.equal(again.statusCode, 303);
    const second = web.cookies.get('mds_session')!;
    assert.notEqual(second, first);
    const old = new WebClient(t.app);
    old.cookies.set('mds_session', first);
    const refused = await old.get('/dashboard/account');
    assert.equal(refused.statusCode, 303);
    assert.equal(refused.headers.location, '/dashboard/login?next=%2Fdashboard%2Faccount');
    assert.equal((await web.get('/dashboard/account')).statusCode, 200);
  });

  test('logout ends the session on the server: the old cookie is refused afterwards', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const web = new WebClient(t.app);
    await web.login(u.email, u.password);
    const cookie = web.cookies.get('mds_session')!;
    assert.equal((await web.get('/dashboard/account')).statusCode, 200); // the layout's logout form carries the session's token
    const out = await web.post('/dashboard/logout');
    assert.equal(out.statusCode, 303);
    assert.equal(out.headers.location, '/dashboard/login');
    assert.equal(web.cookies.has('mds_session'), false);
    const replay = new WebClient(t.app);
    replay.cookies.set('mds_session', cookie);
    assert.equal((await replay.get('/dashboard/account')).statusCode, 303);
    const flash = await web.get('/dashboard/login');
    assert.match(flash.body, /<p class="flash" role="status">You are logged out.<\/p>/);
  });

  test('idle expiry: after SESSION_IDLE_MINUTES without a request the session is gone; requests inside the window keep it alive', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const web = new WebClient(t.app);
    await web.login(u.email, u.password);
    const cookie = web.cookies.get('mds_session')!;
    const alive = async () => (await t.services.accounts.resolveSession(cookie)) !== undefined;
    t.clock.advance(29 * 60_000);
    assert.equal(await alive(), true);
    t.clock.advance(29 * 60_000);
    assert.equal(await alive(), true, 'the previous request reset the idle timer');
    t.clock.advance(30 * 60_000);
    assert.equal(await alive(), false);
    assert.equal((await web.get('/dashboard/account')).statusCode, 303);
  });

  test('expired sessions are deleted by the scheduler, live ones kept', async () => {
    const t = ctx();
    const m = await t.merchant();
    const old = await createMerchantUser(t.app, { merchantId: m.merchantId, email: 'old@example.com' });
    const fresh = await createMerchantUser(t.app, { merchantId: m.merchantId, email: 'fresh@example.com' });
    const oldWeb = new WebClient(t.app);
    await oldWeb.login(old.email, old.password);
    t.clock.advance(20 * 60_000);
    const freshWeb = new WebClient(t.app);
    await freshWeb.login(fresh.email, fresh.password);
    t.clock.advance(11 * 60_000); // the first session is 31 min idle, the second 11 min
    const owners = async () => new Set((await t.database.db.selectFrom('sessions').select('person_id').execute()).map((r) => r.person_id));
    assert.deepEqual([(await owners()).has(old.id), (await owners()).has(fresh.id)], [true, true]);
    const scheduler = startScheduler({ ...t.services, intervalMs: 3_600_000, log: { info() {}, error() {} } });
    try {
      await scheduler.runOnce();
    } finally {
      await scheduler.stop();
    }
    assert.deepEqual([(await owners()).has(old.id), (await owners()).has(fresh.id)], [false, true]);
    assert.equal((await freshWeb.get('/dashboard/account')).statusCode, 200);
  });

  test('absolute lifetime: a session used all the time still ends SESSION_ABSOLUTE_HOURS after login', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const web = new WebClient(t.app);
    await web.login(u.email, u.password);
    const cookie = web.cookies.get('mds_session')!;
    for (let i = 0; i < 47; i++) {
      t.clock.advance(15 * 60_000);
      assert.ok(await t.services.accounts.resolveSession(cookie), `alive after ${(i + 1) * 15} minutes`);
    }
    t.clock.advance(15 * 60_000 - 1); // 11:59:59.999 after login
    assert.ok(await t.services.accounts.resolveSession(cookie));
    t.clock.advance(1);
    assert.equal(await t.services.accounts.resolveSession(cookie), undefined);
  });

  test('login form without or with a wrong CSRF token is refused (403) and logs nobody in', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const web = new WebClient(t.app);
    await web.get('/dashboard/login');
    const missing = await web.post('/dashboard/login', { email: u.email, password: u.password, _csrf: null });
    assert.equal(missing.statusCode, 403);
    assert.match(missing.body, /<h1>Form expired<\/h1>/);
    const wrong = await web.post('/dashboard/login', { email: u.email, password: u.password, _csrf: 'x'.repeat(52) });
    assert.equal(wrong.statusCode, 403);
    assert.equal(web.cookies.has('mds_session'), false);
    // Another browser's token does not fit this browser's secret either.
    const other = new WebClient(t.app);
    await other.get('/dashboard/login');
    const foreign = await web.post('/dashboard/login', { email: u.email, password: u.password, _csrf: other.lastCsrf! });
    assert.equal(foreign.statusCode, 403);
    assert.equal(web.cookies.has('mds_session'), false);
  });

  test('/dashboard/ sends to Deliveries; an unknown dashboard path is an HTML 404 page; next= never leaves the dashboard', async () => {
    const t = ctx();
    const root = await t.app.inject({ method: 'GET', url: '/dashboard/' });
    assert.equal(root.statusCode, 303);
    assert.equal(root.headers.location, '/dashboard/deliveries');
    const missing = await t.app.inject({ method: 'GET', url: '/dashboard/no-such-page' });
    assert.equal(missing.statusCode, 404);
    assert.match(String(missing.headers['content-type']), /^text\/html/);
    assert.match(missing.body, /<h1>Page not found<\/h1>/);
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    for (const next of ['https://evil.example/', '//evil.example/dashboard/', '/dashboard\\@evil', '/elsewhere']) {
      const web = new WebClient(t.app);
      await web.get(`/dashboard/login?next=${encodeURIComponent(next)}`);
      const res = await web.post('/dashboard/login', { email: u.email, password: u.password, next });
      assert.equal(res.headers.location, '/dashboard/deliveries', next);
    }
    const web = new WebClient(t.app);
    await web.get('/dashboard/login');
    const res = await web.post('/dashboard/login', { email: u.email, password: u.password, next: '/dashboard/warehouses?status=ACTIVE' });
    assert.equal(res.headers.location, '/dashboard/warehouses?status=ACTIVE');
  });

  test('with SESSION_COOKIE_SECURE=true the cookie is __Host-mds_session with Secure', async () => {
    const { createTestApp } = await import('./helpers/app.ts');
    const t = await createTestApp(ctx().store.name === 'postgres' ? 'postgres' : 'sqlite', { SESSION_COOKIE_SECURE: 'true' });
    try {
      const m = await t.merchant();
      const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
      const web = new WebClient(t.app);
      await web.get('/dashboard/login');
      assert.ok(web.cookies.has('__Host-mds_csrf'));
      const res = await web.post('/dashboard/login', { email: u.email, password: u.password });
      assert.equal(res.statusCode, 303);
      assert.match(String(res.headers['set-cookie']), /^__Host-mds_session=[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    } finally {
      await t.close();
    }
  });

  test('static assets: versioned URLs in the page, served with a year of immutable caching; no directory listing', async () => {
    const t = ctx();
    const page = await t.app.inject({ method: 'GET', url: '/dashboard/login' });
    const css = /<link rel="stylesheet" href="(\/static\/app\.css\?v=[0-9a-f]{12})">/.exec(page.body)?.[1];
    assert.ok(css, 'the layout links the stylesheet with a content version');
    const res = await t.app.inject({ method: 'GET', url: css });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/css/);
    assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
    const script = /<script nonce="[^"]+" src="(\/static\/app\.js\?v=[0-9a-f]{12})" defer><\/script>/.exec(page.body)?.[1];
    assert.ok(script);
    assert.equal((await t.app.inject({ method: 'GET', url: script })).statusCode, 200);
    assert.equal((await t.app.inject({ method: 'GET', url: '/static/' })).statusCode, 404);
    assert.equal((await t.app.inject({ method: 'GET', url: '/static/../plugin.ts' })).statusCode, 404);
  });
});
