import { prepared } from '../../db/prepared.ts';
import type { StoredOutcome } from '../../db/transaction.ts';
import type { Db, IdempotencyKeysTable } from '../../db/types.ts';

export type IdempotencyRow = IdempotencyKeysTable;

/**
 * complete() as a CTE of the write's own statement (PostgreSQL's quote and transfer): it stores the
 * outcome only `when` (an SQL condition: the write happened), with updated_at = `at`. Its parameters,
 * numbered from `first`, are outcomeParameters(outcome).
 */
export function completeInStatementSql(first: number, at: string, when: string): string {
  const p = (i: number) => `$${first + i}`;
  return `update idempotency_keys set state = 'DONE', response_status = ${p(2)}, response_headers = ${p(3)}, response_body = ${p(4)}, updated_at = ${at}
  where merchant_id = ${p(0)} and idempotency_key = ${p(1)} and ${when}`;
}

/** completeInStatementSql's parameters, in order. */
export const outcomeParameters = (o: Omit<StoredOutcome, 'committed'>): unknown[] => [o.merchantId, o.key, o.status, o.headers, o.body];

// A key's claim, compiled once (a named prepared statement on PostgreSQL): $merchant, $key, $hash, $at.
const claimKey = prepared<[string, string, string, number], { merchant_id: string }>((db, arg) =>
  db
    .insertInto('idempotency_keys')
    .values({
      merchant_id: arg(0),
      idempotency_key: arg(1),
      request_hash: arg(2),
      state: 'IN_PROGRESS',
      response_status: null,
      response_headers: null,
      response_body: null,
      created_at: arg(3),
      updated_at: arg(3),
    })
    .onConflict((oc) => oc.columns(['merchant_id', 'idempotency_key']).doNothing())
    .returning('merchant_id'),
);

export const idempotencyRepository = {
  /** Claims the key (IN_PROGRESS, for this request's hash); false if a row for it exists already. */
  async claim(db: Db, merchantId: string, key: string, requestHash: string, at: number): Promise<boolean> {
    return (await claimKey.rows(db, merchantId, key, requestHash, at)).length > 0;
  },

  async find(db: Db, merchantId: string, key: string): Promise<IdempotencyRow | undefined> {
    return db.selectFrom('idempotency_keys').selectAll().where('merchant_id', '=', merchantId).where('idempotency_key', '=', key).executeTakeFirst();
  },

  /** Takes over an abandoned or expired row, only if it is still the one we looked at. */
  async takeOver(db: Db, old: IdempotencyRow, requestHash: string, now: number): Promise<boolean> {
    const r = await db
      .updateTable('idempotency_keys')
      .set({
        request_hash: requestHash,
        state: 'IN_PROGRESS',
        response_status: null,
        response_headers: null,
        response_body: null,
        created_at: now,
        updated_at: now,
      })
      .where('merchant_id', '=', old.merchant_id)
      .where('idempotency_key', '=', old.idempotency_key)
      .where('updated_at', '=', old.updated_at)
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  },

  async complete(db: Db, merchantId: string, key: string, status: number, headers: string, body: string, now: number): Promise<void> {
    await db
      .updateTable('idempotency_keys')
      .set({ state: 'DONE', response_status: status, response_headers: headers, response_body: body, updated_at: now })
      .where('merchant_id', '=', merchantId)
      .where('idempotency_key', '=', key)
      .execute();
  },

  /** Deletes the key if it is still IN_PROGRESS (and, given `claimedAt`, still the claim made at that time). */
  async release(db: Db, merchantId: string, key: string, claimedAt?: number): Promise<void> {
    let q = db.deleteFrom('idempotency_keys').where('merchant_id', '=', merchantId).where('idempotency_key', '=', key).where('state', '=', 'IN_PROGRESS');
    if (claimedAt !== undefined) q = q.where('created_at', '=', claimedAt);
    await q.execute();
  },

  /** Deletes at most `limit` keys created before `before` (the scheduler's bounded retention batches). */
  async deleteOlderThan(db: Db, before: number, limit: number): Promise<number> {
    const r = await db
      .deleteFrom('idempotency_keys')
      .where((eb) =>
        eb(
          eb.refTuple('merchant_id', 'idempotency_key'),
          'in',
          eb
            .selectFrom('idempotency_keys')
            .select(['merchant_id', 'idempotency_key'])
            .where('created_at', '<=', before)
            .limit(limit)
            .$asTuple('merchant_id', 'idempotency_key'),
        ),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  },
};
