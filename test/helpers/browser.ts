import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { type Browser, chromium, type Page } from 'playwright-core';

/**
 * Headless Chromium for the page tests: Debian's package (apt-get install chromium; CHROMIUM_PATH
 * overrides /usr/bin/chromium). Without it a page test is skipped, unless REQUIRE_BROWSER=1 (CI sets
 * it), where a missing browser is a failure.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const ARTIFACTS = resolve(import.meta.dirname, '..', '..', 'artifacts');
const HAVE_BROWSER = existsSync(CHROMIUM);

/** The `skip` option of a page suite: a reason when there is no browser and none is required. */
export const browserSkip = (what: string): string | false =>
  !HAVE_BROWSER && process.env.REQUIRE_BROWSER !== '1'
    ? `no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium) to run the ${what} test; REQUIRE_BROWSER=1 makes this a failure`
    : false;

// Without the background-networking flags Chromium tries to reach Google's hosts, which this closed network refuses.
const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchChromium(): Promise<Browser> {
  if (!HAVE_BROWSER) assert.fail(`REQUIRE_BROWSER=1 but there is no Chromium at ${CHROMIUM}: install it with apt-get install -y chromium`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, timeout: 60_000 });
}

/**
 * Waits for the page's load event. After a form posts and redirects back to the same URL,
 * waitForURL returns at once and the new document can be parsed before its stylesheet applies:
 * axe then sees unstyled header links as touch targets under 24 px (a target-size finding that
 * came and went in CI).
 */
async function settled(page: Page): Promise<void> {
  await page.waitForLoadState('load');
}

/**
 * axe-core (Deque's accessibility rules, through @axe-core/playwright) on the page as it is now: the
 * serious and critical violations, one line each (rule, impact, how many nodes, the first targets).
 * Every page test runs it; an empty list is the bar.
 */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
  await settled(page);
  // Violations only: collecting the passes too doubles the time on a page as large as Swagger UI's.
  const result = await new AxeBuilder({ page }).options({ resultTypes: ['violations'] }).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}, ${v.nodes.length} nodes: ${v.help}): ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join('; ')}`,
    );
}

/** Fails with the list when axe finds a serious or critical violation on the page. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  assert.deepEqual(await seriousAxeViolations(page), [], `axe-core: serious or critical violations on ${what}`);
}

/**
 * axe-core's serious and critical violations on the page (WCAG 2.x A/AA and best practices), as
 * readable lines: a page test asserts the list is empty. The page must come from browser.newContext().
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await settled(page);
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
