import { insertRow, placeholders, prepared, rowValues, sendStatement, sendWrite } from '../../db/prepared.ts';
import { reusedStatement } from '../../db/reused-statements.ts';
import type { StoredOutcome } from '../../db/transaction.ts';
import type { Db, EventsTable, MerchantMode, QuotesTable, WarehousesTable } from '../../db/types.ts';
import { completeInStatementSql, outcomeParameters } from '../idempotency/repository.ts';
import { WAREHOUSE_COLUMNS, type WarehouseRow } from '../warehouses/repository.ts';
import { deliveriesOfEventSql } from '../webhooks/repository.ts';

export type QuoteRow = QuotesTable;

/** What pricing a quote reads, in one statement: the warehouse, the tariff version in force, and who takes its event. */
export interface QuoteContext {
  warehouse: WarehouseRow;
  /** The newest tariff version; null when none was ever set (the built-in default is in force). */
  tariffVersion: number | null;
  /** The merchant's enabled webhook endpoints, with the event types each takes (null: every type). */
  endpoints: EndpointTypes[];
}

/**
 * PostgreSQL's context also carries fingerprints of what it read (the warehouse row's revision, a hash of
 * the endpoints), so that a quote priced from a remembered context is written only if they still hold: see
 * insertWithEventOnPostgres.
 */
export interface FingerprintedContext extends QuoteContext {
  fingerprint: { warehouse: string; endpoints: string };
}

/** An enabled webhook endpoint and the event types it takes (null: every type). */
export type EndpointTypes = { id: string; event_types: string | null };

/** The endpoints of a read that left-joined them (one row each, or one row of nulls for none). */
const endpointsOf = (rows: Array<{ endpoint_id: string | null; endpoint_event_types: string | null }>): EndpointTypes[] =>
  rows.flatMap((r) => (r.endpoint_id === null ? [] : [{ id: r.endpoint_id, event_types: r.endpoint_event_types }]));

type ContextRow = WarehouseRow & { tariff_version: number | string | null; endpoint_id: string | null; endpoint_event_types: string | null };

// SQLite's context read: one row per enabled endpoint of the merchant (one row with null endpoint columns
// when it has none), each carrying the warehouse and the tariff version. PostgreSQL: contextOnPostgres.
const context = prepared<[string, string], ContextRow>((db, arg) =>
  db
    .selectFrom('warehouses as w')
    .leftJoin('webhook_endpoints as e', (join) => join.onRef('e.merchant_id', '=', 'w.merchant_id').on('e.status', '=', 'ENABLED'))
    .select(WAREHOUSE_COLUMNS.map((c) => `w.${c}` as const))
    .select((eb) => [
      eb
        .selectFrom('tariffs')
        .select((t) => t.fn.max('version').as('v'))
        .as('tariff_version'),
      'e.id as endpoint_id',
      'e.event_types as endpoint_event_types',
    ])
    .where('w.merchant_id', '=', arg(0))
    .where('w.id', '=', arg(1))
    .orderBy('e.id'),
);

type NewQuoteEvent = Omit<EventsTable, 'position'>;

/** The merchant's enabled endpoints as one JSON array `list` (null for none), for a lateral join. */
const ENABLED_ENDPOINTS = (merchant: string) => `(
    select json_agg(json_build_object('id', e.id, 'event_types', e.event_types) order by e.id) as list
    from webhook_endpoints e where e.merchant_id = ${merchant} and e.status = 'ENABLED')`;
// What a PostgreSQL quote depends on, as one FROM clause over the warehouse `w` (merchant $1, id $2):
// the tariff version in force `t` and the merchant's enabled endpoints `ep`. Read by contextOnPostgres
// with the fingerprints below, and checked again with the same expressions by the write's guard (for a
// context read with no endpoints, by `not exists` of an enabled one: see insertWithEvent).
const WAREHOUSE_AND_TARIFF = `warehouses w
  cross join lateral (select max(version) as version from tariffs) t`;
const THE_WAREHOUSE = 'where w.merchant_id = $1 and w.id = $2';
const PRICED_FROM = `${WAREHOUSE_AND_TARIFF}
  cross join lateral ${ENABLED_ENDPOINTS('w.merchant_id')} ep
  ${THE_WAREHOUSE}`;
