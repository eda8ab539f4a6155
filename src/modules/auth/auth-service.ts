import type { Clock } from '../../lib/clock.ts';
import { hashSecret, secretMatches } from '../../lib/credential-hash.ts';
import { AppError } from '../../lib/errors.ts';
import { ExpiringCache } from '../../lib/expiring-cache.ts';
import type { ActorKind, TokenClaims, TokenSigner } from './tokens.ts';

export interface MerchantPrincipal {
  actor: 'merchant';
  merchantId: string;
  clientId: string;
}

export interface CourierPrincipal {
  actor: 'courier';
  courierId: string;
  clientId: string;
}

/** Who a valid token speaks for. Merchant and courier routes each accept only their own kind. */
export type Principal = MerchantPrincipal | CourierPrincipal;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

const REALM = 'merchant-delivery';
// Compared against when the client id is unknown, so that case costs the same as a wrong secret.
const DUMMY_HASH = hashSecret('no-such-client');

const bearerChallenge = (error?: string, description?: string): string =>
  error ? `Bearer realm="${REALM}", error="${error}", error_description="${description}"` : `Bearer realm="${REALM}"`;

export interface AuthServiceOptions {
  clock: Clock;
  signer: TokenSigner;
  /** How long a credential's status may be served from memory (0 to 1000 ms). */
  cacheTtlMs: number;
  /** Finds a client id's credential in whichever table holds it (merchants' or couriers'): given by src/services.ts, so auth imports neither. */
  findClient: ClientLookup;
}

export type ClientLookup = (clientId: string) => Promise<ClientCredential | undefined>;

type CachedCredential = { actor: ActorKind; subject: string; active: boolean } | null;

/** A credential as the token endpoint and the per-request check see it, whichever actor owns it. */
export interface ClientCredential {
  actor: ActorKind;
  subject: string;
  secretHash: string;
  active: boolean;
}

export class AuthService {
  readonly #o: AuthServiceOptions;
  readonly #cache: ExpiringCache<CachedCredential>;
  constructor(options: AuthServiceOptions) {
    this.#o = options;
    this.#cache = new ExpiringCache(options.cacheTtlMs);
  }

  /**
   * Client credentials grant (RFC 6749 4.4). Failed attempts are counted and limited by the token
   * route (src/http/rate-limits.ts). (Secrets are 256-bit: the limits slow down noise and guessing of
   * client ids, they are not what keeps secrets safe.)
   */
  async issueToken(clientId: string, clientSecret: string): Promise<TokenResponse> {
    const credential = await this.#o.findClient(clientId);
    const matches = secretMatches(clientSecret, credential?.secretHash ?? DUMMY_HASH);
    if (!credential || !matches || !credential.active) {
      const detail = credential && matches ? 'The client credentials have been revoked' : 'Unknown client or wrong client secret';
      throw invalidClient(detail);
    }
    const access_token = await this.#o.signer.sign({ actor: credential.actor, subject: credential.subject, clientId });
    return { access_token, token_type: 'Bearer', expires_in: this.#o.signer.ttlSeconds };
  }

  /** Resolves the Authorization header of a protected request to its merchant or courier, or throws one of the five auth errors. */
  async authenticate(authorization: string | undefined): Promise<Principal> {
    return this.authenticateNow(authorization);
  }

  /**
   * The same check, answered at once when the credential's status is in memory (nearly every request:
   * the request hook then needs no promise), else a promise of the lookup. Throws or rejects as
   * authenticate does.
   */
  authenticateNow(authorization: string | undefined): Principal | Promise<Principal> {
    const claims = this.#verify(authorization);
    const credential = this.#cache.get(claims.clientId, this.#read);
    return credential instanceof Promise ? credential.then((c) => principalOf(claims, c)) : principalOf(claims, credential);
  }

  #verify(authorization: string | undefined): TokenClaims {
    // Anything after "Bearer " is a token to verify (an odd spelling is INVALID_ACCESS_TOKEN, not MISSING_ACCESS_TOKEN);
    // verify() accepts only the one canonical spelling.
    const m = authorization ? /^Bearer +([\x21-\x7e]+) *$/i.exec(authorization) : null;
    if (!m) {
      throw new AppError('MISSING_ACCESS_TOKEN', 'Send the header Authorization: Bearer <access_token>', {
        headers: { 'www-authenticate': bearerChallenge() },
      });
    }
    const result = this.#o.signer.verifySync(m[1]); // synchronous: no thread-pool hop per request
    if (!result.ok) {
      if (result.reason === 'expired') {
        throw tokenError('ACCESS_TOKEN_EXPIRED', 'The access token has expired; obtain a new one and retry once');
      }
      throw tokenError('INVALID_ACCESS_TOKEN', 'The access token cannot be verified');
    }
    return result.claims;
  }

  /** Drops a credential from this instance's cache (called on revoke/delete). Other instances see it within cacheTtlMs. */
  forget(clientId: string): void {
    this.#cache.forget(clientId);
  }

  /** A credential's status, as the cache keeps it for cacheTtlMs. */
  readonly #read = async (clientId: string): Promise<CachedCredential> => {
    const row = await this.#o.findClient(clientId);
    return row ? { actor: row.actor, subject: row.subject, active: row.active } : null;
  };
}

function principalOf({ actor, subject, clientId }: TokenClaims, credential: CachedCredential): Principal {
  if (!credential) throw tokenError('CREDENTIALS_NOT_FOUND', 'The credentials this token was issued for no longer exist');
  if (credential.subject !== subject || credential.actor !== actor) throw tokenError('INVALID_ACCESS_TOKEN', 'The access token has an invalid payload');
  if (!credential.active) throw tokenError('CREDENTIALS_REVOKED', 'The credentials this token was issued for have been revoked');
  return actor === 'courier' ? { actor, courierId: subject, clientId } : { actor, merchantId: subject, clientId };
}

function tokenError(code: 'ACCESS_TOKEN_EXPIRED' | 'INVALID_ACCESS_TOKEN' | 'CREDENTIALS_NOT_FOUND' | 'CREDENTIALS_REVOKED', detail: string) {
  return new AppError(code, detail, { headers: { 'www-authenticate': bearerChallenge('invalid_token', detail) } });
}

export function invalidClient(detail: string): AppError {
  return new AppError('INVALID_CLIENT', detail, {
    headers: { 'www-authenticate': `Basic realm="${REALM}"` },
    extra: { error: 'invalid_client', error_description: detail },
  });
}
