import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildApp } from '../src/app.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { describeEachStore, TEST_SIGNING_KEYS as TOKEN_SIGNING_KEYS, warehouseBody, whileWarehouseListFails } from './helpers/app.ts';
import { paidTransfer, setup } from './helpers/flow.ts';
import { createStore, migrateForTest, STORES } from './helpers/stores.ts';

describeEachStore('HTTP plumbing', (ctx) => {
  test('X-Request-Id: a sane incoming id is echoed, an unsafe one replaced, a missing one generated', async () => {
    const t = ctx();
    const echoed = await t.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'merchant-abc_123:7' } });
    assert.equal(echoed.headers['x-request-id'], 'merchant-abc_123:7');
    const unsafe = await t.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'bad id\twith spaces' } });
    assert.match(unsafe.headers['x-request-id'] as string, /^[0-9a-f-]{36}$/);
    const tooLong = await t.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'a'.repeat(200) } });
    assert.match(tooLong.headers['x-request-id'] as string, /^[0-9a-f-]{36}$/);
    const a = await t.request({ method: 'GET', url: '/healthz' });
    const b = await t.request({ method: 'GET', url: '/healthz' });
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
  });

  test('415 UNSUPPORTED_MEDIA_TYPE for a non-JSON body; nothing written', async () => {
    const t = ctx();
    const m = await t.merchant();
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await t.as(m, { method: 'POST', url: '/warehouses', headers: { 'content-type': contentType, 'x-request-id': 'ct' }, payload: 'name=x' });
      assert.equal(res.statusCode, 415, contentType);
      assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
      assert.deepEqual(res.json(), {
        type: 'UNSUPPORTED_MEDIA_TYPE',
        title: 'Unsupported media type',
        status: 415,
        detail: 'Send request bodies as application/json',
        requestId: 'ct',
      });
    }
    assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses' })).json(), []);
  });

  test('413 PAYLOAD_TOO_LARGE above the body limit', async () => {
    const t = ctx();
    const m = await t.merchant();
    const res = await t.as(m, {
      method: 'POST',
      url: '/warehouses',
      headers: { 'x-request-id': 'big' },
      payload: warehouseBody({ address: 'x'.repeat(70_000) }),
    });
    assert.equal(res.statusCode, 413);
    assert.deepEqual(res.json(), {
      type: 'PAYLOAD_TOO_LARGE',
      title: 'Request body too large',
      status: 413,
      detail: 'The request body is larger than the limit',
      requestId: 'big',
    });
  });

  test('a charset other than UTF-8 or a compressed body is 415, not misread', async () => {
    const t = ctx();
    const m = await t.merchant();
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'content-type': 'application/json; charset=latin1' }, 'Send request bodies as UTF-8, not latin1'],
      [{ 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'Content-Encoding gzip is not supported; send the body uncompressed'],
    ];
    for (const [headers, detail] of cases) {
      const res = await t.as(m, { method: 'POST', url: '/warehouses', headers, payload: JSON.stringify(warehouseBody()) });
      assert.equal(res.statusCode, 415);
      assert.equal(res.json().detail, detail);
    }
    const utf8 = await t.as(m, {
      method: 'POST',
      url: '/warehouses',
      headers: { 'content-type': 'application/json; charset=UTF-8' },
      payload: JSON.stringify(warehouseBody()),
    });
    assert.equal(utf8.statusCode, 201);
  });

  test('an invalid Idempotency-Key header is reported at /headers/idempotency-key', async () => {
    const t = ctx();
    const m = await t.merchant();
    const res = await t.as(m, { method: 'POST', url: '/warehouses', headers: { 'idempotency-key': 'k'.repeat(256) }, payload: warehouseBody() });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json().errors, [{ path: '/headers/idempotency-key', message: 'must NOT have more than 255 characters' }]);
  });

  test('empty JSON body and a missing body are 400 VALIDATION_FAILED', async () => {
    const t = ctx();
    const m = await t.merchant();
    const empty = await t.as(m, { method: 'POST', url: '/warehouses', headers: { 'content-type': 'application/json' }, payload: '' });
    assert.equal(empty.statusCode, 400);
    assert.equal(empty.json().type, 'VALIDATION_FAILED');
    const none = await t.as(m, { method: 'POST', url: '/warehouses' });
    assert.equal(none.statusCode, 400);
    assert.equal(none.json().type, 'VALIDATION_FAILED');
  });

  test('prototype pollution attempts are refused', async () => {
    const t = ctx();
    const m = await t.merchant();
    const res = await t.as(m, {
      method: 'POST',
      url: '/warehouses',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(warehouseBody()).replace('{', '{"__proto__":{"isAdmin":true},'),
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().type, 'VALIDATION_FAILED');
    assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses' })).json(), [], 'nothing written');
  });

  test('malformed URLs and over-long path parameters get the same envelope', async () => {
    const t = ctx();
    const m = await t.merchant();
    const badEscape = await t.as(m, { method: 'GET', url: '/warehouses/%zz', headers: { 'x-request-id': 'bad-url' } });
    assert.equal(badEscape.statusCode, 400);
    assert.equal(badEscape.headers['x-request-id'], 'bad-url');
    assert.match(badEscape.headers['content-type'] as string, /^application\/problem\+json/);
    assert.deepEqual(badEscape.json(), {
      type: 'VALIDATION_FAILED',
      title: 'Request validation failed',
      status: 400,
      detail: 'The URL is not valid (bad %-escape)',
      requestId: 'bad-url',
      errors: [{ path: '', message: 'The URL is not valid (bad %-escape)' }],
    });
    const long = await t.as(m, { method: 'GET', url: `/transfer/${'a'.repeat(150)}` });
    assert.equal(long.statusCode, 400);
    assert.equal(long.json().detail, 'A path parameter is too long');
  });

  test('X-Forwarded-For without TRUST_PROXY is warned about once', async () => {
    const t = ctx();
    const before = t.logs.length;
    for (let i = 0; i < 3; i++) await t.request({ method: 'GET', url: '/healthz', headers: { 'x-forwarded-for': '203.0.113.9' } });
    const warnings = t.logs.slice(before).filter((l) => l.includes('X-Forwarded-For received while TRUST_PROXY=false'));
    assert.equal(warnings.length, 1);
  });

  test('unknown route: 404 ROUTE_NOT_FOUND as problem+json', async () => {
    const t = ctx();
    const res = await t.request({ method: 'GET', url: '/nope?x=1', headers: { 'x-request-id': 'nr' } });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), {
      type: 'ROUTE_NOT_FOUND',
      title: 'No such endpoint',
      status: 404,
      detail: 'No endpoint GET /nope; the endpoints are listed at /docs',
      requestId: 'nr',
    });
  });

  test('health: /healthz and /readyz', async () => {
    const t = ctx();
    for (const url of ['/healthz', '/readyz']) {
      const res = await t.request({ method: 'GET', url });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { status: 'ok' });
    }
  });

  test('the OpenAPI 3.1 document and the docs page are served without any CDN', async () => {
    const t = ctx();
    const doc = await t.request({ method: 'GET', url: '/openapi.json' });
    assert.equal(doc.statusCode, 200);
    const spec = doc.json();
    assert.equal(spec.openapi, '3.1.0');
    for (const [path, method] of [
      ['/auth/token', 'post'],
      ['/warehouses', 'get'],
      ['/warehouses', 'post'],
      ['/warehouses/{id}', 'get'],
      ['/warehouses/{id}', 'put'],
      ['/options', 'post'],
      ['/transfer', 'post'],
      ['/transfer/{transferId}', 'get'],
    ]) {
      assert.ok(spec.paths[path]?.[method], `${method} ${path} documented`);
    }
    const page = await t.request({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /text\/html/);
    assert.doesNotMatch(page.body, /https?:\/\/(?!127\.0\.0\.1|localhost)[a-z0-9.-]+\.[a-z]{2,}\/[^"']*\.(js|css)/i, 'no external scripts or styles');
  });
});

describeEachStore(
  'bodies on operations without a request body',
  (ctx) => {
    test('an empty body sent with content-type: application/json is no body: the move and the rotation succeed; an operation with a body still refuses it (400)', async () => {
      const t = ctx();
      const { m, w } = await setup(t);
      const tr = await paidTransfer(t, m, w.id);
      const c = await t.courier('Ivan Petrov', { lat: 55.7575, lng: 37.6136 });
      const json = { 'content-type': 'application/json' };
      const accepted = await t.as(c, { method: 'POST', url: `/courier/jobs/${tr.id}/accept`, headers: json, payload: '' });
      assert.equal(accepted.statusCode, 200, accepted.body);
      assert.equal(accepted.json().state, 'courierAssigned');
      const ep = (await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/hook' } })).json();
      const rotated = await t.as(m, { method: 'POST', url: `/webhook-endpoints/${ep.id}/rotate-secret`, headers: json, payload: '' });
      assert.equal(rotated.statusCode, 200, rotated.body);
      assert.notEqual(rotated.json().secret, ep.secret);
      const before = await t.as(m, { method: 'GET', url: '/warehouses' });
      for (const url of ['/warehouses', '/options', '/transfer', `/transfer/${tr.id}/cancel`]) {
        const empty = await t.as(m, { method: 'POST', url, headers: json, payload: '' });
        assert.equal(empty.statusCode, 400, url);
        assert.deepEqual(
          { ...(empty.json() as Record<string, unknown>), requestId: undefined },
          {
            type: 'VALIDATION_FAILED',
            title: 'Request validation failed',
            status: 400,
            detail: 'The request body is empty; send a JSON object',
            requestId: undefined,
            errors: [{ path: '', message: 'must be a JSON object' }],
          },
        );
      }
      assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses' })).json(), before.json(), 'nothing written');
    });

    test('an Idempotency-Key on an operation without a body ignores any body sent (even 5,000 levels deep) and junk query parameters keep their meaning', async () => {
      const t = ctx();
      const { m } = await setup(t);
      const ep = (await t.as(m, { method: 'POST', url: '/webhook-endpoints', payload: { url: 'http://127.0.0.1:9/hook' } })).json();
      const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
      const url = `/webhook-endpoints/${ep.id}/rotate-secret?limit=663&status=BOTH&cursor=%ED%A0%80&extra=e0Tb`;
      const headers = { 'idempotency-key': 'rotate-deep-1', 'content-type': 'application/json; charset=UTF-8' };
      const first = await t.as(m, { method: 'POST', url, headers, payload: deep });
      assert.equal(first.statusCode, 200, first.body);
      assert.ok(!t.logs.some((l) => l.includes('Maximum call stack')), 'no stack overflow');
      // The body is not part of what the operation reads, so another body with the same key replays the answer.
      const again = await t.as(m, { method: 'POST', url, headers, payload: '{"b":2}' });
      assert.equal(again.statusCode, 200);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.json(), first.json());
      // Another query is another request: the key's reuse is refused.
      const other = await t.as(m, { method: 'POST', url: `/webhook-endpoints/${ep.id}/rotate-secret`, headers, payload: deep });
      assert.equal(other.statusCode, 422);
      assert.equal(other.json().type, 'IDEMPOTENCY_KEY_REUSED');
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'true' },
);

describeEachStore('internal errors', (ctx) => {
  test('an unexpected failure is a 500 INTERNAL_ERROR with no internals in the body, logged with the request id', async () => {
    const t = ctx();
    const m = await t.merchant();
    await whileWarehouseListFails(t, 'SELECT secret_hash FROM credentials -- boom', async () => {
      const res = await t.as(m, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'boom-1' } });
      assert.equal(res.statusCode, 500);
      assert.deepEqual(res.json(), {
        type: 'INTERNAL_ERROR',
        title: 'Internal error',
        status: 500,
        detail: 'An unexpected error occurred; report the requestId if it persists',
        requestId: 'boom-1',
      });
      assert.doesNotMatch(res.body, /SELECT|secret_hash|stack/);
      const logged = t.logs.find((l) => l.includes('boom-1') && l.includes('"level":50'));
      assert.ok(logged, 'the failure is logged at error level with the request id');
      assert.match(logged, /SELECT secret_hash FROM credentials -- boom/);
    });
  });
});

for (const storeName of STORES) {
  test(`[${storeName}] /readyz is 503 until the schema is migrated, then 200`, async () => {
    const store = await createStore(storeName);
    const database = openDatabase({ url: store.url, schema: store.schema });
    const app = await buildApp({
      config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', TOKEN_SIGNING_KEYS, ...store.env }),
      database,
      signingKeys: parseSigningKeys(TOKEN_SIGNING_KEYS),
    });
    try {
      const before = await app.inject({ method: 'GET', url: '/readyz', headers: { 'x-request-id': 'ready' } });
      assert.equal(before.statusCode, 503);
      assert.equal(before.headers['retry-after'], '1');
      assert.deepEqual(before.json(), {
        type: 'SERVICE_UNAVAILABLE',
        title: 'Service unavailable',
        status: 503,
        detail: 'The database schema is not migrated; run mds migrate',
        requestId: 'ready',
      });
      assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'liveness does not depend on the database');
      await migrateForTest(database);
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    } finally {
      await app.close();
      await database.close();
      await store.cleanup();
    }
  });
}
