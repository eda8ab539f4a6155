import { AssertionError } from 'node:assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

/**
 * The contract check: every response a test receives is validated against the COMMITTED openapi.json
 * (not against the route schemas, which are what generate it): the method and path are documented,
 * the status code is listed for that operation, the content type is one the operation declares for
 * that status, and the body validates against its schema (JSON Schema 2020-12, as OpenAPI 3.1 says).
 * A mismatch throws an AssertionError that names the operation, the status and the first problems.
 *
 * Not checked, on purpose: the docs page (/docs...) and the document itself (/openapi.json), which
 * are hidden from the document. A request no route matches must get the service's 404
 * ROUTE_NOT_FOUND problem (there is no operation to hold it against).
 */

export const OPENAPI_FILE = fileURLToPath(new URL('../../openapi.json', import.meta.url));

// Not for merchants, so not in the document: the index, the document itself, its page, operators' /metrics,
// and the web pages for people with their assets (HTML, not API operations).
const WEB_PAGES = /^\/(dashboard|ops|courier-app|static)(\/|$)/;
const UNDOCUMENTED = (path: string) =>
  path === '/' || path === '/openapi.json' || path === '/docs' || path.startsWith('/docs/') || path === '/metrics' || WEB_PAGES.test(path);

interface MediaType {
  schema?: object;
}
interface ResponseObject {
  description?: string;
  content?: Record<string, MediaType>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  responses: Record<string, ResponseObject>;
  [key: string]: unknown;
}
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation | unknown>>;
  [key: string]: unknown;
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

interface Route {
  template: string;
  pattern: RegExp;
  /** Literal segments first, so /a/b beats /a/{id} when both match. */
  params: number;
  operations: Map<string, Operation>;
}

interface Contract {
  document: OpenApiDocument;
  routes: Route[];
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

let contract: Contract | undefined;

/** The committed document, parsed once per test process. */
export function loadOpenApi(): OpenApiDocument {
  return loadContract().document;
}

/** Every documented operation as "METHOD /path/{param}". */
export function documentedOperations(document: OpenApiDocument = loadOpenApi()): Array<{ method: string; path: string; operation: Operation }> {
  const out: Array<{ method: string; path: string; operation: Operation }> = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method] as Operation | undefined;
      if (operation) out.push({ method: method.toUpperCase(), path, operation });
    }
  }
  return out;
}

function loadContract(): Contract {
  if (contract) return contract;
  let text: string;
  try {
    text = readFileSync(OPENAPI_FILE, 'utf8');
  } catch {
    throw new AssertionError({ message: `openapi.json is missing at ${OPENAPI_FILE}: run npm run openapi` });
  }
  const document = JSON.parse(text) as OpenApiDocument;
  const routes: Route[] = Object.entries(document.paths).map(([template, item]) => {
    const operations = new Map<string, Operation>();
    for (const method of HTTP_METHODS) {
      const operation = item[method] as Operation | undefined;
      if (operation) operations.set(method.toUpperCase(), operation);
    }
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => (/^\{[^}]+\}$/.test(part) ? '([^/]+)' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
      .join('');
    return { template, pattern: new RegExp(`^${source}$`), params: (template.match(/\{/g) ?? []).length, operations };
  });
  routes.sort((a, b) => a.params - b.params);
  // strict: false because OpenAPI adds annotations JSON Schema does not know (e.g. `example`).
  contract = { document, routes, ajv: documentAjv(document), validators: new Map() };
  return contract;
}

const DOCUMENT_ID = 'openapi.json';

/**
 * An Ajv (JSON Schema 2020-12) that knows the document's named component schemas: compile a schema of
 * the document with compileDocumentSchema(), which points its `#/components/schemas/...` references
 * at the document.
 */
export function documentAjv(document: OpenApiDocument = loadOpenApi()): Ajv2020 {
  // strict: false because OpenAPI adds annotations JSON Schema does not know (e.g. `example`).
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: DOCUMENT_ID, components: document.components }, DOCUMENT_ID);
  return ajv;
}

