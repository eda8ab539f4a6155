import assert from 'node:assert/strict';
import { test } from 'node:test';
import fastJsonStringify from 'fast-json-stringify';
import { lazySerializers, withNullables } from '../src/http/serialization.ts';
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
