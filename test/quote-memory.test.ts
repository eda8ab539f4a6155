import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RecentQuote, RecentQuotes } from '../src/modules/quotes/recent.ts';
import type { QuoteRow } from '../src/modules/quotes/repository.ts';

/** The quotes a PostgreSQL instance remembers for their payment (src/modules/quotes/recent.ts). */

const quote = (merchant: string, id: string): RecentQuote => ({
  row: { id, merchant_id: merchant } as QuoteRow,
  endpoints: [],
  endpointsFingerprint: 'fp',
});

test('a remembered quote is found once, and only by its own merchant', () => {
  const recent = new RecentQuotes(10);
  const q = quote('m1', 'q1');
  recent.remember(q);
  assert.equal(recent.take('m2', 'q1'), undefined, "another merchant's request never finds it");
  assert.equal(recent.take('m1', 'q1'), q);
  assert.equal(recent.take('m1', 'q1'), undefined, 'taken once');
});

test('at most `kept` quotes are remembered, the oldest dropped first, whether or not some were taken meanwhile', () => {
  const recent = new RecentQuotes(3);
  for (const id of ['a', 'b', 'c']) recent.remember(quote('m', id));
  assert.ok(recent.take('m', 'b'));
  recent.remember(quote('m', 'd')); // drops a, the oldest
  assert.equal(recent.take('m', 'a'), undefined);
  recent.remember(quote('m', 'e')); // b's slot: b was taken already, nothing else goes
  recent.remember(quote('m', 'f')); // drops c
  assert.equal(recent.take('m', 'c'), undefined);
  assert.deepEqual(
    ['d', 'e', 'f'].map((id) => recent.take('m', id)?.row.id),
    ['d', 'e', 'f'],
  );
  // Many times round the ring: still the last three only.
  for (let i = 0; i < 1000; i++) recent.remember(quote('m', `x${i}`));
  assert.deepEqual(
    ['x996', 'x997', 'x998', 'x999'].map((id) => recent.take('m', id)?.row.id),
    [undefined, 'x997', 'x998', 'x999'],
  );
});
