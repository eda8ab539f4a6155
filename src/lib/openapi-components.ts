import { isDeepStrictEqual } from 'node:util';

/**
 * Named component schemas of the OpenAPI document. The route schemas stay inline TypeBox objects (so
 * validation, serialization and handler types are untouched); a schema wrapped in component() only
 * carries an annotation, `x-component: Name`, which Ajv and fast-json-stringify ignore. When the
 * document is built, hoistComponents() moves every annotated subschema to `components.schemas.<Name>`
 * and leaves `$ref: '#/components/schemas/<Name>'` in its place, so generated client types get names.
 * Two different schemas under one name fail the generation instead of silently picking one.
 */

export const COMPONENT = 'x-component';
/**
 * The per-status problem schemas are the `Problem` envelope with `type` narrowed to the codes of that
 * status: annotated `x-problem-of: { name, type }` (the component's name and its generic `type`), they
 * become `allOf: [$ref Problem, { properties: { type: enum } }]`.
 */
export const PROBLEM_VARIANT = 'x-problem-of';

/** Marks `schema` as the named component `name` (returns the same object, annotated). */
export function component<T extends object>(name: string, schema: T): T {
  (schema as Record<string, unknown>)[COMPONENT] = name;
  return schema;
}

const REF = (name: string) => ({ $ref: `#/components/schemas/${name}` });

type Json = Record<string, unknown>;

/** Rewrites the document in place: annotated subschemas become $refs to components.schemas. */
export function hoistComponents<D extends Json>(document: D): D {
  const schemas: Record<string, Json> = {};
  const headers: Record<string, Json> = {};
  const define = (name: string, schema: Json) => {
    if (schemas[name] === undefined) schemas[name] = schema;
    else if (!isDeepStrictEqual(schemas[name], schema)) {
      throw new Error(`OpenAPI component ${name} is defined by two different schemas; give one of them another name`);
    }
  };
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const input = value as Json;
    const out: Json = {};
    for (const [k, v] of Object.entries(input)) if (k !== COMPONENT && k !== PROBLEM_VARIANT) out[k] = walk(v);
    const name = input[COMPONENT];
    if (typeof name === 'string') {
      define(name, out);
      return REF(name);
    }
    const variant = input[PROBLEM_VARIANT] as { name: string; type: Json } | undefined;
    if (variant) {
      // The generic envelope is the component; the variant only narrows `type` to this status' codes.
      const properties = out.properties as Json;
      define(variant.name, { ...out, properties: { ...properties, type: variant.type } });
      return { allOf: [REF(variant.name), { type: 'object', properties: { type: properties.type } }], description: out.description };
    }
    return out;
  };
  const paths = hoistHeaders(walk(document.paths) as Json, (name, header) => {
    if (headers[name] !== undefined && !isDeepStrictEqual(headers[name], header)) {
      throw new Error(`OpenAPI header component ${name} is described two different ways; describe it once`);
    }
    headers[name] = header;
  });
  // The OpenAPI 3.1 webhooks (payloads we POST to merchants) share schemas with the paths (Event).
  const webhooks = document.webhooks === undefined ? undefined : walk(document.webhooks);
  const components = (document.components ?? {}) as Json;
  const existing = (components.schemas ?? {}) as Json;
  const sorted = Object.fromEntries(Object.entries({ ...existing, ...schemas }).sort(([a], [b]) => a.localeCompare(b)));
  const headerComponents = Object.keys(headers).length > 0 ? { headers: { ...((components.headers as Json) ?? {}), ...headers } } : {};
  return { ...document, paths, ...(webhooks === undefined ? {} : { webhooks }), components: { ...components, schemas: sorted, ...headerComponents } };
}

/** Response headers documented on many operations (the rate-limit headers): one components.headers entry each, $ref'd from every response. */
const SHARED_HEADERS: Record<string, string> = {
  'ratelimit-policy': 'RateLimit-Policy',
  ratelimit: 'RateLimit',
};

function hoistHeaders(paths: Json, define: (name: string, header: Json) => void): Json {
  for (const item of Object.values(paths) as Json[]) {
    for (const operation of Object.values(item) as Json[]) {
      for (const response of Object.values((operation?.responses as Json) ?? {}) as Json[]) {
        const headers = response?.headers as Json | undefined;
        if (!headers) continue;
        for (const [key, header] of Object.entries(headers)) {
          const name = SHARED_HEADERS[key];
          if (!name) continue;
          define(name, header as Json);
          headers[key] = { $ref: `#/components/headers/${name}` };
        }
      }
    }
  }
  return paths;
}
