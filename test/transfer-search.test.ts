import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrateToLatest, openDatabase } from '../src/db/database.ts';
import { type TransferListFilter, transfersRepository } from '../src/modules/transfers/repository.ts';
import type { Transfer } from '../src/modules/transfers/schemas.ts';
import { describeEachStore, type TestApp } from './helpers/app.ts';
import { seedMerchant } from './helpers/seed.ts';
import { sqlitePlan, statementsSent } from './helpers/stores.ts';

/** The dashboard's deliveries list (TransfersService.search): filters, one search box, keyset pages, one merchant only. */

const ids = (items: Transfer[]) => items.map((x) => x.id);
const newestFirst = (items: Transfer[]) => [...items].reverse();

async function walk(t: TestApp, merchantId: string, query: Record<string, string | number>) {
  const seen: Transfer[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const page = await t.services.transfers.search(merchantId, { ...query, ...(cursor ? { cursor } : {}) });
    seen.push(...page.items);
    cursor = page.nextCursor;
    if (!cursor) return seen;
  }
  throw new Error('too many pages');
}

async function refusal(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    return err as { code: string; detail: string; options: unknown };
  }
  assert.fail('expected a refusal');
}

describeEachStore('deliveries search', (ctx) => {
  test('pages newest first through every transfer once, with the keyset cursor', async () => {
    const t = ctx();
    const a = await seedMerchant(t, { transfers: 9 });
    const all = await walk(t, a.merchantId, { limit: 4 });
    assert.deepEqual(ids(all), ids(newestFirst(a.transfers)));
    const first = await t.services.transfers.search(a.merchantId, { limit: 4 });
    assert.equal(first.items.length, 4);
    assert.ok(first.nextCursor);
  });

  test('filters by state, warehouse and creation time, alone and together', async () => {
    const t = ctx();
    const a = await seedMerchant(t, { transfers: 8 });
    const expect = (pred: (x: Transfer) => boolean) => ids(newestFirst(a.transfers.filter(pred)));
    const cancelled = await walk(t, a.merchantId, { state: 'cancelled' });
    assert.deepEqual(
      ids(cancelled),
      expect((x) => x.state === 'cancelled'),
    );
    assert.ok(cancelled.length >= 3);
    const [w0, w1] = a.warehouses;
    assert.deepEqual(
      ids(await walk(t, a.merchantId, { warehouseId: w1.id })),
      expect((x) => x.warehouseId === w1.id),
    );
    assert.deepEqual(
      ids(await walk(t, a.merchantId, { warehouseId: w0.id, state: 'inProgress' })),
      expect((x) => x.warehouseId === w0.id && x.state === 'inProgress'),
    );
    const from = a.transfers[2].createdAt;
    const to = a.transfers[6].createdAt;
    assert.deepEqual(
      ids(await walk(t, a.merchantId, { createdFrom: from, createdTo: to, limit: 2 })),
      ids(newestFirst(a.transfers.slice(2, 6))),
      'createdFrom inclusive, createdTo exclusive',
    );
  });

  test('one search box: transfer id, tracking code or link, recipient phone in any spacing', async () => {
    const t = ctx();
    const a = await seedMerchant(t, { transfers: 6 });
    const x = a.transfers[4];
    assert.deepEqual(ids((await t.services.transfers.search(a.merchantId, { q: x.id })).items), [x.id]);
    assert.deepEqual(ids((await t.services.transfers.search(a.merchantId, { q: ` ${x.id.toUpperCase()} ` })).items), [x.id]);
    assert.deepEqual(ids((await t.services.transfers.search(a.merchantId, { q: x.trackingCode })).items), [x.id]);
    assert.deepEqual(ids((await t.services.transfers.search(a.merchantId, { q: `'${x.trackingCode}` })).items), [x.id], 'as copied from the CSV');
    assert.deepEqual(ids((await t.services.transfers.search(a.merchantId, { q: `https://track.example.com/track/${x.trackingCode}` })).items), [x.id]);
    // Seed recipients rotate over 4 phones: transfers 0 and 4 share +7 900 000-00-01.
    for (const q of ['+7 900 000-00-01', '79000000001', '+7 (900) 000 00 01']) {
      assert.deepEqual(ids((await t.services.transfers.search(a.merchantId, { q })).items), [a.transfers[4].id, a.transfers[0].id], q);
    }
    assert.deepEqual((await t.services.transfers.search(a.merchantId, { q: '+7 900 999-99-99' })).items, []);
    // Search and filters combine.
    assert.deepEqual((await t.services.transfers.search(a.merchantId, { q: '79000000001', warehouseId: a.warehouses[1].id })).items, []);
  });

  test("another merchant's transfers never appear, whatever is searched", async () => {
    const t = ctx();
    const a = await seedMerchant(t, { name: 'Shop A', transfers: 4 });
    const b = await seedMerchant(t, { name: 'Shop B', transfers: 4 }); // same recipients' phones as A's
    const theirs = b.transfers[1];
    for (const q of [theirs.id, theirs.trackingCode, theirs.recipientInfo.phone]) {
      const found = await t.services.transfers.search(a.merchantId, { q });
      assert.ok(
        found.items.every((x) => a.transfers.some((y) => y.id === x.id)),
        q,
      );
      assert.ok(!ids(found.items).includes(theirs.id), q);
    }
    assert.deepEqual(ids(await walk(t, a.merchantId, {})), ids(newestFirst(a.transfers)));
    assert.deepEqual((await t.services.transfers.search(a.merchantId, { warehouseId: b.warehouses[0].id })).items, []);
  });

  test('bad input is refused with the field named, never an empty success', async () => {
    const t = ctx();
    const a = await seedMerchant(t, { transfers: 1 });
    const cases: [Record<string, string>, string][] = [
      [{ q: 'hello world' }, '/q'],
      [{ q: '12' }, '/q'],
      [{ state: 'lost' }, '/state'],
      [{ warehouseId: 'not-an-id' }, '/warehouseId'],
      [{ createdFrom: 'yesterday' }, '/createdFrom'],
      [{ cursor: 'nope' }, '/cursor'],
    ];
    for (const [query, path] of cases) {
      const err = await refusal(t.services.transfers.search(a.merchantId, query));
      assert.equal(err.code, 'VALIDATION_FAILED', JSON.stringify(query));
      assert.match(JSON.stringify(err.options) + err.detail, new RegExp(path.replace('/', '\\/')), JSON.stringify(query));
    }
  });
});

