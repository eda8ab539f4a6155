import type { Transaction } from 'kysely';
import { definedColumns, everyColumn, insertRow, placeholders, prepared, rowValues, sendStatement } from '../../db/prepared.ts';
import { reusedStatement } from '../../db/reused-statements.ts';
import type { StoredOutcome } from '../../db/transaction.ts';
import type { DB, Db, LedgerEntriesTable, MerchantMode, TransferState, TransfersTable } from '../../db/types.ts';
import type { NewEvent } from '../events/repository.ts';
import { completeInStatementSql, outcomeParameters } from '../idempotency/repository.ts';
import { endpointsUnchangedSql } from '../quotes/repository.ts';
import { deliveriesOfEventSql } from '../webhooks/repository.ts';

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

// In the table's order.
const COLUMNS = everyColumn<TransferRow>({
  id: true,
  merchant_id: true,
  quote_id: true,
  warehouse_id: true,
  product_key: true,
  state: true,
  source: true,
  transfer_code: true,
  tracking_code: true,
  total_amount: true,
  currency: true,
  payment_ttl_minutes: true,
  payment_expires_at: true,
  details: true,
  created_at: true,
  updated_at: true,
  mode: true,
  delivery_pin: true,
  courier_id: true,
  courier_name: true,
  cancellation_fee: true,
  return_fee: true,
  refunded_amount: true,
  cancellation: true,
  delivery_failure: true,
  last_sequence: true,
  next_step_at: true,
  pickup_lat: true,
  pickup_lng: true,
  courier_payout: true,
  code_attempts: true,
  locked: true,
  recipient_phone: true,
  dispatch_round: true,
  dispatch_at: true,
  pickup_window_start: true,
  pickup_window_end: true,
  estimated_pickup_at: true,
  estimated_delivery_at: true,
  assigned_at: true,
  picked_up_at: true,
  delivered_at: true,
});

// The reads behind GET /transfer/{id} and the first page of GET /transfer, compiled once.
const findOne = prepared<[string, string], TransferRow>((db, arg) =>
  db.selectFrom('transfers').select(COLUMNS).where('merchant_id', '=', arg(0)).where('id', '=', arg(1)),
);
const newest = prepared<[string, number], TransferRow>((db, arg) =>
  db.selectFrom('transfers').select(COLUMNS).where('merchant_id', '=', arg(0)).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(arg(1)),
);

/** SQLSTATE of createOnPostgres's refusal when the balance does not cover the price (division_by_zero). */
const INSUFFICIENT_BALANCE_GUARD = '22012';

/** createOnPostgres failed because the merchant's balance does not cover the price (nothing was written). */
export const isInsufficientBalanceGuard = (err: unknown) => (err as { code?: string })?.code === INSUFFICIENT_BALANCE_GUARD;

const LEDGER_COLUMNS = ['id', 'merchant_id', 'kind', 'amount', 'transfer_id', 'note', 'created_at'] as const satisfies ReadonlyArray<
  keyof Omit<LedgerEntriesTable, 'balance_after'>
>;

// createOnPostgres's statement, per set of columns (the rows' keys; the same on every call in practice),
// with or without a ledger entry, an Idempotency-Key's outcome and endpoints. Its parameters: $1 quote,
// $2 merchant, $3 time, $4 balance change, $5 and $6 the deliveries' ids and endpoint ids, then the
// outcome's (outcomeParameters), then the transfer's columns, the event's and the ledger entry's
// (placeholders), then the merchant's name and mode and, with endpoints, their fingerprint.
const createStatements = new Map<string, string>();
function createStatement(transferColumns: string[], eventColumns: string[], withLedger: boolean, withOutcome: boolean, withEndpoints: boolean): string {
  const key = `${transferColumns.join(',')} ${eventColumns.join(',')} ${withLedger} ${withOutcome} ${withEndpoints}`;
  let text = createStatements.get(key);
  if (text) return text;
  const transferFirst = withOutcome ? 12 : 7;
  const eventFirst = transferFirst + transferColumns.length;
  const ledgerFirst = eventFirst + eventColumns.length;
  const ledger = (i: number) => `$${ledgerFirst + i}`;
  const guardFirst = ledgerFirst + (withLedger ? LEDGER_COLUMNS.length : 0);
  text = `with c as (
  update quotes set status = 'consumed', consumed_at = $3 where merchant_id = $2 and id = $1 and status = 'pending' and expires_at > $3
  and exists (select 1 from warehouses w where w.id = quotes.warehouse_id and w.merchant_id = $2 and w.status = 'ACTIVE')
  and exists (select 1 from merchants m where m.id = $2 and m.name = $${guardFirst} and m.mode = $${guardFirst + 1})
  and ${endpointsUnchangedSql('$2', withEndpoints ? `$${guardFirst + 2}` : undefined)} returning id),
t as (
  insert into transfers (${transferColumns.join(', ')}) select ${placeholders(transferColumns, transferFirst)} from c returning 1),
e as (
  insert into events (${eventColumns.join(', ')}) select ${placeholders(eventColumns, eventFirst)} from c
  returning position, id, merchant_id, type, occurred_at),
d as (${deliveriesOfEventSql('e', '$5', '$6')} returning 1),
debit as (
  update merchants set balance = balance + $4, updated_at = $3
  where id = $2 and balance + $4 >= 0 and balance + $4 <= ${Number.MAX_SAFE_INTEGER} and exists (select 1 from c) returning balance)${
    withLedger
      ? `,
l as (
  insert into ledger_entries (${LEDGER_COLUMNS.join(', ')}, balance_after)
  select ${LEDGER_COLUMNS.map((_, i) => ledger(i)).join(', ')}, debit.balance from debit)`
      : ''
  }${
    withOutcome
      ? `,
k as (${completeInStatementSql(7, '$3', 'exists (select 1 from c)')})`
      : ''
  }
select (select count(*) from c) as consumed, (select count(*) from t) + (select count(*) from e) + (select count(*) from d) as written,
  1 / (case when exists (select 1 from c) and not exists (select 1 from debit) then 0 else 1 end) as insufficient_balance_guard`;
  createStatements.set(key, reusedStatement(text));
  return text;
}

