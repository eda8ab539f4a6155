import { createHash } from 'node:crypto';

// Statement texts the hot paths send over and over (a fixed set, by code shape), and their names.
const reused = new Map<string, string>();

/**
 * Marks a statement text as one a hot path sends over and over; returns it. On PostgreSQL it then goes
 * as a named prepared statement: parsing and planning the quote's one statement took 0.63 of its 0.92 ms
 * in the database, sent unnamed every time (docs/benchmarks.md). Only for statements whose result
 * columns are spelled out (no `*`): a prepared statement whose result type changes with a migration fails
 * ("cached plan must not change result type") until its connection is replaced.
 */
export function reusedStatement(text: string): string {
  if (!reused.has(text)) reused.set(text, `mds_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`);
  return text;
}

/** The name a reused statement goes by on PostgreSQL; undefined for any other text. */
export const reusedName = (text: string): string | undefined => reused.get(text);
