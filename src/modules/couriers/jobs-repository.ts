import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import type { TransferRow } from '../transfers/repository.ts';

/**
 * Courier jobs: the transfers as couriers see them (open ones near them, their active ones) and the
 * wrong-code lock on a job. The rows are the transfers table's; the lifecycle moves themselves go
 * through TransfersService.transition.
 */
export const jobsRepository = {
  /** A courier's active jobs (accepted, not yet ended). */
  async activeJobs(db: Db, courierId: string): Promise<TransferRow[]> {
    return db
      .selectFrom('transfers')
      .selectAll()
      .where('courier_id', '=', courierId)
      .where('state', 'in', ['courierAssigned', 'pickedUp', 'returning'])
      .orderBy('updated_at')
      .execute();
  },

  /**
   * Open live jobs whose pickup lies in the box, nearest first by the equirectangular distance (plain
   * arithmetic both stores run; exact enough to rank); the caller computes great-circle distances and
   * cuts to the radius.
   */
  async openJobsNear(
    db: Db,
    here: { lat: number; lng: number; lngScale: number },
    box: { minLat: number; maxLat: number; minLng: number; maxLng: number },
    limit: number,
  ): Promise<TransferRow[]> {
    const dLat = sql<number>`(pickup_lat - ${here.lat})`;
    const dLng = sql<number>`((pickup_lng - ${here.lng}) * ${here.lngScale})`;
    return db
      .selectFrom('transfers')
      .selectAll()
      .where('state', '=', 'inProgress')
      .where('mode', '=', 'live')
      .where('locked', '=', 0)
      .where('pickup_lat', '>=', box.minLat)
      .where('pickup_lat', '<=', box.maxLat)
      .where('pickup_lng', '>=', box.minLng)
      .where('pickup_lng', '<=', box.maxLng)
      .orderBy(sql`${dLat} * ${dLat} + ${dLng} * ${dLng}`)
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  /** The courier's delivered and returned jobs that ended at or after `since` (a terminal transfer's updated_at is when it ended), newest first. */
  async finishedSince(db: Db, courierId: string, since: number): Promise<TransferRow[]> {
    return db
      .selectFrom('transfers')
      .selectAll()
      .where('courier_id', '=', courierId)
      .where('state', 'in', ['delivered', 'returned'])
      .where('updated_at', '>=', since)
      .orderBy('updated_at', 'desc')
      .orderBy('id', 'desc')
      .limit(500)
      .execute();
  },

  /** Counts a wrong transferCode or deliveryPin; the fifth locks the job. Returns the attempts so far and the lock. */
  async recordWrongCode(db: Db, id: string, maxAttempts: number, at: number): Promise<{ attempts: number; locked: boolean }> {
    const row = await db
      .updateTable('transfers')
      .set((eb) => ({
        code_attempts: eb('code_attempts', '+', 1),
        locked: eb
          .case()
          .when('code_attempts', '>=', maxAttempts - 1)
          .then(1)
          .else(0)
          .end(),
        updated_at: at,
      }))
      .where('id', '=', id)
      .returning(['code_attempts', 'locked'])
      .executeTakeFirstOrThrow();
    return { attempts: Number(row.code_attempts), locked: Number(row.locked) === 1 };
  },

  /** Operators: clears the wrong-code count and the lock. False when there is no such transfer. */
  /** Every courier's current jobs (the console's fleet view). */
  async allActiveJobs(db: Db, limit: number): Promise<TransferRow[]> {
    return db
      .selectFrom('transfers')
      .selectAll()
      .where('courier_id', 'is not', null)
      .where('state', 'in', ['courierAssigned', 'pickedUp', 'returning'])
      .where('mode', '=', 'live')
      .orderBy('updated_at')
      .limit(limit)
      .execute();
  },

  /** Live jobs waiting for a courier, oldest first (the console's map). */
  async openJobs(db: Db, limit: number): Promise<TransferRow[]> {
    return db.selectFrom('transfers').selectAll().where('state', '=', 'inProgress').where('mode', '=', 'live').orderBy('created_at').limit(limit).execute();
  },

  async lockState(db: Db, id: string): Promise<{ merchant_id: string; code_attempts: number; locked: number } | undefined> {
    return db.selectFrom('transfers').select(['merchant_id', 'code_attempts', 'locked']).where('id', '=', id).executeTakeFirst();
  },

  async unlock(db: Db, id: string, at: number): Promise<boolean> {
    const r = await db.updateTable('transfers').set({ code_attempts: 0, locked: 0, updated_at: at }).where('id', '=', id).executeTakeFirst();
    return r.numUpdatedRows > 0n;
  },
};
