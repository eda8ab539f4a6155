import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore, warehouseBody } from './helpers/app.ts';

const REQ_ID = /^[0-9a-f-]{36}$/;

describeEachStore('POST /auth/token', (ctx) => {
  test('JSON body: returns a bearer token with no-store caching', async () => {
    const t = ctx();
    const m = await t.merchant();
    const res = await t.request({
      method: 'POST',
      url: '/auth/token',
      payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: m.clientSecret },
    });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /^application\/json/);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers.pragma, 'no-cache');
    assert.match(res.headers['x-request-id'] as string, REQ_ID);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'token_type']);
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, 3600);
    assert.match(body.access_token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    const ok = await t.as(body.access_token, { method: 'GET', url: '/warehouses' });
    assert.equal(ok.statusCode, 200);
  });

  test('form-urlencoded body and HTTP Basic client authentication both work', async () => {
    const t = ctx();
    const m = await t.merchant();
    const form = await t.request({
      method: 'POST',
      url: '/auth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: m.clientId, client_secret: m.clientSecret }).toString(),
    });
    assert.equal(form.statusCode, 200, form.body);
    const basic = await t.request({
      method: 'POST',
      url: '/auth/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(m.clientId)}:${encodeURIComponent(m.clientSecret)}`).toString('base64')}`,
      },
      payload: 'grant_type=client_credentials',
    });
    assert.equal(basic.statusCode, 200, basic.body);
    assert.equal(basic.json().token_type, 'Bearer');
  });

  test('a new token does not revoke earlier ones', async () => {
    const t = ctx();
    const m = await t.merchant();
    const get = async () =>
      (
        await t.request({
          method: 'POST',
          url: '/auth/token',
          payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: m.clientSecret },
        })
      ).json().access_token as string;
    const first = await get();
    t.clock.advance(1000);
    const second = await get();
    assert.notEqual(first, second);
    for (const tok of [first, second]) assert.equal((await t.as(tok, { method: 'GET', url: '/warehouses' })).statusCode, 200);
  });

  test('wrong secret and unknown client: 401 INVALID_CLIENT with RFC 6749 fields, same body', async () => {
    const t = ctx();
    const m = await t.merchant();
    const wrong = await t.request({
      method: 'POST',
      url: '/auth/token',
      headers: { 'x-request-id': 'req-wrong-secret' },
      payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: 'sk_wrong' },
    });
    assert.equal(wrong.statusCode, 401);
    assert.match(wrong.headers['content-type'] as string, /^application\/json/, 'RFC 6749 5.2: token errors are application/json');
    assert.equal(wrong.headers['www-authenticate'], 'Basic realm="merchant-delivery"');
    assert.deepEqual(wrong.json(), {
      type: 'INVALID_CLIENT',
      title: 'Client authentication failed',
      status: 401,
      detail: 'Unknown client or wrong client secret',
      requestId: 'req-wrong-secret',
      error: 'invalid_client',
      error_description: 'Unknown client or wrong client secret',
    });
    const unknown = await t.request({
      method: 'POST',
      url: '/auth/token',
      headers: { 'x-request-id': 'req-wrong-secret' },
      payload: { grant_type: 'client_credentials', client_id: 'cli_nobody', client_secret: 'sk_wrong' },
    });
    assert.equal(unknown.statusCode, 401);
    assert.deepEqual(unknown.json(), wrong.json(), 'an unknown client is indistinguishable from a wrong secret');
  });

  test('unsupported grant type, missing grant type, unknown fields, missing credentials', async () => {
    const t = ctx();
    const m = await t.merchant();
    const post = (payload: unknown) => t.request({ method: 'POST', url: '/auth/token', headers: { 'x-request-id': 'r1' }, payload: payload as object });

    const grant = await post({ grant_type: 'password', client_id: m.clientId, client_secret: m.clientSecret });
    assert.equal(grant.statusCode, 400);
    assert.deepEqual(grant.json(), {
      type: 'UNSUPPORTED_GRANT_TYPE',
      title: 'Unsupported grant type',
      status: 400,
      detail: 'Only grant_type=client_credentials is supported',
      requestId: 'r1',
      error: 'unsupported_grant_type',
      error_description: 'Only grant_type=client_credentials is supported',
    });

    const missing = await post({ client_id: m.clientId, client_secret: m.clientSecret });
    assert.equal(missing.statusCode, 400);
    assert.deepEqual(missing.json(), {
      type: 'INVALID_REQUEST',
      title: 'Invalid token request',
      status: 400,
      detail: 'grant_type is required',
      requestId: 'r1',
      error: 'invalid_request',
      error_description: 'grant_type is required',
    });

    // RFC 6749 3.2: unrecognized parameters are ignored (clients send e.g. resource); they cannot change whose token it is.
    const extra = await post({ grant_type: 'client_credentials', client_id: m.clientId, client_secret: m.clientSecret, resource: 'x', sub: 'other' });
    assert.equal(extra.statusCode, 200);
    const claims = JSON.parse(Buffer.from(extra.json().access_token.split('.')[1], 'base64url').toString());
    assert.equal(claims.sub, m.merchantId);

    const malformed = await t.request({
      method: 'POST',
      url: '/auth/token',
      headers: { 'content-type': 'application/json', 'x-request-id': 'r1' },
      payload: '{"grant_type":',
    });
    assert.equal(malformed.statusCode, 400);
    assert.match(malformed.headers['content-type'] as string, /^application\/json/);
    assert.deepEqual(malformed.json(), {
      type: 'INVALID_REQUEST',
      title: 'Invalid token request',
      status: 400,
      detail: 'The request body is not valid JSON',
      requestId: 'r1',
      error: 'invalid_request',
      error_description: 'The request body is not valid JSON',
    });

    const xml = await t.request({ method: 'POST', url: '/auth/token', headers: { 'content-type': 'application/xml', 'x-request-id': 'r1' }, payload: '<x/>' });
    assert.equal(xml.statusCode, 415);
    assert.deepEqual(xml.json(), {
      type: 'UNSUPPORTED_MEDIA_TYPE',
      title: 'Unsupported media type',
      status: 415,
      detail: 'Send the token request as application/json or application/x-www-form-urlencoded',
      requestId: 'r1',
      error: 'invalid_request',
      error_description: 'Send the token request as application/json or application/x-www-form-urlencoded',
    });

    const wrongType = await post({ grant_type: 'client_credentials', client_id: 42, client_secret: m.clientSecret });
    assert.equal(wrongType.statusCode, 400);
    assert.equal(wrongType.json().detail, 'Parameter client_id must be a single string');

    // Credentials nobody could have been issued: a wrong client, without asking the database (PostgreSQL would refuse the NUL: a 500).
    for (const clientId of ['cli_\u0000x', 'cli\nx']) {
      const odd = await post({ grant_type: 'client_credentials', client_id: clientId, client_secret: m.clientSecret });
      assert.equal(odd.statusCode, 401, JSON.stringify(clientId));
      assert.equal(odd.json().type, 'INVALID_CLIENT');
    }

    const noCreds = await post({ grant_type: 'client_credentials' });
    assert.equal(noCreds.statusCode, 401);
    assert.equal(noCreds.json().type, 'INVALID_CLIENT');
    assert.equal(noCreds.json().error, 'invalid_client');
  });

  test('a revoked credential cannot get tokens', async () => {
    const t = ctx();
    const m = await t.merchant();
    await t.services.credentials.revoke(m.clientId);
    const res = await t.request({
      method: 'POST',
      url: '/auth/token',
      payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: m.clientSecret },
    });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().type, 'INVALID_CLIENT');
    assert.equal(res.json().detail, 'The client credentials have been revoked');
  });
});

