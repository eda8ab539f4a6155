import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { ARTIFACTS, assertAccessible, browserSkip, launchChromium } from './helpers/browser.ts';
import { documentedOperations, loadOpenApi } from './helpers/contract.ts';

/**
 * The docs page (/docs, Swagger UI from local assets) in a real headless Chromium: it renders every
 * documented operation, logs no error, loses no request, and talks to nobody but our server (no CDN).
 * Chromium is Debian's package (apt-get install chromium; CHROMIUM_PATH overrides /usr/bin/chromium).
 * Without it the test is skipped, unless REQUIRE_BROWSER=1 (CI sets it), where a missing browser is a failure.
 */

const SKIP = browserSkip('docs page');

describe('the docs page in headless Chromium', { skip: SKIP }, () => {
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

  test('/docs lists every operation of openapi.json, with no console error, no failed or foreign request; no serious or critical axe-core violation', {
    timeout: 300_000,
  }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const origin = new URL(base).origin;
    const consoleErrors: string[] = [];
    const failed: string[] = [];
    const foreign: string[] = [];
    const requested: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(`${msg.text()} (${msg.location().url})`);
    });
    page.on('pageerror', (err) => consoleErrors.push(`uncaught: ${err.message}`));
    page.on('requestfailed', (req) => failed.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText}`));
    page.on('response', (res) => {
      if (res.status() >= 400) failed.push(`${res.request().method()} ${res.url()}: HTTP ${res.status()}`);
    });
    // Nothing may leave for another host: such requests are recorded and never sent.
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (/^(data|blob):/.test(url)) return route.continue();
      requested.push(url);
      if (new URL(url).origin !== origin) {
        foreign.push(url);
        return route.abort('blockedbyclient');
      }
      return route.continue();
    });

    const response = await page.goto(`${base}/docs`, { waitUntil: 'networkidle' });
    assert.equal(response?.status(), 200);
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    await page.waitForLoadState('networkidle');

    const listed = await page.$$eval('.opblock', (blocks) =>
      blocks.map((b) => {
        const method = b.querySelector('.opblock-summary-method')?.textContent?.trim().toUpperCase() ?? '';
        const pathEl = b.querySelector('.opblock-summary-path');
        const path = (pathEl?.getAttribute('data-path') ?? pathEl?.textContent ?? '').replace(/\u200b/g, '').trim();
        return `${method} ${path}`;
      }),
    );
    // Swagger UI lists the OpenAPI 3.1 webhooks too, as "POST <name>".
    const webhooks = Object.keys((loadOpenApi().webhooks as Record<string, unknown> | undefined) ?? {}).map((name) => `POST ${name}`);
    const expected = [...documentedOperations().map((o) => `${o.method} ${o.path}`), ...webhooks];
    assert.deepEqual([...new Set(listed)].sort(), [...expected].sort(), 'the operations on the page are those of openapi.json');
    assert.match((await page.locator('.info .title').textContent()) ?? '', /Merchant Delivery Service/);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: resolve(ARTIFACTS, 'docs.png'), fullPage: true });

    // axe-core: nothing serious or critical, as loaded and with operations opened (parameters, a request
    // body, examples); no top bar (its unlabelled URL box and logo), every select named.
    await assertAccessible(page, '/docs');
    assert.equal(await page.locator('.topbar').count(), 0);
    assert.equal(await page.getAttribute('#servers', 'aria-label'), 'Server');
    await page.click('#operations-warehouses-createWarehouse .opblock-summary-control');
    await page.click('#operations-warehouses-listWarehouses .opblock-summary-control');
    await page.waitForSelector('#operations-warehouses-listWarehouses .parameters');
    await page.waitForSelector('#operations-warehouses-createWarehouse pre.microlight');
    await assertAccessible(page, '/docs with two operations opened');

    assert.deepEqual(foreign, [], 'requests to hosts other than the local server (a CDN?)');
    assert.deepEqual(failed, [], 'failed requests');
    assert.deepEqual(consoleErrors, [], 'console errors');
    assert.ok(
      requested.some((u) => u.startsWith(`${origin}/docs/`)),
      `the page loaded its assets from the server: ${requested.join(', ')}`,
    );
    await context.close();
  });
});
