import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { csvCell, csvRow, parseCsv } from '../src/lib/csv.ts';
import { formatMinor } from '../src/lib/money.ts';
import { LEDGER_CSV_HEADER } from '../src/modules/merchants/service.ts';
import { DELIVERIES_CSV_HEADER } from '../src/modules/transfers/service.ts';
import { describeEachStore, type TestApp } from './helpers/app.ts';
import { seedMerchant } from './helpers/seed.ts';

/** The dashboard's CSV downloads: the ledger and the deliveries of a date range. */

async function collect(gen: AsyncGenerator<string>): Promise<string> {
  let text = '';
  for await (const chunk of gen) text += chunk;
  return text;
}

/** Sums "-516.00"-style cells exactly, in minor units. */
const sumMinor = (cells: string[]) => cells.reduce((s, c) => s + Math.round(Number(c) * 100), 0);

describe('CSV cells', () => {
  test('RFC 4180 quoting: commas, quotes and line breaks quoted, quotes doubled, CRLF line ends', () => {
    assert.equal(csvRow(['a', 'b,c', 'say "hi"', 'two\nlines', null, 7]), 'a,"b,c","say ""hi""","two\nlines",,7\r\n');
    assert.deepEqual(parseCsv(csvRow(['a', 'b,c', 'say "hi"', 'two\r\nlines']) + csvRow(['x'])), [['a', 'b,c', 'say "hi"', 'two\r\nlines'], ['x']]);
  });

  test('formula injection: text beginning with = + - @ tab or CR gets an apostrophe; numbers stay numbers', () => {
    assert.equal(csvCell('=HYPERLINK("http://x","y")'), `"'=HYPERLINK(""http://x"",""y"")"`);
    assert.equal(csvCell('+7 900 000-00-01'), "'+7 900 000-00-01");
    assert.equal(csvCell('-x'), "'-x");
    assert.equal(csvCell('@SUM(A1)'), "'@SUM(A1)");
    assert.equal(csvCell('\tcmd'), "'\tcmd");
    assert.equal(csvCell('-516.00'), '-516.00');
    assert.equal(csvCell(-5), '-5');
    assert.equal(csvCell('Anna'), 'Anna');
  });
});

