import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks v1 signatures: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the
 * base64-decoded part of the `whsec_` secret, so receivers verify with the official libraries.
 */

export const SECRET_PREFIX = 'whsec_';

/** A new endpoint secret: whsec_ + base64 of 32 random bytes (the spec allows 24 to 64). */
export const newSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The webhook-signature header: one signature per valid secret (during a rotation the new and the old one), space separated. */
export function signatureHeader(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  return secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' ');
}
