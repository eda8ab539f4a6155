import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';
import { SignJWT } from 'jose';
import type { SigningKey } from '../../config.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';

/**
 * Access tokens are HS256 JWTs in the RFC 9068 profile (header `typ: at+jwt`; claims iss, aud, sub,
 * client_id, iat, exp, jti), algorithm pinned. The token carries the merchant and the client id;
 * whether that credential still exists and is active is checked on every request (auth-service.ts),
 * so revocation does not wait for expiry. See README "Tokens" for why JWT and not opaque tokens.
 *
 * Verification pins everything a key holder could vary: the algorithm, `typ`, issuer and audience;
 * `exp` and `iat` are required and `exp - iat` may not exceed the configured lifetime (a token minted
 * for 100 years, or for ever, is refused even with a valid signature); `iat` may not lie in the future
 * beyond a small clock skew between instances. And each token has exactly one spelling: the three
 * segments must be canonical base64url (no padding, no stray low bits in the last character).
 */
export const ISSUER = 'merchant-delivery-service';
export const AUDIENCE = 'merchant-delivery-api';
const ALG = 'HS256';
const TYP = 'at+jwt';
/** How far an `iat` may lie in the future: clocks of instances differ a little. */
const MAX_CLOCK_SKEW_SECONDS = 60;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

/** True when `token` is three canonical base64url segments: the only spelling the service accepts. */
export function isCanonicalCompactJws(token: string): boolean {
  const parts = token.split('.');
  if (parts.length !== 3) return false;
  // Re-encoding the decoded bytes gives the one canonical spelling: padding, a length of 4n+1, or
  // non-zero unused bits in the last character all come back different.
  return parts.every((part) => SEGMENT.test(part) && Buffer.from(part, 'base64url').toString('base64url') === part);
}

/** Which kind of actor a token speaks for: merchant routes refuse courier tokens and the reverse (403 WRONG_ACTOR). */
export type ActorKind = 'merchant' | 'courier';

export interface TokenClaims {
  actor: ActorKind;
  /** The merchant's or the courier's id (`sub`). */
  subject: string;
  clientId: string;
}

export type VerifyResult = { ok: true; claims: TokenClaims } | { ok: false; reason: 'expired' | 'invalid' };

/** jose's `typ` comparison (RFC 7515 4.1.9): case-insensitive, "application/" optional. */
const normalizeTyp = (value: string): string => {
  const lower = value.toLowerCase();
  return lower.includes('/') ? lower : `application/${lower}`;
};
const EXPECTED_TYP = normalizeTyp(TYP);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A segment's bytes if it is canonical base64url (the one spelling of those bytes), else undefined. */
function canonicalSegment(part: string): Buffer | undefined {
  if (part.length === 0 || !SEGMENT.test(part)) return undefined;
  const bytes = Buffer.from(part, 'base64url');
  return bytes.toString('base64url') === part ? bytes : undefined;
}

/** The JSON object a segment holds (strict UTF-8, a top-level object), else undefined. */
function jsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(utf8.decode(bytes));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const INVALID: VerifyResult = { ok: false, reason: 'invalid' };
const EXPIRED: VerifyResult = { ok: false, reason: 'expired' };
/** Tokens verified by this instance (the whole token is the key): at most this many, the oldest dropped first. */
const VERIFIED_CACHE_SIZE = 4096;

interface Verified {
  claims: TokenClaims;
  iat: number;
  exp: number;
  nbf: number | undefined;
}

export class TokenSigner {
  // Signing goes through jose with the keys imported once as CryptoKeys (importing raw bytes on every call cost about a third).
  // Verification is synchronous node:crypto HMAC on the event loop: WebCrypto's async HMAC hopped to the
  // libuv thread pool and back on every request, leaving the loop idle while it waited.
  #loaded: { signing: Array<{ kid: string; key: CryptoKey }>; verifying: Map<string, KeyObject> } | undefined;
  // Keys given as a function are resolved on first use: a process that never signs or verifies a
  // token (`mds worker`, the operator commands) then needs no key and creates no key file.
  readonly #resolve: () => SigningKey[];

  readonly #clock: Clock;
  readonly ttlSeconds: number;
  // Tokens whose signature and claims checked out, keyed by the whole token string (a token differing in
  // any character is verified from scratch): a hit skips the base64url decoding, two JSON.parse and the
  // HMAC (about 20 µs), and only the checks that depend on the time are made again. The credential's
  // status (revoked, deleted) is not cached here: AuthService checks it on every request.
  readonly #verified = new Map<string, Verified>();
  constructor(keys: SigningKey[] | (() => SigningKey[]), clock: Clock, ttlSeconds: number) {
    this.#resolve = typeof keys === 'function' ? keys : () => keys;
    if (typeof keys !== 'function') this.#load();
    this.#clock = clock;
    this.ttlSeconds = ttlSeconds;
  }

