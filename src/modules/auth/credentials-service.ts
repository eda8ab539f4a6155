import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { inTransaction } from '../../db/transaction.ts';
import type { DB, Db } from '../../db/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { iso } from '../../lib/clock.ts';
import { hashSecret } from '../../lib/credential-hash.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type AuditService, checkReason, type OperatorActor } from '../audit/service.ts';
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
  readonly #audit: AuditService | undefined;
  constructor(db: Kysely<DB>, clock: Clock, onChange: CredentialChanged = () => {}, audit?: AuditService) {
    this.#db = db;
    this.#clock = clock;
    this.#onChange = onChange;
    this.#audit = audit;
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
  async revoke(clientId: string, by?: OperatorActor, reason?: string): Promise<void> {
    const why = by ? checkReason(reason ?? 'no reason given') : null;
    await inTransaction(this.#db, async (trx) => {
      const existing = await credentialsRepository.findByClientId(trx, clientId);
      if (!existing) throw new AppError('CLIENT_NOT_FOUND', `No credential with client id ${clientId}`);
      await credentialsRepository.revoke(trx, clientId, this.#clock.now());
      if (by) {
        await this.#audit?.record(trx, by, {
          action: 'credential.revoke',
          subjectType: 'credential',
          subjectId: clientId,
          merchantId: existing.merchant_id,
          reason: why,
          before: { status: existing.status },
          after: { status: 'REVOKED' },
        });
      }
    });
    this.#onChange(clientId);
  }

  /**
   * Disables a merchant's API access: every active credential set is revoked (their tokens fail at
   * once with CREDENTIALS_REVOKED). A merchant has no status of its own; issuing a new credential set
   * gives access back. Audited as one action.
   */
  async revokeAll(merchantId: string, by: OperatorActor, reason: string): Promise<number> {
    const why = checkReason(reason);
    const revoked = await inTransaction(this.#db, async (trx) => {
      const active = (await credentialsRepository.listByMerchant(trx, merchantId)).filter((c) => c.status === 'ACTIVE');
      const now = this.#clock.now();
      for (const c of active) await credentialsRepository.revoke(trx, c.client_id, now);
      await this.#audit?.record(trx, by, {
        action: 'merchant.disable',
        subjectType: 'merchant',
        subjectId: merchantId,
        merchantId,
        reason: why,
        before: { activeCredentials: active.map((c) => c.client_id) },
        after: { activeCredentials: [] },
      });
      return active.map((c) => c.client_id);
    });
    for (const clientId of revoked) this.#onChange(clientId);
    return revoked.length;
  }

  /** An operator issues a new credential set for a merchant (the secret is returned only here); audited. */
  async issueFor(merchantId: string, by: OperatorActor, reason: string): Promise<IssuedCredential> {
    const why = checkReason(reason);
    return inTransaction(this.#db, async (trx) => {
      const issued = await this.issue(merchantId, trx);
      await this.#audit?.record(trx, by, {
        action: 'credential.issue',
        subjectType: 'credential',
        subjectId: issued.clientId,
        merchantId,
        reason: why,
        after: { clientId: issued.clientId, status: 'ACTIVE' },
      });
      return issued;
    });
  }

  /** A merchant revokes one of its own credential sets (the dashboard): another merchant's client id is not found, as a random one. */
  async revokeOwn(merchantId: string, clientId: string): Promise<void> {
    const existing = await credentialsRepository.findByClientId(this.#db, clientId);
    if (existing?.merchant_id !== merchantId) throw new AppError('CLIENT_NOT_FOUND', `No credential with client id ${clientId}`);
    await credentialsRepository.revoke(this.#db, clientId, this.#clock.now());
    this.#onChange(clientId);
  }

  /** Deletes a credential set: its tokens fail with CREDENTIALS_NOT_FOUND. */
  async delete(clientId: string, by?: OperatorActor): Promise<void> {
    await inTransaction(this.#db, async (trx) => {
      const existing = await credentialsRepository.findByClientId(trx, clientId);
      if (!existing || !(await credentialsRepository.delete(trx, clientId))) {
        throw new AppError('CLIENT_NOT_FOUND', `No credential with client id ${clientId}`);
      }
      if (by) {
        await this.#audit?.record(trx, by, {
          action: 'credential.delete',
          subjectType: 'credential',
          subjectId: clientId,
          merchantId: existing.merchant_id,
          before: { status: existing.status },
        });
      }
    });
    this.#onChange(clientId);
  }
}
