import type { Kysely } from 'kysely';
import { inTransaction } from '../../db/transaction.ts';
import type { DB, Db, MerchantMode } from '../../db/types.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { csvRow, type ExportRange, exportRange } from '../../lib/csv.ts';
import { decodeTimeCursor, encodeTimeCursor } from '../../lib/cursor.ts';
import { AppError } from '../../lib/errors.ts';
import { ExpiringCache } from '../../lib/expiring-cache.ts';
import { newId } from '../../lib/ids.ts';
import { formatMinor } from '../../lib/money.ts';
import { SINGLE_LINE } from '../../lib/schemas.ts';
import { type AuditService, actorLabel, checkReason, type OperatorActor } from '../audit/service.ts';
import { type LedgerRow, type MerchantRow, merchantsRepository } from './repository.ts';

export interface MerchantView {
  id: string;
  name: string;
  balance: string;
  balanceMinor: number;
  currency: string;
  mode: MerchantMode;
  createdAt: string;
}

export interface LedgerEntryView {
  id: string;
  kind: LedgerRow['kind'];
  amount: string;
  amountMinor: number;
  balanceAfter: string;
  balanceAfterMinor: number;
  transferId: string | null;
  note: string | null;
  /** The operator who made it (top-ups, adjustments), as "Name (role)" or "cli (user)"; null for charges and refunds. */
  createdBy: string | null;
  createdAt: string;
}

const SINGLE_LINE_RE = new RegExp(SINGLE_LINE, 'u');
const MAX_RATE_LIMIT = 1_000_000;
/** How long an instance may apply a merchant's limit after the operator changed it. */
export const RATE_LIMIT_CACHE_MS = 1000;

export const LEDGER_CSV_HEADER = ['createdAt', 'entryId', 'kind', 'amount', 'balanceAfter', 'transferId', 'note', 'currency'] as const;
const EXPORT_BATCH = 500;

/** The balance at both ends of a range and what the ledger entries inside it add up to (always close - open). */
export interface BalanceChange {
  opening: string;
  closing: string;
  change: string;
  currency: string;
}

/** Merchants and their money. Every balance change writes a ledger entry in the same transaction. */
export interface IssuedCredential {
  merchantId: string;
  clientId: string;
  clientSecret: string;
}

/** Issues a merchant's first credential set inside the creating transaction: auth's CredentialsService.issue, given by src/services.ts. */
export type IssueCredential = (merchantId: string, db: Db) => Promise<IssuedCredential>;

