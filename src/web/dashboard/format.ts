import type { TransferState } from '../../db/types.ts';
import { AppError } from '../../lib/errors.ts';

/** What the dashboard's pages share: readable labels, money and time as shown, dates from forms. */

export const STATE_LABELS: Record<TransferState, string> = {
  inProgress: 'Waiting for a courier',
  courierAssigned: 'Courier on the way to pick up',
  pickedUp: 'On the way to the recipient',
  delivered: 'Delivered',
  returning: 'Delivery failed, returning',
  returned: 'Returned to the warehouse',
  cancelled: 'Cancelled',
};

/** Badge colour class per state (the CSS says what each looks like). */
export const STATE_TONE: Record<TransferState, 'ok' | 'off' | 'live'> = {
  inProgress: 'live',
  courierAssigned: 'live',
  pickedUp: 'live',
  delivered: 'ok',
  returning: 'off',
  returned: 'off',
  cancelled: 'off',
};

export const EVENT_LABELS: Record<string, string> = {
  'quote.created': 'Priced',
  'transfer.created': 'Paid and created',
  'transfer.courier_assigned': 'Courier assigned',
  'transfer.courier_released': 'Courier released the job',
  'transfer.picked_up': 'Picked up',
  'transfer.delivered': 'Delivered',
  'transfer.delivery_failed': 'Delivery failed',
  'transfer.returned': 'Returned to the warehouse',
  'transfer.cancelled': 'Cancelled',
};

export const CANCELLATION_REASON_LABELS: Record<string, string> = {
  CUSTOMER_REQUESTED: 'The customer asked to cancel',
  ORDER_CHANGED: 'The order changed',
  DUPLICATE: 'A duplicate delivery',
  WRONG_ADDRESS: 'Wrong address',
  PARCEL_NOT_READY: 'The parcel is not ready',
  DELIVERY_TOO_SLOW: 'Delivery is too slow',
  OTHER: 'Another reason',
  NO_COURIER_ASSIGNED: 'No courier accepted in time',
  OPERATOR: 'Cancelled by support',
};

export const LEDGER_KIND_LABELS: Record<string, string> = { TOP_UP: 'Top-up', CHARGE: 'Delivery charge', REFUND: 'Refund', ADJUSTMENT: 'Adjustment' };

/** A time as the pages show it: a <time> element's attributes and its text in UTC (dashboard.js turns it into the viewer's zone). */
export interface TimeView {
  iso: string;
  utc: string;
}

// Made on first use, not when the module loads: a DateTimeFormat loads ICU's locale and time zone data,
// about 8 MiB of RSS that a server nobody opens a page on need not hold (docs/benchmarks.md, memory).
let utcFormat: Intl.DateTimeFormat | undefined;

export function timeView(iso: string): TimeView {
  utcFormat ??= new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
  return { iso, utc: `${utcFormat.format(new Date(iso))} UTC` };
}

/** "516.00" -> "516.00 RUB". */
export const money = (amount: number | string, currency: string): string => `${typeof amount === 'number' ? amount.toFixed(2) : amount} ${currency}`;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * A form's calendar date (YYYY-MM-DD) as the instant it starts in the viewer's zone: the form carries
 * the zone's offset from UTC in minutes (`tz`, as Date#getTimezoneOffset gives it; dashboard.js fills
 * it in), UTC without it. `endOfDay` gives the start of the next day (an exclusive end).
 */
export function dateStart(value: string, tzOffset: string, field: string, endOfDay = false): string {
  const m = DATE.exec(value);
  const date = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  if (!m || Number.isNaN(date) || new Date(date).getUTCDate() !== Number(m[3])) {
    throw new AppError('VALIDATION_FAILED', `${field} must be a date such as 2026-11-01`, { errors: [{ path: `/${field}`, message: 'must be a date' }] });
  }
  const offset = /^-?\d{1,4}$/.test(tzOffset) && Math.abs(Number(tzOffset)) <= 900 ? Number(tzOffset) : 0;
  return new Date(date + (endOfDay ? 86_400_000 : 0) + offset * 60_000).toISOString();
}

/** The readable message of a refused action (an AppError below 500); other errors are rethrown for the error page. */
export function refusalMessage(err: unknown): string {
  if (err instanceof AppError && err.status < 500) return err.detail;
  throw err;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/;

/** A form's local date and time (an <input type="datetime-local">, YYYY-MM-DDTHH:MM) in the viewer's zone (`tz` as in dateStart), as ISO UTC. */
export function localDateTime(value: string, tzOffset: string, field: string): string {
  const m = DATE_TIME.exec(value);
  const at = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5])) : Number.NaN;
  if (!m || Number.isNaN(at) || new Date(at).getUTCDate() !== Number(m[3]) || Number(m[4]) > 23 || Number(m[5]) > 59) {
    throw new AppError('VALIDATION_FAILED', `${field} must be a date and time such as 2026-11-01 09:30`, {
      errors: [{ path: `/${field}`, message: 'must be a date and time' }],
    });
  }
  const offset = /^-?\d{1,4}$/.test(tzOffset) && Math.abs(Number(tzOffset)) <= 900 ? Number(tzOffset) : 0;
  return new Date(at + offset * 60_000).toISOString();
}
