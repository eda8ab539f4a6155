import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { firstDifference, OPENAPI_PATH, renderOpenApi } from '../scripts/openapi.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { checkResponse, compileDocumentSchema, documentAjv, documentedOperations, loadOpenApi } from './helpers/contract.ts';

/** Operations that cannot answer a client error (no parameters, body or credentials); see .redocly.lint-ignore.yaml. */
const NO_CLIENT_ERRORS = new Set(['GET /healthz', 'GET /readyz', 'GET /.well-known/oauth-authorization-server']);

/** Operations that also answer HTML (for browsers), by content negotiation. */
const HTML_OPERATIONS = new Set(['GET /track/{trackingCode}']);

const EXPECTED_OPERATIONS = [
  'GET /healthz',
  'GET /readyz',
  'POST /auth/token',
  'GET /.well-known/oauth-authorization-server',
  'GET /warehouses',
  'POST /warehouses',
  'GET /warehouses/{id}',
  'PUT /warehouses/{id}',
  'POST /options',
  'POST /transfer',
  'GET /transfer/{transferId}',
  'GET /transfer',
  'GET /transfer/{transferId}/events',
  'POST /transfer/{transferId}/cancel',
  'POST /sandbox/transfer/{transferId}/advance',
  'GET /balance',
  'GET /courier/status',
  'PUT /courier/status',
  'POST /courier/location',
  'GET /courier/jobs',
  'GET /courier/jobs/current',
  'POST /courier/jobs/{transferId}/accept',
  'POST /courier/jobs/{transferId}/release',
  'POST /courier/jobs/{transferId}/pickup',
  'POST /courier/jobs/{transferId}/deliver',
  'POST /courier/jobs/{transferId}/fail',
  'POST /courier/jobs/{transferId}/return',
  'GET /courier/offers',
  'GET /courier/offers/stream',
  'POST /courier/offers/{offerId}/accept',
  'POST /courier/offers/{offerId}/decline',
  'POST /webhook-endpoints',
  'GET /webhook-endpoints',
  'GET /webhook-endpoints/{id}',
  'PUT /webhook-endpoints/{id}',
  'DELETE /webhook-endpoints/{id}',
  'POST /webhook-endpoints/{id}/rotate-secret',
  'POST /webhook-endpoints/{id}/test',
  'GET /webhook-endpoints/{id}/attempts',
  'POST /webhook-endpoints/{id}/replay',
  'POST /webhook-endpoints/{id}/redeliver',
  'GET /track/{trackingCode}',
];

