/**
 * CSV as RFC 4180 says (CRLF line ends, fields with a comma, quote or line break quoted, quotes
 * doubled), made safe to open in a spreadsheet: a text cell that begins with = + - @ (or a tab or
 * carriage return) would run as a formula, so it gets a leading apostrophe (OWASP's advice). Numbers
 * the service itself formats ("-516.00") are left as they are, so they stay numbers.
 */
import { AppError } from './errors.ts';

const NUMBER = /^-?\d+(?:\.\d+)?$/;
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

export type CsvValue = string | number | boolean | null | undefined;

export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value !== 'number' && !NUMBER.test(text) && FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const csvRow = (values: readonly CsvValue[]): string => `${values.map(csvCell).join(',')}\r\n`;

/**
 * Parses what csvRow writes (and any RFC 4180 text): for tests and for readers who check an export.
 * Returns the rows as arrays of strings; the apostrophe guard is left in place.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** A time range [from, to) as ISO 8601 date-times (an export's range). */
export interface ExportRange {
  from: string;
  to: string;
}

/** An export's range in epoch ms: both ends valid times, from before to; a VALIDATION_FAILED naming the field otherwise. */
export function exportRange(range: ExportRange): { from: number; to: number } {
  const errors: { path: string; message: string }[] = [];
  const from = Date.parse(range.from);
  const to = Date.parse(range.to);
  if (Number.isNaN(from)) errors.push({ path: '/from', message: 'must be a date-time such as 2026-11-01T00:00:00.000Z' });
  if (Number.isNaN(to)) errors.push({ path: '/to', message: 'must be a date-time such as 2026-12-01T00:00:00.000Z' });
  if (!errors.length && !(from < to)) errors.push({ path: '/to', message: 'must be after from' });
  if (errors.length)
    throw new AppError('VALIDATION_FAILED', `Export range failed validation: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, { errors });
  return { from, to };
}
