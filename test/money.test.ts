import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore } from './helpers/app.ts';

describeEachStore('balances stay exact', (ctx) => {
  test('a top-up that would pass 2^53 - 1 minor units is refused and changes nothing', async () => {
    const t = ctx();
    const m = await t.merchant();
    const big = 999_999_999_999_999; // the largest top-up the CLI accepts: 9 999 999 999 999.99
    for (let i = 0; i < 9; i++) await t.services.merchants.topUp(m.merchantId, big);
    await assert.rejects(t.services.merchants.topUp(m.merchantId, big), {
      code: 'VALIDATION_FAILED',
      detail: 'The balance would exceed the largest amount the service can hold exactly',
    });
    const l = await t.services.merchants.ledger(m.merchantId);
    assert.equal(l.merchant.balanceMinor, 9 * big);
    assert.equal(l.merchant.balance, '89999999999999.91');
    assert.equal(l.ledgerSum, l.merchant.balance);
    assert.equal(l.entries.length, 9);
  });
});