describe('the committed OpenAPI document (openapi.json)', () => {
  test('matches the route schemas (no drift): run npm run openapi after changing a route', async () => {
    const generated = await renderOpenApi();
    let committed = '';
    try {
      committed = readFileSync(OPENAPI_PATH, 'utf8');
    } catch {
      assert.fail('openapi.json is missing: run npm run openapi and commit it');
    }
    if (committed !== generated) {
      assert.fail(
        `openapi.json is out of date with the route schemas: run npm run openapi and commit openapi.json.\nFirst difference at ${firstDifference(committed, generated)}`,
      );
    }
  });

  test('documents every operation of the interface, and nothing else', () => {
    const operations = documentedOperations().map((o) => `${o.method} ${o.path}`);
    assert.deepEqual([...operations].sort(), [...EXPECTED_OPERATIONS].sort());
  });

  test('every operation has a unique operationId, a summary, a description, tags and an explicit security requirement', () => {
    const document = loadOpenApi();
    const schemes = Object.keys((document.components as { securitySchemes: Record<string, unknown> }).securitySchemes);
    const ids = new Set<string>();
    for (const { method, path, operation } of documentedOperations(document)) {
      const name = `${method} ${path}`;
      assert.match(String(operation.operationId ?? ''), /^[a-z][A-Za-z]+$/, `${name}: operationId`);
      assert.ok(!ids.has(operation.operationId as string), `${name}: duplicate operationId ${operation.operationId}`);
      ids.add(operation.operationId as string);
      assert.ok(String(operation.summary ?? '').length > 3, `${name}: summary`);
      assert.ok(String(operation.description ?? '').length > 20, `${name}: description`);
      assert.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${name}: tags`);
      const security = operation.security as Array<Record<string, unknown>> | undefined;
      assert.ok(Array.isArray(security), `${name}: security must be explicit ([] for public operations)`);
      for (const requirement of security)
        for (const scheme of Object.keys(requirement)) assert.ok(schemes.includes(scheme), `${name}: unknown scheme ${scheme}`);
      const publicOperation = security.length === 0 || security.some((r) => Object.keys(r).length === 0);
      const bearer = security.some((r) => 'bearerAuth' in r || 'courierAuth' in r);
      if (!publicOperation) assert.ok(bearer, `${name}: a protected operation needs bearerAuth (merchants) or courierAuth (couriers)`);
      if (path.startsWith('/courier/')) assert.deepEqual(security, [{ courierAuth: [] }], `${name}: courier routes take courier tokens only`);
      if (bearer) assert.ok(operation.responses['401'], `${name}: a bearer-protected operation documents 401`);
    }
  });

  test('every request body, success response and error response carries examples that validate against their schemas', () => {
    const ajv = documentAjv();
    const holds = (schema: object, value: unknown, where: string) => {
      const validate = compileDocumentSchema(ajv, schema);
      assert.ok(validate(value), `${where}: the example does not match the schema: ${ajv.errorsText(validate.errors)}`);
    };
    type Media = { schema: object; example?: unknown; examples?: Record<string, { value: unknown }> };
    for (const { method, path, operation } of documentedOperations()) {
      const name = `${method} ${path}`;
      const body = operation.requestBody as { content: Record<string, Media> } | undefined;
      for (const [type, media] of Object.entries(body?.content ?? {})) {
        assert.ok(media.example !== undefined, `${name}: request body ${type} has no example`);
        holds(media.schema, media.example, `${name} request ${type}`);
      }
      const statuses = Object.keys(operation.responses);
      assert.ok(
        statuses.some((s) => s.startsWith('2')),
        `${name}: no success response`,
      );
      if (!NO_CLIENT_ERRORS.has(name))
        assert.ok(
          statuses.some((s) => s.startsWith('4')),
          `${name}: no 4xx response`,
        );
      assert.ok(statuses.includes('500'), `${name}: 500 INTERNAL_ERROR is not documented`);
      for (const [status, response] of Object.entries(operation.responses)) {
        const content = (response as { content?: Record<string, Media> }).content ?? {};
        if (status === '204') {
          assert.deepEqual(content, {}, `${name} 204 has no body`);
          continue;
        }
        assert.ok(Object.keys(content).length > 0, `${name} ${status}: no content`);
        for (const [type, media] of Object.entries(content)) {
          // The tracking page is for browsers too: an HTML representation beside the JSON one.
          if (type === 'text/html' && HTML_OPERATIONS.has(name)) {
            assert.ok(typeof media.example === 'string' && media.example.startsWith('<!doctype html>'), `${name} ${status}: HTML example`);
            continue;
          }
          // The offer stream is server-sent events: its example is one `offer` event.
          if (type === 'text/event-stream' && name === 'GET /courier/offers/stream') {
            assert.ok(typeof media.example === 'string' && media.example.startsWith('event: offer\n'), `${name} ${status}: event-stream example`);
            continue;
          }
          if (status.startsWith('2')) {
            assert.equal(type, 'application/json', `${name} ${status}`);
            assert.ok(media.example !== undefined, `${name} ${status}: success response has no example`);
            holds(media.schema, media.example, `${name} ${status}`);
            continue;
          }
          // RFC 6749 5.2: the token endpoint answers its errors as application/json (same problem fields plus `error`).
          const errorType = name === 'POST /auth/token' ? 'application/json' : 'application/problem+json';
          assert.equal(type, errorType, `${name} ${status}: error media type`);
          if (errorType === 'application/json' && status.startsWith('4')) {
            for (const example of Object.values(media.examples ?? {}))
              assert.ok((example.value as { error?: string }).error, `${name} ${status}: RFC 6749 error member`);
          }
          // The Problem component, with `type` narrowed to the codes of this status.
          const schema = media.schema as { allOf: Array<{ $ref?: string; properties?: { type: { enum: string[] } } }> };
          assert.equal(schema.allOf?.[0]?.$ref, '#/components/schemas/Problem', `${name} ${status}: the error body is a Problem`);
          const types = schema.allOf[1].properties!.type.enum;
          assert.ok(Array.isArray(types) && types.length > 0, `${name} ${status}: the problem type is not an enum`);
          assert.deepEqual(Object.keys(media.examples ?? {}).sort(), [...types].sort(), `${name} ${status}: one example per error type`);
          for (const [code, example] of Object.entries(media.examples ?? {})) {
            holds(media.schema, example.value, `${name} ${status} ${code}`);
            assert.equal((example.value as { status: number }).status, Number(status), `${name} ${status} ${code}: status`);
            assert.equal((example.value as { type: string }).type, code, `${name} ${status} ${code}: type`);
          }
        }
      }
    }
  });

  test('the shared schemas are named components, referenced by $ref (so generated clients get named types)', () => {
    const document = loadOpenApi();
    const schemas = (document.components as { schemas: Record<string, object> }).schemas;
    for (const name of [
      'Warehouse',
      'WarehouseInput',
      'Quote',
      'QuoteRequest',
      'Product',
      'Transfer',
      'TransferRequest',
      'CancelRequest',
      'Event',
      'Balance',
      'LedgerEntry',
      'Problem',
    ])
      assert.ok(schemas[name], `components.schemas.${name}`);
    const text = JSON.stringify(document);
    assert.doesNotMatch(text, /x-component|x-problem-of/, 'no annotation is left in the document');
    for (const name of Object.keys(schemas)) assert.ok(text.includes(`"#/components/schemas/${name}"`), `${name} is referenced`);
    const op = document.paths['/transfer'] as Record<string, any>;
    assert.deepEqual(op.post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/TransferRequest' });
    assert.deepEqual(op.post.responses['201'].content['application/json'].schema, { $ref: '#/components/schemas/Transfer' });
  });

  test('the contract check rejects what the document does not allow', () => {
    const json = 'application/json; charset=utf-8';
    const problem = 'application/problem+json; charset=utf-8';
    const rejects = (r: Parameters<typeof checkResponse>[0], message: RegExp) => assert.throws(() => checkResponse(r), message);
    rejects({ method: 'GET', path: '/warehouses', status: 418, contentType: json, bodyText: '[]' }, /status 418 is not documented for listWarehouses/);
    rejects({ method: 'GET', path: '/warehouses', status: 200, contentType: 'text/plain', bodyText: '[]' }, /content type "text\/plain" is not documented/);
    rejects({ method: 'GET', path: '/warehouses?limit=1', status: 200, contentType: json, bodyText: '[{"id":"x"}]' }, /\/0: missing required property "name"/);
    rejects(
      { method: 'DELETE', path: '/warehouses/x', status: 204, contentType: undefined, bodyText: '' },
      /method DELETE is not documented for \/warehouses\/\{id\}/,
    );
    rejects({ method: 'GET', path: '/somewhere', status: 200, contentType: json, bodyText: '{}' }, /the path is not documented/);
    rejects(
      {
        method: 'GET',
        path: '/warehouses',
        status: 401,
        contentType: problem,
        bodyText: JSON.stringify({ type: 'QUOTE_EXPIRED', title: 't', status: 401, detail: 'd', requestId: 'r' }),
      },
      /\/type: must be equal to one of the allowed values/,
    );
    // Accepted: a documented answer, the not-found handler for unknown routes, the undocumented docs page.
    checkResponse({ method: 'GET', path: '/warehouses', status: 200, contentType: json, bodyText: '[]' });
    checkResponse({
      method: 'GET',
      path: '/somewhere',
      status: 404,
      contentType: problem,
      bodyText: JSON.stringify({ type: 'ROUTE_NOT_FOUND', title: 'No such endpoint', status: 404, detail: 'No endpoint GET /somewhere', requestId: 'r' }),
    });
    checkResponse({ method: 'GET', path: '/docs/static/index.html', status: 200, contentType: 'text/html', bodyText: '<html>' });
  });
});

describe('GET /openapi.json', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp('sqlite');
  });
  after(async () => {
    await t?.close();
  });

  test('serves the committed document', async () => {
    const res = await t.request({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')));
  });

  test('a trailing slash where an operation ends in a path parameter (what Prism matches as that operation with the parameter empty) is a 404 ROUTE_NOT_FOUND that the operation documents', async () => {
    const document = loadOpenApi();
    const ajv = documentAjv(document);
    const matched = documentedOperations(document).filter(({ path }) => /\/\{[^}]+\}$/.test(path));
    assert.deepEqual(
      matched.map(({ method, path }) => `${method} ${path}`),
      [
        'GET /track/{trackingCode}',
        'GET /warehouses/{id}',
        'PUT /warehouses/{id}',
        'GET /transfer/{transferId}',
        'GET /webhook-endpoints/{id}',
        'PUT /webhook-endpoints/{id}',
        'DELETE /webhook-endpoints/{id}',
      ],
    );
    for (const { method, path, operation } of matched) {
      const url = path.replace(/\{[^}]+\}$/, '');
      const res = await t.app.inject({ method: method as 'GET', url, headers: { accept: 'application/json' } });
      const where = `${method} ${url}`;
      assert.equal(res.statusCode, 404, where);
      const body = res.json();
      assert.equal(body.type, 'ROUTE_NOT_FOUND', where);
      // Where the path without the slash exists (GET /warehouses), the detail names it; otherwise it points to /docs.
      assert.ok(
        [
          `No endpoint ${method} ${url}: remove the trailing slash (${method} ${url.slice(0, -1)})`,
          `No endpoint ${method} ${url}; the endpoints are listed at /docs`,
        ].includes(body.detail),
        body.detail,
      );
      const schema = operation.responses['404']?.content?.['application/problem+json']?.schema;
      assert.ok(schema, `${operation.operationId} documents a 404 problem`);
      const validate = compileDocumentSchema(ajv, schema);
      assert.ok(validate(body), `${operation.operationId}'s 404 allows ROUTE_NOT_FOUND: ${JSON.stringify(validate.errors)}`);
    }
  });

  test('an unknown route answers 404 ROUTE_NOT_FOUND, which the contract check accepts', async () => {
    const res = await t.request({ method: 'GET', url: '/no-such-endpoint', headers: { 'x-request-id': 'rid-404' } });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), {
      type: 'ROUTE_NOT_FOUND',
      title: 'No such endpoint',
      status: 404,
      detail: 'No endpoint GET /no-such-endpoint; the endpoints are listed at /docs',
      requestId: 'rid-404',
    });
  });
});
