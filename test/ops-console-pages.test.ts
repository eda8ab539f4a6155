import assert from 'node:assert/strict';
import { userInfo } from 'node:os';
import { test } from 'node:test';
import { sql } from 'kysely';
import { describeEachStore, type TestApp } from './helpers/app.ts';
import { mds } from './helpers/cli.ts';
import { paidTransfer, quote, STANDARD_MINOR, setup, transferBody } from './helpers/flow.ts';
import { createMerchantUser, createOperator, TEST_PASSWORD, type TestOperator, WebClient } from './helpers/people.ts';

/**
 * The operator console on the server (app.inject; the browser suite is ops-console-browser): operator
 * login with a password and TOTP (set up at the first login), roles checked for every action (a valid
 * CSRF token does not help), CSRF on every change, merchant sessions refused on /ops/ and operator
 * sessions on /dashboard/, and what each action changes, asserted through the API and the audit log.
 */

const h1 = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];
const formError = (html: string) => /<div class="form-error" role="alert" id="form-error">\s*<p>([^<]*)<\/p>/.exec(html)?.[1];

describeEachStore(
  'operator console pages',
  (ctx) => {
    const operators = new Map<string, TestOperator>();
    async function as(t: TestApp, role: 'support' | 'finance' | 'admin'): Promise<WebClient> {
      let op = operators.get(`${t.store.name}:${role}`);
      if (!op) {
        op = await createOperator(t.app, t.clock, { role, name: `${role[0].toUpperCase()}${role.slice(1)} Person` });
        operators.set(`${t.store.name}:${role}`, op);
      }
      const web = new WebClient(t.app);
      await web.loginOperator(op, t.clock);
      return web;
    }
    const auditCount = async (t: TestApp) => (await t.services.audit.search({ limit: 200 })).items.length;

    test('an invited operator sets a password, and the first login sets TOTP up before any page opens; later logins need a code', async () => {
      const t = ctx();
      const invite = await mds(t, 'operators', 'invite', '--email', `first-${Date.now()}@example.com`, '--role', 'support', '--json');
      assert.equal(invite.code, 0, invite.stderr);
      const { url, operator } = JSON.parse(invite.stdout);
      assert.equal(operator.role, 'support');
      assert.match(url, /\/ops\/set-password\?token=[A-Za-z0-9_-]{43}$/);
      const web = new WebClient(t.app);
      const path = new URL(url).pathname + new URL(url).search;
      const form = await web.get(path);
      assert.equal(form.statusCode, 200);
      assert.equal(h1(form.body), 'Set your password');
      const set = await web.post('/ops/set-password', { token: new URL(url).searchParams.get('token')!, password: TEST_PASSWORD, confirm: TEST_PASSWORD });
      assert.equal(set.statusCode, 303);
      assert.equal(set.headers.location, '/ops/login');

      await web.get('/ops/login');
      const login = await web.post('/ops/login', { email: operator.email, password: TEST_PASSWORD });
      assert.equal(login.statusCode, 303);
      assert.equal(login.headers.location, '/ops/login/second-factor');
      // Password alone opens nothing.
      const early = await web.get('/ops/transfers');
      assert.equal(early.statusCode, 303);
      assert.match(String(early.headers.location), /^\/ops\/login/);
      const setupPage = await web.get('/ops/login/second-factor');
      assert.equal(h1(setupPage.body), 'Set up two-factor authentication');
      const key = /<code class="secret" id="totp-key">([A-Z2-7 ]+)<\/code>/.exec(setupPage.body)![1].replace(/ /g, '');
      const { TOTP } = await import('otpauth');
      const totp = new TOTP({ secret: key });
      const wrong = await web.post('/ops/login/second-factor', { code: '000000' === totp.generate({ timestamp: t.clock.now() }) ? '111111' : '000000' });
      assert.equal(wrong.statusCode, 422);
      const done = await web.post('/ops/login/second-factor', { code: totp.generate({ timestamp: t.clock.now() }) });
      assert.equal(done.statusCode, 200);
      assert.equal(h1(done.body), 'Your recovery codes');
      assert.equal([...done.body.matchAll(/<li><code>[0-9A-Z-]+<\/code><\/li>/g)].length, 10);
      const page = await web.get('/ops/transfers');
      assert.equal(page.statusCode, 200);
      const nav = [...page.body.matchAll(/<li><a href="[^"]+"(?: aria-current="page")?>([^<]+)<\/a><\/li>/g)].map((x) => x[1]);
      assert.deepEqual(nav, ['Transfers', 'Merchants', 'Couriers', 'Map', 'Tariffs', 'Webhooks', 'Audit log']);

      // The next login asks for a code (TOTP is on): a password is not enough.
      const again = new WebClient(t.app);
      await again.get('/ops/login');
      assert.equal((await again.post('/ops/login', { email: operator.email, password: TEST_PASSWORD })).headers.location, '/ops/login/second-factor');
      const check = await again.get('/ops/login/second-factor');
      assert.equal(h1(check.body), 'Two-factor check');
      assert.equal((await again.get('/ops/merchants')).statusCode, 303);
      // The invite is audited as the CLI with the machine user.
      const entry = (await t.services.audit.search({ action: 'operator.invite', subjectId: operator.id })).items[0];
      assert.equal(entry.operator.label, `cli (${userInfo().username})`);
    });

    test('support cancels a transfer with a reason: the merchant sees the full refund through the API, the timeline names the operator, the audit log has it', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const web = await as(t, 'support');
      const found = await web.get(`/ops/transfers?q=${tr.trackingCode}`);
      assert.equal(found.statusCode, 200);
      assert.ok(found.body.includes(`/ops/transfers/${tr.id}`));
      const byCode = await web.get(`/ops/transfers?q=${tr.transferCode}`);
      assert.ok(byCode.body.includes(`/ops/transfers/${tr.id}`));
      await web.get(`/ops/transfers/${tr.id}`);
      const noReason = await web.post(`/ops/transfers/${tr.id}/cancel`, { reason: '' });
      assert.equal(noReason.statusCode, 422);
      assert.match(formError(noReason.body) ?? '', /Give a reason/);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress');

      const res = await web.post(`/ops/transfers/${tr.id}/cancel`, { reason: 'Customer phoned support' });
      assert.equal(res.statusCode, 303);
      const api = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
      assert.equal(api.state, 'cancelled');
      assert.equal(api.refundedAmount, STANDARD_MINOR / 100);
      assert.deepEqual(api.cancellation, {
        reason: 'OPERATOR',
        comment: 'Customer phoned support',
        actor: 'operator',
        refundAmount: STANDARD_MINOR / 100,
        cancelledAt: api.cancellation.cancelledAt,
      });
      const balance = (await t.as(m, { method: 'GET', url: '/balance' })).json();
      assert.equal(balance.balance, 5000);
      const page = await web.get(`/ops/transfers/${tr.id}`);
      assert.ok(page.body.includes('Operator Support Person (support)'), 'the timeline names the operator');
      const [entry] = (await t.services.audit.search({ subjectId: tr.id })).items;
      assert.deepEqual(
        { who: entry.operator.label, action: entry.action, reason: entry.reason, before: entry.before, after: entry.after, merchantId: entry.merchantId },
        {
          who: 'Support Person (support)',
          action: 'transfer.cancel',
          reason: 'Customer phoned support',
          before: { state: 'inProgress', refundedAmount: 0, courierId: null },
          after: { state: 'cancelled', refundedAmount: STANDARD_MINOR / 100, courierId: null },
          merchantId: m.merchantId,
        },
      );
    });

    test('finance tops up with a reason: the ledger entry names the operator and the reason; support is refused (direct POST too) and nothing changes', async () => {
      const t = ctx();
      const m = await t.merchant('Top-up shop', '10');
      const support = await as(t, 'support');
      const page = await support.get(`/ops/merchants/${m.merchantId}`);
      assert.equal(page.statusCode, 200);
      assert.ok(!page.body.includes('/top-up'), 'support sees no top-up form');
      const before = await auditCount(t);
      const refused = await support.post(`/ops/merchants/${m.merchantId}/top-up`, { amount: '100', reason: 'should not work' });
      assert.equal(refused.statusCode, 403);
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).json().balance, 10);
      assert.equal(await auditCount(t), before);

      const finance = await as(t, 'finance');
      await finance.get(`/ops/merchants/${m.merchantId}`);
      const bad = await finance.post(`/ops/merchants/${m.merchantId}/top-up`, { amount: '12.345', reason: 'Bank transfer 42' });
      assert.equal(bad.statusCode, 422);
      const ok = await finance.post(`/ops/merchants/${m.merchantId}/top-up`, { amount: '250.50', reason: 'Bank transfer 42' });
      assert.equal(ok.statusCode, 303);
      const balance = (await t.as(m, { method: 'GET', url: '/balance' })).json();
      assert.equal(balance.balance, 260.5);
      assert.deepEqual(
        { kind: balance.entries[0].kind, amount: balance.entries[0].amount, note: balance.entries[0].note },
        { kind: 'TOP_UP', amount: 250.5, note: 'Bank transfer 42' },
      );
      const ledger = await finance.get(`/ops/merchants/${m.merchantId}`);
      assert.match(ledger.body, /Finance Person \(finance\)<\/td>\s*<td data-label="Reason or transfer">Bank transfer 42<\/td>/);
      const [entry] = (await t.services.audit.search({ action: 'merchant.top_up', subjectId: m.merchantId })).items;
      assert.deepEqual(entry.before, { balance: '10.00' });
      assert.deepEqual(entry.after, { balance: '260.50', amount: '250.50' });
    });

    test('finance adjusts a balance by a signed amount with a reason (an ADJUSTMENT entry naming them); below zero, zero, bad input and support are refused and change nothing', async () => {
      const t = ctx();
      const m = await t.merchant('Adjust shop', '100');
      const balanceOf = async () => (await t.as(m, { method: 'GET', url: '/balance' })).json();
      const untouched = await balanceOf();
      const support = await as(t, 'support');
      const page = await support.get(`/ops/merchants/${m.merchantId}`);
      assert.ok(!page.body.includes('/adjust'), 'support sees no adjust form');
      const before = await auditCount(t);
      const refused = await support.post(`/ops/merchants/${m.merchantId}/adjust`, { amount: '-10', reason: 'should not work' });
      assert.equal(refused.statusCode, 403);

      const finance = await as(t, 'finance');
      const form = await finance.get(`/ops/merchants/${m.merchantId}`);
      assert.match(form.body, /<h2 id="adjust-heading">Adjust<\/h2>/);
      for (const [amount, message] of [
        ['-150', 'An adjustment cannot take the balance below zero: it is 100.00'],
        ['0', 'An adjustment must be a non-zero amount (negative to take money back)'],
        ['-12.345', 'The amount must look like -12.50 or 1250 (at most two decimals; negative takes money back), got &quot;-12.345&quot;'],
        ['--5', 'The amount must look like -12.50 or 1250 (at most two decimals; negative takes money back), got &quot;--5&quot;'],
      ]) {
        const bad = await finance.post(`/ops/merchants/${m.merchantId}/adjust`, { amount, reason: 'Mistaken top-up 17' });
        assert.equal(bad.statusCode, 422, amount);
        assert.equal(formError(bad.body), message);
        assert.match(bad.body, /<h2 id="adjust-heading">Adjust<\/h2>/, 'the form is shown again');
      }
      const noReason = await finance.post(`/ops/merchants/${m.merchantId}/adjust`, { amount: '-10', reason: ' ' });
      assert.equal(formError(noReason.body), 'Give a reason (at least 3 characters): it goes into the audit log');
      assert.deepEqual(await balanceOf(), untouched, 'nothing changed');
      assert.equal(await auditCount(t), before);

      const ok = await finance.post(`/ops/merchants/${m.merchantId}/adjust`, { amount: '-40.25', reason: 'Mistaken top-up 17' });
      assert.equal(ok.statusCode, 303);
      const after = await balanceOf();
      assert.equal(after.balance, 59.75);
      assert.equal(after.entries.length, untouched.entries.length + 1);
      const { id, createdAt, ...entry } = after.entries[0];
      assert.deepEqual(entry, { kind: 'ADJUSTMENT', amount: -40.25, balanceAfter: 59.75, transferId: null, note: 'Mistaken top-up 17' });
      assert.equal(createdAt, new Date(t.clock.now()).toISOString());
      const shown = await finance.get(`/ops/merchants/${m.merchantId}`);
      assert.match(
        shown.body,
        /<td data-label="Entry">Adjustment<\/td>\s*<td data-label="Amount" class="num">-40.25<\/td>\s*<td data-label="Balance after" class="num">59.75<\/td>\s*<td data-label="By">Finance Person \(finance\)<\/td>\s*<td data-label="Reason or transfer">Mistaken top-up 17<\/td>/,
      );
      const [audit] = (await t.services.audit.search({ action: 'merchant.adjust', subjectId: m.merchantId })).items;
      assert.deepEqual(
        { who: audit.operator.label, reason: audit.reason, before: audit.before, after: audit.after, merchantId: audit.merchantId },
        {
          who: 'Finance Person (finance)',
          reason: 'Mistaken top-up 17',
          before: { balance: '100.00' },
          after: { balance: '59.75', amount: '-40.25' },
          merchantId: m.merchantId,
        },
      );
      // Down to exactly zero is allowed; a positive correction adds (admin may too).
      const admin = await as(t, 'admin');
      await admin.get(`/ops/merchants/${m.merchantId}`);
      assert.equal((await admin.post(`/ops/merchants/${m.merchantId}/adjust`, { amount: '-59.75', reason: 'Closing the account' })).statusCode, 303);
      assert.equal((await balanceOf()).balance, 0);
      await admin.get(`/ops/merchants/${m.merchantId}`);
      assert.equal((await admin.post(`/ops/merchants/${m.merchantId}/adjust`, { amount: '+5', reason: 'Goodwill correction' })).statusCode, 303);
      const last = await balanceOf();
      assert.deepEqual(
        last.entries.slice(0, 2).map((e: { kind: string; amount: number; balanceAfter: number; note: string }) => [e.kind, e.amount, e.balanceAfter, e.note]),
        [
          ['ADJUSTMENT', 5, 5, 'Goodwill correction'],
          ['ADJUSTMENT', -59.75, 0, 'Closing the account'],
        ],
      );
    });

    test('roles are checked on the server for every action: a refused POST (with a valid CSRF token) is 403 and changes nothing', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const courier = await t.courier('Roles Courier');
      const endpoint = (await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/hook' } })).json();
      const tariff = JSON.stringify((await t.services.tariffs.current()).document);
      const someone = (await t.services.accounts.listOperators())[0];
      const actions: Array<{ path: string; fields: Record<string, string>; allowed: Array<'support' | 'finance' | 'admin'> }> = [
        { path: `/ops/transfers/${tr.id}/cancel`, fields: { reason: 'roles test' }, allowed: ['support', 'admin'] },
        { path: `/ops/transfers/${tr.id}/advance`, fields: { to: 'courierAssigned', reason: 'roles test' }, allowed: ['support', 'admin'] },
        { path: `/ops/transfers/${tr.id}/unlock`, fields: { reason: 'roles test' }, allowed: ['support', 'admin'] },
        { path: `/ops/transfers/${tr.id}/assign`, fields: { courier: courier.courierId, reason: 'roles test' }, allowed: ['support', 'admin'] },
        { path: `/ops/merchants/${m.merchantId}/top-up`, fields: { amount: '1', reason: 'roles test' }, allowed: ['finance', 'admin'] },
        { path: `/ops/merchants/${m.merchantId}/adjust`, fields: { amount: '-1', reason: 'roles test' }, allowed: ['finance', 'admin'] },
        { path: '/ops/merchants', fields: { name: 'Roles shop', mode: 'live' }, allowed: ['admin'] },
        { path: `/ops/merchants/${m.merchantId}/credentials/issue`, fields: { reason: 'roles test' }, allowed: ['admin'] },
        { path: `/ops/merchants/${m.merchantId}/credentials/revoke`, fields: { clientId: m.clientId, reason: 'roles test' }, allowed: ['admin'] },
        { path: `/ops/merchants/${m.merchantId}/disable`, fields: { reason: 'roles test' }, allowed: ['admin'] },
        { path: `/ops/merchants/${m.merchantId}/users/invite`, fields: { email: 'roles-user@example.com', role: 'admin' }, allowed: ['support', 'admin'] },
        { path: `/ops/merchants/${m.merchantId}/rate-limit`, fields: { perMinute: '10', reason: 'roles test' }, allowed: ['admin'] },
        { path: '/ops/tariffs/preview', fields: { document: tariff }, allowed: ['finance', 'admin'] },
        { path: '/ops/tariffs', fields: { document: tariff, reason: 'roles test' }, allowed: ['finance', 'admin'] },
        { path: '/ops/couriers', fields: { name: 'Roles Two', phone: '+7 900 000-11-22' }, allowed: ['support', 'admin'] },
        { path: `/ops/couriers/${courier.courierId}/disable`, fields: { reason: 'roles test' }, allowed: ['support', 'admin'] },
        { path: `/ops/couriers/${courier.courierId}/enable`, fields: { reason: 'roles test' }, allowed: ['support', 'admin'] },
        { path: `/ops/webhooks/${endpoint.id}/replay`, fields: { since: '2026-01-01T00:00', reason: 'roles test' }, allowed: ['support', 'admin'] },
        { path: '/ops/operators/invite', fields: { email: 'roles@example.com', role: 'support' }, allowed: ['admin'] },
        { path: `/ops/operators/${someone.id}/role`, fields: { role: 'finance' }, allowed: ['admin'] },
      ];
      const pages = ['/ops/webhooks', `/ops/webhooks/${endpoint.id}`, '/ops/operators'];
      for (const role of ['support', 'finance', 'admin'] as const) {
        const web = await as(t, role);
        for (const a of actions.filter((x) => !x.allowed.includes(role))) {
          await web.get('/ops/transfers'); // a fresh, valid CSRF token
          const before = await auditCount(t);
          const res = await web.post(a.path, a.fields);
          assert.equal(res.statusCode, 403, `${role} POST ${a.path}`);
          assert.equal(await auditCount(t), before, `${role} POST ${a.path} changed nothing`);
        }
        for (const p of pages) {
          const allowed = p.startsWith('/ops/operators') ? role === 'admin' : role !== 'finance';
          assert.equal((await web.get(p)).statusCode, allowed ? 200 : 403, `${role} GET ${p}`);
        }
      }
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress');
      // The allowed roles get through (one action each, checked through the API).
      const admin = await as(t, 'admin');
      await admin.get(`/ops/transfers/${tr.id}`);
      const notAllowed = await admin.post(`/ops/transfers/${tr.id}/advance`, { to: 'courierAssigned', reason: 'Assignment is dispatch' });
      assert.equal(notAllowed.statusCode, 422, 'assigning a courier is not an advance');
      assert.match(formError(notAllowed.body) ?? '', /Assign a courier with/);
      await admin.get(`/ops/transfers/${tr.id}`);
      assert.equal((await admin.post(`/ops/transfers/${tr.id}/cancel`, { reason: 'Merchant asked by phone' })).statusCode, 303);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'cancelled');
    });

    test("a merchant user's session is refused on every /ops/ page and an operator's on every /dashboard/ page", async () => {
      const t = ctx();
      const { m } = await setup(t);
      const user = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'admin' });
      const merchantWeb = new WebClient(t.app);
      await merchantWeb.login(user.email, user.password);
      const opsPages = [
        '/ops/transfers',
        '/ops/merchants',
        `/ops/merchants/${m.merchantId}`,
        '/ops/couriers',
        '/ops/map',
        '/ops/tariffs',
        '/ops/webhooks',
        '/ops/audit',
        '/ops/operators',
      ];
      for (const p of opsPages) assert.equal((await merchantWeb.get(p)).statusCode, 403, p);
      await merchantWeb.get('/dashboard/deliveries');
      assert.equal((await merchantWeb.post(`/ops/merchants/${m.merchantId}/top-up`, { amount: '5', reason: 'merchant tries' })).statusCode, 403);
      const admin = await as(t, 'admin');
      for (const p of [
        '/dashboard/deliveries',
        '/dashboard/warehouses',
        '/dashboard/balance',
        '/dashboard/developers',
        '/dashboard/users',
        '/dashboard/account',
      ]) {
        assert.equal((await admin.get(p)).statusCode, 403, p);
      }
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).json().balance, 5000);
    });

    test("view as merchant: an operator reads the merchant's dashboard (audited), every change there is refused, and stopping closes it again", async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const support = await as(t, 'support');
      await support.get(`/ops/merchants/${m.merchantId}`);
      const start = await support.post(`/ops/merchants/${m.merchantId}/view-as`);
      assert.equal(start.statusCode, 303);
      assert.equal(start.headers.location, '/dashboard/deliveries');
      const list = await support.get('/dashboard/deliveries');
      assert.equal(list.statusCode, 200);
      assert.ok(list.body.includes(`/dashboard/deliveries/${tr.id}`), "the merchant's deliveries");
      assert.match(list.body, /viewing this merchant's dashboard <strong>read-only<\/strong>/);
      assert.equal((await support.get(`/dashboard/deliveries/${tr.id}`)).statusCode, 200);
      assert.equal((await support.get('/dashboard/balance')).statusCode, 200);
      const cancel = await support.post(`/dashboard/deliveries/${tr.id}/cancel`, { reason: 'CUSTOMER_REQUESTED' });
      assert.equal(cancel.statusCode, 403);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress');
      const [entry] = (await t.services.audit.search({ action: 'merchant.view_as', subjectId: m.merchantId })).items;
      assert.equal(entry.operator.label, 'Support Person (support)');
      const stop = await support.post('/ops/merchants/view-as/stop');
      assert.equal(stop.statusCode, 303);
      assert.equal((await support.get('/dashboard/deliveries')).statusCode, 403);
      assert.equal((await support.get('/ops/transfers')).statusCode, 200);
    });

    test('unknown or malformed ids answer the 404 page; hostile text stays text', async () => {
      const t = ctx();
      const web = await as(t, 'admin');
      for (const p of [
        '/ops/transfers/not-an-id',
        '/ops/transfers/01a2005a-1c4f-7b5d-8e3f-6c7d8e9fa0b1',
        '/ops/merchants/x%27%3B--',
        '/ops/webhooks/nope',
        '/ops/nothing-here',
      ]) {
        const res = await web.get(p);
        assert.equal(res.statusCode, 404, p);
      }
      const m = await t.merchant('<img src=x onerror=alert(1)>', '0');
      const page = await web.get(`/ops/merchants/${m.merchantId}`);
      assert.ok(!page.body.includes('<img src=x'));
      assert.ok(page.body.includes('&lt;img src=x onerror=alert(1)&gt;'));
      const search = await web.get('/ops/transfers?q=%3Cscript%3E');
      assert.equal(search.statusCode, 400);
      assert.ok(!search.body.includes('<script>'));
    });

    test('couriers: who is online with their jobs; disable (its API refused) and enable with a reason; the map draws online couriers and waiting jobs', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const courier = await t.courier('Lena Online', { lat: 0.01, lng: 0.01 });
      const support = await as(t, 'support');
      const list = await support.get('/ops/couriers');
      assert.match(list.body, /<td data-label="Name">Lena Online<\/td>[\s\S]*?<span class="badge ok">online<\/span>/);
      const map = await support.get('/ops/map');
      assert.equal(map.statusCode, 200);
      assert.match(map.body, /<circle cx="[\d.]+" cy="[\d.]+" r="2.6" class="map-pickup"\/>\s*<text [^>]+>Lena<\/text>/);
      assert.ok(map.body.includes(`<a href="/ops/transfers/${tr.id}">`), 'the waiting job is listed');
      assert.match(map.body, /data-refresh="10"/);

      const before = await t.as(courier, { method: 'GET', url: '/courier/status' });
      assert.equal(before.statusCode, 200);
      await support.get('/ops/couriers');
      const disabled = await support.post(`/ops/couriers/${courier.courierId}/disable`, { reason: 'Phone lost, new one tomorrow' });
      assert.equal(disabled.statusCode, 303);
      const refused = await t.as(courier, { method: 'GET', url: '/courier/status' });
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.json().type, 'CREDENTIALS_REVOKED');
      await support.get('/ops/couriers');
      assert.equal((await support.post(`/ops/couriers/${courier.courierId}/enable`, { reason: 'New phone set up' })).statusCode, 303);
      assert.equal((await t.as(courier, { method: 'GET', url: '/courier/status' })).statusCode, 200);
      const entries = (await t.services.audit.search({ subjectId: courier.courierId })).items.map((e) => [e.action, e.reason, e.after]);
      assert.deepEqual(entries, [
        ['courier.enable', 'New phone set up', { status: 'ACTIVE', online: false }],
        ['courier.disable', 'Phone lost, new one tomorrow', { status: 'DISABLED', online: false }],
      ]);
    });

    test('support assigns a waiting transfer to a courier and then reassigns it: the API shows each courier, the timeline names the operator, both are audited', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const olga = await t.courier('Olga Smirnova', { lat: 0.01, lng: 0.01 });
      const ivan = await t.courier('Ivan Petrov');
      const support = await as(t, 'support');
      const page = await support.get(`/ops/transfers/${tr.id}`);
      assert.match(page.body, /<label for="assign-courier">Assign to<\/label>/);
      assert.match(page.body, new RegExp(`<option value="${olga.courierId}">Olga Smirnova, [^<]+ \\(online\\)</option>`));
      const short = await support.post(`/ops/transfers/${tr.id}/assign`, { courier: olga.courierId, reason: 'x' });
      assert.equal(short.statusCode, 422);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress', 'a refused assignment changes nothing');
      await support.get(`/ops/transfers/${tr.id}`);
      const assigned = await support.post(`/ops/transfers/${tr.id}/assign`, { courier: olga.courierId, reason: 'Regular courier of this shop' });
      assert.equal(assigned.statusCode, 303);
      const seen = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
      assert.deepEqual([seen.state, seen.courier], ['courierAssigned', { firstName: 'Olga' }]);
      const again = await support.get(`/ops/transfers/${tr.id}`);
      assert.match(again.body, /<label for="assign-courier">Reassign to<\/label>/);
      const moved = await support.post(`/ops/transfers/${tr.id}/assign`, { courier: ivan.courierId, reason: 'Olga is stuck in traffic' });
      assert.equal(moved.statusCode, 303);
      const after = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
      assert.deepEqual([after.state, after.courier], ['courierAssigned', { firstName: 'Ivan' }]);
      const events = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}/events` }))
        .json()
        .map((e: { type: string; actor: { type: string } }) => [e.type, e.actor.type]);
      assert.deepEqual(events.slice(-3), [
        ['transfer.courier_assigned', 'operator'],
        ['transfer.courier_released', 'operator'],
        ['transfer.courier_assigned', 'operator'],
      ]);
      const timeline = await support.get(`/ops/transfers/${tr.id}`);
      assert.match(timeline.body, /Operator Support [^<]*\(support\)/);
      const audit = (await t.services.audit.search({ subjectId: tr.id })).items.map((e) => [e.action, e.reason, e.after]);
      assert.deepEqual(audit, [
        ['transfer.assign', 'Olga is stuck in traffic', { state: 'courierAssigned', refundedAmount: 0, courierId: ivan.courierId }],
        ['transfer.advance', 'Olga is stuck in traffic', { state: 'inProgress', refundedAmount: 0, courierId: null }],
        ['transfer.assign', 'Regular courier of this shop', { state: 'courierAssigned', refundedAmount: 0, courierId: olga.courierId }],
      ]);
      // The CLI reaches the same call, audited as cli.
      const cli = await mds(t, 'transfers', 'assign', tr.id, '--courier', olga.courierId, '--reason', 'back to Olga');
      assert.equal(cli.code, 0, cli.stderr);
      const labels = (await t.services.audit.search({ subjectId: tr.id, action: 'transfer.assign' })).items.map((e) => [e.operator.label, e.reason]);
      assert.ok(
        labels.some(([label, reason]) => label === `cli (${userInfo().username})` && reason === 'back to Olga'),
        JSON.stringify(labels),
      );
    });

    test('couriers: support creates a courier; the page shows the secret and the activation link once, and the link lets the courier into the courier app', async () => {
      const t = ctx();
      const support = await as(t, 'support');
      await support.get('/ops/couriers');
      const created = await support.post('/ops/couriers', { name: 'Pavel Novak', phone: '+7 903 555-66-77' });
      assert.equal(created.statusCode, 200);
      const url = /<code class="secret" id="activation-url">([^<]+)<\/code>/.exec(created.body)?.[1];
      assert.match(url ?? '', /^http:\/\/[^/]+\/courier-app\/activate\?token=[\w-]{43}$/);
      const token = new URL(url!).searchParams.get('token')!;
      const courier = new WebClient(t.app);
      assert.equal((await courier.get(`/courier-app/activate?token=${token}`)).statusCode, 200);
      const set = await courier.post('/courier-app/activate', { token, password: TEST_PASSWORD, confirm: TEST_PASSWORD });
      assert.deepEqual([set.statusCode, set.headers.location], [303, '/courier-app/login']);
      await courier.get('/courier-app/login');
      const login = await courier.post('/courier-app/login', { phone: '79035556677', password: TEST_PASSWORD });
      assert.deepEqual([login.statusCode, login.headers.location], [303, '/courier-app/shift']);
      // The same phone again is refused before anything is created.
      const couriersBefore = (await t.services.couriers.fleet()).couriers.length;
      await support.get('/ops/couriers');
      const again = await support.post('/ops/couriers', { name: 'Someone Else', phone: '+79035556677' });
      assert.equal(again.statusCode, 422);
      assert.match(formError(again.body) ?? '', /Another courier already logs in with \+79035556677/);
      assert.equal((await t.services.couriers.fleet()).couriers.length, couriersBefore);
      const audit = (await t.services.audit.search({ action: 'courier.create' })).items.map((e) => e.reason);
      assert.equal(audit.length, 1);
    });

    test('webhooks: the outbox and every endpoint; an endpoint replayed with a reason queues its events again (audited)', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const endpoint = (await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/replayed' } })).json();
      await paidTransfer(t, m, w.id);
      const support = await as(t, 'support');
      const overview = await support.get('/ops/webhooks');
      assert.equal(overview.statusCode, 200);
      assert.match(overview.body, /<dt>Deliveries pending<\/dt><dd>\d+<\/dd>/);
      assert.ok(overview.body.includes(`/ops/webhooks/${endpoint.id}`));
      const page = await support.get(`/ops/webhooks/${endpoint.id}`);
      assert.equal(page.statusCode, 200);
      const since = new Date(t.clock.now() - 3_600_000).toISOString().slice(0, 16);
      const replayed = await support.post(`/ops/webhooks/${endpoint.id}/replay`, { since, reason: 'Merchant restored their receiver' });
      assert.equal(replayed.statusCode, 303);
      const [entry] = (await t.services.audit.search({ action: 'webhook.replay', subjectId: endpoint.id })).items;
      assert.equal(entry.reason, 'Merchant restored their receiver');
      assert.ok((entry.after as { queued: number }).queued >= 2, 'quote.created and transfer.created queued again');
    });

    test("merchants: support invites a merchant's user (a one-time link to the dashboard), admin sets the API rate limit; both audited", async () => {
      const t = ctx();
      const m = await t.merchant('Invite shop', '0');
      const support = await as(t, 'support');
      await support.get(`/ops/merchants/${m.merchantId}`);
      const invited = await support.post(`/ops/merchants/${m.merchantId}/users/invite`, { email: 'Owner@Invite-Shop.example', role: 'admin' });
      assert.equal(invited.statusCode, 200);
      const link = /<code class="secret" id="invite-link">([^<]+)<\/code>/.exec(invited.body)![1];
      assert.match(link, /^http:\/\/localhost(:\d+)?\/dashboard\/set-password\?token=[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(
        (await t.services.accounts.listMerchantUsers(m.merchantId)).map((u) => [u.email, u.role, u.active]),
        [['owner@invite-shop.example', 'admin', false]],
      );
      const admin = await as(t, 'admin');
      await admin.get(`/ops/merchants/${m.merchantId}`);
      const bad = await admin.post(`/ops/merchants/${m.merchantId}/rate-limit`, { perMinute: 'lots', reason: 'Big sale tonight' });
      assert.equal(bad.statusCode, 422);
      assert.equal((await admin.post(`/ops/merchants/${m.merchantId}/rate-limit`, { perMinute: '5000', reason: 'Big sale tonight' })).statusCode, 303);
      assert.equal(await t.services.merchants.rateLimitOf(m.merchantId), 5000);
      const actions = (await t.services.audit.search({ subjectId: m.merchantId })).items.map((e) => [e.action, e.operator.label, e.after]);
      assert.deepEqual(actions.slice(0, 2), [
        ['merchant.rate_limit', 'Admin Person (admin)', { rateLimitPerMinute: 5000 }],
        [
          'merchant.user_invite',
          'Support Person (support)',
          { email: 'owner@invite-shop.example', role: 'admin', personId: actions[1][2] && (actions[1][2] as { personId: string }).personId },
        ],
      ]);
    });

    test('the CLI support commands go through the same audited calls: each is in the audit log as "cli" with the machine user and its reason', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const courier = await t.courier('Cli Courier');
      const runs = [
        ['transfers', 'cancel', tr.id, '--reason', 'Merchant called the hotline'],
        ['couriers', 'disable', courier.courierId, '--reason', 'Left the fleet'],
        ['couriers', 'unlock', tr.id, '--reason', 'Wrong codes were typos'],
        ['credentials', 'issue', '--merchant', m.merchantId, '--reason', 'Rotation asked by the merchant'],
      ];
      for (const args of runs) {
        const r = await mds(t, ...args);
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      }
      const who = `cli (${userInfo().username})`;
      const entries = (await t.services.audit.search({ operatorId: undefined, q: 'cli', limit: 50 })).items
        .filter((e) => e.subjectId === tr.id || e.subjectId === courier.courierId || e.merchantId === m.merchantId)
        .map((e) => [e.action, e.operator.label, e.reason])
        .sort();
      assert.deepEqual(entries, [
        ['courier.disable', who, 'Left the fleet'],
        ['credential.issue', who, 'Rotation asked by the merchant'],
        ['transfer.cancel', who, 'Merchant called the hotline'],
        ['transfer.unlock', who, 'Wrong codes were typos'],
      ]);
      // The operator event of the CLI's cancel names it in the console's timeline.
      const web = await as(t, 'support');
      assert.ok((await web.get(`/ops/transfers/${tr.id}`)).body.includes(`Operator ${who}`));
    });

    test('CSRF: an action without the token (or with a wrong one) is refused and changes nothing', async () => {
      const t = ctx();
      const m = await t.merchant('CSRF shop', '1');
      const finance = await as(t, 'finance');
      await finance.get(`/ops/merchants/${m.merchantId}`);
      for (const token of [null, 'forged']) {
        const res = await finance.post(`/ops/merchants/${m.merchantId}/top-up`, { _csrf: token, amount: '5', reason: 'csrf test' });
        assert.equal(res.statusCode, 403);
        assert.equal(h1(res.body), 'Form expired');
      }
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).json().balance, 1);
    });

    test('tariffs: a preview shows the sample quote now and with the edit; saving prices the next quote and not an existing one', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const old = await quote(t, m, w.id);
      const current = await t.services.tariffs.current();
      const doc = structuredClone(current.document);
      doc.products.standard.serviceFee += 7_000;
      const finance = await as(t, 'finance');
      await finance.get('/ops/tariffs');
      const invalid = await finance.post('/ops/tariffs/preview', { document: '{"products": 1}' });
      assert.equal(invalid.statusCode, 422);
      assert.match(formError(invalid.body) ?? '', /Invalid tariff/);
      const preview = await finance.post('/ops/tariffs/preview', {
        document: JSON.stringify(doc),
        fromLat: '0',
        fromLng: '0',
        toLat: '0.02',
        toLng: '0.02',
        parcelSize: 'SMALL',
        deliveryType: 'DOOR_TO_DOOR',
        reason: 'Service fee up',
      });
      assert.equal(preview.statusCode, 200, formError(preview.body));
      assert.match(
        preview.body,
        /<td data-label="Product">[^<]+<\/td><td data-label="Now" class="num">[\d.]+<\/td><td data-label="With this edit" class="num">[\d.]+ \(changed\)<\/td>/,
      );
      assert.equal((await t.services.tariffs.current()).version, current.version, 'a preview saves nothing');
      const saved = await finance.post('/ops/tariffs', { document: JSON.stringify(doc), reason: 'Service fee up' });
      assert.equal(saved.statusCode, 303);
      const fresh = await quote(t, m, w.id);
      assert.equal(Number(fresh.products.standard.common.price.payable_amount), Number(old.products.standard.common.price.payable_amount) + 70);
      const paid = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(old.id) });
      assert.equal(paid.json().totalPrice, Number(old.products.standard.common.price.payable_amount));
      const [entry] = (await t.services.audit.search({ action: 'tariff.set' })).items;
      assert.equal(entry.operator.label, 'Finance Person (finance)');
      assert.equal(entry.reason, 'Service fee up');
      await t.services.tariffs.set(current.document); // restore for the other tests of this suite
    });

    test('the audit log lists console and CLI actions (the CLI as "cli" with the machine user), is searchable, and the table refuses UPDATE and DELETE', async () => {
      const t = ctx();
      const m = await t.merchant('Audit shop', '0');
      const cli = await mds(t, 'balance', 'top-up', '--merchant', m.merchantId, '--amount', '15', '--reason', 'Invoice 77 paid');
      assert.equal(cli.code, 0, cli.stderr);
      const finance = await as(t, 'finance');
      await finance.get(`/ops/merchants/${m.merchantId}`);
      await finance.post(`/ops/merchants/${m.merchantId}/top-up`, { amount: '5', reason: 'Goodwill credit' });
      const admin = await as(t, 'admin');
      const page = await admin.get(`/ops/audit?q=${m.merchantId}`);
      assert.equal(page.statusCode, 200);
      const rows = [
        ...page.body.matchAll(/<td data-label="Who">([^<]*)<\/td>\s*<td data-label="What">([^<]*)<\/td>[\s\S]*?<td data-label="Reason">([^<]*)<\/td>/g),
      ].map((r) => r.slice(1));
      assert.deepEqual(rows, [
        ['Finance Person (finance)', 'merchant.top_up', 'Goodwill credit'],
        [`cli (${userInfo().username})`, 'merchant.top_up', 'Invoice 77 paid'],
      ]);
      const financeId = operators.get(`${t.store.name}:finance`)!.id;
      const byOperator = await admin.get(`/ops/audit?q=${m.merchantId}&operator=${financeId}`);
      assert.ok(byOperator.body.includes('Goodwill credit'));
      assert.ok(!byOperator.body.includes('Invoice 77 paid'));
      const tomorrow = new Date(t.clock.now() + 86_400_000).toISOString().slice(0, 10);
      assert.equal((await admin.get(`/ops/audit?q=${m.merchantId}&from=${tomorrow}`)).body.match(/data-label="Who"/g), null, 'nothing from tomorrow on');
      const badDate = await admin.get('/ops/audit?from=yesterday');
      assert.equal(badDate.statusCode, 400);
      assert.match(formError(badDate.body) ?? '', /From must be a date/);
      const byReason = await admin.get('/ops/audit?q=goodwill');
      assert.ok(byReason.body.includes('Goodwill credit'));
      assert.ok(!byReason.body.includes('Invoice 77 paid'));
      await assert.rejects(sql`update audit_log set reason = 'rewritten'`.execute(t.database.db), /append-only/);
      await assert.rejects(sql`delete from audit_log`.execute(t.database.db), /append-only/);
      assert.ok((await t.services.audit.search({ q: 'Invoice 77' })).items.length === 1);
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'true' },
);
