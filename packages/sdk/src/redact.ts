/** Redaction shared by errors, debug hooks and inspect/JSON output: the SDK never shows a token or a secret. */

/** Node's util.inspect hook, without importing node:util (the SDK runs on any fetch runtime). */
export const INSPECT = Symbol.for('nodejs.util.inspect.custom');

/** A value shown as its first 6 characters and an ellipsis: enough to tell two apart, useless to an attacker. */
export function mask(value: string): string {
  return value.length <= 6 ? '…' : `${value.slice(0, 6)}…`;
}

const SECRET_NAME = /(secret|password|token|authorization|api[-_]?key)$/i; // access_token, client_secret, clientSecret; not token_type

/** A copy of a JSON value with every field named like a secret masked. */
export function maskFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskFields);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_NAME.test(k) && typeof v === 'string' ? mask(v) : maskFields(v)]),
    );
  }
  return value;
}

/** Headers as a plain object with authorization (and anything named like a secret) masked. */
export function maskHeaders(headers: Headers | Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (lower === 'authorization') {
      const space = value.indexOf(' ');
      out[lower] = space > 0 ? `${value.slice(0, space)} ${mask(value.slice(space + 1))}` : mask(value);
    } else out[lower] = SECRET_NAME.test(lower) ? mask(value) : value;
  }
  return out;
}

/** Replaces every occurrence of the given secrets in a text (a last line of defence for messages from elsewhere). */
export function scrub(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 8) out = out.split(s).join(mask(s));
  return out;
}
