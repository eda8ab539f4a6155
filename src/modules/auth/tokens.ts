import { createSecretKey } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { SigningKey } from '../../config.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';

/**
 * Access tokens are HS256 JWTs (algorithm pinned). The token carries the merchant and the client id;
 * whether that credential still exists and is active is checked on every request (auth-service.ts),
 * so revocation does not wait for expiry. See README "Tokens" for why JWT and not opaque tokens.
 */
const ISSUER = 'merchant-delivery-service';
const ALG = 'HS256';

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
    return new SignJWT({ cid: claims.clientId, role: claims.actor })
      .setProtectedHeader({ alg: ALG, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setSubject(claims.subject)
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttlSeconds)
      .setJti(newId())
      .sign(key.key);
  }

  async verify(token: string): Promise<VerifyResult> {
    try {
      const { payload } = await jwtVerify(
        token,
        (header) => {
          const key = this.#keys.find((k) => k.kid === header.kid);
          if (!key) throw new joseErrors.JWSSignatureVerificationFailed();
          return key.key;
        },
        { algorithms: [ALG], issuer: ISSUER, currentDate: new Date(this.#clock.now()), clockTolerance: 0, typ: 'at+jwt' },
      );
      if (typeof payload.sub !== 'string' || typeof payload.cid !== 'string') return { ok: false, reason: 'invalid' };
      // Tokens issued before couriers existed carry no role: they are merchants'.
      const role = payload.role ?? 'merchant';
      if (role !== 'merchant' && role !== 'courier') return { ok: false, reason: 'invalid' };
      return { ok: true, claims: { actor: role, subject: payload.sub, clientId: payload.cid } };
    } catch (err) {
      // Signature is checked before claims, so a forged token never reports "expired".
      return { ok: false, reason: err instanceof joseErrors.JWTExpired ? 'expired' : 'invalid' };
    }
  }
}
