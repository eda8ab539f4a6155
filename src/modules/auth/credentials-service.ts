import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB, Db } from '../../db/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { iso } from '../../lib/clock.ts';
import { hashSecret } from '../../lib/credential-hash.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { merchantsRepository } from '../merchants/repository.ts';
import { credentialsRepository } from './credentials-repository.ts';

export interface IssuedCredential {
  merchantId: string;
  clientId: string;
  clientSecret: string;
}

export interface CredentialView {
  clientId: string;
  merchantId: string;
  status: 'ACTIVE' | 'REVOKED';
  createdAt: string;
  revokedAt: string | null;
}

/** Called when a credential changes, so this instance's auth cache forgets it at once. */
export type CredentialChanged = (clientId: string) => void;

export class CredentialsService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #onChange: CredentialChanged;
  constructor(db: Kysely<DB>, clock: Clock, onChange: CredentialChanged = () => {}) {
    this.#db = db;
    this.#clock = clock;
    this.#onChange = onChange;
  }

  /** Issues a new credential set; earlier ones keep working (rotation). */
  async issue(merchantId: string, db: Db = this.#db): Promise<IssuedCredential> {
    if (!(await merchantsRepository.find(db, merchantId))) throw new AppError('MERCHANT_NOT_FOUND', `No merchant ${merchantId}`);
    const clientId = `cli_${randomBytes(12).toString('hex')}`;
    const clientSecret = `sk_${randomBytes(32).toString('base64url')}`;
    await credentialsRepository.insert(db, {
      id: newId(),
      client_id: clientId,
      merchant_id: merchantId,
      secret_hash: hashSecret(clientSecret),
      status: 'ACTIVE',
      created_at: this.#clock.now(),
      revoked_at: null,
    });
    return { merchantId, clientId, clientSecret };
  }

  async list(merchantId: string): Promise<CredentialView[]> {
    const rows = await credentialsRepository.listByMerchant(this.#db, merchantId);
    return rows.map((r) => ({
      clientId: r.client_id,
      merchantId: r.merchant_id,
      status: r.status,
      createdAt: iso(r.created_at),
      revokedAt: r.revoked_at === null ? null : iso(r.revoked_at),
    }));
  }

  /** Disables a credential set: its tokens fail with CREDENTIALS_REVOKED, it can no longer get tokens. */
  async revoke(clientId: string): Promise<void> {
    const existing = await credentialsRepository.findByClientId(this.#db, clientId);
    if (!existing) throw new AppError('CLIENT_NOT_FOUND', `No credential with client id ${clientId}`);
    await credentialsRepository.revoke(this.#db, clientId, this.#clock.now());
    this.#onChange(clientId);
  }

  /** A merchant revokes one of its own credential sets (the dashboard): another merchant's client id is not found, as a random one. */
  async revokeOwn(merchantId: string, clientId: string): Promise<void> {
    const existing = await credentialsRepository.findByClientId(this.#db, clientId);
    if (existing?.merchant_id !== merchantId) throw new AppError('CLIENT_NOT_FOUND', `No credential with client id ${clientId}`);
    await credentialsRepository.revoke(this.#db, clientId, this.#clock.now());
    this.#onChange(clientId);
  }

  /** Deletes a credential set: its tokens fail with CREDENTIALS_NOT_FOUND. */
  async delete(clientId: string): Promise<void> {
    if (!(await credentialsRepository.delete(this.#db, clientId))) {
      throw new AppError('CLIENT_NOT_FOUND', `No credential with client id ${clientId}`);
    }
    this.#onChange(clientId);
  }
}
