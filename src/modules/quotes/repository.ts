import { insertRow } from '../../db/prepared.ts';
import type { Db, MerchantMode, QuotesTable, WarehousesTable } from '../../db/types.ts';

export type QuoteRow = QuotesTable;

/** A quote consumed for a transfer, with what the transfer needs of its warehouse and its merchant (read by the same statement). */
export type ConsumedQuote = QuoteRow & {
  warehouse_status: WarehousesTable['status'] | null;
  merchant_name: string | null;
  merchant_mode: MerchantMode | null;
  merchant_balance: number | null;
};

export const quotesRepository = {
  async insert(db: Db, row: QuoteRow): Promise<void> {
    await insertRow(db, 'quotes', row);
  },

  async find(db: Db, merchantId: string, id: string): Promise<QuoteRow | undefined> {
    return db.selectFrom('quotes').selectAll().where('merchant_id', '=', merchantId).where('id', '=', id).executeTakeFirst();
  },

  /**
   * pending (and not expired) -> consumed, atomically, for POST /transfer; undefined if it is missing, used
   * or expired. Its RETURNING also reads the quote's warehouse (its status: a disabled one refuses) and the
   * merchant (name, mode, balance for the refusal's message), which were two more statements (two more
   * round trips on PostgreSQL) inside the transaction.
   */
  async consumeForTransfer(db: Db, merchantId: string, id: string, at: number): Promise<ConsumedQuote | undefined> {
    return db
      .updateTable('quotes')
      .set({ status: 'consumed', consumed_at: at })
      .where('merchant_id', '=', merchantId)
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('expires_at', '>', at)
      .returningAll()
      .returning((eb) => [
        eb
          .selectFrom('warehouses')
          .select('warehouses.status')
          .whereRef('warehouses.id', '=', 'quotes.warehouse_id')
          .where('warehouses.merchant_id', '=', merchantId)
          .as('warehouse_status'),
        eb.selectFrom('merchants').select('merchants.name').where('merchants.id', '=', merchantId).as('merchant_name'),
        eb.selectFrom('merchants').select('merchants.mode').where('merchants.id', '=', merchantId).as('merchant_mode'),
        eb.selectFrom('merchants').select('merchants.balance').where('merchants.id', '=', merchantId).as('merchant_balance'),
      ])
      .executeTakeFirst() as Promise<ConsumedQuote | undefined>;
  },

  /** Deletes at most `limit` quotes that were never used and expired before `before` (retention). */
  async deleteUnusedExpiredBefore(db: Db, before: number, limit: number): Promise<number> {
    const r = await db
      .deleteFrom('quotes')
      .where('id', 'in', (eb) => eb.selectFrom('quotes').select('id').where('status', '=', 'pending').where('expires_at', '<=', before).limit(limit))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  },
};
