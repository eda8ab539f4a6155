import type { Db, OneTimeLinksTable, PeopleTable, PersonKind, RecoveryCodesTable, SessionsTable } from '../../db/types.ts';

export type PersonRow = PeopleTable;
export type SessionRow = SessionsTable;
export type LinkRow = OneTimeLinksTable;

/** SQL of the accounts module. Merchant users are always looked up with their merchant's id. */
export const accountsRepository = {
  async insertPerson(db: Db, row: PersonRow): Promise<void> {
    await db.insertInto('people').values(row).execute();
  },

  async personById(db: Db, id: string): Promise<PersonRow | undefined> {
    return db.selectFrom('people').selectAll().where('id', '=', id).executeTakeFirst();
  },

  async personByEmail(db: Db, kind: PersonKind, email: string): Promise<PersonRow | undefined> {
    return db.selectFrom('people').selectAll().where('kind', '=', kind).where('email', '=', email).executeTakeFirst();
  },

  /** A courier person by the digits of its phone number (unique per kind). */
  async personByPhone(db: Db, kind: PersonKind, phoneDigits: string): Promise<PersonRow | undefined> {
    return db.selectFrom('people').selectAll().where('kind', '=', kind).where('phone', '=', phoneDigits).executeTakeFirst();
  },

  async personByCourier(db: Db, courierId: string): Promise<PersonRow | undefined> {
    return db.selectFrom('people').selectAll().where('kind', '=', 'courier').where('courier_id', '=', courierId).executeTakeFirst();
  },

  async merchantUser(db: Db, merchantId: string, id: string): Promise<PersonRow | undefined> {
    return db.selectFrom('people').selectAll().where('kind', '=', 'merchant').where('merchant_id', '=', merchantId).where('id', '=', id).executeTakeFirst();
  },

  async merchantUsers(db: Db, merchantId: string): Promise<PersonRow[]> {
    return db
      .selectFrom('people')
      .selectAll()
      .where('kind', '=', 'merchant')
      .where('merchant_id', '=', merchantId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  },

  async operators(db: Db): Promise<PersonRow[]> {
    return db.selectFrom('people').selectAll().where('kind', '=', 'operator').orderBy('created_at').orderBy('id').execute();
  },

  async countMerchantAdmins(db: Db, merchantId: string): Promise<number> {
    const r = await db
      .selectFrom('people')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('kind', '=', 'merchant')
      .where('merchant_id', '=', merchantId)
      .where('role', '=', 'admin')
      .executeTakeFirstOrThrow();
    return Number(r.n);
  },

  async updatePerson(db: Db, id: string, changes: Partial<Omit<PersonRow, 'id' | 'kind'>>): Promise<PersonRow | undefined> {
    return db.updateTable('people').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
  },

  async deletePerson(db: Db, id: string): Promise<boolean> {
    const r = await db.deleteFrom('people').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  },

  // Sessions ---------------------------------------------------------------------------------------

  async insertSession(db: Db, row: SessionRow): Promise<void> {
    await db.insertInto('sessions').values(row).execute();
  },

  async sessionWithPerson(db: Db, idHash: string): Promise<{ session: SessionRow; person: PersonRow } | undefined> {
    const session = await db.selectFrom('sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
    if (!session) return undefined;
    const person = await accountsRepository.personById(db, session.person_id);
    return person ? { session, person } : undefined;
  },

  async setViewAs(db: Db, idHash: string, merchantId: string | null): Promise<void> {
    await db.updateTable('sessions').set({ view_as_merchant_id: merchantId }).where('id_hash', '=', idHash).execute();
  },

  async touchSession(db: Db, idHash: string, now: number): Promise<void> {
    await db.updateTable('sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).execute();
  },

  async deleteSession(db: Db, idHash: string): Promise<boolean> {
    const r = await db.deleteFrom('sessions').where('id_hash', '=', idHash).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  },

  /** A person's own session by its hash, scoped to the person (the sessions list's "end" button). */
  async deletePersonSession(db: Db, personId: string, idHash: string): Promise<boolean> {
    const r = await db.deleteFrom('sessions').where('person_id', '=', personId).where('id_hash', '=', idHash).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  },

  /** Ends every session of a person, except `keep` when given. */
  async deleteSessionsOf(db: Db, personId: string, keep?: string): Promise<number> {
    let q = db.deleteFrom('sessions').where('person_id', '=', personId);
    if (keep !== undefined) q = q.where('id_hash', '!=', keep);
    const r = await q.executeTakeFirst();
    return Number(r.numDeletedRows);
  },

  async sessionsOf(db: Db, personId: string): Promise<SessionRow[]> {
    return db.selectFrom('sessions').selectAll().where('person_id', '=', personId).orderBy('last_seen_at', 'desc').execute();
  },

  async deleteExpiredSessions(db: Db, now: number, idleBefore: number): Promise<number> {
    const r = await db
      .deleteFrom('sessions')
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleBefore)]))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  },

  // One-time links ---------------------------------------------------------------------------------

  async insertLink(db: Db, row: LinkRow): Promise<void> {
    await db.insertInto('one_time_links').values(row).execute();
  },

  async link(db: Db, tokenHash: string): Promise<LinkRow | undefined> {
    return db.selectFrom('one_time_links').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  },

  /** Marks a link used if it still is usable; false when another request used it first (single use under races). */
  async useLink(db: Db, tokenHash: string, now: number): Promise<boolean> {
    const r = await db
      .updateTable('one_time_links')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  },

  /** Older unused links of a person stop working when a new one is made. */
  async expireLinksOf(db: Db, personId: string, now: number): Promise<void> {
    await db
      .updateTable('one_time_links')
      .set({ expires_at: now })
      .where('person_id', '=', personId)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .execute();
  },

  // Recovery codes ---------------------------------------------------------------------------------

  async replaceRecoveryCodes(db: Db, personId: string, rows: RecoveryCodesTable[]): Promise<void> {
    await db.deleteFrom('recovery_codes').where('person_id', '=', personId).execute();
    if (rows.length > 0) await db.insertInto('recovery_codes').values(rows).execute();
  },

  async useRecoveryCode(db: Db, personId: string, codeHash: string, now: number): Promise<boolean> {
    const r = await db
      .updateTable('recovery_codes')
      .set({ used_at: now })
      .where('person_id', '=', personId)
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  },

  async unusedRecoveryCodes(db: Db, personId: string): Promise<number> {
    const r = await db
      .selectFrom('recovery_codes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('person_id', '=', personId)
      .where('used_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  },
};
