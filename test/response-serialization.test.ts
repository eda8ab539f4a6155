import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import fastJsonStringify from 'fast-json-stringify';
import { lazySerializers, withNullables } from '../src/http/serialization.ts';
import { iso } from '../src/lib/clock.ts';
import { rememberedShapes } from '../src/lib/remembered-shapes.ts';
import { CANCELLED_TRANSFER_EXAMPLE, TRANSFER_EXAMPLE, Transfer } from '../src/modules/transfers/schemas.ts';
import { WAREHOUSE_EXAMPLE, Warehouse } from '../src/modules/warehouses/schemas.ts';

test('a field that may be null is serialised with a null check, not a validator per branch', () => {
  const schema = {
    type: 'object',
    properties: {
      a: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }], description: 'kept' },
      b: { anyOf: [{ type: 'null' }, { type: 'integer' }] },
      list: { type: 'array', items: { type: 'object', properties: { c: { oneOf: [{ type: 'string' }, { type: 'null' }] } } } },
      // Not "one typed schema or null": left to fast-json-stringify's anyOf.
      either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
      refOrNull: { anyOf: [{ $ref: '#/x' }, { type: 'null' }] },
    },
    examples: [{ a: null }],
  };
  assert.deepEqual(withNullables(schema), {
    type: 'object',
    properties: {
      a: { type: 'string', format: 'date-time', description: 'kept', nullable: true },
      b: { type: 'integer', nullable: true },
      list: { type: 'array', items: { type: 'object', properties: { c: { type: 'string', nullable: true } } } },
      either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
      refOrNull: { anyOf: [{ $ref: '#/x' }, { type: 'null' }] },
    },
    examples: [{ a: null }],
  });
  // The route's own schema is not changed (validation and the OpenAPI document read it).
  assert.deepEqual(schema.properties.a, { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }], description: 'kept' });
});

test('responses are written as the default serializer writes them, with and without nulls', () => {
  const factory = lazySerializers({}, {});
  const compiled = factory({ schema: Warehouse, method: 'GET', url: '/warehouses/:id', httpStatus: '200' });
  const reference = fastJsonStringify(Warehouse as never);
  const withNulls = { ...WAREHOUSE_EXAMPLE, nameInt: null, contactPhone: null, contactEmail: null };
  for (const value of [WAREHOUSE_EXAMPLE, withNulls]) {
    assert.equal(compiled(value), reference(value));
    assert.deepEqual(JSON.parse(compiled(value)), value);
  }
  // The transfer, the widest response: a live one (nullable fields set) and a cancelled one (several null).
  const transferSerializer = factory({ schema: Transfer, method: 'GET', url: '/transfer/:id', httpStatus: '200' });
  const transferReference = fastJsonStringify(Transfer as never);
  for (const example of [TRANSFER_EXAMPLE, CANCELLED_TRANSFER_EXAMPLE]) {
    assert.equal(transferSerializer(example), transferReference(example));
    assert.deepEqual(JSON.parse(transferSerializer(example)), example);
  }
});

test("a row's shape is made once while the row is the same, and again when any column changes", () => {
  let made = 0;
  const shape = rememberedShapes((row: { id: string; name: string; extra?: unknown }) => {
    made++;
    return { id: row.id, name: row.name, nested: { extra: row.extra ?? null } };
  }, 2);
  const a = shape({ id: 'a', name: 'A' });
  assert.equal(shape({ id: 'a', name: 'A' }), a, 'an equal row (another object): the same shape');
  assert.equal(made, 1);
  assert.ok(Object.isFrozen(a) && Object.isFrozen(a.nested), 'deep-frozen: shared between answers');
  assert.throws(() => {
    (a as { name: string }).name = 'changed';
  }, TypeError);
  assert.deepEqual(shape({ id: 'a', name: 'B' }), { id: 'a', name: 'B', nested: { extra: null } }, 'a changed column');
  assert.deepEqual(shape({ id: 'a', name: 'B', extra: 'x' }), { id: 'a', name: 'B', nested: { extra: 'x' } }, 'one column more');
  assert.deepEqual(shape({ id: 'a', name: 'B' }), { id: 'a', name: 'B', nested: { extra: null } }, 'one column fewer');
  const withObject = { id: 'a', name: 'B', extra: { v: 1 } };
  assert.notEqual(shape(withObject), shape(withObject), 'a row holding an object is never reused');
  assert.equal(made, 6);
  // Bounded at 2 ids: a third pushes out the oldest.
  const b = shape({ id: 'b', name: 'B' }); // 'a' and 'b'
  const c = shape({ id: 'c', name: 'C' }); // 'b' and 'c'
  assert.equal(shape({ id: 'b', name: 'B' }), b);
  assert.equal(shape({ id: 'c', name: 'C' }), c);
  assert.equal(made, 8);
  shape({ id: 'd', name: 'D' }); // 'c' and 'd'
  assert.notEqual(shape({ id: 'b', name: 'B' }), b, 'forgotten, made again');
  assert.equal(made, 10);
});

