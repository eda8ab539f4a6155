import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Client secrets (merchants' and couriers') are 256 random bits, so a single SHA-256 is enough to
 * store them (no password stretching needed: nothing to brute-force). The plain secret is returned
 * once when issued, never stored. A leaf: auth checks secrets, merchants and couriers issue them.
 */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
