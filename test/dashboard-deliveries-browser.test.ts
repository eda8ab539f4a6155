import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { parseCsv } from '../src/lib/csv.ts';
import { assertAccessible, assertNoProblems, type PagesEnv, pagesSkip, SCREENSHOT_NOW, screenshots, seedMerchant, startPages } from './helpers/pages.ts';
import { createMerchantUser, loginBrowser } from './helpers/people.ts';
import { startReceiver } from './helpers/receiver.ts';
import { STORES } from './helpers/stores.ts';

/**
 * The dashboard's Deliveries, New delivery, Balance and Developers pages in headless Chromium, on each
 * store: a person creates a delivery by hand, cancels it, downloads the ledger, makes an API credential
 * and a webhook endpoint. Each result is checked through the API; axe runs on every page; a recipient
 * named like an HTML tag stays text. Screenshots (docs/screenshots with UPDATE_SCREENSHOTS=1) from the
 * SQLite run, with a fixed clock and zone.
 */

const XSS = '<img src=x onerror=alert(1)>';

for (const store of STORES) {
  describe(`the dashboard in Chromium [${store}]`, { skip: pagesSkip('dashboard browser') }, () => {
    let env: PagesEnv;
    const shots = store === 'sqlite';
    before(async () => {
      env = await startPages(store, {}, { now: SCREENSHOT_NOW });
    });
    after(async () => {
      await env?.close();
    });

    /** No alert() ever fires (an injected handler would), and confirm() dialogs are accepted. */
    function guard(page: Page): string[] {
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(`${d.type()}: ${d.message()}`);
        void (d.type() === 'confirm' ? d.accept() : d.dismiss());
      });
      return dialogs;
    }

    test('a delivery by hand, seen in the list and the API; cancelled with its refund; ledger CSV adds up; accessible', { timeout: 300_000 }, async () => {
      const { t, base } = env;
      const a = await seedMerchant(t, { name: 'Corner Books', transfers: 8 });
      const admin = await createMerchantUser(t.app, { merchantId: a.merchantId, role: 'admin', name: 'Mira Admin' });
      const { page, problems } = await env.page();
      const dialogs = guard(page);
      await loginBrowser(page, base, admin.email, admin.password);
      assert.equal(new URL(page.url()).pathname, '/dashboard/deliveries');
      await assertAccessible(page, 'Deliveries');
      if (shots) await screenshots(page, 'deliveries');

      // New delivery, step 1: by label, as a person would.
      await page.getByRole('link', { name: 'New delivery' }).first().click();
      await page.getByLabel('Pick up from').selectOption({ label: 'Warehouse B' });
      await page.getByLabel('Address').fill('Arbat St 10, Moscow');
      await page.getByLabel('Latitude').fill('55.7522');
      await page.getByLabel('Longitude').fill('37.5927');
      await page.getByLabel('Size').selectOption('MEDIUM');
      await page.getByLabel('Fragile').check();
      await assertAccessible(page, 'New delivery');
      if (shots) await screenshots(page, 'new-delivery');
      await page.getByRole('button', { name: 'See options and prices' }).click();
      await page.waitForURL(/\/dashboard\/deliveries\/new\/[0-9a-f-]{36}$/);
      // Step 2: the products with prices (QuotesService, as POST /options), then pay.
      await page.getByRole('radio', { name: /Express delivery/ }).check();
      await page.getByLabel('First name').fill(XSS);
      await page.getByLabel('Last name').fill('Sokolova');
      await page.getByLabel('Phone').fill('+7 900 555-12-34');
      await page.getByLabel('What is in the parcel').fill('A signed first edition');
      await assertAccessible(page, 'New delivery, step 2');
      if (shots) await screenshots(page, 'new-delivery-options');
      await page.getByRole('button', { name: 'Pay and send' }).click();
      await page.waitForURL(/\/dashboard\/deliveries\/[0-9a-f-]{36}$/);
      const id = new URL(page.url()).pathname.split('/').pop() as string;
      // Through the API: the delivery exists, as entered.
      const api = (await t.as(a, { method: 'GET', url: `/transfer/${id}` })).json();
      assert.equal(api.recipientFullName, `${XSS} Sokolova`);
      assert.equal(api.productKey, 'express');
      assert.equal(api.parcelSize, 'MEDIUM');
      assert.equal(api.isFragile, true);
      assert.equal(api.warehouseId, a.warehouses[1].id);
      // The name is text on the page, not an element.
      assert.equal(await page.locator('#recipient').textContent(), `${XSS} Sokolova, +7 900 555-12-34`);
      assert.equal(await page.locator('main img').count(), 0);
      await assertAccessible(page, 'a delivery');
      if (shots) await screenshots(page, 'delivery');

      // In the list, newest first.
      // A new page: wait for it to load, or its first row can be read while only half of it is parsed.
      await Promise.all([page.waitForURL((u) => u.pathname === '/dashboard/deliveries'), page.getByRole('link', { name: 'All deliveries' }).click()]);
      const first = page.locator('table.deliveries tbody tr').first();
      assert.match((await first.textContent()) ?? '', /<img src=x onerror=alert\(1\)> Sokolova/);
      await page.getByLabel('Search').fill('79005551234');
      // The search is a new page: wait for it before counting its rows (count() does not wait).
      await Promise.all([page.waitForURL(/79005551234/), page.getByRole('button', { name: 'Show' }).click()]);
      assert.equal(await page.locator('table.deliveries tbody tr').count(), 1);

      // Cancel with its refund, shown before confirming; the API balance goes up by it.
      const balanceBefore = (await t.as(a, { method: 'GET', url: '/balance' })).json().balance;
      await page.goto(`${base}/dashboard/deliveries/${id}`);
      const note = (await page.locator('#refund-note').textContent()) ?? '';
      assert.match(note, new RegExp(`refunds ${api.totalPrice.toFixed(2)} RUB`));
      await page.getByLabel('Reason').selectOption('ORDER_CHANGED');
      await page.getByRole('button', { name: /Cancel delivery and refund/ }).click();
      await page.waitForSelector('.flash');
      assert.match((await page.locator('.flash').textContent()) ?? '', /Delivery cancelled/);
      assert.ok(
        dialogs.some((d) => d.startsWith('confirm: Cancel this delivery?')),
        'asked to confirm',
      );
      const balanceAfter = (await t.as(a, { method: 'GET', url: '/balance' })).json().balance;
      assert.equal(Math.round((balanceAfter - balanceBefore) * 100), Math.round(api.totalPrice * 100));
      assert.equal((await t.as(a, { method: 'GET', url: `/transfer/${id}` })).json().state, 'cancelled');

      // Balance: the ledger CSV of every day so far adds up to the balance (the API's).
      await page.getByRole('link', { name: 'Balance' }).click();
      await assertAccessible(page, 'Balance');
      if (shots) await screenshots(page, 'balance');
      await page.getByLabel('From').fill('2026-01-01');
      await page.getByLabel('To (inclusive)').fill(new Date(t.clock.now() + 86_400_000).toISOString().slice(0, 10));
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Ledger CSV' }).click()]);
      const csv = parseCsv(readFileSync((await download.path()) as string, 'utf8'));
      assert.equal(csv[0][3], 'amount');
      const sum = csv.slice(1).reduce((s, r) => s + Math.round(Number(r[3]) * 100), 0);
      assert.equal(sum, Math.round(balanceAfter * 100));
      assert.deepEqual(
        dialogs.filter((d) => !d.startsWith('confirm:')),
        [],
        'no alert ever fired',
      );
      assertNoProblems(problems);
    });

    test('developers: a credential made here gets a token; an endpoint gets its test message in the log; employees are refused', {
      timeout: 300_000,
    }, async () => {
      const { t, base } = env;
      const a = await seedMerchant(t, { name: 'Corner Books', transfers: 2 });
      const admin = await createMerchantUser(t.app, { merchantId: a.merchantId, role: 'admin' });
      const receiver = await startReceiver();
      try {
        const { page, problems } = await env.page();
        guard(page);
        await loginBrowser(page, base, admin.email, admin.password);
        await page.getByRole('link', { name: 'Developers' }).click();
        await assertAccessible(page, 'Developers');
        if (shots) await screenshots(page, 'developers');
        await page.getByRole('button', { name: 'Create API credential' }).click();
        const clientId = ((await page.locator('#client-id').textContent()) ?? '').trim();
        const secret = ((await page.locator('#secret').textContent()) ?? '').trim();
        await assertAccessible(page, 'the secret page');
        const token = await t.request({
          method: 'POST',
          url: '/auth/token',
          payload: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
        });
        assert.equal(token.statusCode, 200, token.body);
        await page.getByRole('link', { name: 'Done' }).click();

        await page.getByLabel('URL').fill(receiver.url);
        await page.getByLabel('Description (optional)').fill('Order system');
        await page.getByRole('button', { name: 'Add endpoint' }).click();
        assert.match(((await page.locator('#secret').textContent()) ?? '').trim(), /^whsec_/);
        await page.getByRole('link', { name: 'Done' }).click();
        await page.waitForURL(/\/dashboard\/developers\/webhooks\/[0-9a-f-]{36}$/);
        await page.getByRole('button', { name: 'Send a test message' }).click();
        await page.waitForSelector('.flash');
        await t.services.webhookDelivery.runOnce();
        await receiver.waitFor(1);
        assert.equal(receiver.received[0].json.type, 'webhook.test');
        await page.reload();
        const row = page.locator('#attempts tbody tr').first();
        assert.match((await row.textContent()) ?? '', /webhook\.test[\s\S]*Delivered[\s\S]*204/);
        await assertAccessible(page, 'a webhook endpoint');
        if (shots) await screenshots(page, 'webhook-endpoint');
        assertNoProblems(problems);

        // An employee: no Developers in the navigation, and the server refuses the page.
        const employee = await createMerchantUser(t.app, { merchantId: a.merchantId, role: 'employee' });
        const second = await env.page();
        await loginBrowser(second.page, base, employee.email, employee.password);
        assert.equal(await second.page.getByRole('link', { name: 'Developers' }).count(), 0);
        const refused = await second.page.goto(`${base}/dashboard/developers`);
        assert.equal(refused?.status(), 403);
        // Another merchant's delivery: the 404 page.
        const other = await seedMerchant(t, { name: 'Other shop', transfers: 1 });
        const missing = await second.page.goto(`${base}/dashboard/deliveries/${other.transfers[0].id}`);
        assert.equal(missing?.status(), 404);
        await assertAccessible(second.page, 'the 404 page');
      } finally {
        await receiver.close();
      }
    });
  });
}
