import assert from 'node:assert/strict';
import { test } from 'node:test';
import { version as uuidVersion, validate } from 'uuid';
import { newId } from '../src/lib/ids.ts';

// Ids of rows made in one millisecond, and across refills of the random pool (256 ids each), must still
// sort in the order they were made: lists and the outbox break ties by id.
test('server ids are UUIDv7 that sort in the order they were made, and never repeat', () => {
  const before = Date.now();
  const ids = Array.from({ length: 2000 }, () => newId());
  const after = Date.now();
  for (const id of ids) {
    assert.ok(validate(id), `${id} is a UUID`);
    assert.equal(uuidVersion(id), 7, id);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const msecs = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    assert.ok(msecs >= before && msecs <= after + 1, `${id}'s time ${msecs} is the time it was made (${before}-${after})`);
  }
  assert.equal(new Set(ids).size, ids.length, 'no id repeats');
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} sorts before ${ids[i]}`);
  // The random part differs between ids made apart (fresh bytes per id, not one pooled slice reused).
  const tails = new Set(ids.map((id) => id.slice(-12)));
  assert.ok(tails.size > ids.length * 0.99, `${tails.size} distinct random tails of ${ids.length}`);
});