/** Compiles a schema taken from the document (its local component references resolve in the document). */
export function compileDocumentSchema(ajv: Ajv2020, schema: object): ValidateFunction {
  const rebase = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rebase);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/components/') ? `${DOCUMENT_ID}${v}` : rebase(v)]),
    );
  };
  return ajv.compile(rebase(schema) as object);
}

export interface ObservedResponse {
  method: string;
  /** The request path; a query string is ignored. */
  path: string;
  status: number;
  /** The Content-Type header, if any. */
  contentType: string | undefined;
  bodyText: string;
}

function fail(r: ObservedResponse, what: string, details: string[] = []): never {
  const body = r.bodyText.length > 600 ? `${r.bodyText.slice(0, 600)}…` : r.bodyText;
  const lines = [
    `Contract violation (openapi.json): ${r.method} ${r.path} -> ${r.status}: ${what}`,
    ...details.map((d) => `  ${d}`),
    `  body: ${body || '(empty)'}`,
  ];
  throw new AssertionError({ message: lines.join('\n') });
}

const isJson = (mediaType: string) => mediaType === 'application/json' || mediaType.endsWith('+json');

function formatError(e: ErrorObject): string {
  const at = e.instancePath || '/';
  if (e.keyword === 'additionalProperties') return `${at}: unexpected property "${String(e.params.additionalProperty)}"`;
  if (e.keyword === 'required') return `${at}: missing required property "${String(e.params.missingProperty)}"`;
  if (e.keyword === 'enum') return `${at}: ${e.message} (${(e.params.allowedValues as unknown[]).join(', ')})`;
  return `${at}: ${e.message ?? e.keyword} (schema ${e.schemaPath})`;
}