describeEachStore(
  'token endpoint rate limit',
  (ctx) => {
    test('failures are limited per client id from an address and per address; nobody can lock a merchant out', async () => {
      const t = ctx();
      const victim = await t.merchant('Victim');
      const attempt = (clientId: string, secret: string, remoteAddress: string) =>
        t.request({
          method: 'POST',
          url: '/auth/token',
          remoteAddress,
          headers: { 'x-request-id': 'rl' },
          payload: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
        });
      const attacker = '203.0.113.66';
      for (let i = 0; i < 3; i++) assert.equal((await attempt(victim.clientId, 'sk_wrong', attacker)).statusCode, 401);
      const limited = await attempt(victim.clientId, victim.clientSecret, attacker);
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.headers['retry-after'], '60');
      assert.match(limited.headers['content-type'] as string, /^application\/json/);
      assert.deepEqual(limited.json(), {
        type: 'RATE_LIMITED',
        title: 'Too many requests',
        status: 429,
        detail: 'Too many failed token requests; retry in 60 s',
        requestId: 'rl',
        error: 'invalid_request',
        error_description: 'Too many failed token requests',
      });
      // The merchant's own server, elsewhere, is not affected by the attack on its public client id.
      assert.equal((await attempt(victim.clientId, victim.clientSecret, '198.51.100.7')).statusCode, 200);

      // The attacking address is limited as a whole after TOKEN_FAILURES_PER_ADDRESS failures, whatever client id it tries.
      const other = await t.merchant('Other');
      for (let i = 0; i < 2; i++) assert.equal((await attempt(`cli_guess${i}`, 'sk_wrong', attacker)).statusCode, 401);
      assert.equal((await attempt(other.clientId, other.clientSecret, attacker)).statusCode, 429);
      t.clock.advance(60_000);
      assert.equal((await attempt(victim.clientId, victim.clientSecret, attacker)).statusCode, 200, 'the window passes');
    });

    test('oversized client credentials are refused before they reach the limiter', async () => {
      const t = ctx();
      const res = await t.request({
        method: 'POST',
        url: '/auth/token',
        payload: { grant_type: 'client_credentials', client_id: 'x'.repeat(300), client_secret: 'sk' },
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error_description, 'Parameter client_id is longer than 256 characters');
    });
  },
  { TOKEN_FAILURES_PER_CLIENT: '3', TOKEN_FAILURES_PER_ADDRESS: '5' },
);

