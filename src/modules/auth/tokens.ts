import { createSecretKey } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
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

export class TokenSigner {
  // Imported once: handing jose raw bytes makes it import the key on every call (about a third of verify's cost, bench/tokens.ts).
  readonly #keys: Array<{ kid: string; key: CryptoKey }>;

  readonly #clock: Clock;
  readonly ttlSeconds: number;
  constructor(keys: SigningKey[], clock: Clock, ttlSeconds: number) {
    if (keys.length === 0) throw new Error('at least one signing key is required');
    this.#keys = keys.map((k) => ({
      kid: k.kid,
      key: createSecretKey(k.secret).toCryptoKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']) as CryptoKey,
    }));
    this.#clock = clock;
    this.ttlSeconds = ttlSeconds;
  }

  async sign(claims: TokenClaims): Promise<string> {
    const [key] = this.#keys;
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

  async verify(token: string): Promise<VerifyResult> {
    if (!isCanonicalCompactJws(token)) return { ok: false, reason: 'invalid' };
    try {
      const { payload } = await jwtVerify(
        token,
        (header) => {
          const key = this.#keys.find((k) => k.kid === header.kid);
          if (!key) throw new joseErrors.JWSSignatureVerificationFailed();
          return key.key;
        },
        {
          algorithms: [ALG],
          issuer: ISSUER,
          audience: AUDIENCE,
          typ: TYP,
          requiredClaims: ['exp', 'iat', 'sub', 'jti'],
          currentDate: new Date(this.#clock.now()),
          clockTolerance: 0,
        },
      );
      const { sub, client_id: clientId, iat, exp, role } = payload;
      if (typeof sub !== 'string' || typeof clientId !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') {
        return { ok: false, reason: 'invalid' };
      }
      if (role !== 'merchant' && role !== 'courier') return { ok: false, reason: 'invalid' };
      // A lifetime longer than the configured one, or one that starts in the future, was not minted here.
      if (exp - iat > this.ttlSeconds || iat > this.#clock.now() / 1000 + MAX_CLOCK_SKEW_SECONDS) return { ok: false, reason: 'invalid' };
      return { ok: true, claims: { actor: role, subject: sub, clientId } };
    } catch (err) {
      // Signature is checked before claims, so a forged token never reports "expired".
      return { ok: false, reason: err instanceof joseErrors.JWTExpired ? 'expired' : 'invalid' };
    }
  }
}
