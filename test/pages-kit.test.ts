import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { assertAccessible, assertNoProblems, type PagesEnv, pagesSkip, screenshots, seedMerchant, startPages } from './helpers/pages.ts';

/**
 * The page-test kit itself, on a page that exists without logging in (the tracking page): a real
 * server, Chromium, axe, screenshots, the seeded merchant. Axe must also catch a violation it is shown.
 */
describe('the page-test kit', { skip: pagesSkip('page-test kit') }, () => {
  let env: PagesEnv;
  before(async () => {
    env = await startPages('sqlite');
  });
  after(async () => {
    await env?.close();
  });

  test('seeds a merchant with history, opens its tracking page, finds it accessible, takes both screenshots', { timeout: 120_000 }, async () => {
    const a = await seedMerchant(env.t, { transfers: 4 });
    assert.deepEqual(
      a.transfers.map((x) => x.state),
      ['inProgress', 'inProgress', 'delivered', 'cancelled'],
    );
    const ledger = await env.t.services.merchants.ledger(a.merchantId);
    assert.deepEqual(ledger.entries.map((e) => e.kind).sort(), ['CHARGE', 'CHARGE', 'CHARGE', 'CHARGE', 'REFUND', 'TOP_UP', 'TOP_UP']);
    const { page, problems } = await env.page();
    const res = await page.goto(`${env.base}/track/${a.transfers[2].trackingCode}`);
    assert.equal(res?.status(), 200);
    await assertAccessible(page, 'the tracking page');
    const files = await screenshots(page, 'kit-check');
    assert.ok(files.every((f) => existsSync(f)));
    assertNoProblems(problems);
  });

  test('axe fails a page with a serious violation', async () => {
    const { page } = await env.page();
    await page.setContent('<html lang="en"><body><main><input type="text"></main></body></html>'); // a field without a label
    await assert.rejects(assertAccessible(page, 'a bad page'), /label/);
  });
});
