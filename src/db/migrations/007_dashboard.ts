import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

// Frozen once released: never edit a migration that has shipped, add a new one.
// The dashboard's deliveries list: search by the recipient's phone (its digits, so "+7 900 000-00-00"
// and "79000000000" match each other) and filter by state, newest first, within one merchant's rows
// without walking all of them; the ledger by time (10^5 transfers per merchant: see docs/benchmarks.md for the plans).
export function dashboard(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('transfers').addColumn('recipient_phone', 'text').execute();
      // Existing rows: the digits of recipientInfo.phone (the API's pattern allows only digits, +, spaces, () and -).
      if (dialect === 'postgres') {
        await sql`update transfers set recipient_phone = regexp_replace(details::json #>> '{recipientInfo,phone}', '[^0-9]', '', 'g')`.execute(db);
      } else {
        await sql`update transfers set recipient_phone =
          replace(replace(replace(replace(replace(json_extract(details, '$.recipientInfo.phone'), ' ', ''), '-', ''), '(', ''), ')', ''), '+', '')`.execute(db);
      }
      await db.schema.createIndex('transfers_merchant_phone_idx').on('transfers').columns(['merchant_id', 'recipient_phone']).execute();
      await db.schema.createIndex('transfers_merchant_state_created_idx').on('transfers').columns(['merchant_id', 'state', 'created_at']).execute();
      // The balance page and the ledger export read a merchant's entries by time (the old index is by id).
      // A delivery's page shows its charge and refunds.
      await db.schema.createIndex('ledger_transfer_idx').on('ledger_entries').column('transfer_id').execute();
      await db.schema.createIndex('ledger_merchant_created_idx').on('ledger_entries').columns(['merchant_id', 'created_at']).execute();
    },
  };
}
