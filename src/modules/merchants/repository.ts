import { insertRow, prepared } from '../../db/prepared.ts';
import type { Db, LedgerEntriesTable, MerchantsTable } from '../../db/types.ts';

export type MerchantRow = MerchantsTable;
export type LedgerRow = LedgerEntriesTable;

// The balance change of every transfer, refund and top-up, compiled once. The WHERE makes the check and
// the write one atomic statement on both stores; the CHECK constraint backs it.
const adjust = prepared<[string, number, number], { balance: number }>((db, arg) =>
  db
    .updateTable('merchants')
    .set((eb) => ({ balance: eb('balance', '+', arg(1)), updated_at: arg(2) }))
    .where('id', '=', arg(0))
    .where((eb) => eb('balance', '+', arg(1)), '>=', 0)
    .where((eb) => eb('balance', '+', arg(1)), '<=', Number.MAX_SAFE_INTEGER)
    .returning('balance'),
);

export const merchantsRepository = {
  async insert(db: Db, row: MerchantRow): Promise<void> {
    await db.insertInto('merchants').values(row).execute();
  },

  async find(db: Db, id: string): Promise<MerchantRow | undefined> {
    return db.selectFrom('merchants').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** Sets (or clears, with null) the merchant's own request limit; false when there is no such merchant. */
  async setRateLimit(db: Db, merchantId: string, perMinute: number | null, at: number): Promise<boolean> {
    const r = await db.updateTable('merchants').set({ rate_limit_per_minute: perMinute, updated_at: at }).where('id', '=', merchantId).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  },

  async rateLimit(db: Db, merchantId: string): Promise<number | null> {
    const row = await db.selectFrom('merchants').select('rate_limit_per_minute').where('id', '=', merchantId).executeTakeFirst();
    return row?.rate_limit_per_minute ?? null;
  },

  async list(db: Db): Promise<MerchantRow[]> {
    return db.selectFrom('merchants').selectAll().orderBy('id').execute();
  },

  /**
   * Adds to the balance (negative to charge). Returns the new balance, or undefined if it would go
   * below zero or above 2^53 - 1 minor units (the largest amount a JS number holds exactly).
   */
  async adjustBalance(db: Db, merchantId: string, delta: number, at: number): Promise<number | undefined> {
    return (await adjust.first(db, merchantId, delta, at))?.balance;
  },

  async insertLedgerEntry(db: Db, row: LedgerRow): Promise<void> {
    await insertRow(db, 'ledger_entries', row);
  },

  /** Newest first, keyset-paged by (created_at, id). */
  async ledgerPage(db: Db, merchantId: string, before: { createdAt: number; id: string } | undefined, limit: number): Promise<LedgerRow[]> {
    let q = db.selectFrom('ledger_entries').selectAll().where('merchant_id', '=', merchantId);
    if (before) {
      q = q.where((eb) => eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]));
    }
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  },

  /** Entries created in [from, to), oldest first, keyset-paged after (createdAt, id): the CSV export's batches. */
  async ledgerRange(
    db: Db,
    merchantId: string,
    from: number,
    to: number,
    after: { createdAt: number; id: string } | undefined,
    limit: number,
  ): Promise<LedgerRow[]> {
    let q = db.selectFrom('ledger_entries').selectAll().where('merchant_id', '=', merchantId).where('created_at', '>=', from).where('created_at', '<', to);
    if (after) {
      q = q.where((eb) => eb.or([eb('created_at', '>', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)])]));
    }
    return q.orderBy('created_at').orderBy('id').limit(limit).execute();
  },

  /** The sum of the entries created before `at`: the balance as it stood then (the balance is the sum of its ledger). */
  async balanceBefore(db: Db, merchantId: string, at: number): Promise<number> {
    const row = await db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('amount'), eb.lit(0)).as('total'))
      .where('merchant_id', '=', merchantId)
      .where('created_at', '<', at)
      .executeTakeFirstOrThrow();
    return Number(row.total);
  },

  /** A transfer's entries (its charge, its refunds), oldest first. */
  async ledgerForTransfer(db: Db, merchantId: string, transferId: string): Promise<LedgerRow[]> {
    return db
      .selectFrom('ledger_entries')
      .selectAll()
      .where('transfer_id', '=', transferId)
      .where('merchant_id', '=', merchantId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  },

  async ledger(db: Db, merchantId: string): Promise<LedgerRow[]> {
    return db.selectFrom('ledger_entries').selectAll().where('merchant_id', '=', merchantId).orderBy('id').execute();
  },

  /**
   * Row-locks the merchant until the transaction ends (a no-op write: portable across PostgreSQL and
   * SQLite, where BEGIN IMMEDIATE already serializes writers). For rare per-merchant invariants such
   * as the warehouse cap.
   */
  async lock(db: Db, merchantId: string): Promise<void> {
    await db
      .updateTable('merchants')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', merchantId)
      .execute();
  },
};
