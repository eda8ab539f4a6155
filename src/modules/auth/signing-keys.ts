import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Config, parseSigningKeys, type SigningKey } from '../../config.ts';

/** A new key in TOKEN_SIGNING_KEYS syntax: "kid:secret". */
export function generateSigningKey(): string {
  return `k${Date.now().toString(36)}:${randomBytes(32).toString('base64url')}`;
}

/**
 * Keys from TOKEN_SIGNING_KEYS; otherwise (never in production, config forbids it) from
 * SIGNING_KEYS_FILE, created with a fresh key on first start so tokens survive restarts.
 */
export function resolveSigningKeys(config: Config): SigningKey[] {
  if (config.tokenSigningKeys.length > 0) return config.tokenSigningKeys;
  const file = config.signingKeysFile;
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify({ keys: generateSigningKey() }, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { keys?: unknown };
  if (typeof parsed.keys !== 'string') throw new Error(`${file}: expected {"keys": "kid:secret[,kid:secret]"}`);
  return parseSigningKeys(parsed.keys);
}
