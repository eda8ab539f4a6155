import type { Transaction } from 'kysely';
import { prepared } from '../../db/prepared.ts';
import type { DB, Db, TransferState, TransfersTable } from '../../db/types.ts';

export type TransferRow = TransfersTable;

/** What a transition may change besides the state (which the conditional update itself sets). */
export type TransitionChanges = Partial<
  Pick<TransferRow, 'courier_id' | 'courier_name' | 'refunded_amount' | 'cancellation' | 'delivery_failure' | 'next_step_at' | 'code_attempts' | 'locked'>
> & { updated_at: number };

export interface TransferListFilter {
  state?: TransferState;
  warehouseId?: string;
  createdFrom?: number;
  createdTo?: number;
  /** Exact matches for the dashboard's search: a transfer id, a tracking code, the digits of the recipient's phone. */
  id?: string;
  trackingCode?: string;
  recipientPhone?: string;
  /** Keyset cursor: rows strictly older than (createdAt, id). */
  before?: { createdAt: number; id: string };
  limit: number;
}

// The reads behind GET /transfer/{id} and the first page of GET /transfer, compiled once.
const findOne = prepared<[string, string], TransferRow>((db, arg) =>
  db.selectFrom('transfers').selectAll().where('merchant_id', '=', arg(0)).where('id', '=', arg(1)),
);
const newest = prepared<[string, number], TransferRow>((db, arg) =>
  db.selectFrom('transfers').selectAll().where('merchant_id', '=', arg(0)).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(arg(1)),
);

/** Merchant-facing queries are scoped to the merchant; the unscoped ones serve operators and the scheduler. */
export const transfersRepository = {
  async insert(db: Db, row: TransferRow): Promise<void> {
    await db.insertInto('transfers').values(row).execute();
  },

  async find(db: Db, merchantId: string, id: string): Promise<TransferRow | undefined> {
    return findOne.first(db, merchantId, id);
  },

  /** Any merchant's transfer: for operators and the scheduler only. */
  async findAny(db: Db, id: string): Promise<TransferRow | undefined> {
    return db.selectFrom('transfers').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /**
   * The one write of the lifecycle: moves the transfer from `from` to `to` only if it is still in
   * `from`, and takes the next event sequence in the same statement. Undefined when another change won.
   */
  async transition(
    trx: Transaction<DB>,
    id: string,
    from: TransferState,
    to: TransferState,
    changes: TransitionChanges,
    /** A courier's move also requires the job to still be theirs (or unassigned, to accept it) and not locked. */
    courier?: { holder: string | null },
  ): Promise<TransferRow | undefined> {
    let q = trx
      .updateTable('transfers')
      .set((eb) => ({ ...changes, state: to, last_sequence: eb('last_sequence', '+', 1) }))
      .where('id', '=', id)
      .where('state', '=', from);
    if (courier) {
      q = q.where('locked', '=', 0);
      q = courier.holder === null ? q.where('courier_id', 'is', null) : q.where('courier_id', '=', courier.holder);
    }
    return q.returningAll().executeTakeFirst();
  },

  /** Stops the sandbox courier's automatic steps for a transfer. */
  async clearNextStep(db: Db, id: string): Promise<void> {
    await db.updateTable('transfers').set({ next_step_at: null }).where('id', '=', id).execute();
  },

  /** Newest first: (created_at, id) descending, so the keyset cursor is stable. */
  async list(db: Db, merchantId: string | undefined, f: TransferListFilter): Promise<TransferRow[]> {
    if (merchantId !== undefined && Object.entries(f).every(([k, v]) => k === 'limit' || v === undefined)) return newest.rows(db, merchantId, f.limit);
    let q = db.selectFrom('transfers').selectAll();
    if (merchantId !== undefined) q = q.where('merchant_id', '=', merchantId);
    if (f.state) q = q.where('state', '=', f.state);
    if (f.warehouseId) q = q.where('warehouse_id', '=', f.warehouseId);
    if (f.createdFrom !== undefined) q = q.where('created_at', '>=', f.createdFrom);
    if (f.createdTo !== undefined) q = q.where('created_at', '<', f.createdTo);
    if (f.id !== undefined) q = q.where('id', '=', f.id);
    if (f.trackingCode !== undefined) q = q.where('tracking_code', '=', f.trackingCode);
    if (f.recipientPhone !== undefined) q = q.where('recipient_phone', '=', f.recipientPhone);
    const before = f.before;
    if (before) {
      q = q.where((eb) => eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]));
    }
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  },

  /** One merchant's transfers created in [from, to), oldest first, keyset-paged after (createdAt, id): the CSV export's batches. */
  async range(
    db: Db,
    merchantId: string,
    from: number,
    to: number,
    after: { createdAt: number; id: string } | undefined,
    limit: number,
  ): Promise<TransferRow[]> {
    let q = db.selectFrom('transfers').selectAll().where('merchant_id', '=', merchantId).where('created_at', '>=', from).where('created_at', '<', to);
    if (after) {
      q = q.where((eb) => eb.or([eb('created_at', '>', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)])]));
    }
    return q.orderBy('created_at').orderBy('id').limit(limit).execute();
  },

  /** Transfers still waiting for a courier that were created before `createdBefore` (the assignment timeout). */
  async unassignedSince(db: Db, createdBefore: number, limit: number): Promise<Pick<TransferRow, 'id'>[]> {
    return db
      .selectFrom('transfers')
      .select('id')
      .where('state', '=', 'inProgress')
      .where('created_at', '<=', createdBefore)
      .orderBy('created_at')
      .limit(limit)
      .execute();
  },

  /** Sandbox transfers whose simulated courier is due to take its next step. */
  async sandboxStepsDue(db: Db, now: number, limit: number): Promise<Pick<TransferRow, 'id' | 'state'>[]> {
    return db
      .selectFrom('transfers')
      .select(['id', 'state'])
      .where('next_step_at', '<=', now)
      .where('mode', '=', 'sandbox')
      .orderBy('next_step_at')
      .limit(limit)
      .execute();
  },
};