export class MerchantsService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #issueCredential: IssueCredential;
  readonly #currency: string;
  readonly #limits = new ExpiringCache<number | null>(RATE_LIMIT_CACHE_MS);
  readonly #audit: AuditService;
  constructor(db: Kysely<DB>, clock: Clock, issueCredential: IssueCredential, currency: string, audit: AuditService) {
    this.#db = db;
    this.#audit = audit;
    this.#clock = clock;
    this.#issueCredential = issueCredential;
    this.#currency = currency;
  }

  /**
   * Creates a merchant with a first credential set and an optional opening balance (a TOP_UP entry).
   * A sandbox merchant's money is play money and its transfers are driven by a simulated courier.
   */
  async create(
    name: string,
    openingBalanceMinor = 0,
    mode: MerchantMode = 'live',
    by?: OperatorActor,
  ): Promise<{ merchant: MerchantView; credential: IssuedCredential }> {
    const trimmed = name.trim();
    // The API's text rules, so an operator cannot store what the API would refuse.
    if (trimmed === '' || trimmed.length > 200 || !SINGLE_LINE_RE.test(trimmed)) {
      throw new AppError('VALIDATION_FAILED', 'Merchant name must be 1 to 200 characters without control characters (no line breaks or tabs)');
    }
    return inTransaction(this.#db, async (trx) => {
      const now = this.#clock.now();
      const row: MerchantRow = { id: newId(), name: trimmed, balance: 0, mode, created_at: now, updated_at: now };
      await merchantsRepository.insert(trx, row);
      if (openingBalanceMinor > 0) row.balance = await this.#credit(trx, row.id, openingBalanceMinor, 'opening balance', by);
      const credential = await this.#issueCredential(row.id, trx);
      if (by) {
        await this.#audit.record(trx, by, {
          action: 'merchant.create',
          subjectType: 'merchant',
          subjectId: row.id,
          merchantId: row.id,
          after: { name: row.name, mode, balance: formatMinor(row.balance), clientId: credential.clientId },
        });
      }
      return { merchant: this.#view(row), credential };
    });
  }

  async list(): Promise<MerchantView[]> {
    return (await merchantsRepository.list(this.#db)).map((r) => this.#view(r));
  }

  async get(merchantId: string): Promise<MerchantView> {
    return this.#view(await this.#require(this.#db, merchantId));
  }

  /** Adds money: a TOP_UP ledger entry; from an operator it names them with the reason, and an audit entry goes in the same transaction. */
  async topUp(merchantId: string, amountMinor: number, reason?: string, by?: OperatorActor): Promise<MerchantView> {
    if (!Number.isSafeInteger(amountMinor) || amountMinor <= 0) throw new AppError('VALIDATION_FAILED', 'Top-up amount must be positive');
    // Operators (console, CLI) give a reason; internal callers (seeding, tests) may not.
    const note = by || reason !== undefined ? checkReason(reason) : null;
    return inTransaction(this.#db, async (trx) => {
      const row = await this.#require(trx, merchantId);
      const before = row.balance;
      row.balance = await this.#credit(trx, merchantId, amountMinor, note, by);
      if (by)
        await this.#audit.record(trx, by, {
          action: 'merchant.top_up',
          subjectType: 'merchant',
          subjectId: merchantId,
          merchantId,
          reason: note,
          before: { balance: formatMinor(before) },
          after: { balance: formatMinor(row.balance), amount: formatMinor(amountMinor) },
        });
      return this.#view(row);
    });
  }

  /**
   * Finance's correction (e.g. taking back a mistaken top-up): an ADJUSTMENT ledger entry of a signed,
   * non-zero amount naming the operator, with the reason as its note, audited in the same transaction.
   * It never takes the balance below zero: the conditional UPDATE checks and writes in one statement, so
   * concurrent charges cannot race it there; refused, nothing changes.
   */
  async adjust(merchantId: string, signedAmountMinor: number, reason: string | undefined, by: OperatorActor): Promise<MerchantView> {
    if (!Number.isSafeInteger(signedAmountMinor) || signedAmountMinor === 0) {
      throw new AppError('VALIDATION_FAILED', 'An adjustment must be a non-zero amount (negative to take money back)');
    }
    const note = checkReason(reason);
    return inTransaction(this.#db, async (trx) => {
      const row = await this.#require(trx, merchantId);
      const now = this.#clock.now();
      const balance = await merchantsRepository.adjustBalance(trx, merchantId, signedAmountMinor, now);
      if (balance === undefined) {
        if (signedAmountMinor < 0) {
          const now = (await this.#require(trx, merchantId)).balance; // the latest, not the possibly stale first read
          throw new AppError('INSUFFICIENT_BALANCE', `An adjustment cannot take the balance below zero: it is ${formatMinor(now)}`);
        }
        throw new AppError('VALIDATION_FAILED', 'The balance would exceed the largest amount the service can hold exactly');
      }
      // The balance before is read from the one atomic write, not the earlier read another writer may have moved.
      const before = balance - signedAmountMinor;
      await this.#entry(trx, merchantId, 'ADJUSTMENT', signedAmountMinor, balance, note, now, by);
      await this.#audit.record(trx, by, {
        action: 'merchant.adjust',
        subjectType: 'merchant',
        subjectId: merchantId,
        merchantId,
        reason: note,
        before: { balance: formatMinor(before) },
        after: { balance: formatMinor(balance), amount: formatMinor(signedAmountMinor) },
      });
      return this.#view({ ...row, balance, updated_at: now });
    });
  }

  async ledger(merchantId: string): Promise<{ merchant: MerchantView; entries: LedgerEntryView[]; ledgerSum: string }> {
    const merchant = await this.get(merchantId);
    const entries = await merchantsRepository.ledger(this.#db, merchantId);
    const sum = entries.reduce((s, e) => s + e.amount, 0);
    return {
      merchant,
      ledgerSum: formatMinor(sum),
      entries: entries.map(toEntryView),
    };
  }

  /** The merchant's balance and its ledger entries, newest first, a page at a time (GET /balance). */
  async balancePage(
    merchantId: string,
    query: { limit?: number; cursor?: string },
  ): Promise<{ merchant: MerchantView; entries: LedgerEntryView[]; nextCursor?: string }> {
    const merchant = await this.get(merchantId);
    const limit = query.limit ?? 50;
    const before = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor);
    const rows = await merchantsRepository.ledgerPage(this.#db, merchantId, before, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      merchant,
      entries: page.map(toEntryView),
      ...(rows.length > limit ? { nextCursor: encodeTimeCursor(last) } : {}),
    };
  }

  /**
   * The operator's per-merchant request limit (requests a minute on the merchant API); null returns the
   * merchant to the configured default. Every instance applies it within RATE_LIMIT_CACHE_MS (1 s).
   */
  async setRateLimit(
    merchantId: string,
    perMinute: number | null,
    by?: OperatorActor,
    reason?: string,
  ): Promise<{ merchantId: string; rateLimitPerMinute: number | null }> {
    if (perMinute !== null && (!Number.isSafeInteger(perMinute) || perMinute < 1 || perMinute > MAX_RATE_LIMIT)) {
      throw new AppError('VALIDATION_FAILED', `A merchant's limit must be a whole number of requests a minute from 1 to ${MAX_RATE_LIMIT}`);
    }
    const why = by && reason !== undefined ? checkReason(reason) : null;
    await inTransaction(this.#db, async (trx) => {
      const before = await merchantsRepository.rateLimit(trx, merchantId);
      if (!(await merchantsRepository.setRateLimit(trx, merchantId, perMinute, this.#clock.now()))) {
        throw new AppError('MERCHANT_NOT_FOUND', `No merchant ${merchantId}`);
      }
      if (by) {
        await this.#audit.record(trx, by, {
          action: 'merchant.rate_limit',
          subjectType: 'merchant',
          subjectId: merchantId,
          merchantId,
          reason: why,
          before: { rateLimitPerMinute: before },
          after: { rateLimitPerMinute: perMinute },
        });
      }
    });
    this.#limits.forget(merchantId);
    return { merchantId, rateLimitPerMinute: perMinute };
  }

  /** The merchant's own limit (null: the default) if it was read in the last second; undefined if not. */
  cachedRateLimitOf(merchantId: string): number | null | undefined {
    return this.#limits.peek(merchantId);
  }

  /** The merchant's own limit (null: the default), read at most once a second per merchant: it is asked on every request. */
  async rateLimitOf(merchantId: string): Promise<number | null> {
    return this.#limits.get(merchantId, this.#readRateLimit);
  }

  readonly #readRateLimit = (merchantId: string) => merchantsRepository.rateLimit(this.#db, merchantId);

  /**
   * The merchant's ledger entries created in [from, to) as CSV lines (header first), oldest first, read
   * in batches as the consumer pulls. Their amounts add up to balanceChange(from, to).change.
   */
  async *ledgerCsv(merchantId: string, input: ExportRange): AsyncGenerator<string> {
    const range = exportRange(input);
    await this.#require(this.#db, merchantId);
    yield csvRow(LEDGER_CSV_HEADER);
    let after: { createdAt: number; id: string } | undefined;
    for (;;) {
      const rows = await merchantsRepository.ledgerRange(this.#db, merchantId, range.from, range.to, after, EXPORT_BATCH);
      if (rows.length === 0) return;
      let chunk = '';
      for (const e of rows) {
        chunk += csvRow([iso(e.created_at), e.id, e.kind, formatMinor(e.amount), formatMinor(e.balance_after), e.transfer_id, e.note, this.#currency]);
      }
      yield chunk;
      const last = rows[rows.length - 1];
      after = { createdAt: Number(last.created_at), id: last.id };
      if (rows.length < EXPORT_BATCH) return;
    }
  }

  /** The ledger entries of one of the merchant's transfers (its charge and refunds), oldest first. */
  async transferEntries(merchantId: string, transferId: string): Promise<LedgerEntryView[]> {
    return (await merchantsRepository.ledgerForTransfer(this.#db, merchantId, transferId)).map(toEntryView);
  }

  /** The balance as it stood at `from` and at `to` (the sums of the entries before each), and the change between. */
  async balanceChange(merchantId: string, input: ExportRange): Promise<BalanceChange> {
    const range = exportRange(input);
    await this.#require(this.#db, merchantId);
    const opening = await merchantsRepository.balanceBefore(this.#db, merchantId, range.from);
    const closing = await merchantsRepository.balanceBefore(this.#db, merchantId, range.to);
    return { opening: formatMinor(opening), closing: formatMinor(closing), change: formatMinor(closing - opening), currency: this.#currency };
  }

  async #credit(trx: Db, merchantId: string, amountMinor: number, note: string | null, by?: OperatorActor): Promise<number> {
    const now = this.#clock.now();
    const balance = await merchantsRepository.adjustBalance(trx, merchantId, amountMinor, now);
    // The merchant exists (the caller checked or just created it): only the upper bound can refuse a credit.
    if (balance === undefined) throw new AppError('VALIDATION_FAILED', 'The balance would exceed the largest amount the service can hold exactly');
    await this.#entry(trx, merchantId, 'TOP_UP', amountMinor, balance, note, now, by);
    return balance;
  }

  async #entry(
    trx: Db,
    merchantId: string,
    kind: 'TOP_UP' | 'ADJUSTMENT',
    amountMinor: number,
    balanceAfter: number,
    note: string | null,
    now: number,
    by?: OperatorActor,
  ): Promise<void> {
    await merchantsRepository.insertLedgerEntry(trx, {
      id: newId(),
      merchant_id: merchantId,
      kind,
      amount: amountMinor,
      balance_after: balanceAfter,
      transfer_id: null,
      note,
      created_at: now,
      created_by: by ? actorLabel(by) : null,
    });
  }

  async #require(db: Db, merchantId: string): Promise<MerchantRow> {
    const row = await merchantsRepository.find(db, merchantId);
    if (!row) throw new AppError('MERCHANT_NOT_FOUND', `No merchant ${merchantId}`);
    return row;
  }

  #view(r: MerchantRow): MerchantView {
    return {
      id: r.id,
      name: r.name,
      balance: formatMinor(r.balance),
      balanceMinor: r.balance,
      currency: this.#currency,
      mode: r.mode,
      createdAt: iso(r.created_at),
    };
  }
}

function toEntryView(e: LedgerRow): LedgerEntryView {
  return {
    id: e.id,
    kind: e.kind,
    amount: formatMinor(e.amount),
    amountMinor: e.amount,
    balanceAfter: formatMinor(e.balance_after),
    balanceAfterMinor: e.balance_after,
    transferId: e.transfer_id,
    note: e.note,
    createdBy: e.created_by ?? null,
    createdAt: iso(e.created_at),
  };
}
