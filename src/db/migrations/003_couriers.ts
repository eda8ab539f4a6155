import { type Kysely, sql } from 'kysely';
import { parseMajorAmount } from '../../lib/money.ts';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// Couriers: the second kind of actor, with their own client credentials, status and latest position;
// transfers gain what the courier side needs (pickup point, payout, wrong-code attempts and lock).
export function couriers(dialect: Dialect) {
  const int64 = dialect === 'postgres' ? 'bigint' : 'integer';
  const float = dialect === 'postgres' ? 'double precision' : 'real';

  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('couriers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('phone', 'text', (c) => c.notNull())
        .addColumn('client_id', 'text', (c) => c.notNull().unique())
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('ACTIVE', 'DISABLED')`))
        .addColumn('online', 'integer', (c) => c.notNull().defaultTo(0).check(sql`online in (0, 1)`))
        .addColumn('lat', float)
        .addColumn('lng', float)
        .addColumn('location_at', int64)
        .addColumn('created_at', int64, (c) => c.notNull())
        .addColumn('updated_at', int64, (c) => c.notNull())
        .execute();

      const add = (name: string, type: string, build: (c: any) => any = (c) => c) =>
        db.schema
          .alterTable('transfers')
          .addColumn(name, type as any, build)
          .execute();
      await add('pickup_lat', float, (c) => c.notNull().defaultTo(0));
      await add('pickup_lng', float, (c) => c.notNull().defaultTo(0));
      // What the courier earns: the courier fee of the quoted product, frozen at creation.
      await add('courier_payout', int64, (c) => c.notNull().defaultTo(0).check(sql`courier_payout >= 0`));
      // Wrong transferCode / deliveryPin attempts; at 5 the job is locked until an operator unlocks it.
      await add('code_attempts', int64, (c) => c.notNull().defaultTo(0));
      await add('locked', 'integer', (c) => c.notNull().defaultTo(0).check(sql`locked in (0, 1)`));
      await db.schema.createIndex('transfers_courier_idx').on('transfers').columns(['courier_id', 'state']).execute();
      // Open jobs near a courier: live transfers in inProgress, filtered by a box around the courier.
      await db.schema.createIndex('transfers_open_jobs_idx').on('transfers').columns(['state', 'mode', 'pickup_lat']).execute();

      const rows = await db
        .selectFrom('transfers')
        .innerJoin('quotes', 'quotes.id', 'transfers.quote_id')
        .select(['transfers.id', 'transfers.details', 'transfers.product_key', 'quotes.products'])
        .execute();
      for (const r of rows) {
        const details = JSON.parse(r.details) as { pickupLocation: { coordinates: [number, number] } };
        const products = JSON.parse(r.products) as Record<string, { common: { price: { courier_fee_total: string } } }>;
        const fee = products[r.product_key]?.common.price.courier_fee_total;
        await db
          .updateTable('transfers')
          .set({
            pickup_lng: details.pickupLocation.coordinates[0],
            pickup_lat: details.pickupLocation.coordinates[1],
            courier_payout: fee ? parseMajorAmount(fee) : 0,
          })
          .where('id', '=', r.id)
          .execute();
      }
    },
  };
}
