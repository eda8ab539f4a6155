import type { CouriersTable, Db } from '../../db/types.ts';

export type CourierRow = CouriersTable;

export const COURIER_CLIENT_PREFIX = 'cou_';

/** Couriers see only themselves here; their jobs are transfers (transfers repository, scoped by courier). */
export const couriersRepository = {
  async insert(db: Db, row: CourierRow): Promise<void> {
    await db.insertInto('couriers').values(row).execute();
  },

  async find(db: Db, id: string): Promise<CourierRow | undefined> {
    return db.selectFrom('couriers').selectAll().where('id', '=', id).executeTakeFirst();
  },

  async findByClientId(db: Db, clientId: string): Promise<CourierRow | undefined> {
    return db.selectFrom('couriers').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  },

  async list(db: Db): Promise<CourierRow[]> {
    return db.selectFrom('couriers').selectAll().orderBy('id').execute();
  },

  async update(db: Db, id: string, changes: Partial<Omit<CourierRow, 'id' | 'client_id' | 'secret_hash' | 'created_at'>>): Promise<CourierRow | undefined> {
    return db.updateTable('couriers').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  },

  /**
   * Stores the latest position unless the last one is younger than `minIntervalMs` (one conditional
   * statement, so the bound holds across instances). False when refused.
   */
  async moveTo(db: Db, id: string, lat: number, lng: number, at: number, minIntervalMs: number): Promise<boolean> {
    const r = await db
      .updateTable('couriers')
      .set({ lat, lng, location_at: at, updated_at: at })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('location_at', 'is', null), eb('location_at', '<=', at - minIntervalMs)]))
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  },

  /** The latest known position (the tracking page shows it while the courier carries a parcel). */
  async position(db: Db, id: string): Promise<{ lat: number; lng: number; at: number } | undefined> {
    const c = await db.selectFrom('couriers').select(['lat', 'lng', 'location_at']).where('id', '=', id).executeTakeFirst();
    return c && c.lat !== null && c.lng !== null && c.location_at !== null ? { lat: c.lat, lng: c.lng, at: Number(c.location_at) } : undefined;
  },

  /** Row-locks the courier until the transaction ends: concurrent accepts by one courier take turns (the job cap). */
  async lock(db: Db, id: string): Promise<void> {
    await db
      .updateTable('couriers')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', id)
      .execute();
  },
};
