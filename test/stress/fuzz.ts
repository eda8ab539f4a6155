import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { EXAMPLE_IDS } from '../../src/lib/schemas.ts';
import { createTestApp, warehouseBody } from '../helpers/app.ts';
import { checkContract, documentedOperations } from '../helpers/contract.ts';
import { quoteBody, transferBody } from '../helpers/server-process.ts';
import type { StoreName } from '../helpers/stores.ts';
import { type Answer, assertProblem, stateDigest, tallyInto } from './common.ts';

/**
 * Family 1, fuzzing: fast-check generates requests over every endpoint (those listed below and any
 * other operation of openapi.json), each a valid request bent one
 * or more ways (wrong types, extreme numbers, long and ill-formed strings, __proto__ and duplicate
 * keys, deep nesting, missing fields, odd headers, media types, methods, paths and ids), sent through
 * the real pipeline (app.inject). Asserted for every request: no 5xx; every 4xx a valid problem body
 * that the OpenAPI contract documents; after a refused request the store-wide state digest is unchanged.
 */

export interface FuzzFigures {
  store: StoreName;
  requests: number;
  seed: number;
  statuses: Record<string, number>;
  byEndpoint: Record<string, number>;
  refusedChecked: number;
  ms: number;
}

interface Fixture {
  wid: string;
  otherWid: string;
  quoteId: string;
  quoteTransferId: string;
  transferId: string;
  otherTransferId: string;
  tokenA: string;
  tokenB: string;
  clientId: string;
  clientSecret: string;
}

type Body = { kind: 'json'; value: unknown } | { kind: 'raw'; text: string | Buffer } | { kind: 'none' };

interface Endpoint {
  name: string;
  method: string;
  path: (f: Fixture, id: string) => string;
  /** A valid body for it, if it takes one. */
  body?: (f: Fixture) => Record<string, unknown>;
  /** Which id a `{id}` in the path stands for, by default. */
  id?: (f: Fixture) => string;
}

const ENDPOINTS: Endpoint[] = [
  {
    name: 'POST /auth/token',
    method: 'POST',
    path: () => '/auth/token',
    body: (f) => ({ grant_type: 'client_credentials', client_id: f.clientId, client_secret: f.clientSecret }),
  },
  { name: 'GET /warehouses', method: 'GET', path: () => '/warehouses' },
  { name: 'POST /warehouses', method: 'POST', path: () => '/warehouses', body: () => warehouseBody() },
  { name: 'GET /warehouses/{id}', method: 'GET', path: (_f, id) => `/warehouses/${id}`, id: (f) => f.wid },
  { name: 'PUT /warehouses/{id}', method: 'PUT', path: (_f, id) => `/warehouses/${id}`, id: (f) => f.wid, body: () => warehouseBody() },
  { name: 'POST /options', method: 'POST', path: () => '/options', body: (f) => quoteBody(f.wid) },
  { name: 'POST /transfer', method: 'POST', path: () => '/transfer', body: (f) => transferBody(f.quoteId) },
  { name: 'GET /transfer/{transferId}', method: 'GET', path: (_f, id) => `/transfer/${id}`, id: (f) => f.transferId },
  { name: 'GET /healthz', method: 'GET', path: () => '/healthz' },
  { name: 'GET /readyz', method: 'GET', path: () => '/readyz' },
  { name: 'GET /.well-known/oauth-authorization-server', method: 'GET', path: () => '/.well-known/oauth-authorization-server' },
  { name: 'GET /', method: 'GET', path: () => '/' },
];

/**
 * Every operation of the committed OpenAPI document that ENDPOINTS does not list yet (a new endpoint,
 * e.g. a transfer listing or a cancel) is fuzzed too: its valid body is the document's request example,
 * with the example ids replaced by the fixture's, and its path parameters are the fixture's ids.
 */
export function documentedEndpoints(): Endpoint[] {
  const known = new Set(ENDPOINTS.map((e) => e.name));
  const out: Endpoint[] = [];
  for (const { method, path, operation } of documentedOperations()) {
    const name = `${method} ${path}`;
    if (known.has(name) || !['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) continue;
    const content = (operation as { requestBody?: { content?: Record<string, { example?: unknown }> } }).requestBody?.content;
    const example = content?.['application/json']?.example;
    const param = /\{([^}]+)\}/.exec(path)?.[1];
    out.push({
      name,
      method,
      path: (_f, id) => path.replace(/\{[^}]+\}/g, id),
      ...(param ? { id: (f: Fixture) => (/transfer/i.test(param) ? f.transferId : /quote|matchmaking/i.test(param) ? f.quoteId : f.wid) } : {}),
      ...(example && typeof example === 'object' ? { body: (f: Fixture) => withFixtureIds(example, f) as Record<string, unknown> } : {}),
    });
  }
  return out;
}

