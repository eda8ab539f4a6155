import { sql, type Transaction } from 'kysely';
import { insertRow, prepared } from '../../db/prepared.ts';
import type { DB, Db, LedgerEntriesTable, TransferState, TransfersTable } from '../../db/types.ts';
import type { NewEvent } from '../events/repository.ts';

export type TransferRow = TransfersTable;

/** What a transition may change besides the state (which the conditional update itself sets). */
export type TransitionChanges = Partial<
  Pick<
    TransferRow,
    | 'courier_id'
    | 'courier_name'
    | 'refunded_amount'
    | 'cancellation'
    | 'delivery_failure'
    | 'next_step_at'
    | 'code_attempts'
    | 'locked'
    | 'estimated_pickup_at'
    | 'estimated_delivery_at'
    | 'assigned_at'
    | 'picked_up_at'
    | 'delivered_at'
  >
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
  /** Operators only: the code shown at the warehouse. */
  transferCode?: string;
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
    await insertRow(db, 'transfers', row);
  },

  /**
   * PostgreSQL: the rest of a transfer's transaction after its quote was consumed, as ONE statement (one
   * round trip): the debit (conditional, as adjustBalance), the transfer row, its event, and the ledger
   * entry with the balance the debit returned. The merchant's balance row, the one row all its transfers
   * share, is then locked for this statement and the COMMIT only. The inserts run whether or not the
   * debit matched: `balance` null means it did not (insufficient), and the caller's refusal rolls it all
   * back. `position` is the event's, for its webhook deliveries.
   */
  async insertDebitedOnPostgres(
    trx: Transaction<DB>,
    w: { transfer: TransferRow; event: NewEvent; delta: number; at: number; ledger?: Omit<LedgerEntriesTable, 'balance_after'> },
  ): Promise<{ balance: number | null; position: number }> {
    const { transfer, event, delta, at, ledger } = w;
    let q = trx
      .with('debit', (db) =>
        db
          .updateTable('merchants')
          .set((eb) => ({ balance: eb('balance', '+', delta), updated_at: at }))
          .where('id', '=', transfer.merchant_id)
          .where((eb) => eb('balance', '+', delta), '>=', 0)
          .where((eb) => eb('balance', '+', delta), '<=', Number.MAX_SAFE_INTEGER)
          .returning('balance'),
      )
      .with('t', (db) => db.insertInto('transfers').values(transfer).returning('id'))
      .with('e', (db) => db.insertInto('events').values(event).returning('position'));
    if (ledger) {
      // Typed casts: the values are selected (from the debit), not VALUES, so PostgreSQL cannot infer them from the columns.
      q = q.with(
        'l',
        () =>
          sql`(insert into ledger_entries (id, merchant_id, kind, amount, balance_after, transfer_id, note, created_at)
          select ${ledger.id}::text, ${ledger.merchant_id}::text, ${ledger.kind}::text, ${ledger.amount}::bigint, debit.balance,
                 ${ledger.transfer_id}::text, ${ledger.note}::text, ${ledger.created_at}::bigint from debit returning id)`,
      ) as unknown as typeof q;
    }
    const row = await q
      .selectNoFrom((eb) => [eb.selectFrom('debit').select('balance').as('balance'), eb.selectFrom('e').select('position').as('position')])
      .executeTakeFirstOrThrow();
    return { balance: row.balance === null ? null : Number(row.balance), position: Number(row.position) };
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

  /** A courier's active jobs, for recomputing their estimates from its new position. */
  async heldBy(db: Db, courierId: string): Promise<TransferRow[]> {
    return db.selectFrom('transfers').selectAll().where('courier_id', '=', courierId).where('state', 'in', ['courierAssigned', 'pickedUp']).execute();
  },

  /** New estimates (not an event: the state is unchanged). */
  async setEstimates(db: Db, id: string, pickupAt: number | null, deliveryAt: number | null): Promise<void> {
    await db.updateTable('transfers').set({ estimated_pickup_at: pickupAt, estimated_delivery_at: deliveryAt }).where('id', '=', id).execute();
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
    if (f.transferCode !== undefined) q = q.where('transfer_code', '=', f.transferCode);
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
    return (
      db
        .selectFrom('transfers')
        .select('id')
        .where('state', '=', 'inProgress')
        .where('created_at', '<=', createdBefore)
        // A scheduled pickup's timeout counts from its window's start (never before creation, so the index above still serves).
        .where((eb) => eb.or([eb('pickup_window_start', 'is', null), eb('pickup_window_start', '<=', createdBefore)]))
        .orderBy('created_at')
        .limit(limit)
        .execute()
    );
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
