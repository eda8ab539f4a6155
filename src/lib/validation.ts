import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

/**
 * Two validators. Bodies are strict: no type coercion ("12" is not a number), no silently dropped
 * unknown fields (they are rejected, so nobody can mass-assign id, merchantId or balance), and every
 * problem is reported at once. Query strings and path params are text on the wire, so there numbers
 * are coerced ("?limit=10").
 */
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes: coerce,
    useDefaults: coerce,
    removeAdditional: false,
    allErrors: true,
    strict: false,
  });
  // ajv-formats is CommonJS; its function is the module's `default`.
  addFormats.default(ajv, { mode: 'full', formats: ['email', 'date-time'] });
  // Ids are accepted as the service writes them: canonical lower-case UUIDs. ajv-formats' uuid also
  // takes upper case and a urn:uuid: prefix, which would then miss every row (a confusing 404).
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramAjv = makeAjv(true);

/**
 * Each route's validator is compiled by ajv on the route's first request, not when the app starts (Fastify
 * asks for every route's validators at ready): a server holds the compiled code of the routes it serves
 * only (docs/benchmarks.md, memory). What Fastify gets stands for ajv's function: it calls it with the
 * same arguments and reads `errors` and `schemaEnv` (whether to pass the parent data) from it.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  let compiled: ValidateFunction | undefined;
  const validator = () => (compiled ??= (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema as object));
  const validate = (data: unknown, context?: Parameters<ValidateFunction>[1]) => validator()(data, context);
  Object.defineProperties(validate, {
    errors: { get: () => validator().errors },
    schemaEnv: { get: () => validator().schemaEnv },
  });
  return validate as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** A strict validator for documents outside HTTP (the tariff file), with the same rules as request bodies. */
export function compileStrict<T>(schema: object): (value: unknown) => { ok: true; value: T } | { ok: false; errors: string[] } {
  const validate = bodyAjv.compile(schema);
  return (value) => {
    if (validate(value)) return { ok: true, value: value as T };
    return {
      ok: false,
      errors: (validate.errors ?? []).map((e) => {
        const where =
          e.keyword === 'required'
            ? `${e.instancePath}/${e.params.missingProperty}`
            : e.keyword === 'additionalProperties'
              ? `${e.instancePath}/${e.params.additionalProperty}`
              : e.instancePath;
        const what = e.keyword === 'required' ? 'is required' : e.keyword === 'additionalProperties' ? 'is not a known field' : (e.message ?? 'is invalid');
        return `${where || '/'} ${what}`;
      }),
    };
  };
}
