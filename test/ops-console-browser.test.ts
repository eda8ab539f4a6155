import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { mds } from './helpers/cli.ts';
import { paidTransfer, quote, STANDARD_MINOR, setup, transferBody } from './helpers/flow.ts';
import { assertAccessible, assertNoProblems, type PagesEnv, pagesSkip, screenshots, startPages } from './helpers/pages.ts';
import { createMerchantUser, createOperator, loginBrowser, type TestOperator } from './helpers/people.ts';
import { STORES } from './helpers/stores.ts';

/**
 * The operator console in headless Chromium on each store: an operator invited from the CLI sets a
 * password and TOTP, finds a transfer by tracking code and cancels it with a reason (the merchant sees
 * the full refund through the API); support is refused a top-up (the form is absent and a direct POST
 * is 403), finance tops up and the ledger names them with the reason; a tariff change with a preview
 * prices the next quote and not an existing one; the audit log lists each action; axe on every page;
 * a merchant's session is refused on /ops/ and an operator's on /dashboard/; no CSRF token, no change.
 * Screenshots (360 and 1280 wide) go to docs/screenshots/ops-*.png with UPDATE_SCREENSHOTS=1.
 */

const SKIP = pagesSkip('operator console');

for (const store of STORES) {
  describe(`operator console in headless Chromium [${store}]`, { skip: SKIP }, () => {
    let env: PagesEnv;
    before(async () => {
      env = await startPages(store);
    });
    after(async () => {
      await env?.close();
    });

    /** Logs an operator in through the forms: password, then a TOTP code of a new time step. */
    async function loginOperator(page: Page, op: TestOperator): Promise<void> {
      await page.goto(`${env.base}/ops/login`);
      await page.getByLabel('E-mail').fill(op.email);
      await page.getByLabel('Password').fill(op.password);
      await Promise.all([page.waitForURL(/\/ops\/login\/second-factor/), page.getByRole('button', { name: 'Log in' }).click()]);
      env.t.clock.advance(30_000);
      await page.getByLabel('Code from your authenticator app, or a recovery code').fill(op.totp.generate({ timestamp: env.t.clock.now() }));
      await Promise.all([page.waitForURL(/\/ops\/transfers/), page.getByRole('button', { name: 'Continue' }).click()]);
    }

    test('invited from the CLI: password and TOTP, find a transfer by tracking code, cancel it with a reason (full refund through the API); every page accessible', {
      timeout: 240_000,
    }, async () => {
      const { t, base } = env;
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const invite = await mds(t, 'operators', 'invite', '--email', `admin-${store}@example.com`, '--role', 'admin', '--name', 'Olga Admin', '--json');
      assert.equal(invite.code, 0, invite.stderr);
      const link = new URL(JSON.parse(invite.stdout).url);

      const { page, problems } = await env.page();
      page.on('dialog', (d) => void d.accept());
      await page.goto(`${base}${link.pathname}${link.search}`);
      await assertAccessible(page, 'set password');
      await page.getByLabel('New password').fill('a long operator passphrase');
      await page.getByLabel('The same password again').fill('a long operator passphrase');
      await Promise.all([page.waitForURL(/\/ops\/login$/), page.getByRole('button', { name: 'Set password' }).click()]);
      await assertAccessible(page, 'login');
      await screenshots(page, 'login', 'ops');
      await page.getByLabel('E-mail').fill(`admin-${store}@example.com`);
      await page.getByLabel('Password').fill('a long operator passphrase');
      await Promise.all([page.waitForURL(/\/ops\/login\/second-factor/), page.getByRole('button', { name: 'Log in' }).click()]);
      await assertAccessible(page, 'two-factor setup');
      const key = (await page.locator('#totp-key').textContent())!.replace(/\s/g, '');
      await page.getByLabel('Code from the app').fill(new TOTP({ secret: key }).generate({ timestamp: t.clock.now() }));
      await page.getByRole('button', { name: 'Turn on and continue' }).click();
      await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
      assert.equal(await page.locator('#recovery-codes li').count(), 10);
      await assertAccessible(page, 'recovery codes');
      await Promise.all([page.waitForURL(/\/ops\/transfers$/), page.getByRole('link', { name: 'Continue to the console' }).click()]);

      // An online courier, so the transfer page offers Assign (checked by axe and pictured).
      await t.courier('Olga Smirnova', { lat: 55.7558, lng: 37.6173 });
      // Find it by tracking code and cancel it with a reason.
      await page.getByLabel('Search').fill(tr.trackingCode);
      await Promise.all([page.waitForURL(/q=/), page.getByRole('button', { name: 'Search' }).click()]);
      assert.equal(await page.locator('#transfers tbody tr').count(), 1);
      await assertAccessible(page, 'transfers');
      await screenshots(page, 'transfers', 'ops');
      await Promise.all([page.waitForURL(new RegExp(`/ops/transfers/${tr.id}$`)), page.getByRole('link', { name: /Open/ }).click()]);
      await assertAccessible(page, 'transfer');
      await screenshots(page, 'transfer', 'ops');
      await page.getByLabel('Reason for cancelling (the merchant sees it)').fill('Customer phoned: order cancelled');
      await Promise.all([page.waitForURL(new RegExp(`/ops/transfers/${tr.id}$`)), page.getByRole('button', { name: 'Cancel with a full refund' }).click()]);
      assert.match((await page.locator('.flash').textContent()) ?? '', /Cancelled: 516\.00 RUB refunded/);
      assert.match((await page.locator('#timeline').textContent()) ?? '', /Operator Olga Admin \(admin\)/);
      const api = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
      assert.equal(api.state, 'cancelled');
      assert.equal(api.refundedAmount, STANDARD_MINOR / 100);
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).json().balance, 5000);

      // A tariff change with a preview: the next quote's price changes, an existing quote's does not.
      const old = await quote(t, m, w.id);
      const doc = structuredClone((await t.services.tariffs.current()).document);
      doc.products.standard.serviceFee += 5_000;
      await page.getByRole('link', { name: 'Tariffs' }).click();
      await page.getByRole('heading', { name: 'Tariffs' }).waitFor();
      await assertAccessible(page, 'tariffs');
      await page.getByLabel('Tariff (JSON, as mds tariffs set takes it)').fill(JSON.stringify(doc, null, 2));
      for (const [label, value] of [
        ['Pickup latitude', '0'],
        ['Pickup longitude', '0'],
        ['Destination latitude', '0.02'],
        ['Destination longitude', '0.02'],
      ]) {
        await page.getByLabel(label).fill(value);
      }
      await page.getByLabel('Reason for the change (for the audit log)').fill('Service fee up by 50');
      await page.getByRole('button', { name: 'Preview' }).click();
      await page.locator('#preview-table').waitFor();
      assert.match((await page.locator('#preview-table').textContent()) ?? '', /\(changed\)/);
      await assertAccessible(page, 'tariff preview');
      await screenshots(page, 'tariffs', 'ops');
      await Promise.all([page.waitForURL(/\/ops\/tariffs$/), page.getByRole('button', { name: 'Save as the new tariff' }).click()]);
      const fresh = await quote(t, m, w.id);
      assert.equal(Number(fresh.products.standard.common.price.payable_amount), Number(old.products.standard.common.price.payable_amount) + 50);
      const paid = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(old.id) });
      assert.equal(paid.json().totalPrice, Number(old.products.standard.common.price.payable_amount));

      // Every other page: axe, and screenshots of the main ones.
      await t.courier('Pavel Courier', { lat: 0.01, lng: 0.01 });
      for (const [path, name] of [
        ['/ops/merchants', 'merchants'],
        [`/ops/merchants/${m.merchantId}`, 'merchant'],
        ['/ops/couriers', 'couriers'],
        ['/ops/map', 'map'],
        ['/ops/webhooks', 'webhooks'],
        ['/ops/operators', 'operators'],
        ['/ops/audit', 'audit'],
      ] as const) {
        const res = await page.goto(`${base}${path}`);
        assert.equal(res?.status(), 200, path);
        await assertAccessible(page, path);
        if (['merchant', 'map', 'audit', 'couriers'].includes(name)) await screenshots(page, name, 'ops');
      }
      // The audit log lists each action, newest first (the CLI's invite carries the CLI process's own clock, not the test app's).
      const actions = await page.locator('#audit td[data-label="What"]').allTextContents();
      assert.deepEqual(actions.filter((a) => a !== 'operator.invite').slice(0, 2), ['tariff.set', 'transfer.cancel']);
      assert.ok(actions.includes('operator.invite'));
      assertNoProblems(problems);
    });

    test('support is refused a top-up (no form; a direct POST is 403); finance tops up and adjusts (below zero refused with a message), the ledger names them with the reason; no CSRF token, no change', {
      timeout: 120_000,
    }, async () => {
      const { t, base } = env;
      const m = await t.merchant('Browser top-up shop', '20');
      const support = await createOperator(t.app, t.clock, { role: 'support', name: 'Sam Support' });
      const finance = await createOperator(t.app, t.clock, { role: 'finance', name: 'Fay Finance' });

      const s = await env.page();
      await loginOperator(s.page, support);
      await s.page.goto(`${base}/ops/merchants/${m.merchantId}`);
      assert.equal(await s.page.getByLabel(/^Amount/).count(), 0, 'support sees no top-up form');
      const csrf = await s.page.locator('input[name="_csrf"]').first().inputValue();
      const refused = await s.page.request.post(`${base}/ops/merchants/${m.merchantId}/top-up`, {
        form: { _csrf: csrf, amount: '100', reason: 'support tries anyway' },
        maxRedirects: 0,
      });
      assert.equal(refused.status(), 403);
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).json().balance, 20);

      const f = await env.page();
      await loginOperator(f.page, finance);
      await f.page.goto(`${base}/ops/merchants/${m.merchantId}`);
      const noToken = await f.page.request.post(`${base}/ops/merchants/${m.merchantId}/top-up`, {
        form: { amount: '100', reason: 'no token' },
        maxRedirects: 0,
      });
      assert.equal(noToken.status(), 403);
      await f.page.getByLabel(/^Amount/).fill('1250.50');
      await f.page.getByLabel('Reason (shown in the ledger)').fill('Bank transfer 2026-11-25');
      await Promise.all([f.page.waitForURL(new RegExp(`/ops/merchants/${m.merchantId}$`)), f.page.getByRole('button', { name: 'Top up' }).click()]);
      assert.match((await f.page.locator('#balance').textContent()) ?? '', /1270\.50 RUB/);
      const first = f.page.locator('#ledger tbody tr').first();
      assert.equal(await first.locator('td[data-label="By"]').textContent(), 'Fay Finance (finance)');
      assert.equal(await first.locator('td[data-label="Reason or transfer"]').textContent(), 'Bank transfer 2026-11-25');
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).json().balance, 1270.5);
      await assertAccessible(f.page, 'merchant page with a top-up');
      // Adjust: below zero is refused with a message and changes nothing; a correction that fits goes into the ledger.
      await f.page.getByLabel(/^Correction/).fill('-2000');
      await f.page.getByLabel('Reason for the adjustment (shown in the ledger)').fill('Mistaken top-up');
      await f.page.getByRole('button', { name: 'Adjust' }).click();
      await f.page.locator('#form-error').waitFor();
      assert.equal((await f.page.locator('#form-error').textContent())?.trim(), 'An adjustment cannot take the balance below zero: it is 1270.50');
      await assertAccessible(f.page, 'merchant page with a refused adjustment');
      // The refusal's 422 is the answer this step asked for; nothing else may show up.
      assert.deepEqual(f.problems.console.splice(0), ['Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)']);
      await f.page.getByLabel(/^Correction/).fill('-270.50');
      await f.page.getByLabel('Reason for the adjustment (shown in the ledger)').fill('Mistaken top-up');
      await Promise.all([f.page.waitForURL(new RegExp(`/ops/merchants/${m.merchantId}$`)), f.page.getByRole('button', { name: 'Adjust' }).click()]);
      assert.match((await f.page.locator('#balance').textContent()) ?? '', /1000\.00 RUB/);
      assert.equal(await f.page.locator('#ledger tbody tr').first().locator('td[data-label="Entry"]').textContent(), 'Adjustment');
      assert.equal((await t.as(m, { method: 'GET', url: '/balance' })).json().balance, 1000);
      assertNoProblems(s.problems);
      assertNoProblems(f.problems);
    });

    test("a merchant user's session is refused on every /ops/ page; an operator's on /dashboard/ unless viewing as the merchant (read-only)", {
      timeout: 120_000,
    }, async () => {
      const { t, base } = env;
      const { m } = await setup(t);
      const user = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'admin' });
      const mp = await env.page();
      await loginBrowser(mp.page, base, user.email, user.password);
      for (const p of ['/ops/transfers', '/ops/merchants', '/ops/couriers', '/ops/map', '/ops/tariffs', '/ops/webhooks', '/ops/audit', '/ops/operators']) {
        assert.equal((await mp.page.goto(`${base}${p}`))?.status(), 403, p);
      }
      const op = await createOperator(t.app, t.clock, { role: 'admin', name: 'Ada Admin' });
      const opPage = await env.page();
      await loginOperator(opPage.page, op);
      for (const p of ['/dashboard/deliveries', '/dashboard/balance', '/dashboard/warehouses', '/dashboard/account']) {
        assert.equal((await opPage.page.goto(`${base}${p}`))?.status(), 403, p);
      }
      await assertAccessible(opPage.page, 'the refusal page');
      // Unless viewing as the merchant: read-only, with a banner to stop.
      await opPage.page.goto(`${base}/ops/merchants/${m.merchantId}`);
      await Promise.all([
        opPage.page.waitForURL(/\/dashboard\/deliveries$/),
        opPage.page.getByRole('button', { name: 'View as merchant (read-only)' }).click(),
      ]);
      await opPage.page.getByRole('region', { name: 'Viewing as merchant' }).waitFor();
      await assertAccessible(opPage.page, 'the dashboard viewed as the merchant');
      await screenshots(opPage.page, 'view-as', 'ops');
      await Promise.all([
        opPage.page.waitForURL(new RegExp(`/ops/merchants/${m.merchantId}$`)),
        opPage.page.getByRole('button', { name: 'Stop viewing, back to the console' }).click(),
      ]);
      assert.equal((await opPage.page.goto(`${base}/dashboard/deliveries`))?.status(), 403);
    });
  });
}
