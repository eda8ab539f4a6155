import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore, warehouseBody } from './helpers/app.ts';
import { quoteBody, transferBody } from './helpers/server-process.ts';

/** Integrator mistakes get answers that say what to do instead of misleading ones. */

describeEachStore('integrator mistakes', (ctx) => {
  test('trailing slash names the right path; 405 with Allow from the registered routes; GET / points to /docs', async () => {
    const t = ctx();
    const m = await t.merchant();
    const slashGet = await t.as(m, { method: 'GET', url: '/warehouses/', headers: { 'x-request-id': 'slash' } });
    assert.equal(slashGet.statusCode, 404);
    assert.deepEqual(slashGet.json(), {
      type: 'ROUTE_NOT_FOUND',
      title: 'No such endpoint',
      status: 404,
      detail: 'No endpoint GET /warehouses/: remove the trailing slash (GET /warehouses)',
      requestId: 'slash',
    });
    const slashPost = await t.as(m, { method: 'POST', url: '/warehouses/', payload: warehouseBody() });
    assert.equal(slashPost.statusCode, 404);
    assert.equal(slashPost.json().detail, 'No endpoint POST /warehouses/: remove the trailing slash (POST /warehouses)');
    const slashNoAuth = await t.request({ method: 'GET', url: '/warehouses/' });
    assert.equal(slashNoAuth.statusCode, 404, 'before authentication, like any routing answer');
    const transferSlash = await t.as(m, { method: 'GET', url: '/transfer/' });
    assert.equal(transferSlash.statusCode, 404, 'an empty id is no route, not a 400 about a uuid');
    assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses' })).json(), [], 'nothing created');

    const cases: Array<[string, string, string]> = [
      ['DELETE', '/transfer', 'POST'],
      ['GET', '/auth/token', 'POST'],
      ['DELETE', '/warehouses', 'GET, HEAD, POST'],
      ['PATCH', '/warehouses/01a20058-cb4a-7657-ba2b-fa105300957e', 'GET, HEAD, PUT'],
      ['POST', '/healthz', 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      const res = await t.request({ method: method as 'GET', url, headers: { 'x-request-id': 'm405' } });
      assert.equal(res.statusCode, 405, `${method} ${url}`);
      // Allow follows the registered routes: when GET /transfer (the listing) is added, it is listed too.
      const expected = url === '/transfer' ? String(res.headers.allow) : allow;
      assert.ok(expected.split(', ').includes(allow.split(', ')[0]), `${method} ${url}: Allow ${expected}`);
      assert.equal(res.headers.allow, expected);
      assert.deepEqual(res.json(), {
        type: 'METHOD_NOT_ALLOWED',
        title: 'Method not allowed',
        status: 405,
        detail: `${url} does not support ${method}; it supports ${expected}`,
        requestId: 'm405',
      });
    }
    const root = await t.request({ method: 'GET', url: '/' });
    assert.equal(root.statusCode, 200);
    assert.equal(root.headers.link, '</docs>; rel="service-doc", </openapi.json>; rel="service-desc"');
    assert.deepEqual(root.json(), {
      service: 'merchant-delivery-service',
      docs: '/docs',
      openapi: '/openapi.json',
      tokenEndpoint: '/auth/token',
      discovery: '/.well-known/oauth-authorization-server',
    });
    const nowhere = await t.request({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'nw' } });
    assert.equal(nowhere.json().detail, 'No endpoint GET /nowhere; the endpoints are listed at /docs');
  });

  test('an upper-case id is accepted and normalised (RFC 9562), in paths and bodies', async () => {
    const t = ctx();
    const m = await t.merchant('Upper', '1000');
    const created = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json();
    const upper = created.id.toUpperCase();
    const get = await t.as(m, { method: 'GET', url: `/warehouses/${upper}` });
    assert.equal(get.statusCode, 200);
    assert.deepEqual(get.json(), created);
    const put = await t.as(m, { method: 'PUT', url: `/warehouses/${upper}`, payload: warehouseBody({ name: 'Renamed' }) });
    assert.equal(put.json().id, created.id);
    const quote = await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(upper) });
    assert.equal(quote.statusCode, 201);
    const transfer = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(quote.json().id.toUpperCase()) });
    assert.equal(transfer.statusCode, 201);
    assert.equal(transfer.json().matchmakingId, quote.json().id);
    const read = await t.as(m, { method: 'GET', url: `/transfer/${transfer.json().id.toUpperCase()}` });
    assert.deepEqual(read.json(), transfer.json());
    const urn = await t.as(m, { method: 'GET', url: `/warehouses/urn:uuid:${created.id}` });
    assert.equal(urn.statusCode, 400, 'other spellings are still refused');
  });

  test("an unknown productKey lists the quote's keys; the quote's transfer_id as matchmakingId says to use its id", async () => {
    const t = ctx();
    const m = await t.merchant('Hints', '1000');
    const warehouseId = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json().id;
    const quote = (await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(warehouseId) })).json();
    const product = await t.as(m, {
      method: 'POST',
      url: '/transfer',
      headers: { 'x-request-id': 'pk' },
      payload: transferBody(quote.id, { productKey: 'cheapest' }),
    });
    assert.deepEqual(product.json(), {
      type: 'PRODUCT_NOT_AVAILABLE',
      title: 'Product not available',
      status: 422,
      detail: 'The quote has no product "cheapest"; its products are "standard", "express"',
      requestId: 'pk',
    });
    const wrongId = await t.as(m, { method: 'POST', url: '/transfer', headers: { 'x-request-id': 'tid' }, payload: transferBody(quote.transfer_id) });
    assert.deepEqual(wrongId.json(), {
      type: 'QUOTE_NOT_FOUND',
      title: 'Quote not found',
      status: 404,
      detail: `No quote ${quote.transfer_id}: ${quote.transfer_id} is the transfer_id of quote ${quote.id}; send the quote's id as matchmakingId`,
      requestId: 'tid',
    });
    // Another merchant's transfer_id gets no hint (ids never leak across merchants).
    const other = await t.merchant('Other hints', '1000');
    const foreign = await t.as(other, { method: 'POST', url: '/transfer', payload: transferBody(quote.transfer_id) });
    assert.equal(foreign.json().detail, `No quote ${quote.transfer_id}`);
  });
});
