import { type Kysely, sql, type Transaction } from 'kysely';
import { prepared } from '../../db/prepared.ts';
import type { DB, Db, Dialect, WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/types.ts';
import { newId } from '../../lib/ids.ts';

export type EndpointRow = WebhookEndpointsTable;
export type DeliveryRow = WebhookDeliveriesTable;
export type AttemptRow = WebhookAttemptsTable;

/** A message to fan out: an event (body from the events row) or a message of its own with its whole body. */
export interface OutgoingMessage {
  merchantId: string;
  messageId: string;
  type: string;
  eventPosition: number | null;
  payload: string | null;
  at: number;
}

/** Whether an endpoint takes this type of event (its event_types: a JSON array, null for every type). */
const endpointTakes = (e: Pick<EndpointRow, 'event_types'>, type: string) => e.event_types === null || (JSON.parse(e.event_types) as string[]).includes(type);

/** The ids of these endpoints (the merchant's enabled ones) that take this type of event: the fan-out's choice. */
export const endpointsTaking = (endpoints: Array<Pick<EndpointRow, 'id' | 'event_types'>>, type: string): string[] =>
  endpoints.filter((e) => endpointTakes(e, type)).map((e) => e.id);

/**
 * A row last written more than this far in "the future" was scheduled by a clock that has since jumped
 * back: its retry time and lease are taken as due now, instead of waiting out the jump (an hour back would
 * otherwise stall its retries for an hour). Beyond any skew between instances.
 */
const CLOCK_AHEAD_MS = 60_000;

/**
 * For a statement that inserts an event in a CTE (named by `event`, returning position, id, merchant_id,
 * type, occurred_at): the body of a CTE inserting one pending delivery per pair of the two text-array
 * parameters (delivery ids, endpoint ids), as deliver() writes them, to those endpoints that are still
 * the merchant's and enabled when the statement runs (they were read one round trip before). One
 * statement text whatever the number of endpoints; none when the arrays are empty.
 */
export const deliveriesOfEventSql = (event: string, ids: string, endpointIds: string) =>
  `insert into webhook_deliveries (id, merchant_id, endpoint_id, message_id, event_type, event_position, payload, status, attempts, next_attempt_at, locked_until, lease, created_at, updated_at)
  select d.id, ${event}.merchant_id, d.endpoint_id, ${event}.id, ${event}.type, ${event}.position, null, 'pending', 0, ${event}.occurred_at, null, null, ${event}.occurred_at, ${event}.occurred_at
  from ${event} cross join unnest(${ids}::text[], ${endpointIds}::text[]) as d(id, endpoint_id)
  join webhook_endpoints we on we.id = d.endpoint_id and we.merchant_id = ${event}.merchant_id and we.status = 'ENABLED'`;

// Every event's fan-out reads the merchant's enabled endpoints (compiled once).
const enabledEndpoints = prepared<[string], Pick<EndpointRow, 'id' | 'event_types'>>((db, arg) =>
  db.selectFrom('webhook_endpoints').select(['id', 'event_types']).where('merchant_id', '=', arg(0)).where('status', '=', 'ENABLED'),
);

/** Endpoint queries are scoped to the merchant; the unscoped ones serve operators and the worker. */
export const webhooksRepository = {
  async insertEndpoint(db: Db, row: EndpointRow): Promise<void> {
    await db.insertInto('webhook_endpoints').values(row).execute();
  },

  async findEndpoint(db: Db, merchantId: string, id: string): Promise<EndpointRow | undefined> {
    return db.selectFrom('webhook_endpoints').selectAll().where('merchant_id', '=', merchantId).where('id', '=', id).executeTakeFirst();
  },

  /** Any merchant's endpoint: operators and the worker only. */
  async findEndpointAny(db: Db, id: string): Promise<EndpointRow | undefined> {
    return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
  },

  async listEndpoints(db: Db, merchantId: string | undefined): Promise<EndpointRow[]> {
    let q = db.selectFrom('webhook_endpoints').selectAll();
    if (merchantId !== undefined) q = q.where('merchant_id', '=', merchantId);
    return q.orderBy('created_at').orderBy('id').execute();
  },

  async countEndpoints(db: Db, merchantId: string): Promise<number> {
    const r = await db
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('merchant_id', '=', merchantId)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  },

  async updateEndpoint(db: Db, merchantId: string, id: string, changes: Partial<EndpointRow>): Promise<EndpointRow | undefined> {
    return db.updateTable('webhook_endpoints').set(changes).where('merchant_id', '=', merchantId).where('id', '=', id).returningAll().executeTakeFirst();
  },

  async deleteEndpoint(trx: Transaction<DB>, merchantId: string, id: string): Promise<boolean> {
    const found = await webhooksRepository.findEndpoint(trx, merchantId, id);
    if (!found) return false;
    await trx.deleteFrom('webhook_attempts').where('endpoint_id', '=', id).execute();
    await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
    await trx.deleteFrom('webhook_endpoints').where('merchant_id', '=', merchantId).where('id', '=', id).execute();
    return true;
  },

  /**
   * The outbox fan-out: one pending delivery per enabled endpoint of the merchant that takes this type,
   * written in the caller's transaction, so a message is delivered if and only if its change committed.
   * `only`: just this endpoint (tests, replays); `except`: every endpoint but this one.
   */
  async fanOut(trx: Transaction<DB>, m: OutgoingMessage, target: { only?: string; except?: string } = {}): Promise<number> {
    const endpoints = await this.targets(trx, m.merchantId, m.type, target);
    await this.deliver(trx, m, endpoints);
    return endpoints.length;
  },

  /** The ids of the merchant's enabled endpoints that take this type of message (or the one `only` names). */
  async targets(trx: Transaction<DB>, merchantId: string, type: string, target: { only?: string; except?: string } = {}): Promise<string[]> {
    if (target.only === undefined && target.except === undefined) {
      return endpointsTaking(await enabledEndpoints.rows(trx, merchantId), type);
    }
    let q = trx.selectFrom('webhook_endpoints').select(['id', 'event_types']).where('merchant_id', '=', merchantId).where('status', '=', 'ENABLED');
    if (target.only !== undefined) q = q.where('id', '=', target.only);
    if (target.except !== undefined) q = q.where('id', '!=', target.except);
    return (await q.execute()).filter((e) => target.only !== undefined || endpointTakes(e, type)).map((e) => e.id);
  },

  /** One pending delivery of the message to each of these endpoints. */
  async deliver(trx: Transaction<DB>, m: OutgoingMessage, endpointIds: string[]): Promise<void> {
    if (endpointIds.length === 0) return;
    await trx
      .insertInto('webhook_deliveries')
      .values(
        endpointIds.map((endpointId) => ({
          id: newId(),
          merchant_id: m.merchantId,
          endpoint_id: endpointId,
          message_id: m.messageId,
          event_type: m.type,
          event_position: m.eventPosition,
          payload: m.payload,
          status: 'pending' as const,
          attempts: 0,
          next_attempt_at: m.at,
          locked_until: null,
          lease: null,
          created_at: m.at,
          updated_at: m.at,
        })),
      )
      .execute();
  },

  /** Replay: a new delivery to one endpoint for each of these events (the merchant's, read by the caller) that it takes. */
  async replay(trx: Transaction<DB>, endpoint: EndpointRow, events: Array<{ id: string; type: string; position: number }>, now: number): Promise<number> {
    const rows = events
      .filter((e) => endpointTakes(endpoint, e.type))
      .map((e) => ({
        id: newId(),
        merchant_id: endpoint.merchant_id,
        endpoint_id: endpoint.id,
        message_id: e.id,
        event_type: e.type,
        event_position: Number(e.position),
        payload: null,
        status: 'pending' as const,
        attempts: 0,
        next_attempt_at: now,
        locked_until: null,
        lease: null,
        created_at: now,
        updated_at: now,
      }));
    // Bounded statements: SQLite limits the number of bound parameters per statement.
    for (let i = 0; i < rows.length; i += 500)
      await trx
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 500))
        .execute();
    return rows.length;
  },

  /**
   * Due deliveries to claim: pending, due, not leased (or the lease expired: a crashed worker), on an
   * enabled endpoint; at most `perEndpoint` per endpoint, each endpoint's oldest first and then its next (so one
   * endpoint's backlog cannot fill a claim ahead of other endpoints' heads). Read without locks: the
   * claim below is what decides who gets a row.
   */
  async dueCandidates(
    db: Kysely<DB>,
    now: number,
    limit: number,
    perEndpoint: number,
    skipEndpoints: string[],
  ): Promise<Array<{ id: string; endpoint_id: string }>> {
    const skip = skipEndpoints.length ? sql`and d.endpoint_id not in (${sql.join(skipEndpoints)})` : sql``;
    const r = await sql<{ id: string; endpoint_id: string }>`
      select id, endpoint_id from (
        select d.id, d.endpoint_id, d.next_attempt_at,
               row_number() over (partition by d.endpoint_id order by d.next_attempt_at, d.id) as rn
        from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
        where d.status = 'pending' and (d.next_attempt_at <= ${now} or d.updated_at > ${now + CLOCK_AHEAD_MS})
          and (d.locked_until is null or d.locked_until <= ${now} or d.updated_at > ${now + CLOCK_AHEAD_MS})
          and e.status = 'ENABLED' ${skip}
      ) c
      where rn <= ${perEndpoint}
      order by rn, next_attempt_at, id
      limit ${limit}`.execute(db);
    return r.rows;
  },

  /**
   * The claim: leases the rows that are still claimable, in one statement. On PostgreSQL the rows are
   * locked with FOR UPDATE SKIP LOCKED, so two workers never wait on each other and never both get a row;
   * on SQLite the statement itself is serialised. Returns the rows this worker now owns.
   */
  async claim(db: Kysely<DB>, dialect: Dialect, ids: string[], now: number, lockedUntil: number, lease: string): Promise<DeliveryRow[]> {
    if (ids.length === 0) return [];
    const lock = dialect === 'postgres' ? sql`for update skip locked` : sql``;
    const r = await sql<DeliveryRow>`
      update webhook_deliveries set locked_until = ${lockedUntil}, lease = ${lease}, updated_at = ${now}
      where id in (
        select id from webhook_deliveries
        where id in (${sql.join(ids)}) and status = 'pending' and (locked_until is null or locked_until <= ${now} or updated_at > ${now + CLOCK_AHEAD_MS})
        ${lock}
      )
      returning *`.execute(db);
    return r.rows.map((row) => ({ ...row, attempts: Number(row.attempts), next_attempt_at: Number(row.next_attempt_at) }));
  },

  /** The outcome of an attempt, only while the lease is still ours (a worker that lost it records nothing). */
  async settle(
    trx: Transaction<DB>,
    deliveryId: string,
    lease: string,
    changes: Pick<DeliveryRow, 'status' | 'attempts' | 'next_attempt_at' | 'updated_at'>,
  ): Promise<boolean> {
    const r = await trx
      .updateTable('webhook_deliveries')
      .set({ ...changes, locked_until: null, lease: null })
      .where('id', '=', deliveryId)
      .where('lease', '=', lease)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Deliveries due now and the oldest of them (its wait is the outbox lag). */
  async dueSummary(db: Db, now: number): Promise<{ due: number; oldestDueAt: number | null; pending: number }> {
    const due = await db
      .selectFrom('webhook_deliveries')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<number>('next_attempt_at').as('oldest')])
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .executeTakeFirstOrThrow();
    const pending = await db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return { due: Number(due.n), oldestDueAt: due.oldest === null ? null : Number(due.oldest), pending: Number(pending.n) };
  },

  /** The deliveries of these messages (a transfer's events), oldest first: the console's "webhooks sent for it". */
  async deliveriesOfMessages(db: Db, messageIds: string[]): Promise<Array<DeliveryRow & { url: string }>> {
    if (messageIds.length === 0) return [];
    return db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .selectAll('d')
      .select('e.url')
      .where('d.message_id', 'in', messageIds)
      .orderBy('d.created_at')
      .orderBy('d.id')
      .limit(500)
      .execute();
  },

  async insertAttempt(db: Db, row: AttemptRow): Promise<void> {
    await db.insertInto('webhook_attempts').values(row).execute();
  },

  /** Attempts to one endpoint, newest first, keyset-paged by (created_at, id). */
  async attempts(db: Db, endpointId: string, before: { createdAt: number; id: string } | undefined, limit: number): Promise<AttemptRow[]> {
    let q = db.selectFrom('webhook_attempts').selectAll().where('endpoint_id', '=', endpointId);
    if (before) {
      q = q.where((eb) => eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]));
    }
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  },
};
