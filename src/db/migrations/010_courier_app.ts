import type { Kysely } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// The courier app: couriers log in with their phone number, so a courier person is found by its phone
// (stored as digits only) and one phone belongs to one courier person. Other kinds have no phone (null
// values never collide in a unique index, on either store).
export function courierApp() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.createIndex('people_phone_idx').on('people').columns(['kind', 'phone']).unique().execute();
      await db.schema.createIndex('people_courier_idx').on('people').column('courier_id').execute();
    },
  };
}
