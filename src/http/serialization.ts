import SerializerSelector from '@fastify/fast-json-stringify-compiler';

type Schema = Record<string, unknown>;

/**
 * Response serializers: Fastify's own factory (fast-json-stringify, as without this option), with two
 * changes.
 *
 * - Each route's serializer is compiled on the first response it sends instead of when the app starts
 *   (Fastify asks for every route, status and content type at ready). A server holds the compiled code
 *   of the answers it gives only: about 5 MiB less at idle (docs/benchmarks.md, memory). The first
 *   answer of each kind pays the compilation once (tens of milliseconds, with its validators).
 * - A field that may be null is written in the schemas (TypeBox's Union with Null, kept so in the
 *   OpenAPI document) as `anyOf: [X, { type: 'null' }]`, and for an anyOf fast-json-stringify runs an
 *   Ajv validator per branch on every value to choose one: on a list of 50 warehouses, four
 *   validations an item. The serializer is given the same field spelled `{ ...X, nullable: true }`,
 *   which it writes with a null check. What is written is the same: null as null, anything else as X.
 *   Validation and the document keep the route's schema.
 */
export const lazySerializers: SerializerSelector.SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let serializer: SerializerSelector.Serializer | undefined;
    let items: SerializerSelector.Serializer | undefined;
    const itemSchema = (route.schema as Schema | undefined)?.type === 'array' ? ((route.schema as Schema).items as Schema | undefined) : undefined;
    // The JSON of frozen objects (remembered shapes, src/lib/remembered-shapes.ts), by route and status.
    const written = new WeakMap<object, string>();
    const remembered = (write: SerializerSelector.Serializer, doc: unknown): string => {
      if (doc === null || typeof doc !== 'object') return write(doc);
      let json = written.get(doc);
      if (json === undefined) {
        json = write(doc);
        if (Object.isFrozen(doc)) written.set(doc, flattened(json));
      }
      return json;
    };
    return (doc) => {
      if (itemSchema && Array.isArray(doc)) {
        // fast-json-stringify writes an array as its items' JSON, comma-separated, in brackets. One join of
        // every piece makes one flat string: "[" + joined + "]" would be a rope that Buffer.byteLength (for
        // Content-Length) copies again.
        items ??= compile({ ...route, schema: withNullables(itemSchema) as typeof route.schema });
        if (doc.length === 0) return '[]';
        const parts = new Array<string>(2 * doc.length + 1);
        parts[0] = '[';
        for (let i = 0; i < doc.length; i++) {
          parts[2 * i + 1] = remembered(items, doc[i]);
          parts[2 * i + 2] = ','; // the last one becomes the closing bracket
        }
        parts[2 * doc.length] = ']';
        return parts.join('');
      }
      serializer ??= compile({ ...route, schema: withNullables(route.schema) as typeof route.schema });
      return remembered(serializer, doc);
    };
  };
};

/**
 * The same string, flat. fast-json-stringify builds its JSON with `+=`, which V8 keeps as a rope (a tree
 * of the pieces), and a join walks the whole tree again each time it copies it. A remembered JSON is
 * copied into every list answer that holds it: joining 50 warehouses' JSON took 42.8 µs as ropes and
 * 5.9 flat (`node bench/joins.ts`; docs/benchmarks.md, "Twenty-ninth pass"). Measuring its UTF-8 length
 * makes V8 flatten it in place, once (as Fastify's Content-Length does for a single answer); a native
 * call, which optimised code cannot drop as it may an unused `Number(json)`.
 * test/response-serialization.test.ts asks V8 whether it did.
 */
function flattened(json: string): string {
  Buffer.byteLength(json);
  return json;
}

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
