import { MerchantDeliveryError } from './errors.ts';
import type { TransferEvent } from './types.ts';

/**
 * Webhook deliveries follow Standard Webhooks (https://www.standardwebhooks.com): headers
 * `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256
 * of "id.timestamp.body">`, several separated by spaces while a secret rotates), keyed with the
 * base64 part of the endpoint's `whsec_...` secret. The body is `{ type, timestamp, data }` where
 * `data` is the event as GET /transfer/{id}/events lists it.
 */
export interface WebhookEvent {
  type: TransferEvent['type'];
  timestamp: string;
  data: TransferEvent;
}

/** Request headers as fetch (`Headers`), Node's http (`IncomingHttpHeaders`) or a plain object give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** Accepted clock difference (default 300 s, as Standard Webhooks recommends). */
  toleranceSeconds?: number;
  /** Clock (epoch ms), for tests. */
  now?: () => number;
}

const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v[0] : v;
  }
  return undefined;
}

const fail = (detail: string) => new MerchantDeliveryError({ type: 'WEBHOOK_VERIFICATION_FAILED', detail, retryable: false });

function secretBytes(secret: string): Uint8Array {
  const base64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  try {
    const binary = atob(base64);
    if (binary.length === 0) throw new Error('empty');
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    throw fail('The webhook secret is not a whsec_ secret (base64 after the prefix)');
  }
}

function toBase64(bytes: ArrayBuffer): string {
  let binary = '';
  for (const b of new Uint8Array(bytes)) binary += String.fromCharCode(b);
  return btoa(binary);
}

async function hmac(secret: string, id: string, timestamp: string, body: string | Uint8Array): Promise<string> {
  const key = await globalThis.crypto.subtle.importKey('raw', secretBytes(secret) as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const payload = typeof body === 'string' ? encoder.encode(body) : body;
  const signed = new Uint8Array(prefix.length + payload.length);
  signed.set(prefix, 0);
  signed.set(payload, prefix.length);
  return toBase64(await globalThis.crypto.subtle.sign('HMAC', key, signed));
}

/** Compares two strings in time independent of where they differ. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Verifies a webhook delivery and returns its event. Pass the body exactly as received (the raw
 * bytes or text, before any JSON parsing). Throws MerchantDeliveryError `WEBHOOK_VERIFICATION_FAILED`
 * when a header is missing, the timestamp is outside the tolerance, or no signature matches.
 * Deliveries can repeat: deduplicate on `webhook-id` (the event id).
 */
export async function verifyWebhook(
  headers: WebhookHeaders,
  rawBody: string | Uint8Array,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw fail('Missing webhook-id, webhook-timestamp or webhook-signature header');
  if (!/^\d+$/.test(timestamp)) throw fail('Invalid webhook-timestamp');
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(timestamp)) > tolerance) throw fail('The webhook timestamp is outside the tolerance (too old or in the future)');
  const expected = await hmac(secret, id, timestamp, rawBody);
  const ok = signatures
    .split(' ')
    .map((s) => s.split(','))
    .some(([version, signature]) => version === 'v1' && signature !== undefined && constantTimeEqual(signature, expected));
  if (!ok) throw fail('No webhook signature matches');
  const text = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  try {
    return JSON.parse(text) as WebhookEvent;
  } catch {
    throw fail('The webhook body is not JSON');
  }
}

/** The webhook-signature header value for a delivery (to test your receiver, or to sign like the service does). */
export async function signWebhook(secret: string, id: string, timestamp: number | string, body: string | Uint8Array): Promise<string> {
  return `v1,${await hmac(secret, id, String(timestamp), body)}`;
}