/** Merchant-facing queries are scoped to the merchant; the unscoped ones serve operators and the scheduler. */
export const transfersRepository = {
  async insert(db: Db, row: TransferRow): Promise<void> {
    await insertRow(db, 'transfers', row);
  },

  /**
   * PostgreSQL: a whole transfer as ONE statement (one round trip; outside a transaction it commits by
   * itself): the quote consumed (pending, unexpired, its warehouse ACTIVE), the balance debited
   * (conditional, as adjustBalance), and, only if both happened, the transfer row, its event, the ledger
   * entry with the balance the debit returned, and the event's webhook deliveries.
   *
   * The merchant's balance row is the one row all its transfers share, so the debit comes as late as
   * it can: the select list reads the CTEs in order (quote, transfer row, event, deliveries, then the
   * debit), and the ledger entry, which needs the debit's balance, runs after it. The row is locked for
   * the debit, the ledger entry and the commit only, not for the transfer row and its indexes (one hot
   * merchant: ~14 % more transfers a second in paired runs, docs/benchmarks.md "Ninth pass").
   *
   * `consumed` false: the quote could not be consumed (used, expired, its warehouse disabled since it
   * was read, or the merchant's name or mode or its enabled endpoints no longer those the rows were
   * `planned` from) and nothing was written (the inserts select from the consumption). A quote consumed
   * without a debit (the balance does not cover the price) fails the statement with
   * INSUFFICIENT_BALANCE_GUARD (a division by zero), which undoes the consumption and the inserts: see
   * isInsufficientBalanceGuard.
   *
   * With `outcome`, the same statement also stores the Idempotency-Key's response (as
   * idempotencyRepository.complete does), only if the transfer is written: no transaction around it,
   * so the balance row is held for this statement and its commit, as without a key.
   */
  async createOnPostgres(
    db: Db,
    w: {
      quoteId: string;
      transfer: TransferRow;
      event: NewEvent;
      delta: number;
      at: number;
      ledger?: Omit<LedgerEntriesTable, 'balance_after'>;
      deliveries: { ids: string[]; endpointIds: string[] };
      outcome?: Omit<StoredOutcome, 'committed'>;
      /** What the rows were planned from: the merchant's name and mode, and the fingerprint of its enabled endpoints (undefined: none). */
      planned: { merchantName: string; merchantMode: MerchantMode; endpointsFingerprint: string | undefined };
    },
  ): Promise<{ consumed: boolean }> {
    const { transfer, event, ledger, outcome, planned } = w;
    const transferColumns = definedColumns(transfer);
    const eventColumns = definedColumns(event);
    const parameters: unknown[] = [w.quoteId, transfer.merchant_id, w.at, w.delta, w.deliveries.ids, w.deliveries.endpointIds];
    if (outcome) parameters.push(...outcomeParameters(outcome));
    parameters.push(...rowValues(transfer, transferColumns), ...rowValues(event, eventColumns));
    if (ledger) parameters.push(...rowValues(ledger, LEDGER_COLUMNS));
    parameters.push(planned.merchantName, planned.merchantMode);
    const withEndpoints = planned.endpointsFingerprint !== undefined;
    if (withEndpoints) parameters.push(planned.endpointsFingerprint);
    const [result] = await sendStatement<{ consumed: number | string }>(
      db,
      createStatement(transferColumns, eventColumns, ledger !== undefined, outcome !== undefined, withEndpoints),
      parameters,
    );
    return { consumed: Number(result?.consumed) === 1 };
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
