import { createHash, randomBytes } from 'node:crypto';

/** A random secret for a browser or a link: 256 bits, URL-safe. */
export const newSecret = (): string => randomBytes(32).toString('base64url');

/**
 * What the database keeps of a secret: its SHA-256. The secrets are 256-bit random values, so a fast
 * hash is enough (no salt or stretching needed); lookups by hash leak nothing useful through timing.
 */
export const secretHash = (secret: string): string => createHash('sha256').update(secret).digest('hex');

// Crockford base32 without I, L, O, U: easy to type from paper.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A recovery code such as "7KQ2M-9XDTA" (50 random bits). */
export function newRecoveryCode(): string {
  const bytes = randomBytes(10);
  let out = '';
  for (const b of bytes) out += ALPHABET[b & 31];
  return `${out.slice(0, 5)}-${out.slice(5)}`;
}

/** Recovery codes are compared without case, spaces or dashes. */
export const normaliseRecoveryCode = (code: string): string => code.toUpperCase().replace(/[\s-]/g, '').replace(/[IL]/g, '1').replace(/O/g, '0');
