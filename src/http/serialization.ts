import fastJsonStringify from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify';

type Schema = Record<string, unknown>;

/**
 * Response serializers: fast-json-stringify over the route's response schema, as Fastify's default
 * compiler does, with one change of spelling. A field that may be null is written in the schemas
 * (TypeBox's Union with Null, kept so in the OpenAPI document) as `anyOf: [X, { type: 'null' }]`, and
 * for an anyOf fast-json-stringify runs an Ajv validator per branch on every value to choose one: on a
 * list of 50 warehouses, four validations an item. For serialising, the same field is spelled
 * `{ ...X, nullable: true }`, which it writes with a null check. What is written is the same: null as
 * null, anything else as X. Only the serializer sees the rewritten copy; validation and the document
 * keep the route's schema.
 */
export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) =>
  fastJsonStringify(withNullables(schema) as Parameters<typeof fastJsonStringify>[0]);

const isNull = (s: unknown): boolean => typeof s === 'object' && s !== null && (s as Schema).type === 'null' && Object.keys(s).length === 1;

/** A copy of schema with every anyOf/oneOf of one typed schema and null spelled `nullable: true`. */
export function withNullables(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withNullables);
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Schema;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches) && branches.length === 2 && branches.some(isNull)) {
      const other = branches.find((b) => !isNull(b)) as Schema | undefined;
      if (other && typeof other.type === 'string' && other.type !== 'null') {
        const { [key]: _, ...rest } = s;
        return withNullables({ ...rest, ...other, nullable: true });
      }
    }
  }
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    // Nested schemas live under these keywords; other values (enum, examples, default) are data.
    out[k] = k === 'properties' || k === 'patternProperties' ? mapValues(v, withNullables) : SCHEMA_KEYWORDS.has(k) ? withNullables(v) : v;
  }
  return out;
}

const SCHEMA_KEYWORDS = new Set(['items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not', 'if', 'then', 'else', 'prefixItems']);

function mapValues(value: unknown, f: (v: unknown) => unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, f(v)]));
}
