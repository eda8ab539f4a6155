import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { moscowQuoteBody, transferBody, warehouseBody } from '../scripts/lib/fixtures.ts';
import { createTestApp } from './helpers/app.ts';
import { postgresOnly, postgresPlanSteps, statementsSent } from './helpers/stores.ts';

// The scheduler's quote retention purge has a partial index of its own. Migration 016 made it an index of
// pending quotes (`where status = 'pending'`), and the payment, which states `status = 'pending'`, could use
// it too: PostgreSQL's planner did so when its statistics said almost no quote was pending, after a long run
// of payments (every quote consumed) and a burst of new quotes since the last ANALYZE (autovacuum analyses
// only once a tenth of the table has changed). A payment then read every pending quote to find its own: in
// `npm run bench -- --postgres --growth`, 24 000 index entries a payment, 96 payments a second instead of
// 700-900 (docs/benchmarks.md, "Twenty-ninth pass"). Migration 017 replaced it with an index under a
// condition only the purge states (`where consumed_at is null`).
const COLUMNS = 'merchant_id, warehouse_id, tariff_version, currency, request, pickup, products, expires_at, created_at';

describe('a payment finds its quote by its id', { skip: postgresOnly("the payment's quote lookup") }, () => {
  test('whatever the statistics say of pending quotes: the payment walks the primary key of quotes, the retention purge its own index', async (tc) => {
    const t = await createTestApp('postgres');
    tc.after(() => t.close());
    const { db } = t.database;
    const m = await t.merchant('Planned shop', '100000');
    const warehouse = await t.services.warehouses.create(m.merchantId, warehouseBody() as never);
    const quote = await t.services.quotes.create(m.merchantId, moscowQuoteBody(warehouse.id) as never);
    const copies = (n: number, status: 'pending' | 'consumed') =>
      sql`insert into quotes (id, transfer_id, event_id, status, consumed_at, ${sql.raw(COLUMNS)})
        select gen_random_uuid()::text, gen_random_uuid()::text, gen_random_uuid()::text, ${status}, ${status === 'consumed' ? sql`created_at` : sql`null`}, ${sql.raw(COLUMNS)}
        from quotes, generate_series(1, ${n}) where id = ${quote.id}`.execute(db);
    // Statistics taken when every other quote was consumed, then a burst of pending quotes not analysed since.
    await copies(100_000, 'consumed');
    await sql`analyze quotes`.execute(db);
    await copies(5_000, 'pending');

    const { result: transfer, sent } = await statementsSent(db, () => t.services.transfers.create(m.merchantId, transferBody(quote.id) as never));
    assert.equal(transfer.state, 'inProgress');
    const readsOfQuotes: string[] = [];
    for (const q of sent.filter((s) => /\bquotes\b/.test(s.sql) && /^(select|update|with)\b/.test(s.sql))) {
      for (const step of await postgresPlanSteps(db, q)) {
        if (step['Relation Name'] === 'quotes' && step['Node Type'] !== 'ModifyTable')
          readsOfQuotes.push(`${step['Node Type']} ${step['Index Name'] ?? ''}`.trim());
      }
    }
    // The read of the quote before the statement (the merchant's first payment on this instance reads it),
    // and the statement's consume: each by the primary key.
    assert.equal(readsOfQuotes.length, 2, readsOfQuotes.join('; '));
    for (const read of readsOfQuotes) assert.match(read, /^(Index Scan|Index Only Scan|Bitmap Index Scan) quotes_pkey$/, readsOfQuotes.join('; '));

    // The retention purge, under the same statistics, still finds what is due through its own index.
    const { sent: purge } = await statementsSent(db, () => t.services.quotes.purgeExpired(100));
    const purgeReads = (await postgresPlanSteps(db, purge[0])).filter((s) => s['Relation Name'] === 'quotes' && s['Node Type'] !== 'ModifyTable');
    assert.deepEqual(purgeReads.map((s) => s['Index Name']).sort(), ['quotes_pkey', 'quotes_unused_expiry_idx'], JSON.stringify(purgeReads));
  });
});
