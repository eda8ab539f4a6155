import { everyColumn, prepared } from '../../db/prepared.ts';
import type { Db, WarehousesTable } from '../../db/types.ts';

/** A warehouse as the service writes and answers it (its revision is the database's: see WarehousesTable). */
export type WarehouseRow = Omit<WarehousesTable, 'revision'>;

/** Every column of a warehouse row but its revision, the database's own (the quote's guard reads that one by name). */
export const WAREHOUSE_COLUMNS = everyColumn<WarehouseRow>({
  id: true,
  merchant_id: true,
  name: true,
  name_int: true,
  status: true,
  address: true,
  contact_phone: true,
  contact_email: true,
  location_metadata: true,
  lat: true,
  lng: true,
  created_at: true,
  updated_at: true,
});

// The reads behind GET /warehouses/{id} and GET /warehouses (a page, or everything), compiled once.
const findOne = prepared<[string, string], WarehouseRow>((db, arg) =>
  db.selectFrom('warehouses').select(WAREHOUSE_COLUMNS).where('merchant_id', '=', arg(0)).where('id', '=', arg(1)),
);
const firstPage = prepared<[string, number], WarehouseRow>((db, arg) =>
  db.selectFrom('warehouses').select(WAREHOUSE_COLUMNS).where('merchant_id', '=', arg(0)).orderBy('id').limit(arg(1)),
);
const all = prepared<[string], WarehouseRow>((db, arg) =>
  db.selectFrom('warehouses').select(WAREHOUSE_COLUMNS).where('merchant_id', '=', arg(0)).orderBy('id'),
);

/** Every query is scoped to the merchant: a row of another merchant is indistinguishable from a missing one. */
export const warehousesRepository = {
  async insert(db: Db, row: WarehouseRow): Promise<void> {
    await db.insertInto('warehouses').values(row).execute();
  },

  find(db: Db, merchantId: string, id: string): Promise<WarehouseRow | undefined> {
    return findOne.first(db, merchantId, id);
  },

  async list(db: Db, merchantId: string, opts: { status?: string; afterId?: string; limit?: number }): Promise<WarehouseRow[]> {
    if (!opts.status && !opts.afterId) return opts.limit === undefined ? all.rows(db, merchantId) : firstPage.rows(db, merchantId, opts.limit);
    let q = db.selectFrom('warehouses').select(WAREHOUSE_COLUMNS).where('merchant_id', '=', merchantId);
    if (opts.status) q = q.where('status', '=', opts.status as WarehouseRow['status']);
    if (opts.afterId) q = q.where('id', '>', opts.afterId);
    if (opts.limit !== undefined) q = q.limit(opts.limit);
    return q.orderBy('id').execute();
  },

  async count(db: Db, merchantId: string): Promise<number> {
    const r = await db
      .selectFrom('warehouses')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('merchant_id', '=', merchantId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  },

  async update(db: Db, merchantId: string, id: string, changes: Omit<WarehouseRow, 'id' | 'merchant_id' | 'created_at'>): Promise<WarehouseRow | undefined> {
    return db.updateTable('warehouses').set(changes).where('merchant_id', '=', merchantId).where('id', '=', id).returning(WAREHOUSE_COLUMNS).executeTakeFirst();
  },
};
