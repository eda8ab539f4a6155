import type { CredentialsTable, Db } from '../../db/types.ts';

export type CredentialRow = CredentialsTable;

export const credentialsRepository = {
  async insert(db: Db, row: CredentialRow): Promise<void> {
    await db.insertInto('credentials').values(row).execute();
  },

  async findByClientId(db: Db, clientId: string): Promise<CredentialRow | undefined> {
    return db.selectFrom('credentials').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  },

  async listByMerchant(db: Db, merchantId: string): Promise<CredentialRow[]> {
    return db.selectFrom('credentials').selectAll().where('merchant_id', '=', merchantId).orderBy('id').execute();
  },

  async revoke(db: Db, clientId: string, at: number): Promise<boolean> {
    const r = await db
      .updateTable('credentials')
      .set({ status: 'REVOKED', revoked_at: at })
      .where('client_id', '=', clientId)
      .where('status', '=', 'ACTIVE')
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  },

  async delete(db: Db, clientId: string): Promise<boolean> {
    const r = await db.deleteFrom('credentials').where('client_id', '=', clientId).executeTakeFirst();
    return r.numDeletedRows > 0n;
  },
};
