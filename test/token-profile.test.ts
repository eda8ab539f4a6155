import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SignJWT } from 'jose';
import { parseSigningKeys } from '../src/config.ts';
import { AUDIENCE, ISSUER } from '../src/modules/auth/tokens.ts';
import { describeEachStore, TEST_SIGNING_KEYS, type TestApp } from './helpers/app.ts';

/** The access token's one accepted form: a single spelling, pinned claims (defects an attack run found). */

async function signed(t: TestApp, clientId: string, merchantId: string, edit: (jwt: SignJWT) => SignJWT, header: Record<string, unknown> = {}) {
  const [key] = parseSigningKeys(TEST_SIGNING_KEYS);
  const now = Math.floor(t.clock.now() / 1000);
  const jwt = new SignJWT({ client_id: clientId, role: 'merchant' })
    .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'at+jwt', ...header })
    .setIssuer(ISSUER)
    .setSubject(merchantId)
    .setJti('01a20059-0b3e-7a4c-9d2e-3f5a6b7c8d9e')
    .setIssuedAt(now);
  return edit(jwt).sign(key.secret);
}

const invalidToken = (requestId: string) => ({
  type: 'INVALID_ACCESS_TOKEN',
  title: 'Invalid access token',
  status: 401,
  detail: 'The access token cannot be verified',
  requestId,
});

describeEachStore('access token profile', (ctx) => {
  test('a token has one spelling: padding or changed unused low bits of the signature are refused', async () => {
    const t = ctx();
    const m = await t.merchant();
    const token = await t.token(m);
    assert.equal((await t.as(token, { method: 'GET', url: '/warehouses' })).statusCode, 200);
    const [h, p, s] = token.split('.');
    // 32 signature bytes are 43 base64url characters: the last one carries 4 bits and 2 unused ones.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(s[s.length - 1]);
    const lowBits = `${h}.${p}.${s.slice(0, -1)}${alphabet[last ^ 1]}`;
    assert.deepEqual(Buffer.from(lowBits.split('.')[2], 'base64url'), Buffer.from(s, 'base64url'), 'the same bytes, another spelling');
    for (const variant of [`${token}=`, `${token}==`, lowBits, `${h}=.${p}.${s}`, `${h}.${p}=.${s}`]) {
      const res = await t.as(variant, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'spell' } });
      assert.equal(res.statusCode, 401, variant);
      assert.deepEqual(res.json(), invalidToken('spell'));
    }
  });

  test('claims are pinned: aud, typ, exp required, exp - iat bounded by the lifetime, iat in the future is expired', async () => {
    const t = ctx();
    const m = await t.merchant();
    const good = await signed(t, m.clientId, m.merchantId, (j) => j.setAudience(AUDIENCE).setExpirationTime(Math.floor(t.clock.now() / 1000) + 3600));
    assert.equal((await t.as(good, { method: 'GET', url: '/warehouses' })).statusCode, 200, 'a well-formed token signed with the key works');
    const now = Math.floor(t.clock.now() / 1000);
    const bad = [
      await signed(t, m.clientId, m.merchantId, (j) => j.setAudience('another-api').setExpirationTime(now + 3600)),
      await signed(t, m.clientId, m.merchantId, (j) => j.setExpirationTime(now + 3600)), // no aud
      await signed(t, m.clientId, m.merchantId, (j) => j.setAudience(AUDIENCE)), // no exp
      await signed(t, m.clientId, m.merchantId, (j) => j.setAudience(AUDIENCE).setExpirationTime(now + 100 * 365 * 86_400)),
      await signed(t, m.clientId, m.merchantId, (j) => j.setAudience(AUDIENCE).setExpirationTime(now + 3601)),
      await signed(t, m.clientId, m.merchantId, (j) => j.setAudience(AUDIENCE).setExpirationTime(now + 3600), { typ: 'JWT' }),
    ];
    for (const token of bad) {
      const res = await t.as(token, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'claims' } });
      assert.equal(res.statusCode, 401, JSON.stringify(JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())));
      assert.deepEqual(res.json(), invalidToken('claims'));
    }
    // Issued in the future: minted by a clock that was ahead (or ours jumped back), so expired rather
    // than invalid, and clients (the SDK included) fetch a new token instead of failing.
    const ahead = await signed(t, m.clientId, m.merchantId, (j) =>
      j
        .setAudience(AUDIENCE)
        .setIssuedAt(now + 3600)
        .setExpirationTime(now + 7200),
    );
    const fromAhead = await t.as(ahead, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'claims' } });
    assert.equal(fromAhead.statusCode, 401);
    assert.deepEqual(fromAhead.json(), {
      type: 'ACCESS_TOKEN_EXPIRED',
      title: 'Access token expired',
      status: 401,
      detail: 'The access token has expired; obtain a new one and retry once',
      requestId: 'claims',
    });
    // The role claim must match the credential: a merchant's client id with role courier (or none) is forged.
    const [key] = parseSigningKeys(TEST_SIGNING_KEYS);
    for (const role of ['courier', undefined, 'admin']) {
      const forged = await new SignJWT({ client_id: m.clientId, ...(role ? { role } : {}) })
        .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'at+jwt' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setSubject(m.merchantId)
        .setIssuedAt(now)
        .setExpirationTime(now + 3600)
        .sign(key.secret);
      const res = await t.as(forged, { method: 'GET', url: '/warehouses', headers: { 'x-request-id': 'claims' } });
      assert.equal(res.statusCode, 401, `role ${role}`);
      assert.equal(res.json().type, 'INVALID_ACCESS_TOKEN');
    }
    // What the service issues: the RFC 9068 claims.
    const issued = await t.token(m);
    const header = JSON.parse(Buffer.from(issued.split('.')[0], 'base64url').toString());
    const claims = JSON.parse(Buffer.from(issued.split('.')[1], 'base64url').toString());
    assert.deepEqual(header, { alg: 'HS256', kid: 'test', typ: 'at+jwt' });
    assert.deepEqual(Object.keys(claims).sort(), ['aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'role', 'sub']);
    assert.equal(claims.role, 'merchant', 'which kind of actor: merchant routes refuse courier tokens and the reverse');
    assert.equal(claims.aud, AUDIENCE);
    assert.equal(claims.exp - claims.iat, 3600);
  });
});