// The warehouse row's revision: the database gives it a new random one on every write (migration 018), so
// an equal revision is the same row. It replaced md5(w::text), the whole row printed as text and hashed: about
// 27 µs of the database's CPU a quote (docs/benchmarks.md "Thirty-fifth pass").
const WAREHOUSE_FP = 'w.revision';
const ENDPOINTS_FP = "md5(coalesce(ep.list::text, ''))";
/**
 * SQL that holds when merchant `merchant`'s enabled endpoints are still those fingerprinted `fingerprint`
 * (as contextOnPostgres and forTransfer fingerprint them); for a list read empty, that there still are none.
 */
export const endpointsUnchangedSql = (merchant: string, fingerprint: string | undefined): string =>
  fingerprint === undefined
    ? `not exists (select 1 from webhook_endpoints e where e.merchant_id = ${merchant} and e.status = 'ENABLED')`
    : `(select ${ENDPOINTS_FP} from ${ENABLED_ENDPOINTS(merchant)} ep) = ${fingerprint}`;
const CONTEXT_ON_POSTGRES = `select ${WAREHOUSE_COLUMNS.map((c) => `w.${c}`).join(', ')}, t.version as tariff_version,
  ep.list as endpoints, ${WAREHOUSE_FP} as warehouse_fp, ${ENDPOINTS_FP} as endpoints_fp from ${PRICED_FROM}`;

const QUOTE_COLUMNS = [
  'id',
  'merchant_id',
  'warehouse_id',
  'transfer_id',
  'event_id',
  'status',
  'tariff_version',
  'currency',
  'request',
  'pickup',
  'products',
  'expires_at',
  'created_at',
  'consumed_at',
] as const satisfies ReadonlyArray<keyof QuoteRow>;
const EVENT_COLUMNS = [
  'id',
  'merchant_id',
  'transfer_id',
  'sequence',
  'type',
  'state',
  'actor_type',
  'actor_id',
  'actor_name',
  'data',
  'occurred_at',
] as const satisfies ReadonlyArray<keyof NewQuoteEvent>;
// insertWithEvent's parameters: $1 merchant, $2 warehouse, $3 warehouse fingerprint, $4 tariff version,
// the quote's columns, the event's; then, for a merchant with endpoints, their fingerprint and the
// deliveries' ids and endpoint ids; then, with an outcome, outcomeParameters and the time.
const QUOTE_FIRST = 5;
const EVENT_FIRST = QUOTE_FIRST + QUOTE_COLUMNS.length;
const AFTER_ROWS = EVENT_FIRST + EVENT_COLUMNS.length;
/**
 * PostgreSQL only (SQLite has no INSERT in a WITH): the quote, its event and the event's webhook
 * deliveries (unnest of two arrays, so one statement text whatever the number of endpoints), written
 * only if the warehouse row, the tariff version and the endpoints are still those the quote was priced
 * from (the guard `ok`). Priced with no endpoints, the guard checks that there still are none, and there
 * are no deliveries to write: 15 % less database time a quote than the fingerprint of an empty list and
 * an empty insert (docs/benchmarks.md "Seventeenth pass"). With an outcome, also the Idempotency-Key's
 * response (as idempotencyRepository.complete stores it), written only with the quote. Whether it wrote:
 * without endpoints the event's insert is the statement itself, and its row count says (sendWrite); with
 * them, the deliveries need the event's position, so it answers the count of the events it wrote.
 */
const insertWithEvent = (withEndpoints: boolean, withOutcome: boolean) => {
  const outcomeFirst = withEndpoints ? AFTER_ROWS + 3 : AFTER_ROWS;
  const unchanged = `${WAREHOUSE_FP} = $3 and t.version is not distinct from $4::bigint`;
  const insertEvent = `insert into events (${EVENT_COLUMNS.join(', ')}) select ${placeholders(EVENT_COLUMNS, EVENT_FIRST)} from ok`;
  return `with ok as (${
    withEndpoints
      ? `select 1 from ${PRICED_FROM} and ${unchanged} and ${ENDPOINTS_FP} = $${AFTER_ROWS}`
      : `select 1 from ${WAREHOUSE_AND_TARIFF} ${THE_WAREHOUSE} and ${unchanged}
  and ${endpointsUnchangedSql('w.merchant_id', undefined)}`
  }),
q as (insert into quotes (${QUOTE_COLUMNS.join(', ')}) select ${placeholders(QUOTE_COLUMNS, QUOTE_FIRST)} from ok)${
    withOutcome
      ? `,
k as (${completeInStatementSql(outcomeFirst, `$${outcomeFirst + 5}`, 'exists (select 1 from ok)')})`
      : ''
  }${
    withEndpoints
      ? `,
e as (${insertEvent} returning position, id, merchant_id, type, occurred_at),
d as (${deliveriesOfEventSql('e', `$${AFTER_ROWS + 1}`, `$${AFTER_ROWS + 2}`)})
select count(*) as written from e`
      : `
${insertEvent}`
  }`;
};
/** insertWithEvent's four texts, by [with endpoints][with an outcome]. */
const INSERT_WITH_EVENT = [
  [reusedStatement(insertWithEvent(false, false)), reusedStatement(insertWithEvent(false, true))],
  [reusedStatement(insertWithEvent(true, false)), reusedStatement(insertWithEvent(true, true))],
] as const;

