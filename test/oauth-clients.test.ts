import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as oauth from 'oauth4webapi';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createTestApp, describeEachStore, type Merchant, type TestApp } from './helpers/app.ts';
import { checkFetchResponse } from './helpers/contract.ts';

/**
 * A standard OAuth 2.0 client library (oauth4webapi, RFC 6749 / 6750 / 8414) against a real listening
 * server: discovery, the client credentials grant with client_secret_basic and client_secret_post,
 * the interface's JSON body, the RFC 6749 error bodies and the RFC 6750 challenges of protected routes.
 * Every response the library receives also goes through the contract check.
 */

/** fetch for oauth4webapi that holds every response to the contract (openapi.json) on the way. */
const contractFetch = async (url: string, init: Partial<oauth.CustomFetchOptions<string, unknown>>): Promise<Response> => {
  const res = await fetch(url, init as RequestInit);
  const text = await res.text();
  checkFetchResponse(init.method ?? 'GET', new URL(url).pathname, res.status, res.headers, text);
  return new Response(res.status === 204 ? null : text, { status: res.status, statusText: res.statusText, headers: res.headers });
};

// Plain http on 127.0.0.1 in tests: oauth4webapi refuses it unless told (its documented option).
const http = { [oauth.allowInsecureRequests]: true, [oauth.customFetch]: contractFetch } as const;

async function discover(base: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(base);
  const res = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http });
  return oauth.processDiscoveryResponse(issuer, res);
}

async function clientCredentials(as: oauth.AuthorizationServer, m: Merchant, auth: oauth.ClientAuth, parameters: Record<string, string> | string[][] = {}) {
  const client: oauth.Client = { client_id: m.clientId };
  const res = await oauth.clientCredentialsGrantRequest(as, client, auth, parameters, http);
  return oauth.processClientCredentialsResponse(as, client, res);
}

async function listWarehouses(base: string, token: string): Promise<Response> {
  return oauth.protectedResourceRequest(token, 'GET', new URL('/warehouses', base), undefined, undefined, http);
}