describeEachStore('CSV exports', (ctx) => {
  const everything = (t: TestApp) => ({ from: '2000-01-01T00:00:00.000Z', to: new Date(t.clock.now() + 1).toISOString() });

  test('the ledger CSV: every entry of the range, oldest first, money as two decimals, summing to the balance change', async () => {
    const t = ctx();
    const a = await seedMerchant(t, { transfers: 8 });
    const rows = parseCsv(await collect(t.services.merchants.ledgerCsv(a.merchantId, everything(t))));
    assert.deepEqual(rows[0], [...LEDGER_CSV_HEADER]);
    const body = rows.slice(1);
    const ledger = await t.services.merchants.ledger(a.merchantId);
    assert.equal(body.length, ledger.entries.length);
    assert.deepEqual(body.map((r) => r[1]).sort(), ledger.entries.map((e) => e.id).sort());
    for (const r of body) {
      assert.match(r[3], /^-?\d+\.\d{2}$/);
      assert.match(r[4], /^\d+\.\d{2}$/);
      assert.equal(r[7], 'RUB');
    }
    const times = body.map((r) => r[0]);
    assert.deepEqual(times, [...times].sort(), 'oldest first');
    // Over all time the amounts add up to the balance itself (the API's GET /balance).
    const balance = (await t.as(a, { method: 'GET', url: '/balance' })).json();
    assert.equal(formatMinor(sumMinor(body.map((r) => r[3]))), balance.balance.toFixed(2));
    // Over a part of the range: to the change between the balance at its start and at its end.
    const range = { from: a.transfers[2].createdAt, to: a.transfers[6].createdAt };
    const part = parseCsv(await collect(t.services.merchants.ledgerCsv(a.merchantId, range))).slice(1);
    assert.ok(part.length > 0 && part.length < body.length);
    const change = await t.services.merchants.balanceChange(a.merchantId, range);
    assert.equal(formatMinor(sumMinor(part.map((r) => r[3]))), change.change);
    assert.equal(formatMinor(Math.round(Number(change.opening) * 100) + sumMinor(part.map((r) => r[3]))), change.closing);
    // The closing balance of a range is the balance after its last entry.
    assert.equal(part[part.length - 1][4], change.closing);
  });

  test('the deliveries CSV: the transfers created in the range with prices and refunds; formula-looking names neutralised', async () => {
    const t = ctx();
    const a = await seedMerchant(t, {
      transfers: 5,
      recipient: (i) => (i === 1 ? { firstName: '=HYPERLINK("http://evil.example")', lastName: '@Ivanova, "Jr"', phone: '+7 900 000-00-09' } : undefined),
    });
    const rows = parseCsv(await collect(t.services.transfers.exportCsv(a.merchantId, everything(t))));
    assert.deepEqual(rows[0], [...DELIVERIES_CSV_HEADER]);
    const body = rows.slice(1);
    assert.deepEqual(
      body.map((r) => r[1]),
      a.transfers.map((x) => x.id),
    );
    for (const [i, r] of body.entries()) {
      const x = a.transfers[i];
      assert.deepEqual(r, [
        x.createdAt,
        x.id,
        x.state,
        /^[-=+@]/.test(x.trackingCode) ? `'${x.trackingCode}` : x.trackingCode, // base64url: 1 in 64 begins with -
        x.warehouseId,
        x.deliveryOptionName,
        i === 1 ? `'${x.recipientFullName}` : x.recipientFullName,
        `'${x.recipientInfo.phone}`,
        x.destinationAddress,
        x.totalPrice.toFixed(2),
        x.refundedAmount.toFixed(2),
        'RUB',
      ]);
    }
    // The prices are what the ledger charged for these transfers; the refunds what it gave back.
    const ledger = await t.services.merchants.ledger(a.merchantId);
    const charged = -sumMinor(ledger.entries.filter((e) => e.kind === 'CHARGE').map((e) => e.amount));
    const refunded = sumMinor(ledger.entries.filter((e) => e.kind === 'REFUND').map((e) => e.amount));
    assert.equal(sumMinor(body.map((r) => r[9])), charged);
    assert.equal(sumMinor(body.map((r) => r[10])), refunded);
    assert.ok(refunded > 0);
    // A range selects by creation time, [from, to).
    const part = parseCsv(await collect(t.services.transfers.exportCsv(a.merchantId, { from: a.transfers[1].createdAt, to: a.transfers[3].createdAt })));
    assert.deepEqual(
      part.slice(1).map((r) => r[1]),
      [a.transfers[1].id, a.transfers[2].id],
    );
  });

  test('large ranges stream in batches: more rows than one batch, in order, none twice', async () => {
    const t = ctx();
    const a = await seedMerchant(t, { transfers: 0, warehouses: 1 });
    // 1 200 ledger entries (the batch is 500), the same millisecond for many of them: the (created_at, id) keyset keeps the order total.
    for (let i = 0; i < 1200; i++) {
      if (i % 100 === 0) t.clock.advance(1);
      await t.services.merchants.topUp(a.merchantId, 1 + i);
    }
    let chunks = 0;
    let text = '';
    for await (const chunk of t.services.merchants.ledgerCsv(a.merchantId, everything(t))) {
      chunks++;
      text += chunk;
    }
    const body = parseCsv(text).slice(1);
    assert.ok(chunks >= 4, `${chunks} chunks`);
    assert.equal(body.length, 1201); // the opening balance and 1 200 top-ups
    assert.equal(new Set(body.map((r) => r[1])).size, 1201);
    const balance = await t.services.merchants.get(a.merchantId);
    assert.equal(formatMinor(sumMinor(body.map((r) => r[3]))), balance.balance);
  });

  test("another merchant's entries and deliveries never appear", async () => {
    const t = ctx();
    const a = await seedMerchant(t, { name: 'Shop A', transfers: 3 });
    const b = await seedMerchant(t, { name: 'Shop B', transfers: 3 });
    const ledger = await collect(t.services.merchants.ledgerCsv(a.merchantId, everything(t)));
    const deliveries = await collect(t.services.transfers.exportCsv(a.merchantId, everything(t)));
    for (const x of b.transfers) {
      assert.ok(!ledger.includes(x.id));
      assert.ok(!deliveries.includes(x.id));
    }
    assert.equal(parseCsv(deliveries).length, 1 + a.transfers.length);
  });

  test('a range must be two valid times, from before to', async () => {
    const t = ctx();
    const a = await seedMerchant(t, { transfers: 0, warehouses: 0 });
    for (const range of [
      { from: 'yesterday', to: '2026-01-01T00:00:00Z' },
      { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' },
      { from: '2026-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' },
    ]) {
      await assert.rejects(collect(t.services.merchants.ledgerCsv(a.merchantId, range)), { code: 'VALIDATION_FAILED' });
      await assert.rejects(collect(t.services.transfers.exportCsv(a.merchantId, range)), { code: 'VALIDATION_FAILED' });
      await assert.rejects(t.services.merchants.balanceChange(a.merchantId, range), { code: 'VALIDATION_FAILED' });
    }
  });
});
