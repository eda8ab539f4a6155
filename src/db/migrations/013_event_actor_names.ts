import type { Kysely } from 'kysely';

// Frozen once released: never edit a migration that has shipped, add a new one.
// Events caused by people name the person: the name is kept with the event when it is written (a
// courier's first name, an operator's display name), so a timeline stays one query and a later rename
// does not rewrite history. Older rows have none (null).
export function eventActorNames() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('events').addColumn('actor_name', 'text').execute();
    },
  };
}