test("every list of transfers, the console's newest-first included, walks an index and stops: no whole-table read or sort (SQLite plans)", async () => {
  const database = openDatabase({ url: 'sqlite::memory:' });
  try {
    await migrateToLatest(database);
    const m = '01a20058-cb4a-7657-ba2b-fa105300957e';
    const lists: Array<[string, string | undefined, TransferListFilter]> = [
      ['GET /transfer: newest', m, { limit: 51 }],
      ['dashboard: first page', m, { limit: 51, state: undefined }],
      ['dashboard: a state', m, { limit: 51, state: 'cancelled' }],
      ['dashboard: a phone', m, { limit: 51, recipientPhone: '79000000003' }],
      ['console: every merchant, newest first', undefined, { limit: 51 }],
      ['console: every merchant, a date range', undefined, { limit: 51, createdFrom: 1, createdTo: 2 }],
      ['console: every merchant, a state', undefined, { limit: 51, state: 'cancelled' }],
      ['console: every merchant, next page', undefined, { limit: 51, before: { createdAt: 5, id: m } }],
    ];
    const exact = new Set(['GET /transfer: newest', 'dashboard: first page', 'dashboard: a state']);
    for (const [what, merchantId, filter] of lists) {
      // The statement transfersRepository.list really sends (compiled reads too, through a connection).
      const { sent } = await statementsSent(database.db, () => transfersRepository.list(database.db, merchantId, filter));
      assert.equal(sent.length, 1, what);
      const plan = await sqlitePlan(database.db, sent[0]);
      assert.match(plan, /USING (COVERING )?INDEX/, `${what}: ${plan}`);
      assert.doesNotMatch(plan, /SCAN transfers(?! USING)|TEMP B-TREE FOR ORDER BY/, `${what}: ${plan}`);
      // A merchant's newest page with no filter or only a state: the index order is the answer's order, no sort at all.
      if (exact.has(what)) assert.doesNotMatch(plan, /TEMP B-TREE/, `${what}: ${plan}`);
    }
  } finally {
    await database.close();
  }
});
