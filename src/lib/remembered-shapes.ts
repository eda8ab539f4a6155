import { deepFreeze } from './deep-freeze.ts';

/**
 * A stored row's API shape (a warehouse, a transfer), made once and shared while the row stays exactly
 * the same: lists and single reads answer the same rows again and again, and building the object
 * (then serialising it, src/http/serialization.ts remembers the JSON of a frozen object) was most of a
 * list's cost. A row counts as the same only if it has the same columns with the same values (compared
 * with ===; a row holding an object value is never reused), so any change, whatever wrote it, makes a
 * new shape. The shapes are deep-frozen: a caller that changed one would change other answers (a
 * mutation throws, in modules). Bounded: past `max` rows the oldest entry goes first.
 */
export function rememberedShapes<Row extends { id: string }, Shape extends object>(shape: (row: Row) => Shape, max: number): (row: Row) => Shape {
  const made = new Map<string, { row: Row; columns: number; shape: Shape }>();
  return (row) => {
    const hit = made.get(row.id);
    if (hit && sameRow(hit.row, hit.columns, row)) return hit.shape;
    const entry = { row, columns: Object.keys(row).length, shape: deepFreeze(shape(row)) };
    if (hit) made.delete(row.id);
    else if (made.size >= max) made.delete(made.keys().next().value as string);
    made.set(row.id, entry);
    return entry.shape;
  };
}

function sameRow(before: object, columns: number, row: object): boolean {
  let n = 0;
  for (const key in row) {
    const value = (row as Record<string, unknown>)[key];
    if (typeof value === 'object' && value !== null) return false;
    if ((before as Record<string, unknown>)[key] !== value) return false;
    n++;
  }
  return n === columns;
}
