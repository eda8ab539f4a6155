import { randomBytes, randomInt } from 'node:crypto';
import { v7 } from 'uuid';

/** Server ids are UUIDv7: time-ordered, so inserts stay at the right edge of the primary key index. */
export const newId = (): string => v7();

// Crockford base32 without I, L, O, U: readable over the phone, no ambiguous characters.
const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Short human-friendly code, e.g. "K7Q2-M9XD" (40 random bits; uniqueness enforced by the database). */
export function newTransferCode(): string {
  let out = '';
  for (let i = 0; i < 8; i++) out += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${out.slice(0, 4)}-${out.slice(4)}`;
}

/** Unguessable tracking code: 128 random bits, URL-safe. */
export const newTrackingCode = (): string => randomBytes(16).toString('base64url');
