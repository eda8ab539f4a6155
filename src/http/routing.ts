import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { AppError } from '../lib/errors.ts';
import { homeCsp, homePage, prefersHtml } from './home-page.ts';

/**
 * What the router answers when a request matches no route exactly, worked out from the routes that
 * are registered (so every new route is covered without listing it here):
 *
 * - a path that exists with other methods: 405 METHOD_NOT_ALLOWED with `Allow` (RFC 9110 15.5.6);
 * - a path with a trailing slash whose slash-less form exists: 404 naming the path to use (one
 *   spelling per endpoint; `/warehouses/` must not reach `/warehouses/{id}` as an empty id);
 * - anything else: 404 ROUTE_NOT_FOUND pointing at the reference (/docs).
 *
 * Also: `GET /` points to the reference, and ids in paths and bodies (every `format: uuid` field of a
 * route schema) are case-insensitive on input, as RFC 9562 says: they are lower-cased before validation.
 */
export function registerRouting(app: FastifyInstance): void {
  const routes: Array<{ url: string; pattern: RegExp; methods: Set<string> }> = [];

  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    let entry = routes.find((r) => r.url === route.url);
    if (!entry) {
      entry = { url: route.url, pattern: routePattern(route.url), methods: new Set() };
      routes.push(entry);
    }
    for (const m of methods) entry.methods.add(m.toUpperCase());
    addUuidNormalisation(route);
  });

  const allowedMethods = (path: string): string[] => {
    const allowed = new Set<string>();
    for (const r of routes) if (r.pattern.test(path)) for (const m of r.methods) allowed.add(m);
    return [...allowed].sort();
  };

  /** The 404 for "/x/" when "/x" answers this method, else undefined. */
  const trailingSlashHint = (method: string, path: string): AppError | undefined => {
    if (path.length <= 1 || !path.endsWith('/')) return undefined;
    const bare = path.replace(/\/+$/, '') || '/';
    if (!allowedMethods(bare).includes(method)) return undefined;
    return new AppError('ROUTE_NOT_FOUND', `No endpoint ${method} ${path}: remove the trailing slash (${method} ${bare})`);
  };

  /** The answer for a request no route really matches. */
  const noRoute = (request: FastifyRequest): AppError => {
    const path = pathOf(request);
    const hint = trailingSlashHint(request.method, path);
    if (hint) return hint;
    const allowed = allowedMethods(path);
    if (allowed.length > 0) {
      return new AppError('METHOD_NOT_ALLOWED', `${path} does not support ${request.method}; it supports ${allowed.join(', ')}`, {
        headers: { allow: allowed.join(', ') },
      });
    }
    return new AppError('ROUTE_NOT_FOUND', `No endpoint ${request.method} ${path}; the endpoints are listed at /docs`);
  };

  // A path with a trailing slash that the router matched to a parameterised route ("/warehouses/" as
  // "/warehouses/:id" with an empty id) matches no route really: answer as for one, not with a 400 about a uuid.
  // A request no route matches is answered here too, before the other onRequest checks (a 415 for the
  // body of a request that has no endpoint would send the client after the wrong problem).
  // request.routeOptions builds an object on every read: only a path ending in "/" needs the template.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404) throw noRoute(request);
    const path = pathOf(request);
    if (path.length > 1 && path.endsWith('/')) {
      const template = request.routeOptions.url ?? '';
      if (!template.endsWith('/') && !template.endsWith('*') && !routes.some((r) => r.url === path)) throw noRoute(request);
    }
    done();
  });

  app.setNotFoundHandler(async (request) => {
    throw noRoute(request);
  });

  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    reply.header('link', '</docs>; rel="service-doc", </openapi.json>; rel="service-desc"').header('vary', 'accept');
    if (prefersHtml(request.headers.accept)) {
      const { html, nonce } = homePage();
      return reply.header('content-security-policy', homeCsp(nonce)).header('x-content-type-options', 'nosniff').type('text/html; charset=utf-8').send(html);
    }
    return {
      service: 'merchant-delivery-service',
      docs: '/docs',
      openapi: '/openapi.json',
      tokenEndpoint: '/auth/token',
      discovery: '/.well-known/oauth-authorization-server',
    };
  });
}

const pathOf = (request: FastifyRequest): string => {
  const url = request.url;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
};

/** "/warehouses/:id" -> ^/warehouses/[^/]+$; "/docs/*" -> ^/docs/.*$ */
function routePattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*';
      if (segment.startsWith(':')) return '[^/]+';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${source}$`);
}

const UUID_ANY_CASE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

type Pointer = string[];
interface SchemaNode {
  type?: string;
  format?: string;
  properties?: Record<string, SchemaNode>;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  allOf?: SchemaNode[];
}

/** Where a schema has `format: uuid` string fields (through nested objects and unions). */
function uuidPointers(schema: SchemaNode | undefined, at: Pointer = [], depth = 0): Pointer[] {
  if (!schema || typeof schema !== 'object' || depth > 8) return [];
  if (schema.format === 'uuid') return [at];
  const out: Pointer[] = [];
  for (const [key, child] of Object.entries(schema.properties ?? {})) out.push(...uuidPointers(child, [...at, key], depth + 1));
  for (const child of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) out.push(...uuidPointers(child, at, depth + 1));
  return out;
}

/** Adds a preValidation step that lower-cases the route's uuid fields (path parameters and body), so validation and lookups see the canonical id. */
function addUuidNormalisation(route: RouteOptions): void {
  const schema = route.schema as { params?: SchemaNode; body?: SchemaNode } | undefined;
  const params = uuidPointers(schema?.params);
  const body = uuidPointers(schema?.body);
  if (params.length === 0 && body.length === 0) return;
  const normalise = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    for (const p of params) lowerCaseAt(request.params, p);
    for (const p of body) lowerCaseAt(request.body, p);
    done();
  };
  const existing = route.preValidation;
  route.preValidation = existing === undefined ? [normalise] : [normalise, ...(Array.isArray(existing) ? existing : [existing])];
}

function lowerCaseAt(root: unknown, pointer: Pointer): void {
  let parent: unknown = root;
  for (let i = 0; i < pointer.length - 1; i++) {
    if (parent === null || typeof parent !== 'object' || !Object.hasOwn(parent, pointer[i])) return;
    parent = (parent as Record<string, unknown>)[pointer[i]];
  }
  const key = pointer[pointer.length - 1];
  if (parent === null || typeof parent !== 'object' || Array.isArray(parent) || !Object.hasOwn(parent, key)) return;
  const record = parent as Record<string, unknown>;
  const value = record[key];
  if (typeof value === 'string' && UUID_ANY_CASE.test(value)) record[key] = value.toLowerCase();
}