/** A quote consumed for a transfer, with what the transfer needs of its warehouse and its merchant (read by the same statement). */
export type ConsumedQuote = QuoteRow & {
  warehouse_status: WarehousesTable['status'] | null;
  merchant_name: string | null;
  merchant_mode: MerchantMode | null;
  merchant_balance: number | null;
};

// SQLite's transfer consumes its quote first (compiled once): see consumeForTransfer.
const consume = prepared<[string, string, number], ConsumedQuote>(
  (db, arg) =>
    db
      .updateTable('quotes')
      .set({ status: 'consumed', consumed_at: arg(2) })
      .where('merchant_id', '=', arg(0))
      .where('id', '=', arg(1))
      .where('status', '=', 'pending')
      .where('expires_at', '>', arg(2))
      .returningAll()
      .returning((eb) => [
        eb
          .selectFrom('warehouses')
          .select('warehouses.status')
          .whereRef('warehouses.id', '=', 'quotes.warehouse_id')
          .where('warehouses.merchant_id', '=', arg(0))
          .as('warehouse_status'),
        eb.selectFrom('merchants').select('merchants.name').where('merchants.id', '=', arg(0)).as('merchant_name'),
        eb.selectFrom('merchants').select('merchants.mode').where('merchants.id', '=', arg(0)).as('merchant_mode'),
        eb.selectFrom('merchants').select('merchants.balance').where('merchants.id', '=', arg(0)).as('merchant_balance'),
      ]) as never,
);

// PostgreSQL's transfer reads its quote (unless this instance remembers it: RecentQuotes) before the one
// statement that consumes it: with the warehouse's status, the merchant's name, mode and balance, and the
// merchant's enabled endpoints (one JSON array) with their fingerprint. Its columns are spelled out, so
// it can be prepared once per connection (reusedStatement).
const FOR_TRANSFER =
  reusedStatement(`select ${QUOTE_COLUMNS.map((c) => `q.${c}`).join(', ')}, w.status as warehouse_status, m.name as merchant_name, m.mode as merchant_mode,
    m.balance as merchant_balance, ep.list as endpoints, ${ENDPOINTS_FP} as endpoints_fp
  from quotes q
  left join warehouses w on w.id = q.warehouse_id and w.merchant_id = q.merchant_id
  left join merchants m on m.id = q.merchant_id
  cross join lateral ${ENABLED_ENDPOINTS('q.merchant_id')} ep
  where q.merchant_id = $1 and q.id = $2`);