/** The rejection of `promise`, which must reject. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  assert.fail('expected the request to be refused');
}

describeEachStore('standard OAuth 2.0 clients (oauth4webapi over real HTTP)', (ctx) => {
  let base: string;
  const server = async (): Promise<{ t: TestApp; base: string }> => {
    const t = ctx();
    base ??= await t.listen();
    return { t, base };
  };

  test('discovery (RFC 8414): the issuer is the server address, with the token endpoint and its client authentication methods', async () => {
    const { base } = await server();
    const as = await discover(base);
    assert.deepEqual(as, {
      issuer: base,
      token_endpoint: `${base}/auth/token`,
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      grant_types_supported: ['client_credentials'],
      response_types_supported: [],
      service_documentation: `${base}/docs`,
    });
  });

  test('client_secret_basic: a token that works on GET /warehouses', async () => {
    const { t, base } = await server();
    const m = await t.merchant();
    const as = await discover(base);
    const token = await clientCredentials(as, m, oauth.ClientSecretBasic(m.clientSecret));
    assert.equal(token.token_type, 'bearer'); // oauth4webapi lower-cases it
    assert.equal(token.expires_in, 3600);
    const res = await listWarehouses(base, token.access_token);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), []);
  });

  test('client_secret_post: a token that works on GET /warehouses; scope is accepted and ignored', async () => {
    const { t, base } = await server();
    const m = await t.merchant();
    const as = await discover(base);
    const token = await clientCredentials(as, m, oauth.ClientSecretPost(m.clientSecret), { scope: 'deliveries' });
    assert.equal(token.token_type, 'bearer');
    const res = await listWarehouses(base, token.access_token);
    assert.equal(res.status, 200);
  });

  test("the interface's JSON body: the response is a standard token response, the token works", async () => {
    const { t, base } = await server();
    const m = await t.merchant();
    const as = await discover(base);
    const res = await contractFetch(`${base}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: m.clientId, client_secret: m.clientSecret }),
    });
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const token = await oauth.processClientCredentialsResponse(as, { client_id: m.clientId }, res);
    assert.equal((await listWarehouses(base, token.access_token)).status, 200);
  });

  test('invalid_client (RFC 6749 5.2): 401 with a Basic challenge, for both authentication methods', async () => {
    const { t, base } = await server();
    const m = await t.merchant();
    const as = await discover(base);
    for (const auth of [oauth.ClientSecretBasic('sk_wrong'), oauth.ClientSecretPost('sk_wrong')]) {
      const err = await rejection(clientCredentials(as, m, auth));
      // A 401 with WWW-Authenticate is reported as a challenge, the way RFC 6749 5.2 asks for invalid_client.
      assert.ok(err instanceof oauth.WWWAuthenticateChallengeError, `${err.name}: ${err.message}`);
      assert.equal(err.status, 401);
      assert.deepEqual(err.cause, [{ scheme: 'basic', parameters: { realm: 'merchant-delivery' } }]);
      const body = await err.response.json();
      assert.equal(body.error, 'invalid_client');
      assert.equal(body.error_description, 'Unknown client or wrong client secret');
    }
  });

  test('unsupported_grant_type reaches the client as a ResponseBodyError', async () => {
    const { t, base } = await server();
    const m = await t.merchant();
    const as = await discover(base);
    const client: oauth.Client = { client_id: m.clientId };
    const res = await oauth.genericTokenEndpointRequest(as, client, oauth.ClientSecretBasic(m.clientSecret), 'password', {}, http);
    const err = await rejection(oauth.processGenericTokenEndpointResponse(as, client, res));
    assert.ok(err instanceof oauth.ResponseBodyError, `${err.name}: ${err.message}`);
    assert.equal(err.status, 400);
    assert.equal(err.error, 'unsupported_grant_type');
  });

  test('invalid_request (a repeated parameter) reaches the client as a ResponseBodyError', async () => {
    const { t, base } = await server();
    const m = await t.merchant();
    const as = await discover(base);
    const err = await rejection(
      clientCredentials(as, m, oauth.ClientSecretBasic(m.clientSecret), [
        ['scope', 'a'],
        ['scope', 'b'],
      ]),
    );
    assert.ok(err instanceof oauth.ResponseBodyError, `${err.name}: ${err.message}`);
    assert.equal(err.status, 400);
    assert.equal(err.error, 'invalid_request');
    assert.equal(err.error_description, 'Parameter scope must be a single string');
  });

  test('the RFC 6749 error bodies: error and error_description next to the problem fields', async () => {
    const { t, base } = await server();
    const m = await t.merchant();
    const as = await discover(base);
    const client: oauth.Client = { client_id: m.clientId };
    const grant = await oauth.genericTokenEndpointRequest(as, client, oauth.ClientSecretBasic(m.clientSecret), 'password', {}, http);
    assert.equal(grant.status, 400);
    assert.deepEqual(await grant.json(), {
      type: 'UNSUPPORTED_GRANT_TYPE',
      title: 'Unsupported grant type',
      status: 400,
      detail: 'Only grant_type=client_credentials is supported',
      requestId: grant.headers.get('x-request-id'),
      error: 'unsupported_grant_type',
      error_description: 'Only grant_type=client_credentials is supported',
    });

    const repeated = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretPost(m.clientSecret),
      [
        ['scope', 'a'],
        ['scope', 'b'],
      ],
      http,
    );
    assert.equal(repeated.status, 400);
    const body = await repeated.json();
    assert.equal(body.error, 'invalid_request');
    assert.equal(body.error_description, 'Parameter scope must be a single string');
  });

  test('protected routes answer RFC 6750 challenges: no token, a bad token, an expired token', async () => {
    const { t, base } = await server();
    const m = await t.merchant();

    const none = await contractFetch(`${base}/warehouses`, { method: 'GET' });
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="merchant-delivery"');

    const bad = await rejection(listWarehouses(base, 'not-a-token'));
    assert.ok(bad instanceof oauth.WWWAuthenticateChallengeError, `${bad.name}: ${bad.message}`);
    assert.equal(bad.status, 401);
    assert.deepEqual(bad.cause, [
      { scheme: 'bearer', parameters: { realm: 'merchant-delivery', error: 'invalid_token', error_description: 'The access token cannot be verified' } },
    ]);
    assert.equal((await bad.response.json()).type, 'INVALID_ACCESS_TOKEN');

    const as = await discover(base);
    const token = await clientCredentials(as, m, oauth.ClientSecretBasic(m.clientSecret));
    t.clock.advance(3600_000);
    const expired = await rejection(listWarehouses(base, token.access_token));
    assert.ok(expired instanceof oauth.WWWAuthenticateChallengeError, `${expired.name}: ${expired.message}`);
    assert.equal(expired.cause[0].parameters.error, 'invalid_token');
    assert.equal((await expired.response.json()).type, 'ACCESS_TOKEN_EXPIRED');
  });
});

test('discovery with PUBLIC_BASE_URL: the configured address, whatever the Host header says', async () => {
  const t = await createTestApp('sqlite', { PUBLIC_BASE_URL: 'https://api.example.com/delivery/' });
  try {
    const res = await t.request({ method: 'GET', url: '/.well-known/oauth-authorization-server', headers: { host: 'attacker.example' } });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.issuer, 'https://api.example.com/delivery');
    assert.equal(body.token_endpoint, 'https://api.example.com/delivery/auth/token');
  } finally {
    await t.close();
  }
});

test('discovery without PUBLIC_BASE_URL: a Host header that is not a host is not echoed', async () => {
  const t = await createTestApp('sqlite');
  try {
    const res = await t.request({ method: 'GET', url: '/.well-known/oauth-authorization-server', headers: { host: 'evil.example/path?x=1' } });
    assert.equal(res.statusCode, 200);
    assert.doesNotMatch(res.body, /evil/);
    // Derived from Host, so no shared cache may keep it for another host.
    const derived = await t.request({ method: 'GET', url: '/.well-known/oauth-authorization-server', headers: { host: 'api.example.net' } });
    assert.equal(derived.json().issuer, 'http://api.example.net');
    assert.equal(derived.headers['cache-control'], 'no-store');
    assert.equal(derived.headers.vary, 'Host');
  } finally {
    await t.close();
  }
});

test('PUBLIC_BASE_URL must be an absolute http(s) URL without query or fragment', () => {
  for (const bad of [
    'api.example.com',
    'ftp://api.example.com',
    'https://api.example.com/?x=1',
    'https://api.example.com/#top',
    'https://u:p@api.example.com',
  ]) {
    assert.throws(
      () => loadConfig({ PUBLIC_BASE_URL: bad }),
      (err: Error) => err instanceof ConfigError && /PUBLIC_BASE_URL/.test(err.message),
      bad,
    );
  }
  assert.equal(loadConfig({ PUBLIC_BASE_URL: 'http://127.0.0.1:3000' }).publicBaseUrl, 'http://127.0.0.1:3000');
  assert.equal(loadConfig({}).publicBaseUrl, undefined);
});
