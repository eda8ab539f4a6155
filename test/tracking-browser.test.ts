import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { ARTIFACTS, assertAccessible, browserSkip, launchChromium } from './helpers/browser.ts';
import { quote, setup, transferBody } from './helpers/flow.ts';
import { SCREENSHOTS } from './helpers/pages.ts';
import { assertNothingPrivate } from './tracking.test.ts';

/**
 * The tracking page in headless Chromium (Debian's chromium, as in docs-browser.test.ts): the timeline
 * shows, the page follows the transfer without a reload, nothing private, no console error, no request
 * to anyone but our server. Screenshots: tracking-phone.png and tracking-desktop.png, in docs/screenshots/ with UPDATE_SCREENSHOTS=1.
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
    const context = await browser.newContext({ viewport, ...(viewport.width < 500 ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}) });
    const page = await context.newPage();
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

    // The README's pictures with UPDATE_SCREENSHOTS=1 (docs/screenshots/), artifacts/ otherwise (a run never dirties git).
    const shots = process.env.UPDATE_SCREENSHOTS === '1' ? SCREENSHOTS : ARTIFACTS;
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: resolve(shots, 'tracking-phone.png'), fullPage: true, caret: 'initial' });
    assertNothingPrivate(await page.content(), tr);

    const desktop = await open(`${base}${tr.trackingUrl}`, { width: 1280, height: 900 });
    await desktop.page.screenshot({ path: resolve(shots, 'tracking-desktop.png'), fullPage: true, caret: 'initial' });

    // Delivered: the page shows it and stops refreshing.
    await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to: 'delivered' } });
    await waitForState(page, 'Delivered');
    assert.equal(await page.getAttribute('#tracking', 'data-active'), 'false');

    await assertAccessible(page, 'the tracking page (phone)');
    await assertAccessible(desktop.page, 'the tracking page (desktop)');

    for (const p of [problems, desktop.problems]) {
      assert.deepEqual(p.foreign, [], 'requests to other hosts');
      assert.deepEqual(p.failed, [], 'failed requests');
      assert.deepEqual(p.console, [], 'console errors');
    }
    await page.close();
    await desktop.page.close();
  });

  test("times in the reader's time zone (seconds where events are close), the UTC time in datetime and the title, UTC without JavaScript; updates announced through an aria-live region that keeps what was already read", {
    timeout: 120_000,
  }, async () => {
    const { m, w } = await setup(t, '5000', 'sandbox');
    const q = await quote(t, m, w.id);
    const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
    const url = `${base}${tr.trackingUrl}`;
    const context = await browser.newContext({ timezoneId: 'Asia/Tokyo', locale: 'en-US' });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
    await page.goto(url, { waitUntil: 'networkidle' });
    const live = await page.$$eval('[aria-live="polite"]', (els) => els.map((e) => e.id));
    assert.deepEqual(live, ['tracking'], 'the refreshed region is the polite live region');

    // Two quick steps: the events are seconds apart, so their times show seconds.
    t.clock.advance(20_000);
    await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to: 'courierAssigned' } });
    // Mark the entry already shown: it must survive the refresh as the same node (not read out again).
    await page.evaluate(() => {
      (document.querySelector('#timeline li') as HTMLElement & { seen?: boolean }).seen = true;
    });
    await waitForState(page, 'Courier on the way to pick up');
    const times = await page.$$eval('#timeline time', (els) =>
      els.map((e) => ({ text: e.textContent, datetime: e.getAttribute('datetime'), title: e.getAttribute('title'), seconds: e.hasAttribute('data-seconds') })),
    );
    assert.equal(times.length, 2);
    const norm = (x: string | null) => (x ?? '').replace(/[\s\u202f]+/g, ' ');
    for (const time of times) {
      assert.ok(time.datetime);
      assert.equal(time.title, time.datetime, 'the UTC time as the hover title');
      assert.equal(time.seconds, true, 'events 20 s apart show seconds');
      const expected = new Date(time.datetime).toLocaleString('en-US', {
        timeZone: 'Asia/Tokyo',
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        timeZoneName: 'short',
      });
      assert.equal(norm(time.text), norm(expected), 'Tokyo time, with seconds');
      assert.doesNotMatch(time.text ?? '', /UTC/);
    }
    assert.equal(
      await page.evaluate(() => (document.querySelector('#timeline li:last-child') as HTMLElement & { seen?: boolean }).seen),
      true,
      'the entry already shown kept its node',
    );
    assert.equal(await page.getAttribute('#tracking', 'aria-live'), 'polite');
    await assertAccessible(page, 'the tracking page after an update');
    assert.deepEqual(errors, []);

    // Without JavaScript: UTC, with seconds where events are close, to the minute otherwise.
    const html = (await t.request({ method: 'GET', url: tr.trackingUrl, headers: { accept: 'text/html' } })).body;
    const created = tr.createdAt as string;
    assert.ok(html.includes(`<time datetime="${created}" title="${created}" data-seconds>${created.slice(0, 19).replace('T', ' ')} UTC</time>`), html);
    await context.close();

    const lone = await setup(t, '5000', 'sandbox');
    const q2 = await quote(t, lone.m, lone.w.id);
    t.clock.advance(10 * 60_000);
    const tr2 = (await t.as(lone.m, { method: 'POST', url: '/transfer', payload: transferBody(q2.id) })).json();
    const html2 = (await t.request({ method: 'GET', url: tr2.trackingUrl, headers: { accept: 'text/html' } })).body;
    const at = tr2.createdAt as string;
    assert.ok(html2.includes(`<time datetime="${at}" title="${at}">${at.slice(0, 16).replace('T', ' ')} UTC</time>`), 'a lone event: to the minute');
  });
});
