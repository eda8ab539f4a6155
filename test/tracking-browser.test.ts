import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { ARTIFACTS, browserSkip, launchChromium } from './helpers/browser.ts';
import { quote, setup, transferBody } from './helpers/flow.ts';
import { assertNothingPrivate } from './tracking.test.ts';

/**
 * The tracking page in headless Chromium (Debian's chromium, as in docs-browser.test.ts): the timeline
 * shows, the page follows the transfer without a reload, nothing private, no console error, no request
 * to anyone but our server. Screenshots: artifacts/tracking-phone.png and artifacts/tracking-desktop.png.
 */

const SKIP = browserSkip('tracking page');

describe('the tracking page in headless Chromium', { skip: SKIP }, () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  before(async () => {
    t = await createTestApp('sqlite', { TRACKING_REFRESH_SECONDS: '1' });
    base = await t.listen();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  async function open(url: string, viewport: { width: number; height: number }) {
    const page = await browser.newPage({ viewport, ...(viewport.width < 500 ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}) });
    const origin = new URL(base).origin;
    const problems = { console: [] as string[], failed: [] as string[], foreign: [] as string[], navigations: 0 };
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning') problems.console.push(msg.text());
    });
    page.on('pageerror', (err) => problems.console.push(`uncaught: ${err.message}`));
    page.on('requestfailed', (req) => problems.failed.push(`${req.url()}: ${req.failure()?.errorText}`));
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) problems.navigations++;
    });
    await page.route('**/*', async (route) => {
      const u = route.request().url();
      if (/^(data|blob):/.test(u)) return route.continue();
      if (new URL(u).origin !== origin) {
        problems.foreign.push(u);
        return route.abort('blockedbyclient');
      }
      return route.continue();
    });
    const res = await page.goto(url, { waitUntil: 'networkidle' });
    assert.equal(res?.status(), 200);
    return { page, problems };
  }

  /** Polls the text (page.waitForFunction would inject a style of Playwright's own, which the page's CSP rightly blocks). */
  async function waitForState(page: Page, text: string, timeoutMs = 10_000) {
    const deadline = Date.now() + timeoutMs;
    while ((await page.textContent('#state')) !== text) {
      if (Date.now() > deadline) assert.fail(`the page still says "${await page.textContent('#state')}", not "${text}"`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const timeline = (page: Page) => page.$$eval('#timeline li .label', (els) => els.map((e) => e.textContent));

  test('timeline shown, updates without reload as the transfer moves, nothing private, no console error, no outside request; phone and desktop screenshots', {
    timeout: 120_000,
  }, async () => {
    const { m, w } = await setup(t, '5000', 'sandbox');
    const q = await quote(t, m, w.id);
    const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
    const { page, problems } = await open(`${base}${tr.trackingUrl}`, { width: 390, height: 844 });
    assert.equal(await page.textContent('#state'), 'Waiting for a courier');
    assert.deepEqual(await timeline(page), ['Order placed']);

    await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to: 'courierAssigned' } });
    await waitForState(page, 'Courier on the way to pick up');
    await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to: 'pickedUp' } });
    await waitForState(page, 'On its way to you');
    assert.deepEqual(await timeline(page), ['Picked up: on its way to you', 'Courier Sandbox is on the way to pick it up', 'Order placed']);
    assert.equal(await page.textContent('.courier strong'), 'Sandbox');
    assert.equal(await page.textContent('.from strong'), 'Shop');
    assert.equal(problems.navigations, 1, 'updated without a reload');
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true, 'no horizontal scrolling on a phone');

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: resolve(ARTIFACTS, 'tracking-phone.png'), fullPage: true, caret: 'initial' });
    assertNothingPrivate(await page.content(), tr);

    const desktop = await open(`${base}${tr.trackingUrl}`, { width: 1280, height: 900 });
    await desktop.page.screenshot({ path: resolve(ARTIFACTS, 'tracking-desktop.png'), fullPage: true, caret: 'initial' });

    // Delivered: the page shows it and stops refreshing.
    await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to: 'delivered' } });
    await waitForState(page, 'Delivered');
    assert.equal(await page.getAttribute('#tracking', 'data-active'), 'false');

    for (const p of [problems, desktop.problems]) {
      assert.deepEqual(p.foreign, [], 'requests to other hosts');
      assert.deepEqual(p.failed, [], 'failed requests');
      assert.deepEqual(p.console, [], 'console errors');
    }
    await page.close();
    await desktop.page.close();
  });
});