export const quotesRepository = {
  async insert(db: Db, row: QuoteRow): Promise<void> {
    await insertRow(db, 'quotes', row);
  },

  /** The warehouse (undefined: not the merchant's), the tariff version in force and the enabled endpoints, in one statement (SQLite's quotes). */
  async context(db: Db, merchantId: string, warehouseId: string): Promise<QuoteContext | undefined> {
    const rows = await context.rows(db, merchantId, warehouseId);
    const first = rows[0];
    if (!first) return undefined;
    const { tariff_version, endpoint_id: _id, endpoint_event_types: _types, ...warehouse } = first;
    return {
      warehouse,
      tariffVersion: tariff_version === null ? null : Number(tariff_version),
      endpoints: endpointsOf(rows),
    };
  },

  /** context() on PostgreSQL, with the fingerprints of the warehouse row and the endpoints it saw (one row, the endpoints as JSON). */
  async contextOnPostgres(db: Db, merchantId: string, warehouseId: string): Promise<FingerprintedContext | undefined> {
    const [row] = await sendStatement<
      WarehouseRow & { tariff_version: number | null; endpoints: EndpointTypes[] | null; warehouse_fp: string; endpoints_fp: string }
    >(db, CONTEXT_ON_POSTGRES, [merchantId, warehouseId]);
    if (!row) return undefined;
    const { tariff_version, endpoints, warehouse_fp, endpoints_fp, ...warehouse } = row;
    return {
      warehouse,
      tariffVersion: tariff_version === null ? null : Number(tariff_version),
      endpoints: endpoints ?? [],
      fingerprint: { warehouse: warehouse_fp, endpoints: endpoints_fp },
    };
  },

  /**
   * PostgreSQL: the quote, its event and one webhook delivery per (deliveryId, endpointId) pair in one
   * statement, if what it was priced from (`context`) still holds; run outside a transaction it is one
   * round trip that commits by itself. False (nothing written) when the warehouse, the tariff version
   * or the endpoints changed since `context` was read. With `outcome`, the Idempotency-Key's response is
   * stored by the same statement, only if the quote is.
   */
  async insertWithEventOnPostgres(
    db: Db,
    context: FingerprintedContext,
    row: QuoteRow,
    event: NewQuoteEvent,
    deliveries: { ids: string[]; endpointIds: string[] },
    outcome?: Omit<StoredOutcome, 'committed'>,
  ): Promise<boolean> {
    const withEndpoints = context.endpoints.length > 0;
    const parameters: unknown[] = [
      row.merchant_id,
      row.warehouse_id,
      context.fingerprint.warehouse,
      context.tariffVersion,
      ...rowValues(row, QUOTE_COLUMNS),
      ...rowValues(event, EVENT_COLUMNS),
    ];
    if (withEndpoints) parameters.push(context.fingerprint.endpoints, deliveries.ids, deliveries.endpointIds);
    if (outcome) parameters.push(...outcomeParameters(outcome), row.created_at);
    const text = INSERT_WITH_EVENT[withEndpoints ? 1 : 0][outcome ? 1 : 0];
    if (!withEndpoints) return (await sendWrite(db, text, parameters)) === 1;
    const [result] = await sendStatement<{ written: number | string }>(db, text, parameters);
    return Number(result?.written) === 1;
  },

  async find(db: Db, merchantId: string, id: string): Promise<QuoteRow | undefined> {
    return db.selectFrom('quotes').selectAll().where('merchant_id', '=', merchantId).where('id', '=', id).executeTakeFirst();
  },

  /**
   * pending (and not expired) -> consumed, atomically, for POST /transfer; undefined if it is missing, used
   * or expired. Its RETURNING also reads the quote's warehouse (its status: a disabled one refuses) and the
   * merchant (name, mode, balance for the refusal's message), which were two more statements (two more
   * round trips on PostgreSQL) inside the transaction.
   */
  async consumeForTransfer(db: Db, merchantId: string, id: string, at: number): Promise<ConsumedQuote | undefined> {
    return consume.first(db, merchantId, id, at);
  },

  /**
   * The quote as consumeForTransfer returns it, without consuming it, and the merchant's enabled webhook
   * endpoints: what PostgreSQL's one-statement transfer (transfersRepository.createOnPostgres) needs first.
   */
  async forTransfer(
    db: Db,
    merchantId: string,
    id: string,
  ): Promise<{ quote: ConsumedQuote; endpoints: EndpointTypes[]; endpointsFingerprint: string } | undefined> {
    const [row] = await sendStatement<ConsumedQuote & { endpoints: EndpointTypes[] | null; endpoints_fp: string }>(db, FOR_TRANSFER, [merchantId, id]);
    if (!row) return undefined;
    const { endpoints, endpoints_fp, ...quote } = row;
    return { quote, endpoints: endpoints ?? [], endpointsFingerprint: endpoints_fp };
  },

  /**
   * Deletes at most `limit` quotes that were never used and expired before `before` (retention), found
   * through quotes_unused_expiry_idx (`where consumed_at is null`, migration 017). Only this statement
   * states `consumed_at is null`, so no lookup by id can take that index (test/quote-lookups.test.ts);
   * `status = 'pending'` as well, so a quote whose status says consumed is never deleted.
   */
  async deleteUnusedExpiredBefore(db: Db, before: number, limit: number): Promise<number> {
    const r = await db
      .deleteFrom('quotes')
      .where('id', 'in', (eb) =>
        eb.selectFrom('quotes').select('id').where('consumed_at', 'is', null).where('status', '=', 'pending').where('expires_at', '<=', before).limit(limit),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  },
};
