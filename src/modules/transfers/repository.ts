import type { Db, TransfersTable } from '../../db/types.ts';

export type TransferRow = TransfersTable;

export const transfersRepository = {
  async insert(db: Db, row: TransferRow): Promise<void> {
    await db.insertInto('transfers').values(row).execute();
  },

  async find(db: Db, merchantId: string, id: string): Promise<TransferRow | undefined> {
    return db.selectFrom('transfers').selectAll().where('merchant_id', '=', merchantId).where('id', '=', id).executeTakeFirst();
  },
};
