import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// A warehouse's revision: a random token the database gives the row on every INSERT and UPDATE, whoever runs
// it (the service, the console, an operator by hand), with a trigger, not the service's code, so no writer can
// forget it. PostgreSQL's quote checks it in its write instead of a hash of the whole row printed as text
// (md5(w::text)), which cost about 27 µs of the database's CPU a quote (docs/benchmarks.md "Thirty-fifth pass").
// Random rather than a counter: after a failover to a standby that lagged, or a restore, a counter would be
// handed out again for other contents, and an instance that remembered the lost value would take the changed
// row as unchanged; a fresh random token never matches one. What bypasses triggers (DISABLE TRIGGER,
// session_replication_role = replica) bypasses this too: docs/deployment.md.
// SQLite stores one too (one schema), but nothing reads it there, and an UPDATE that sets it itself keeps its own.
export function warehouseRevision(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect === 'postgres') {
        const fresh = sql.raw('md5(random()::text || clock_timestamp()::text)');
        // A volatile default is computed for each existing row: one statement, no separate backfill.
        await sql`alter table warehouses add column revision text not null default ${fresh}`.execute(db);
        await sql`create function warehouses_new_revision() returns trigger language plpgsql as $$
          begin new.revision := ${fresh}; return new; end $$`.execute(db);
        await sql`create trigger warehouses_revision before insert or update on warehouses
          for each row execute function warehouses_new_revision()`.execute(db);
      } else {
        // ALTER TABLE cannot give SQLite a column a default that is not a constant: triggers set it after each write.
        const fresh = sql.raw('lower(hex(randomblob(16)))');
        await db.schema
          .alterTable('warehouses')
          .addColumn('revision', 'text', (c) => c.notNull().defaultTo(''))
          .execute();
        await sql`update warehouses set revision = ${fresh}`.execute(db);
        await sql`create trigger warehouses_revision_insert after insert on warehouses
          begin update warehouses set revision = ${fresh} where id = new.id; end`.execute(db);
        await sql`create trigger warehouses_revision_update after update on warehouses when new.revision = old.revision
          begin update warehouses set revision = ${fresh} where id = new.id; end`.execute(db);
      }
    },
  };
}