  #load() {
    const keys = this.#resolve();
    if (keys.length === 0) throw new Error('at least one signing key is required');
    this.#loaded = {
      signing: keys.map((k) => ({
        kid: k.kid,
        key: createSecretKey(k.secret).toCryptoKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']) as CryptoKey,
      })),
      verifying: new Map(keys.map((k) => [k.kid, createSecretKey(k.secret)])),
    };
    return this.#loaded;
  }

  async sign(claims: TokenClaims): Promise<string> {
    const [key] = (this.#loaded ?? this.#load()).signing;
    const now = Math.floor(this.#clock.now() / 1000);
    return new SignJWT({ client_id: claims.clientId, role: claims.actor })
      .setProtectedHeader({ alg: ALG, kid: key.kid, typ: TYP })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(claims.subject)
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSeconds)
      .setJti(newId())
      .sign(key.key);
  }

  /** Kept async for its callers; the work is synchronous (no thread-pool hop). */
  async verify(token: string): Promise<VerifyResult> {
    return this.verifySync(token);
  }

  /**
   * The checks jose's jwtVerify made with the options this service used, in the same order (so a forged
   * token never reports "expired"): three canonical base64url segments; a JSON header with alg HS256, no
   * `crit`/`b64`, typ at+jwt, a known kid; the HMAC-SHA256 signature, compared in constant time; a JSON
   * claims object with iss, aud, sub, jti, iat and exp (numbers), nbf if present not in the future, exp
   * not reached (no tolerance); then the service's own: string sub and client_id, role merchant|courier,
   * exp - iat within the lifetime, iat not in the future beyond the clock skew.
   */
  verifySync(token: string): VerifyResult {
    const hit = this.#verified.get(token);
    if (hit) {
      const result = this.#timeChecks(hit);
      if (!result.ok) this.#verified.delete(token);
      return result;
    }
    const dot1 = token.indexOf('.');
    const dot2 = dot1 < 0 ? -1 : token.indexOf('.', dot1 + 1);
    if (dot2 < 0 || token.indexOf('.', dot2 + 1) >= 0) return INVALID;
    const headerBytes = canonicalSegment(token.slice(0, dot1));
    const payloadBytes = canonicalSegment(token.slice(dot1 + 1, dot2));
    const signature = canonicalSegment(token.slice(dot2 + 1));
    if (!headerBytes || !payloadBytes || !signature) return INVALID;

    const header = jsonObject(headerBytes);
    if (!header || header.alg !== ALG || header.crit !== undefined || header.b64 !== undefined) return INVALID;
    if (typeof header.kid !== 'string') return INVALID;
    const key = (this.#loaded ?? this.#load()).verifying.get(header.kid);
    if (!key || signature.length !== 32) return INVALID;
    const expected = createHmac('sha256', key).update(token.slice(0, dot2)).digest();
    if (!timingSafeEqual(expected, signature)) return INVALID;

    const claims = jsonObject(payloadBytes);
    if (!claims) return INVALID;
    if (typeof header.typ !== 'string' || normalizeTyp(header.typ) !== EXPECTED_TYP) return INVALID;
    for (const claim of ['exp', 'iat', 'sub', 'jti', 'iss', 'aud']) if (!Object.hasOwn(claims, claim)) return INVALID;
    const { iss, aud, sub, client_id: clientId, iat, exp, nbf, role } = claims;
    if (iss !== ISSUER) return INVALID;
    if (!(aud === AUDIENCE || (Array.isArray(aud) && aud.includes(AUDIENCE)))) return INVALID;
    if (typeof iat !== 'number' || typeof exp !== 'number' || (nbf !== undefined && typeof nbf !== 'number')) return INVALID;
    // jose's order: nbf and exp before the service's own claims (the same checks #timeChecks makes again below, cheap).
    const now = Math.floor(this.#clock.now() / 1000);
    if (typeof nbf === 'number' && nbf > now) return INVALID;
    if (exp <= now) return EXPIRED;
    if (typeof sub !== 'string' || typeof clientId !== 'string') return INVALID;
    if (role !== 'merchant' && role !== 'courier') return INVALID;
    // A lifetime longer than the configured one was not minted here.
    if (exp - iat > this.ttlSeconds) return INVALID;
    const verified: Verified = { claims: { actor: role, subject: sub, clientId }, iat, exp, nbf: nbf as number | undefined };
    const result = this.#timeChecks(verified);
    if (result.ok) {
      if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value as string);
      this.#verified.set(token, verified);
    }
    return result;
  }

  /** The checks that depend on the time, made on every verification (cached or not). */
  #timeChecks({ claims, iat, exp, nbf }: Verified): VerifyResult {
    const nowMs = this.#clock.now();
    const now = Math.floor(nowMs / 1000);
    if (nbf !== undefined && nbf > now) return INVALID;
    if (exp <= now) return EXPIRED;
    // One that starts in the future was minted by a clock that was ahead (or has jumped back since): not
    // valid now, and answered as expired, so that clients get a new token (the SDK does) rather than fail.
    if (iat > nowMs / 1000 + MAX_CLOCK_SKEW_SECONDS) return EXPIRED;
    return { ok: true, claims };
  }
}
