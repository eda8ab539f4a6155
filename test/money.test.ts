import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore } from './helpers/app.ts';
import { money, quote, STANDARD_MINOR, setup, transferBody } from './helpers/flow.ts';

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

  test('10 concurrent adjustments of -300.00 racing 2 paid transfers on 1000.00: only what fits goes through, never below zero, balance = ledger sum', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '1000');
    const quotes = [await quote(t, m, w.id), await quote(t, m, w.id)];
    const token = await t.token(m);
    const by = { kind: 'cli', machineUser: 'race-test' } as const;
    const [adjusts, charges] = await Promise.all([
      Promise.allSettled(Array.from({ length: 10 }, (_, i) => t.services.merchants.adjust(m.merchantId, -30_000, `Correction ${i}`, by))),
      Promise.all(quotes.map((q) => t.http(token, 'POST', '/transfer', transferBody(q.id)))),
    ]);
    const refused = adjusts.filter((r) => r.status === 'rejected');
    for (const r of refused) assert.equal((r as PromiseRejectedResult).reason.code, 'INSUFFICIENT_BALANCE');
    assert.ok(
      charges.every((r) => r.status === 201 || (r.status === 402 && r.body.type === 'INSUFFICIENT_BALANCE')),
      JSON.stringify(charges.map((r) => r.status)),
    );
    const adjusted = adjusts.length - refused.length;
    const charged = charges.filter((r) => r.status === 201).length;
    assert.ok(refused.length > 0, 'not every adjustment fits');
    const { balance, entries } = await money(t, m); // asserts balance = ledger sum >= 0
    const expected = 100_000 - adjusted * 30_000 - charged * STANDARD_MINOR;
    assert.equal(balance, (expected / 100).toFixed(2));
    assert.ok(expected < 30_000, 'an adjustment was refused only when it did not fit (the balance only fell after)');
    if (charged < 2) assert.ok(expected < STANDARD_MINOR, 'a charge was refused only when it did not fit');
    assert.equal(entries.filter((e) => e.kind === 'ADJUSTMENT').length, adjusted);
    assert.equal(entries.filter((e) => e.kind === 'CHARGE').length, charged);
    assert.ok(
      entries.every((e) => Number(e.balanceAfter) >= 0),
      'never negative at any point of the ledger',
    );
    const audited = (await t.services.audit.search({ action: 'merchant.adjust', subjectId: m.merchantId, limit: 50 })).items;
    assert.equal(audited.length, adjusted, 'one audit entry per adjustment that went through, none for the refused');
  });
});
