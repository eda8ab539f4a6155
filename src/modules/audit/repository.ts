import { sql } from 'kysely';
import type { AuditLogTable, Db } from '../../db/types.ts';

export type AuditRow = AuditLogTable;

export interface AuditFilter {
  /** Free text: matched against the operator's name, the action, the subject id and the reason. */
  text?: string;
  action?: string;
  subjectType?: string;
  subjectId?: string;
  operatorId?: string;
  from?: number;
  to?: number;
  /** Keyset cursor: rows strictly older than (occurredAt, id). */
  before?: { occurredAt: number; id: string };
  limit: number;
}

/** SQL of the audit log: insert and read, nothing else (the table refuses UPDATE and DELETE). */
export const auditRepository = {
  async insert(db: Db, row: AuditRow): Promise<void> {
    await db.insertInto('audit_log').values(row).execute();
  },

  /** Newest first. */
  async search(db: Db, f: AuditFilter): Promise<AuditRow[]> {
    let q = db.selectFrom('audit_log').selectAll();
    if (f.action) q = q.where('action', '=', f.action);
    if (f.subjectType) q = q.where('subject_type', '=', f.subjectType);
    if (f.subjectId) q = q.where('subject_id', '=', f.subjectId);
    if (f.operatorId) q = q.where('operator_id', '=', f.operatorId);
    if (f.from !== undefined) q = q.where('occurred_at', '>=', f.from);
    if (f.to !== undefined) q = q.where('occurred_at', '<', f.to);
    if (f.text) {
      // LIKE with the wildcards of the input escaped: the text is matched literally.
      const pattern = `%${f.text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const like = (column: string) => sql<boolean>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;
      q = q.where((eb) => eb.or(['operator_name', 'action', 'subject_id', 'reason', 'machine_user'].map(like)));
    }
    const before = f.before;
    if (before) {
      q = q.where((eb) => eb.or([eb('occurred_at', '<', before.occurredAt), eb.and([eb('occurred_at', '=', before.occurredAt), eb('id', '<', before.id)])]));
    }
    return q.orderBy('occurred_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  },
};
