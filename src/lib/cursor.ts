import { AppError } from './errors.ts';

/**
 * Keyset cursors for lists sorted newest first by (created_at, id): opaque to clients, stable while
 * rows are added (a new row never shifts a page the way an offset would).
 */
export interface TimeCursor {
  createdAt: number;
  id: string;
}

export const encodeTimeCursor = (row: { created_at: number; id: string }): string => Buffer.from(`${row.created_at}.${row.id}`, 'utf8').toString('base64url');

const CURSOR = /^(\d{1,16})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function decodeTimeCursor(cursor: string): TimeCursor {
  const m = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw new AppError('VALIDATION_FAILED', 'cursor is not one this service issued', { errors: [{ path: '/cursor', message: 'is not a valid cursor' }] });
  return { createdAt: Number(m[1]), id: m[2] };
}
