import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { browserSkip, launchChromium, seriousViolations } from './helpers/browser.ts';
import { createMerchantUser, loginBrowser } from './helpers/people.ts';

/** The dashboard's account pages in headless Chromium: login by label, keyboard, axe, no console error. */

const SKIP = browserSkip('dashboard');

describe('dashboard login in headless Chromium', { skip: SKIP }, () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  before(async () => {
    t = await createTestApp('sqlite');
    base = await t.listen();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('log in through the form, see the layout and navigation, log out; axe finds nothing serious; no console error', { timeout: 120_000 }, async () => {
    const m = await t.merchant('Browser shop');
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'admin', name: 'Ana Admin' });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/dashboard/login`);
    assert.deepEqual(await seriousViolations(page), []);
    await loginBrowser(page, base, u.email, u.password, '/dashboard/account');
    assert.equal(new URL(page.url()).pathname, '/dashboard/account');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Account');
    const nav = page.getByRole('navigation', { name: 'Main' });
    assert.deepEqual(await nav.getByRole('link').allTextContents(), ['Deliveries', 'New delivery', 'Warehouses', 'Balance', 'Developers', 'Users', 'Account']);
    assert.equal(await nav.getByRole('link', { name: 'Account' }).getAttribute('aria-current'), 'page');
    assert.deepEqual(await seriousViolations(page), []);
    // The skip link is the first thing the keyboard reaches, and it leads to the main landmark.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${base}/dashboard/login`);
    assert.equal(await page.getByRole('status').textContent(), 'You are logged out.');
    await page.goto(`${base}/dashboard/account`);
    assert.equal(new URL(page.url()).pathname, '/dashboard/login');
    assert.deepEqual(errors, []);
    await context.close();
  });
});
