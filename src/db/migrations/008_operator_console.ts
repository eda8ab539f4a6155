import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// The operator console's audit log: every operator action (the console's and the CLI's) with who,
// when, what, the reason and the state before and after. Append-only: triggers refuse UPDATE and
// DELETE on both stores, so no code path (and no stray SQL) can rewrite history.
// Ledger entries made by a person name them (created_by), so the ledger shows which operator topped up.
// An operator's session may view one merchant's dashboard read-only (sessions.view_as_merchant_id).
export function operatorConsole(dialect: Dialect) {
  const int64 = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('audit_log')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('occurred_at', int64, (c) => c.notNull())
        // The operator's person id; null for the CLI (operator "cli", with the machine user).
        .addColumn('operator_id', 'text')
        .addColumn('operator_name', 'text', (c) => c.notNull())
        .addColumn('operator_role', 'text', (c) => c.notNull())
        .addColumn('machine_user', 'text')
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('subject_type', 'text', (c) => c.notNull())
        .addColumn('subject_id', 'text')
        .addColumn('merchant_id', 'text')
        .addColumn('reason', 'text')
        .addColumn('before', 'text') // JSON
        .addColumn('after', 'text') // JSON
        .execute();
      await db.schema.createIndex('audit_log_time_idx').on('audit_log').columns(['occurred_at', 'id']).execute();
      await db.schema.createIndex('audit_log_subject_idx').on('audit_log').columns(['subject_type', 'subject_id', 'occurred_at']).execute();
      await db.schema.createIndex('audit_log_operator_idx').on('audit_log').columns(['operator_id', 'occurred_at']).execute();
      await db.schema.alterTable('ledger_entries').addColumn('created_by', 'text').execute();
      // "View as merchant": an operator's session may open one merchant's dashboard, read-only.
      await db.schema.alterTable('sessions').addColumn('view_as_merchant_id', 'text').execute();
      if (dialect === 'postgres') {
        await sql`create function audit_log_append_only() returns trigger language plpgsql as $$
          begin raise exception 'audit_log is append-only'; end $$`.execute(db);
        await sql`create trigger audit_log_no_update before update or delete on audit_log
          for each row execute function audit_log_append_only()`.execute(db);
      } else {
        await sql`create trigger audit_log_no_update before update on audit_log begin select raise(abort, 'audit_log is append-only'); end`.execute(db);
        await sql`create trigger audit_log_no_delete before delete on audit_log begin select raise(abort, 'audit_log is append-only'); end`.execute(db);
      }
    },
  };
}