function withFixtureIds(example: unknown, f: Fixture): unknown {
  const ids: Record<string, string> = { [EXAMPLE_IDS.warehouse]: f.wid, [EXAMPLE_IDS.quote]: f.quoteId, [EXAMPLE_IDS.transfer]: f.transferId };
  return JSON.parse(JSON.stringify(example), (_k, v) => (typeof v === 'string' && Object.hasOwn(ids, v) ? ids[v] : v));
}

// ---- values that break things

const extremeNumber = fc.oneof(
  fc.constantFrom(0, -0, 1e308, -1e308, 5e-324, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e21, 90.0000001, -180.0000001, 0.1 + 0.2),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => ({ __raw: n.toString() })), // a number JSON.stringify cannot write
);
const weirdString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }), // includes lone surrogates
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', 'a\nb', '\t', '\u202e', '\ufeff', '%00', "' or 1=1 --", '<script>', '../../etc/passwd', '\ud800', 'u\udfff'),
  fc.integer({ min: 201, max: 70_000 }).map((n) => 'x'.repeat(n)),
  fc.uuid().map((u) => u.toUpperCase()),
);
const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  extremeNumber,
  weirdString,
  fc.constantFrom(null, true, false, [], {}, [null], { __proto__: null }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Replaces, deletes or adds one member at a random depth of the body. */
function mutate(body: Record<string, unknown>, path: number[], op: 'set' | 'delete' | 'add', value: unknown, key: string): unknown {
  const clone = structuredClone(body) as Record<string, unknown>;
  let node: Record<string, unknown> = clone;
  for (const step of path) {
    const keys = Object.keys(node);
    if (keys.length === 0) break;
    const k = keys[step % keys.length];
    const child = node[k];
    if (child === null || typeof child !== 'object') {
      if (op === 'set') node[k] = value;
      else if (op === 'delete') delete node[k];
      else node[key] = value;
      return clone;
    }
    node = child as Record<string, unknown>;
  }
  if (op === 'add') node[key] = value;
  else {
    const keys = Object.keys(node);
    if (keys.length > 0) {
      const k = keys[(path[0] ?? 0) % keys.length];
      if (op === 'set') node[k] = value;
      else delete node[k];
    }
  }
  return clone;
}

const stringify = (value: unknown): string =>
  JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)).replace(/\{"__raw":"(-?\d+)"\}/g, '$1');

const bodyArb = (valid: Record<string, unknown> | undefined): fc.Arbitrary<Body> => {
  const base = valid ?? {};
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant<Body>({ kind: 'json', value: base }) },
    {
      weight: 6,
      arbitrary: fc
        .tuple(
          fc.array(fc.nat(20), { maxLength: 3 }),
          fc.constantFrom('set', 'delete', 'add') as fc.Arbitrary<'set' | 'delete' | 'add'>,
          weirdValue,
          fc.string({ maxLength: 12 }),
        )
        .map(([path, op, value, key]): Body => ({ kind: 'raw', text: stringify(mutate(base, path, op, value, key)) })),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value): Body => ({ kind: 'json', value })) },
    {
      weight: 3,
      arbitrary: fc
        .constantFrom<(text: string) => string>(
          (t) => t.replace('{', '{"__proto__":{"isAdmin":true},'),
          (t) => t.replace('{', '{"constructor":{"prototype":{"isAdmin":true}},'),
          (t) => t.replace('{', '{"__pro\\u0074o__":{"x":1},'),
          (t) => t.replace(/^\{"(\w+)":/, '{"$1":"first","$1":'), // duplicate keys: the last one wins, as in JSON.parse
          (t) => t.slice(0, Math.max(1, Math.floor(t.length / 2))), // truncated
          (t) => `${t},`,
          (t) => `\ufeff${t}`,
          () => `${'['.repeat(5000)}${']'.repeat(5000)}`,
          () => `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`,
          (t) => t.replace(/"[^"]*"/, '"\\ud800"'),
          () => '',
          () => 'null',
          () => '[]',
          () => '"text"',
          () => '1e999',
          () => 'NaN',
        )
        .map((f): Body => ({ kind: 'raw', text: f(JSON.stringify(base)) })),
    },
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ maxLength: 64 })
        .map((bytes): Body => ({ kind: 'raw', text: Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bytes), Buffer.from('"}')]) })),
    },
    { weight: 1, arbitrary: fc.constant<Body>({ kind: 'none' }) },
  );
};