describeEachStore('bearer authentication on protected routes', (ctx) => {
  const routes = [
    { method: 'GET', url: '/warehouses' },
    { method: 'POST', url: '/warehouses' },
    { method: 'GET', url: '/warehouses/01a20058-cb4a-7657-ba2b-fa105300957e' },
    { method: 'PUT', url: '/warehouses/01a20058-cb4a-7657-ba2b-fa105300957e' },
    { method: 'POST', url: '/options' },
    { method: 'POST', url: '/transfer' },
    { method: 'GET', url: '/transfer/01a20058-cb4a-7657-ba2b-fa105300957e' },
  ] as const;

  test('MISSING_ACCESS_TOKEN on every protected route: no header, or not Bearer', async () => {
    const t = ctx();
    for (const r of routes) {
      for (const authorization of [undefined, 'Basic abc', 'Bearer', 'Token abc']) {
        const res = await t.request({
          ...r,
          headers: { 'x-request-id': 'rid-1', ...(authorization ? { authorization } : {}) },
          payload: r.method === 'GET' ? undefined : {},
        });
        assert.equal(res.statusCode, 401, `${r.method} ${r.url} ${authorization}`);
        assert.equal(res.headers['www-authenticate'], 'Bearer realm="merchant-delivery"');
        assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
        assert.deepEqual(res.json(), {
          type: 'MISSING_ACCESS_TOKEN',
          title: 'Missing access token',
          status: 401,
          detail: 'Send the header Authorization: Bearer <access_token>',
          requestId: 'rid-1',
        });
      }
    }
  });

  test('INVALID_ACCESS_TOKEN: garbage, tampered payload, token signed with another key', async () => {
    const t = ctx();
    const m = await t.merchant();
    const good = await t.token(m);
    const [h, p, s] = good.split('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const other = await t.merchant('Other');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: other.merchantId })).toString('base64url')}.${s}`;
    const { SignJWT } = await import('jose');
    // Every claim right (the RFC 9068 profile), only the key is another: the signature alone refuses it.
    const foreign = await new SignJWT({ client_id: m.clientId })
      .setProtectedHeader({ alg: 'HS256', kid: 'test', typ: 'at+jwt' })
      .setIssuer('merchant-delivery-service')
      .setAudience('merchant-delivery-api')
      .setJti('01a20059-0b3e-7a4c-9d2e-3f5a6b7c8d9e')
      .setSubject(m.merchantId)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(Buffer.alloc(32, 7));
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
    for (const token of ['garbage', tampered, foreign, none]) {
      const res = await t.as(token, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'rid-2' } });
      assert.equal(res.statusCode, 401, token);
      assert.equal(
        res.headers['www-authenticate'],
        'Bearer realm="merchant-delivery", error="invalid_token", error_description="The access token cannot be verified"',
      );
      assert.deepEqual(res.json(), {
        type: 'INVALID_ACCESS_TOKEN',
        title: 'Invalid access token',
        status: 401,
        detail: 'The access token cannot be verified',
        requestId: 'rid-2',
      });
    }
  });

  test('ACCESS_TOKEN_EXPIRED after the token lifetime (3600 s), not before', async () => {
    const t = ctx();
    const m = await t.merchant();
    const token = await t.token(m);
    t.clock.advance(3599_000);
    assert.equal((await t.as(token, { method: 'GET', url: '/warehouses' })).statusCode, 200);
    t.clock.advance(1_000);
    const res = await t.as(token, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'rid-3' } });
    assert.equal(res.statusCode, 401);
    const detail = 'The access token has expired; obtain a new one and retry once';
    assert.equal(res.headers['www-authenticate'], `Bearer realm="merchant-delivery", error="invalid_token", error_description="${detail}"`);
    assert.deepEqual(res.json(), { type: 'ACCESS_TOKEN_EXPIRED', title: 'Access token expired', status: 401, detail, requestId: 'rid-3' });
  });

  test('CREDENTIALS_REVOKED at once after revoke; other credential sets of the merchant keep working', async () => {
    const t = ctx();
    const m = await t.merchant();
    const second = await t.services.credentials.issue(m.merchantId);
    const token = await t.token(m);
    const token2 = await t.token({ ...second });
    assert.equal((await t.as(token, { method: 'GET', url: '/warehouses' })).statusCode, 200);
    await t.services.credentials.revoke(m.clientId);
    const res = await t.as(token, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'rid-4' } });
    assert.equal(res.statusCode, 401);
    const detail = 'The credentials this token was issued for have been revoked';
    assert.equal(res.headers['www-authenticate'], `Bearer realm="merchant-delivery", error="invalid_token", error_description="${detail}"`);
    assert.deepEqual(res.json(), { type: 'CREDENTIALS_REVOKED', title: 'Credentials revoked', status: 401, detail, requestId: 'rid-4' });
    assert.equal((await t.as(token2, { method: 'GET', url: '/warehouses' })).statusCode, 200);
  });

  test('CREDENTIALS_NOT_FOUND at once after delete', async () => {
    const t = ctx();
    const m = await t.merchant();
    const token = await t.token(m);
    assert.equal((await t.as(token, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).statusCode, 201);
    await t.services.credentials.delete(m.clientId);
    const res = await t.as(token, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'rid-5' } });
    assert.equal(res.statusCode, 401);
    const detail = 'The credentials this token was issued for no longer exist';
    assert.equal(res.headers['www-authenticate'], `Bearer realm="merchant-delivery", error="invalid_token", error_description="${detail}"`);
    assert.deepEqual(res.json(), { type: 'CREDENTIALS_NOT_FOUND', title: 'Credentials not found', status: 401, detail, requestId: 'rid-5' });
  });
});
