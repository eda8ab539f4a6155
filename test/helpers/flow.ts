import assert from 'node:assert/strict';
import { quoteBody, transferBody, WAREHOUSE_META, warehouseBody } from '../../scripts/lib/fixtures.ts';
import type { Merchant, TestApp } from './app.ts';

export { DESTINATION, quoteBody, RECIPIENT, transferBody, WAREHOUSE_META } from '../../scripts/lib/fixtures.ts';

/** The merchant flow shared by the transfer and lifecycle suites: a warehouse, quotes, transfers, money checks. */

export const STANDARD_PRICE = '516.00'; // see pricing.test.ts
export const STANDARD_MINOR = 51_600;

export async function setup(t: TestApp, balance = '5000', mode: 'live' | 'sandbox' = 'live') {
  const m = await t.merchant('Shop', balance, mode);
  const w = (
    await t.as(m, {
      method: 'POST',
      url: '/warehouses',
      payload: warehouseBody({ address: 'Null Island 1', locationMetadata: WAREHOUSE_META }),
    })
  ).json();
  return { m, w };
}

export async function quote(t: TestApp, m: Merchant, warehouseId: string, overrides: Record<string, unknown> = {}) {
  const res = await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(warehouseId, overrides) });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** Balance, ledger and the invariant that ties them: balance = sum(ledger) >= 0. */
export async function money(t: TestApp, m: Merchant) {
  const l = await t.services.merchants.ledger(m.merchantId);
  assert.equal(l.ledgerSum, l.merchant.balance, 'the balance equals the sum of its ledger');
  assert.ok(l.merchant.balanceMinor >= 0);
  return { balance: l.merchant.balance, entries: l.entries };
}

/** Quotes and pays a standard delivery; returns the transfer as created. */
export async function paidTransfer(t: TestApp, m: Merchant, warehouseId: string, headers: Record<string, string> = {}) {
  const q = await quote(t, m, warehouseId);
  const res = await t.as(m, { method: 'POST', url: '/transfer', headers, payload: transferBody(q.id) });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}
