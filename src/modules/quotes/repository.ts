import type { Db, QuotesTable } from '../../db/types.ts';

export type QuoteRow = QuotesTable;

export const quotesRepository = {
  async insert(db: Db, row: QuoteRow): Promise<void> {
    await db.insertInto('quotes').values(row).execute();
  },

  async find(db: Db, merchantId: string, id: string): Promise<QuoteRow | undefined> {
    return db.selectFrom('quotes').selectAll().where('merchant_id', '=', merchantId).where('id', '=', id).executeTakeFirst();
  },

  /** pending (and not expired) -> consumed, atomically; undefined if it is missing, used or expired. */
  async consume(db: Db, merchantId: string, id: string, at: number): Promise<QuoteRow | undefined> {
    return db
      .updateTable('quotes')
      .set({ status: 'consumed', consumed_at: at })
      .where('merchant_id', '=', merchantId)
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('expires_at', '>', at)
      .returningAll()
      .executeTakeFirst();
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