const contentType = fc.constantFrom(
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json; charset=latin1',
  'application/JSON',
  'application/json;;;',
  'application/merge-patch+json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'text/plain',
  'text/json',
  '*/*',
  '',
  undefined,
);

const authorization = (f: Fixture) =>
  fc.constantFrom(
    `Bearer ${f.tokenA}`,
    `Bearer ${f.tokenA}`,
    `Bearer ${f.tokenA}`,
    `Bearer ${f.tokenB}`,
    `Bearer ${f.tokenA}=`,
    `bearer ${f.tokenA}`,
    `Bearer  ${f.tokenA} `,
    `Bearer ${f.tokenA.slice(0, -1)}`,
    `Bearer ${f.tokenA.split('.').reverse().join('.')}`,
    `Basic ${Buffer.from(`${f.clientId}:${f.clientSecret}`).toString('base64')}`,
    'Bearer',
    'Bearer \u00ff\u00fe',
    'Token abc',
    'Bearer a.b.c',
    undefined,
  );

const idFor = (f: Fixture, valid: string) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(valid) },
    { weight: 1, arbitrary: fc.constant(valid.toUpperCase()) },
    { weight: 1, arbitrary: fc.constantFrom(f.otherWid, f.otherTransferId, f.quoteTransferId, f.quoteId) },
    { weight: 1, arbitrary: fc.uuid() },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom('', '%zz', '%00', '%ED%A0%80', '..', '%2F', 'a'.repeat(150), `urn:uuid:${valid}`, `{${valid}}`, `${valid}/`, `${valid}?x=1`),
        fc.string({ maxLength: 40 }).map(encodeURIComponent),
      ),
    },
  );

const query = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc
      .record(
        {
          limit: fc.oneof(fc.integer({ min: -5, max: 2000 }).map(String), fc.constantFrom('1.5', 'abc', '', '1e3', '0x10', '%00')),
          status: fc.constantFrom('ACTIVE', 'DISABLED', 'active', '', 'BOTH'),
          cursor: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('x'.repeat(300), '%ED%A0%80')),
          extra: fc.string({ maxLength: 5 }),
        },
        { requiredKeys: [] },
      )
      .map(
        (q) =>
          `?${Object.entries(q)
            .map(([k, v]) => `${k}=${v.startsWith('%') ? v : encodeURIComponent(v)}`)
            .join('&')}`,
      ),
  },
  { weight: 1, arbitrary: fc.constantFrom('?limit=1&limit=2', '?__proto__=1', '?status[]=ACTIVE', '?%zz', `?${'a=1&'.repeat(2000)}`) },
);

