import { sql } from 'kysely';
import type { Db, OfferStatus, OffersTable } from '../../db/types.ts';

export type OfferRow = OffersTable;

/** A paid live transfer with no courier and no open offer, due for one. */
export interface AwaitingTransfer {
  id: string;
  pickup_lat: number;
  pickup_lng: number;
  product_key: string;
  dispatch_round: number;
}

export interface AvailableCourier {
  id: string;
  lat: number;
  lng: number;
}

const ACTIVE_STATES = ['courierAssigned', 'pickedUp', 'returning'] as const;

/**
 * Offers and the dispatcher's reads. Every change of an offer is one conditional UPDATE from `open`,
 * so accept, decline, expiry and withdrawal race to exactly one outcome on any instance.
 */
export const offersRepository = {
  async insert(db: Db, row: OfferRow): Promise<void> {
    await db.insertInto('offers').values(row).execute();
  },

  /** The courier's own offer (another courier's answers like a missing one). */
  async findForCourier(db: Db, courierId: string, offerId: string): Promise<OfferRow | undefined> {
    return db.selectFrom('offers').selectAll().where('id', '=', offerId).where('courier_id', '=', courierId).executeTakeFirst();
  },

  /** The courier's open offers not yet past their time, oldest first. */
  async openForCourier(db: Db, courierId: string, now: number): Promise<OfferRow[]> {
    return db
      .selectFrom('offers')
      .selectAll()
      .where('courier_id', '=', courierId)
      .where('status', '=', 'open')
      .where('expires_at', '>', now)
      .orderBy('created_at')
      .execute();
  },

  /** open -> `to`, only for this courier, and (for an accept) only before it expires. False: it was not open (or is past its time). */
  async decide(db: Db, offerId: string, courierId: string, to: Exclude<OfferStatus, 'open'>, now: number, beforeExpiry: boolean): Promise<boolean> {
    let q = db
      .updateTable('offers')
      .set({ status: to, decided_at: now })
      .where('id', '=', offerId)
      .where('courier_id', '=', courierId)
      .where('status', '=', 'open');
    if (beforeExpiry) q = q.where('expires_at', '>', now);
    const r = await q.executeTakeFirst();
    return r.numUpdatedRows > 0n;
  },

  /** Open offers past their time become expired (a bounded batch); returns them. */
  async expireDue(db: Db, now: number, limit: number): Promise<Pick<OfferRow, 'id' | 'courier_id' | 'transfer_id'>[]> {
    const due = db.selectFrom('offers').select('id').where('status', '=', 'open').where('expires_at', '<=', now).orderBy('expires_at').limit(limit);
    return db
      .updateTable('offers')
      .set({ status: 'expired', decided_at: now })
      .where('id', 'in', due)
      .where('status', '=', 'open')
      .where('expires_at', '<=', now)
      .returning(['id', 'courier_id', 'transfer_id'])
      .execute();
  },

  /**
   * Open offers whose transfer no longer waits for a courier (taken from the job list, assigned by an
   * operator, cancelled), or whose courier went offline (the job passes on at once, and it is no miss).
   */
  async withdrawStale(db: Db, now: number, transferId?: string): Promise<number> {
    let q = db
      .updateTable('offers')
      .set({ status: 'withdrawn', decided_at: now })
      .where('status', '=', 'open')
      .where(({ or, not, exists, selectFrom }) =>
        or([
          not(
            exists(
              selectFrom('transfers')
                .select('transfers.id')
                .whereRef('transfers.id', '=', 'offers.transfer_id')
                .where('transfers.state', '=', 'inProgress')
                .where('transfers.courier_id', 'is', null),
            ),
          ),
          not(
            exists(
              selectFrom('couriers')
                .select('couriers.id')
                .whereRef('couriers.id', '=', 'offers.courier_id')
                .where('couriers.online', '=', 1)
                .where('couriers.status', '=', 'ACTIVE'),
            ),
          ),
        ]),
      );
    if (transferId) q = q.where('transfer_id', '=', transferId);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows);
  },

  /** One more miss; the one that reaches `threshold` sets the courier offline and starts the count again. True when it went offline. */
  async recordMiss(db: Db, courierId: string, threshold: number, now: number): Promise<boolean> {
    const row = await db
      .updateTable('couriers')
      .set((eb) => ({
        online: eb
          .case()
          .when(eb('missed_offers', '+', 1), '>=', threshold)
          .then(0)
          .else(eb.ref('online'))
          .end(),
        missed_offers: eb
          .case()
          .when(eb('missed_offers', '+', 1), '>=', threshold)
          .then(0)
          .else(eb('missed_offers', '+', 1))
          .end(),
        updated_at: now,
      }))
      .where('id', '=', courierId)
      .returning(['online', 'missed_offers'])
      .executeTakeFirst();
    return row !== undefined && Number(row.online) === 0 && Number(row.missed_offers) === 0;
  },

  /** An answer (accept or decline) ends a run of misses. */
  async resetMisses(db: Db, courierId: string): Promise<void> {
    await db.updateTable('couriers').set({ missed_offers: 0 }).where('id', '=', courierId).where('missed_offers', '>', 0).execute();
  },

  /** Paid live transfers with no courier, no open offer and no later dispatch time, oldest first. */
  async awaitingOffer(db: Db, now: number, limit: number): Promise<AwaitingTransfer[]> {
    const rows = await db
      .selectFrom('transfers')
      .select(['id', 'pickup_lat', 'pickup_lng', 'product_key', 'dispatch_round'])
      .where('state', '=', 'inProgress')
      .where('mode', '=', 'live')
      .where('courier_id', 'is', null)
      .where('locked', '=', 0)
      .where((eb) => eb.or([eb('dispatch_at', 'is', null), eb('dispatch_at', '<=', now)]))
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('offers').select('offers.id').whereRef('offers.transfer_id', '=', 'transfers.id').where('offers.status', '=', 'open'))),
      )
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...r, dispatch_round: Number(r.dispatch_round ?? 0) }));
  },

  /** Online, active couriers with a known position, no open offer and room under the job cap. */
  async availableCouriers(db: Db, maxJobs: number): Promise<AvailableCourier[]> {
    const rows = await db
      .selectFrom('couriers')
      .select(['id', 'lat', 'lng'])
      .where('online', '=', 1)
      .where('status', '=', 'ACTIVE')
      .where('lat', 'is not', null)
      .where('lng', 'is not', null)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('offers').select('offers.id').whereRef('offers.courier_id', '=', 'couriers.id').where('offers.status', '=', 'open'))),
      )
      .where(
        (eb) =>
          eb
            .selectFrom('transfers')
            .select(sql<number>`count(*)`.as('n'))
            .whereRef('transfers.courier_id', '=', 'couriers.id')
            .where('transfers.state', 'in', ACTIVE_STATES),
        '<',
        maxJobs,
      )
      .execute();
    return rows as AvailableCourier[];
  },

  /** Couriers never to be offered these transfers again: every courier offered one before, and whoever released it. */
  async excluded(db: Db, transferIds: string[]): Promise<Map<string, Set<string>>> {
    const out = new Map<string, Set<string>>();
    if (transferIds.length === 0) return out;
    const add = (t: string, c: string | null) => {
      if (c === null) return;
      const s = out.get(t) ?? new Set<string>();
      s.add(c);
      out.set(t, s);
    };
    for (const r of await db.selectFrom('offers').select(['transfer_id', 'courier_id']).where('transfer_id', 'in', transferIds).execute()) {
      add(r.transfer_id, r.courier_id);
    }
    const released = await db
      .selectFrom('events')
      .select(['transfer_id', 'actor_id'])
      .where('transfer_id', 'in', transferIds)
      .where('type', '=', 'transfer.courier_released')
      .where('actor_type', '=', 'courier')
      .execute();
    for (const r of released) add(r.transfer_id, r.actor_id);
    return out;
  },

  /** Nobody within the radius: the next search looks twice as far. */
  async widen(db: Db, transferId: string, round: number): Promise<void> {
    await db.updateTable('transfers').set({ dispatch_round: round }).where('id', '=', transferId).where('state', '=', 'inProgress').execute();
  },
};
