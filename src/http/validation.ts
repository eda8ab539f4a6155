import { Ajv } from 'ajv';
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
  addFormats.default(ajv, { mode: 'full', formats: ['uuid', 'email', 'date-time'] });
  return ajv;
}

const bodyAjv = makeAjv(false);
const paramAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema as object);