const method = (m: string) =>
  fc.oneof({ weight: 12, arbitrary: fc.constant(m) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD') });

interface GeneratedRequest {
  endpoint: string;
  inject: InjectOptions;
}

function requestArb(f: Fixture): fc.Arbitrary<GeneratedRequest> {
  return fc.constantFrom(...ENDPOINTS, ...documentedEndpoints()).chain((e) =>
    fc
      .record({
        method: method(e.method),
        id: e.id ? idFor(f, e.id(f)) : fc.constant(''),
        query: e.name === 'GET /warehouses' ? query : fc.oneof({ weight: 9, arbitrary: fc.constant('') }, { weight: 1, arbitrary: query }),
        trailingSlash: fc.oneof({ weight: 15, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        body: e.body
          ? bodyArb(e.body(f))
          : fc.oneof({ weight: 5, arbitrary: fc.constant<Body>({ kind: 'none' }) }, { weight: 1, arbitrary: bodyArb({ x: 1 }) }),
        contentType: contentType,
        authorization: authorization(f),
        idempotencyKey: fc.oneof(
          { weight: 6, arbitrary: fc.constant(undefined) },
          { weight: 2, arbitrary: fc.uuid() },
          { weight: 1, arbitrary: fc.constantFrom('', ' ', 'k'.repeat(300), 'ключ', 'fixed-key') },
        ),
        odd: fc.subarray([
          ['x-request-id', 'bad id\twith tab'],
          ['x-request-id', 'r'.repeat(200)],
          ['content-encoding', 'gzip'],
          ['accept', 'text/html'],
          ['x-forwarded-for', '203.0.113.9, 10.0.0.1'],
          ['transfer-encoding', 'chunked'],
          ['x-http-method-override', 'DELETE'],
          ['expect', '100-continue'],
        ] as Array<[string, string]>),
      })
      .map((r): GeneratedRequest => {
        const headers: Record<string, string> = {};
        if (r.authorization !== undefined) headers.authorization = r.authorization;
        if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
        for (const [k, v] of r.odd) if (k !== 'transfer-encoding') headers[k] = v;
        let payload: string | Buffer | undefined;
        if (r.body.kind === 'json') payload = stringify(r.body.value);
        else if (r.body.kind === 'raw') payload = r.body.text;
        if (r.contentType !== undefined && (payload !== undefined || r.contentType !== '')) headers['content-type'] = r.contentType;
        const path = e.path(f, r.id) + (r.trailingSlash ? '/' : '');
        return { endpoint: e.name, inject: { method: r.method as 'GET', url: path + r.query, headers, ...(payload === undefined ? {} : { payload }) } };
      }),
  );
}

export async function fuzzFamily(store: StoreName, runs: number, seed: number): Promise<FuzzFigures> {
  // Limits high enough never to refuse: the fuzzer looks for broken properties, not floods (the limits,
  // their headers and their 429s have their own tests in test/rate-limits.test.ts).
  const t = await createTestApp(store, {
    TOKEN_FAILURES_PER_ADDRESS: '1000000',
    TOKEN_FAILURES_PER_CLIENT: '1000000',
    MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000',
    COURIER_RATE_LIMIT_PER_MINUTE: '1000000',
    TRACKING_RATE_LIMIT_PER_MINUTE: '1000000',
  });
  const started = performance.now();
  const figures: FuzzFigures = { store, requests: 0, seed, statuses: {}, byEndpoint: {}, refusedChecked: 0, ms: 0 };
  try {
    const a = await t.merchant('Fuzz A', '100000');
    const b = await t.merchant('Fuzz B', '100000');
    const tokenA = await t.token(a);
    const tokenB = await t.token(b);
    const wid = (await t.as(tokenA, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json().id;
    const otherWid = (await t.as(tokenB, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json().id;
    const quote = (await t.as(tokenA, { method: 'POST', url: '/options', payload: quoteBody(wid) })).json();
    const usedQuote = (await t.as(tokenA, { method: 'POST', url: '/options', payload: quoteBody(wid, 1) })).json();
    const transferId = (await t.as(tokenA, { method: 'POST', url: '/transfer', payload: transferBody(usedQuote.id) })).json().id;
    const otherQuote = (await t.as(tokenB, { method: 'POST', url: '/options', payload: quoteBody(otherWid) })).json();
    const otherTransferId = (await t.as(tokenB, { method: 'POST', url: '/transfer', payload: transferBody(otherQuote.id) })).json().id;
    const f: Fixture = {
      wid,
      otherWid,
      quoteId: quote.id,
      quoteTransferId: quote.transfer_id,
      transferId,
      otherTransferId,
      tokenA,
      tokenB,
      clientId: a.clientId,
      clientSecret: a.clientSecret,
    };

    await fc.assert(
      fc.asyncProperty(requestArb(f), async (req) => {
        const before = await stateDigest(t.database);
        const res = await t.app.inject(req.inject);
        figures.requests++;
        tallyInto(figures.statuses, res.statusCode);
        tallyInto(figures.byEndpoint, req.endpoint);
        const answer: Answer = { status: res.statusCode, headers: res.headers, body: res.body };
        assert.ok(res.statusCode < 500, `5xx: ${res.statusCode} ${res.body.slice(0, 300)}`);
        checkContract(t.app, req.inject, res);
        if (res.statusCode >= 400) {
          // The tracking page answers browsers with its HTML 404 page (documented; the contract check above read it).
          const htmlPage = String(req.inject.url).startsWith('/track/') && /^text\/html/.test(String(res.headers['content-type'] ?? ''));
          if (req.inject.method !== 'HEAD' && !htmlPage) assertProblem(String(req.inject.method), String(req.inject.url), answer);
          assert.equal(await stateDigest(t.database), before, `a refused request (${res.statusCode}) changed nothing`);
          figures.refusedChecked++;
        }
      }),
      { numRuns: runs, seed, endOnFailure: true, verbose: 1 },
    );
  } finally {
    figures.ms = Math.round(performance.now() - started);
    await t.close();
  }
  return figures;
}
