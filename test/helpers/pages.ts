import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestApp, type TestApp } from './app.ts';
import { ARTIFACTS, browserSkip, launchChromium } from './browser.ts';
import type { StoreName } from './stores.ts';

export { type SeededMerchant, type SeedOptions, seedMerchant } from './seed.ts';

/**
 * The page-test kit: a real server (buildApp listening on 127.0.0.1, the same app `mds serve` runs) on
 * a fresh store, Debian's Chromium through playwright-core, axe for accessibility, and screenshots at
 * phone and desktop widths. Page suites use `pagesSkip(what)` as their `skip` option.
 */
export const pagesSkip = browserSkip;

export const PHONE = { width: 360, height: 800 } as const;
export const DESKTOP = { width: 1280, height: 800 } as const;
/** Where the README's pictures live; written only with UPDATE_SCREENSHOTS=1 (otherwise into artifacts/, so a run never dirties git). */
export const SCREENSHOTS = resolve(import.meta.dirname, '..', '..', 'docs', 'screenshots');
/** A fixed instant and zone, so screenshots come out the same on every run. */
export const SCREENSHOT_NOW = Date.parse('2026-11-20T09:00:00.000Z');
export const TIMEZONE = 'Europe/Berlin';

export interface PagesEnv {
  t: TestApp;
  base: string;
  browser: Browser;
  /** A new browser context (cookies of its own: one person) with the kit's zone and locale; closed by close(). */
  context(opts?: { viewport?: { width: number; height: number } }): Promise<BrowserContext>;
  /** A page in a new context, with its console errors, failed requests and requests to other origins collected. */
  page(opts?: { viewport?: { width: number; height: number } }): Promise<{ page: Page; problems: Problems }>;
  close(): Promise<void>;
}

export interface Problems {
  console: string[];
  failed: string[];
  foreign: string[];
}

/** A server on `store` (WEBHOOK_ALLOW_PRIVATE on, for local receivers) and a browser. */
export async function startPages(store: StoreName = 'sqlite', env: Record<string, string> = {}, opts: { now?: number } = {}): Promise<PagesEnv> {
  const t = await createTestApp(store, { WEBHOOK_ALLOW_PRIVATE: 'true', ...env }, undefined, { now: opts.now });
  const base = await t.listen();
  const browser = await launchChromium();
  const contexts: BrowserContext[] = [];
  const env_: PagesEnv = {
    t,
    base,
    browser,
    async context({ viewport = DESKTOP } = {}) {
      const ctx = await browser.newContext({
        viewport,
        timezoneId: TIMEZONE,
        locale: 'en-GB',
        ...(viewport.width < 500 ? { isMobile: true, hasTouch: true, deviceScaleFactor: 1 } : {}),
      });
      contexts.push(ctx);
      return ctx;
    },
    async page(o = {}) {
      const ctx = await env_.context(o);
      const page = await ctx.newPage();
      return { page, problems: watch(page, base) };
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser.close();
      await t.close();
    },
  };
  return env_;
}

/** Collects console errors, failed requests, and aborts any request to another origin (no outside assets). */
export function watch(page: Page, base: string): Problems {
  const origin = new URL(base).origin;
  const problems: Problems = { console: [], failed: [], foreign: [] };
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.console.push(msg.text());
  });
  page.on('pageerror', (err) => problems.console.push(`uncaught: ${err.message}`));
  page.on('requestfailed', (req) => {
    // A download or a navigation replaced by the next one is "aborted" without being a fault.
    if (req.failure()?.errorText !== 'net::ERR_ABORTED') problems.failed.push(`${req.url()}: ${req.failure()?.errorText}`);
  });
  void page.route('**/*', async (route) => {
    const u = route.request().url();
    if (/^(data|blob):/.test(u) || new URL(u).origin === origin) return route.continue();
    problems.foreign.push(u);
    return route.abort('blockedbyclient');
  });
  return problems;
}

export function assertNoProblems(problems: Problems): void {
  assert.deepEqual(problems, { console: [], failed: [], foreign: [] }, 'no console error, failed request or outside request');
}

/** axe-core (WCAG 2.x A and AA rules): fails on any serious or critical violation, naming the rule and the elements. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  // After a click that navigates, the new page may have committed before its stylesheet loaded: unstyled
  // links are smaller than the touch-target minimum (axe target-size), which the styled page is not.
  await page.waitForLoadState('load');
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']).analyze();
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    bad.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `axe found serious or critical violations on ${what}`,
  );
}

/**
 * Screenshots of the current page at phone and desktop widths (full page): docs/screenshots/APP-NAME-phone.png (APP: dashboard, ops)
 * and -desktop.png with UPDATE_SCREENSHOTS=1, artifacts/ otherwise. Restores the page's viewport.
 */
export async function screenshots(page: Page, name: string, app = 'dashboard'): Promise<string[]> {
  const dir = process.env.UPDATE_SCREENSHOTS === '1' ? SCREENSHOTS : join(ARTIFACTS, 'screenshots');
  mkdirSync(dir, { recursive: true });
  const before = page.viewportSize();
  const files: string[] = [];
  for (const [suffix, viewport] of [
    ['phone', PHONE],
    ['desktop', DESKTOP],
  ] as const) {
    await page.setViewportSize(viewport);
    const file = join(dir, `${app}-${name}-${suffix}.png`);
    await page.screenshot({ path: file, fullPage: true, animations: 'disabled', caret: 'hide' });
    files.push(file);
  }
  if (before) await page.setViewportSize(before);
  return files;
}