test('lists and frozen answers are written as the default serializer writes them; a frozen answer is written once', () => {
  const factory = lazySerializers({}, {});
  const schema = { type: 'array', items: Warehouse };
  const list = factory({ schema, method: 'GET', url: '/warehouses', httpStatus: '200' });
  const reference = fastJsonStringify(schema as never);
  const items = [
    WAREHOUSE_EXAMPLE,
    Object.freeze({ ...WAREHOUSE_EXAMPLE, name: 'Frozen "quoted"', nameInt: null }),
    { ...WAREHOUSE_EXAMPLE, undocumented: 'never written' },
  ];
  for (const value of [[], items.slice(0, 1), items]) assert.equal(list(value), reference(value));
  assert.equal(JSON.parse(list(items))[2].undocumented, undefined);
  // Written again, a frozen item keeps its first JSON (it cannot change); an unfrozen one is written anew.
  const open = { ...WAREHOUSE_EXAMPLE };
  assert.equal(JSON.parse(list([open]))[0].name, WAREHOUSE_EXAMPLE.name);
  open.name = 'Changed';
  assert.equal(JSON.parse(list([open]))[0].name, 'Changed');
  const single = factory({ schema: Warehouse, method: 'GET', url: '/warehouses/:id', httpStatus: '200' });
  const frozen = items[1];
  assert.equal(single(frozen), fastJsonStringify(Warehouse as never)(frozen));
  assert.equal(single(open), fastJsonStringify(Warehouse as never)(open));
});

test('the remembered JSON of a frozen answer is kept flat, so a list answer that holds it copies it without walking its pieces', () => {
  // fast-json-stringify builds JSON with +=, which V8 keeps as a tree of pieces (a rope) that every join
  // walks again; lists and single answers go through the same remembering. Whether a string is flat only
  // V8's own %StringIsFlat tells (an internal test function: a Node upgrade may rename it), so a child
  // process with --allow-natives-syntax asks it, as a JavaScript module (the TypeScript stripper would
  // not parse the %).
  const url = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);
  const source = `import { lazySerializers } from ${url('../src/http/serialization.ts')};
    import { WAREHOUSE_EXAMPLE, Warehouse } from ${url('../src/modules/warehouses/schemas.ts')};
    const single = lazySerializers({}, {})({ schema: Warehouse, method: 'GET', url: '/warehouses/:id', httpStatus: '200' });
    const frozen = single(Object.freeze({ ...WAREHOUSE_EXAMPLE }));
    const open = single({ ...WAREHOUSE_EXAMPLE });
    console.log(JSON.stringify({ frozen: %StringIsFlat(frozen), open: %StringIsFlat(open), same: frozen === open }));`;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', source], { encoding: 'utf8', timeout: 30_000 });
  // The unfrozen answer, written once and never remembered, stays as fast-json-stringify left it: this
  // shows the check can tell the two apart.
  assert.deepEqual(JSON.parse(out), { frozen: true, open: false, same: true });
});

test('times are written as toISOString writes them, for instants seen again and for more new ones than are remembered', () => {
  const start = Date.parse('2026-11-27T17:00:00.000Z');
  const instants = Array.from({ length: 10_000 }, (_, i) => start + i * 997);
  for (const round of [1, 2]) {
    for (const ms of instants) assert.equal(iso(ms), new Date(ms).toISOString(), `round ${round}: ${ms}`);
  }
  assert.equal(iso(0), '1970-01-01T00:00:00.000Z');
  assert.equal(iso(start), '2026-11-27T17:00:00.000Z', 'the first instant, formatted again after the memory was emptied');
});
