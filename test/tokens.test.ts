// The synchronous HS256 verification (node:crypto on the event loop) against tokens jose signs, edge by edge.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SignJWT } from 'jose';
import { AUDIENCE, ISSUER, TokenSigner } from '../src/modules/auth/tokens.ts';

const key = { kid: 'k1', secret: randomBytes(32) };
let nowMs = 1_800_000_000_000;
const clock = { now: () => nowMs };
const signer = new TokenSigner([key], clock, 3600);
const now = () => Math.floor(nowMs / 1000);

function jwt(claims: Record<string, unknown>, header: Record<string, unknown> = {}, secret = key.secret) {
  return new SignJWT({ client_id: 'cli_x', role: 'merchant', ...claims })
    .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'at+jwt', ...header })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject('m1')
    .setIssuedAt(now())
    .setExpirationTime(now() + 600)
    .setJti('j1')
    .sign(secret);
}

/** Any header and claims, HMAC-signed by hand (jose's builder would override or refuse some of them). */
function raw(claims: Record<string, unknown>, header: Record<string, unknown> = {}, secret = key.secret): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const base = { iss: ISSUER, aud: AUDIENCE, sub: 'm1', client_id: 'cli_x', role: 'merchant', iat: now(), exp: now() + 600, jti: 'j1' };
  const input = `${b64({ alg: 'HS256', kid: key.kid, typ: 'at+jwt', ...header })}.${b64({ ...base, ...claims })}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

test('a token the signer made verifies; its claims come back', async () => {
  const token = await signer.sign({ actor: 'courier', subject: 'c1', clientId: 'cou_1' });
  assert.deepEqual(signer.verifySync(token), { ok: true, claims: { actor: 'courier', subject: 'c1', clientId: 'cou_1' } });
  assert.deepEqual(await signer.verify(token), signer.verifySync(token));
});

test('expired only when the signature is good; exp is exclusive, without tolerance', async () => {
  const token = await jwt({});
  nowMs += 600_000;
  try {
    assert.deepEqual(signer.verifySync(token), { ok: false, reason: 'expired' });
    const forged = `${token.slice(0, token.lastIndexOf('.'))}.${Buffer.alloc(32).toString('base64url')}`;
    assert.deepEqual(signer.verifySync(forged), { ok: false, reason: 'invalid' });
  } finally {
    nowMs -= 600_000;
  }
  assert.equal(signer.verifySync(token).ok, true);
});

test('header: alg, kid, typ (as jose compares it), crit and b64 refused', async () => {
  assert.equal(signer.verifySync(await jwt({}, { typ: 'application/AT+JWT' })).ok, true);
  assert.equal(signer.verifySync(await jwt({}, { typ: 'JWT' })).ok, false);
  assert.equal(signer.verifySync(await jwt({}, { kid: 'other' })).ok, false);
  assert.equal(signer.verifySync(raw({}, { crit: ['exp'], exp: 1 })).ok, false);
  assert.equal(signer.verifySync(raw({}, { b64: true })).ok, false);
  assert.equal(signer.verifySync(raw({})).ok, true);
  assert.equal(signer.verifySync(await jwt({}, { alg: 'HS384' }, randomBytes(48))).ok, false);
  assert.equal(signer.verifySync(await jwt({}, {}, randomBytes(32))).ok, false);
});

test('claims: aud (string or list), nbf, types, role, lifetime, iat in the future, required ones', () => {
  assert.equal(signer.verifySync(raw({ aud: ['x', AUDIENCE] })).ok, true);
  assert.equal(signer.verifySync(raw({ aud: 'x' })).ok, false);
  assert.equal(signer.verifySync(raw({ nbf: now() + 10 })).ok, false);
  assert.equal(signer.verifySync(raw({ nbf: now() })).ok, true);
  assert.equal(signer.verifySync(raw({ role: 'operator' })).ok, false);
  assert.equal(signer.verifySync(raw({ client_id: 7 })).ok, false);
  assert.equal(signer.verifySync(raw({ exp: now() + 7200 })).ok, false);
  // Minted by a clock that was ahead (or has jumped back since): expired, so that clients get a new token instead of failing.
  assert.deepEqual(signer.verifySync(raw({ iat: now() + 120, exp: now() + 600 })), { ok: false, reason: 'expired' });
  assert.equal(signer.verifySync(raw({ iat: now() + 30, exp: now() + 600 })).ok, true, 'within the 60 s skew between instances');
  assert.equal(signer.verifySync(raw({ iss: 'someone-else' })).ok, false);
  for (const claim of ['sub', 'jti', 'iat', 'exp', 'aud', 'iss']) assert.equal(signer.verifySync(raw({ [claim]: undefined })).ok, false, claim); // JSON drops it
});

test('one spelling: padding, a non-canonical last character, extra segments, empty segments', async () => {
  const token = await jwt({});
  const [h, p, s] = token.split('.');
  assert.equal(signer.verifySync(`${h}.${p}.${s}=`).ok, false);
  assert.equal(signer.verifySync(`${h}=.${p}.${s}`).ok, false);
  const last = s[s.length - 1];
  const sibling = String.fromCharCode(last.charCodeAt(0) + 1); // same 6 bits but for the unused low ones
  assert.equal(signer.verifySync(`${h}.${p}.${s.slice(0, -1)}${sibling}`).ok, false);
  assert.equal(signer.verifySync(`${h}.${p}.${s}.x`).ok, false);
  assert.equal(signer.verifySync(`${h}..${s}`).ok, false);
  assert.equal(signer.verifySync('').ok, false);
});

test('a verified token is remembered by the whole token, and its time is checked again on every use', async () => {
  const start = nowMs;
  try {
    const s = new TokenSigner([key], clock, 3600);
    const token = await s.sign({ actor: 'merchant', subject: 'm9', clientId: 'cli_9' });
    const ok = { ok: true, claims: { actor: 'merchant', subject: 'm9', clientId: 'cli_9' } };
    assert.deepEqual(s.verifySync(token), ok);
    assert.deepEqual(s.verifySync(token), ok, 'a second use (remembered)');
    // One changed character anywhere is another token, verified from scratch.
    const [h, p, sig] = token.split('.');
    const flip = (part: string) => `${part.slice(0, -2)}${part.at(-2) === 'A' ? 'B' : 'A'}${part.at(-1)}`;
    assert.deepEqual(s.verifySync(`${h}.${p}.${flip(sig)}`), { ok: false, reason: 'invalid' });
    assert.deepEqual(s.verifySync(`${h}.${flip(p)}.${sig}`), { ok: false, reason: 'invalid' });
    assert.deepEqual(s.verifySync(`${token} `), { ok: false, reason: 'invalid' });
    // The clock jumps back 2 minutes: iat is then beyond the 60 s skew (expired), remembered or not.
    nowMs = start - 120_000;
    assert.deepEqual(s.verifySync(token), { ok: false, reason: 'expired' });
    nowMs = start + 3_599_000;
    assert.deepEqual(s.verifySync(token), ok, 'valid until its last second');
    nowMs = start + 3_600_000;
    assert.deepEqual(s.verifySync(token), { ok: false, reason: 'expired' }, 'expired at exp, though remembered');
    assert.deepEqual(s.verifySync(token), { ok: false, reason: 'expired' });
  } finally {
    nowMs = start;
  }
});
