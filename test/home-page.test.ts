import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { prefersHtml } from '../src/http/home-page.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { assertAccessible, browserSkip, launchChromium } from './helpers/browser.ts';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const INDEX = {
  service: 'merchant-delivery-service',
  docs: '/docs',
  openapi: '/openapi.json',
  tokenEndpoint: '/auth/token',
  discovery: '/.well-known/oauth-authorization-server',
};

describe('GET /: JSON for API clients, a small page for browsers', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp('sqlite');
  });
  after(async () => {
    await t?.close();
  });

  test('which clients get HTML: text/html listed ahead of application/json', () => {
    assert.equal(prefersHtml(BROWSER_ACCEPT), true);
    assert.equal(prefersHtml('text/html'), true);
    assert.equal(prefersHtml('text/html, application/json'), true);
    assert.equal(prefersHtml(undefined), false, 'curl, SDKs');
    assert.equal(prefersHtml('*/*'), false);
    assert.equal(prefersHtml('application/json'), false);
    assert.equal(prefersHtml('application/json, text/html'), false);
  });

  test('API clients (no Accept, */*, application/json) get the JSON index', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html;q=0.5']) {
      const res = await t.request({ method: 'GET', url: '/', headers: accept ? { accept } : {} });
      assert.equal(res.statusCode, 200, String(accept));
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.equal(res.headers.vary, 'accept');
      assert.equal(res.headers.link, '</docs>; rel="service-doc", </openapi.json>; rel="service-desc"');
      assert.deepEqual(res.json(), INDEX);
    }
  });

  test('a browser gets a self-contained HTML page with links to the docs, the OpenAPI document and the tracking page format, under a nonce CSP', async () => {
    const res = await t.request({ method: 'GET', url: '/', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers.vary, 'accept');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    const csp = String(res.headers['content-security-policy']);
    const nonce = /style-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    assert.ok(nonce, csp);
    assert.equal(csp, `default-src 'none'; style-src 'nonce-${nonce}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`);
    const html = res.body;
    assert.match(html, /^<!doctype html>\n<html lang="en">/);
    assert.match(html, /<title>Merchant Delivery Service<\/title>/);
    assert.match(html, /<h1>Merchant Delivery Service<\/h1>/);
    assert.ok(html.includes(`<style nonce="${nonce}">`));
    assert.deepEqual(
      [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]),
      ['data:,', '/docs', '/openapi.json', '/.well-known/oauth-authorization-server'],
    );
    assert.match(html, /<code>\/track\/\{trackingCode\}<\/code>/);
    assert.doesNotMatch(html, /<script/, 'no script');
    const again = await t.request({ method: 'GET', url: '/', headers: { accept: BROWSER_ACCEPT } });
    assert.notEqual(/nonce-([^']+)/.exec(String(again.headers['content-security-policy']))?.[1], nonce, 'a new nonce per answer');
  });
});

describe('GET / in headless Chromium', { skip: browserSkip('home page') }, () => {
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

  test('renders with its style (no CSP violation), links work, no serious or critical axe-core violation', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning') errors.push(msg.text());
    });
    page.on('pageerror', (err) => errors.push(err.message));
    const res = await page.goto(`${base}/`, { waitUntil: 'networkidle' });
    assert.equal(res?.status(), 200);
    assert.equal(await page.textContent('h1'), 'Merchant Delivery Service');
    assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(247, 250, 252)', 'the nonce style applied');
    await assertAccessible(page, 'GET /');
    await page.click('a[href="/openapi.json"]');
    assert.equal(new URL(page.url()).pathname, '/openapi.json');
    assert.deepEqual(errors, []);
    await context.close();
  });
});
