import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig, parseSigningKeys, parseTrustProxy, redactUrl } from '../src/config.ts';

describe('configuration', () => {
  test('defaults for the embedded setup', () => {
    const c = loadConfig({});
    assert.equal(c.databaseUrl, 'sqlite:./data/mds.sqlite');
    assert.equal(c.port, 3000);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.tokenTtlSeconds, 3600);
    assert.equal(c.quoteTtlSeconds, 900);
    assert.equal(c.paymentTtlMinutes, 30);
    assert.equal(c.currency, 'RUB');
    assert.equal(c.authCacheTtlMs, 1000);
    assert.equal(c.bodyLimitBytes, 65_536);
    assert.equal(c.trustProxy, false);
    assert.deepEqual(c.tokenSigningKeys, []);
    assert.equal(c.databaseStatementTimeoutMs, 10_000);
    assert.equal(c.databaseLockTimeoutMs, 5_000);
  });

  test("PostgreSQL statement and lock timeouts: milliseconds, 0 for the server's own", () => {
    const c = loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_LOCK_TIMEOUT_MS: '1500' });
    assert.deepEqual([c.databaseStatementTimeoutMs, c.databaseLockTimeoutMs], [0, 1500]);
    assert.throws(() => loadConfig({ DATABASE_LOCK_TIMEOUT_MS: '-1' }), /DATABASE_LOCK_TIMEOUT_MS must be a whole number from 0 to 3600000/);
  });

  test('the session cookie is Secure outside development: by default with any NODE_ENV but development (the default) and test', () => {
    const secure = (env: Record<string, string>) =>
      loadConfig({ TOKEN_SIGNING_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64url')}`, ...env }).sessionCookieSecure;
    assert.deepEqual(
      [secure({}), secure({ NODE_ENV: 'development' }), secure({ NODE_ENV: 'test' }), secure({ NODE_ENV: 'production' }), secure({ NODE_ENV: 'staging' })],
      [false, false, false, true, true],
    );
    assert.equal(secure({ NODE_ENV: 'staging', SESSION_COOKIE_SECURE: 'false' }), false);
    assert.equal(secure({ SESSION_COOKIE_SECURE: 'true' }), true);
  });

  test('production requires explicit signing keys', () => {
    assert.throws(
      () => loadConfig({ NODE_ENV: 'production' }),
      (e: Error) => e instanceof ConfigError && /TOKEN_SIGNING_KEYS is required when NODE_ENV=production/.test(e.message),
    );
    const key = Buffer.alloc(32, 1).toString('base64url');
    assert.equal(loadConfig({ NODE_ENV: 'production', TOKEN_SIGNING_KEYS: `k1:${key}` }).tokenSigningKeys[0].kid, 'k1');
  });

  test('every problem is listed at once', () => {
    assert.throws(
      () => loadConfig({ PORT: '-1', TOKEN_TTL_SECONDS: '0', LOG_LEVEL: 'loud', AUTH_CACHE_TTL_MS: '5000', IDEMPOTENCY_TTL_HOURS: '1' }),
      (e: Error) =>
        ['PORT', 'TOKEN_TTL_SECONDS', 'LOG_LEVEL', 'AUTH_CACHE_TTL_MS', 'IDEMPOTENCY_TTL_HOURS'].every((name) => e.message.includes(`${name} must`)),
    );
  });

  test('signing keys: kid:secret pairs, at least 32 bytes, unique ids', () => {
    const k = Buffer.alloc(32, 2).toString('base64url');
    assert.deepEqual(
      parseSigningKeys(`new:${k},old:${k}`).map((x) => x.kid),
      ['new', 'old'],
    );
    assert.throws(() => parseSigningKeys(`short:${Buffer.alloc(16).toString('base64url')}`), /at least 32 bytes/);
    assert.throws(() => parseSigningKeys(`a:${k},a:${k}`), /unique/);
    assert.throws(() => parseSigningKeys('no-colon'), /kid:base64url-secret/);
  });

  test('TRUST_PROXY: false, true, a hop count, or proxy addresses', () => {
    assert.equal(parseTrustProxy('false'), false);
    assert.equal(parseTrustProxy('true'), true);
    assert.equal(parseTrustProxy('1'), 1);
    assert.deepEqual(parseTrustProxy('10.0.0.0/8, 192.168.1.5'), ['10.0.0.0/8', '192.168.1.5']);
    assert.equal(parseTrustProxy('yes'), undefined);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'yes' }), /TRUST_PROXY must be/);
  });

  test('database URLs are redacted in messages', () => {
    assert.equal(redactUrl('postgres://app:s3cret@db:5432/mds'), 'postgres://app:***@db:5432/mds');
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'mysql://app:s3cret@db/x' }),
      (e: Error) => !e.message.includes('s3cret') && e.message.includes('mysql://app:***@db/x'),
    );
  });
});
