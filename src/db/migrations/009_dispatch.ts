import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// Dispatch offers, ETAs and scheduled pickups. Offers are rows: one outcome each by conditional
// updates; at most one open offer per transfer and per courier (partial unique indexes), so two
// instances' dispatchers cannot both offer a transfer, and a courier is never offered one twice.
// Transfers gain their dispatch state (the radius round, when dispatch may start), the pickup window,
// the estimates and when the pickup and delivery happened; couriers their run of missed offers.
export function dispatch(dialect: Dialect) {
  const int64 = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('offers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('transfer_id', 'text', (c) => c.notNull().references('transfers.id'))
        .addColumn('courier_id', 'text', (c) => c.notNull().references('couriers.id'))
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('open', 'accepted', 'declined', 'expired', 'withdrawn')`))
        .addColumn('distance_metres', int64, (c) => c.notNull())
        .addColumn('estimated_pickup_at', int64, (c) => c.notNull())
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('expires_at', int64, (c) => c.notNull())
        .addColumn('decided_at', int64)
        .execute();
      // Never the same courier twice for a transfer (declined, missed or accepted-then-released).
      await db.schema.createIndex('offers_transfer_courier_uq').on('offers').columns(['transfer_id', 'courier_id']).unique().execute();
      await sql`create unique index offers_open_transfer_uq on offers (transfer_id) where status = 'open'`.execute(db);
      await sql`create unique index offers_open_courier_uq on offers (courier_id) where status = 'open'`.execute(db);
      await sql`create index offers_open_expiry_idx on offers (expires_at) where status = 'open'`.execute(db);

      await db.schema
        .alterTable('couriers')
        .addColumn('missed_offers', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();

      const add = (name: string, type: string, build: (c: any) => any = (c) => c) =>
        db.schema
          .alterTable('transfers')
          .addColumn(name, type as any, build)
          .execute();
      // How far the search has widened: the radius is DISPATCH_RADIUS_KM * 2^round, capped.
      await add('dispatch_round', 'integer', (c) => c.notNull().defaultTo(0));
      // Not offered before this time (a scheduled pickup); null: at once.
      await add('dispatch_at', int64);
      await add('pickup_window_start', int64);
      await add('pickup_window_end', int64);
      await add('estimated_pickup_at', int64);
      await add('estimated_delivery_at', int64);
      await add('assigned_at', int64);
      await add('picked_up_at', int64);
      await add('delivered_at', int64);
    },
  };
}