/** The core check, for any transport. Throws an AssertionError on a mismatch. */
export function checkResponse(r: ObservedResponse): void {
  const method = r.method.toUpperCase();
  const path = r.path.split('?')[0].split('#')[0];
  if (UNDOCUMENTED(path)) return;
  const c = loadContract();
  const observed = { ...r, method, path };

  // HEAD answers like GET without a body (Fastify adds HEAD to every GET route).
  const lookup = method === 'HEAD' ? 'GET' : method;
  const route = c.routes.find((candidate) => candidate.pattern.test(path) && candidate.operations.has(lookup));
  if (!route) {
    // No documented operation: the only acceptable answer is the not-found handler's problem (HEAD: without its body).
    if (r.status === 404 && isProblemOfType(r, 'ROUTE_NOT_FOUND')) return;
    if (method === 'HEAD' && r.status >= 400 && r.status < 500 && r.bodyText === '') return;
    // An empty path parameter (`/transfer//cancel`) reaches its route, which refuses it before anything else.
    if (path.includes('//') && [400, 401, 403, 415].includes(r.status) && /^application\/problem\+json/.test(r.contentType ?? '')) return;
    // A URL the router cannot even decode (bad %-escape, an over-long parameter) is refused before routing, on any path.
    if (r.status === 400 && isProblemOfType(r, 'VALIDATION_FAILED') && /"detail":"(The URL is not valid|A path parameter is too long)/.test(r.bodyText)) return;
    const known = c.routes.find((candidate) => candidate.pattern.test(path));
    // A documented path with another method: the service's 405 METHOD_NOT_ALLOWED problem.
    if (known && r.status === 405 && isProblemOfType(r, 'METHOD_NOT_ALLOWED')) return;
    fail(
      observed,
      known
        ? `method ${method} is not documented for ${known.template} (documented: ${[...known.operations.keys()].join(', ')})`
        : 'the path is not documented in openapi.json (and the answer is not a 404 ROUTE_NOT_FOUND problem)',
    );
  }
  const operation = route.operations.get(lookup)!;
  const name = `${operation.operationId ?? `${lookup} ${route.template}`}`;
  const statusKey = String(r.status);
  const responseKey = [statusKey, `${statusKey[0]}XX`, 'default'].find((k) => operation.responses[k] !== undefined);
  if (!responseKey) {
    fail(observed, `status ${r.status} is not documented for ${name} (${lookup} ${route.template})`, [
      `documented statuses: ${Object.keys(operation.responses).join(', ')}`,
    ]);
  }
  const response = operation.responses[responseKey];
  const content = response.content;
  if (!content || Object.keys(content).length === 0) {
    if (r.bodyText !== '') fail(observed, `${name} documents no body for ${responseKey}, but one was sent`);
    return;
  }
  if (method === 'HEAD' || r.status === 204 || r.status === 304) return;
  const mediaType = (r.contentType ?? '').split(';')[0].trim().toLowerCase();
  const mediaKey = Object.keys(content).find((k) => k.toLowerCase() === mediaType) ?? (content['*/*'] ? '*/*' : undefined);
  if (!mediaKey) {
    fail(observed, `content type "${r.contentType ?? '(none)'}" is not documented for ${name} ${responseKey}`, [
      `documented: ${Object.keys(content).join(', ')}`,
    ]);
  }
  const schema = content[mediaKey].schema;
  if (!schema) return;
  if (!isJson(mediaType)) return; // only JSON bodies have a schema we can hold them to
  let body: unknown;
  try {
    body = JSON.parse(r.bodyText);
  } catch {
    fail(observed, `the body is not valid JSON although the content type is ${mediaType}`);
  }
  const cacheKey = `${lookup} ${route.template} ${responseKey} ${mediaKey}`;
  let validate = c.validators.get(cacheKey);
  if (!validate) {
    validate = compileDocumentSchema(c.ajv, schema);
    c.validators.set(cacheKey, validate);
  }
  if (!validate(body)) {
    const errors = (validate.errors ?? []).slice(0, 10).map(formatError);
    fail(observed, `the body does not match the ${responseKey} ${mediaKey} schema of ${name}`, errors);
  }
}

function isProblemOfType(r: ObservedResponse, type: string): boolean {
  if (!(r.contentType ?? '').startsWith('application/problem+json')) return false;
  try {
    const body = JSON.parse(r.bodyText) as Record<string, unknown>;
    return body.type === type && body.status === r.status && typeof body.requestId === 'string' && typeof body.detail === 'string';
  } catch {
    return false;
  }
}

function injectPath(req: InjectOptions): string {
  const url = req.url ?? req.path;
  // As light-my-request (and every HTTP client) sends it: dot segments resolved ("/transfer/.." is "/").
  if (typeof url === 'string') {
    try {
      return new URL(`http://localhost${url.startsWith('/') ? '' : '/'}${url}`).pathname;
    } catch {
      return url;
    }
  }
  if (url && typeof url === 'object') return (url as { pathname?: string }).pathname ?? '/';
  return '/';
}

/** The check for app.inject (TestApp.request and TestApp.as call it for every response). */
export function checkContract(_app: FastifyInstance, req: InjectOptions, res: LightMyRequestResponse): void {
  const contentType = res.headers['content-type'];
  checkResponse({
    method: req.method ?? 'GET',
    path: injectPath(req),
    status: res.statusCode,
    contentType: Array.isArray(contentType) ? contentType[0] : contentType === undefined ? undefined : String(contentType),
    bodyText: res.body,
  });
}

/** The same check for a response received over real HTTP (fetch): pass the body as the text that was read. */
export function checkFetchResponse(
  method: string,
  path: string,
  status: number,
  headers: Headers | Record<string, string | string[] | undefined>,
  bodyText: string,
): void {
  let contentType: string | undefined;
  if (headers instanceof Headers) contentType = headers.get('content-type') ?? undefined;
  else {
    const entry = Object.entries(headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1];
    contentType = Array.isArray(entry) ? entry[0] : entry;
  }
  // A full URL is fine too: only its path is looked up.
  const pathOnly = /^https?:\/\//i.test(path) ? new URL(path).pathname : path;
  checkResponse({ method, path: pathOnly, status, contentType, bodyText });
}
