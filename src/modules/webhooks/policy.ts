/**
 * The retry policy, as pure functions of the outcome and the clock (decisions.md): retries after 5 s,
 * 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h; a 2xx is success; 410 disables the endpoint;
 * 429/503 Retry-After is honoured; an endpoint failing for 5 days is disabled.
 */

export const RETRY_DELAYS_MS = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400].map((s) => s * 1000);
/** The first try plus one per retry delay. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3_600_000;
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

export interface AttemptOutcome {
  /** The HTTP status, when an answer came. */
  status?: number;
  /** The Retry-After header of that answer. */
  retryAfter?: string;
}

export type Verdict =
  | { kind: 'succeeded' }
  /** Try again at `at`. */
  | { kind: 'retry'; at: number }
  /** Every retry used: the delivery has failed. */
  | { kind: 'exhausted' };

export interface EndpointVerdict {
  /** The new start of the failure run (null after a success). */
  failingSince: number | null;
  /** Set when the endpoint must be disabled now. */
  disable?: 'GONE' | 'FAILING_5_DAYS';
}

export const isSuccess = (o: AttemptOutcome) => o.status !== undefined && o.status >= 200 && o.status < 300;

/** What happens to a delivery after its attempt number `attempt` (1 for the first try) ended with `outcome` at `now`. */
export function deliveryVerdict(attempt: number, outcome: AttemptOutcome, now: number): Verdict {
  if (isSuccess(outcome)) return { kind: 'succeeded' };
  if (attempt >= MAX_ATTEMPTS) return { kind: 'exhausted' };
  let delay = RETRY_DELAYS_MS[attempt - 1];
  if ((outcome.status === 429 || outcome.status === 503) && outcome.retryAfter !== undefined) {
    const asked = parseRetryAfter(outcome.retryAfter, now);
    // Honoured, within bounds: at least 1 s (no hammering), at most 24 h (the longest step of the schedule).
    if (asked !== undefined) delay = Math.min(Math.max(asked, 1000), MAX_RETRY_AFTER_MS);
  }
  return { kind: 'retry', at: now + delay };
}

/** What happens to the endpoint after an attempt. */
export function endpointVerdict(failingSince: number | null, outcome: AttemptOutcome, now: number): EndpointVerdict {
  if (isSuccess(outcome)) return { failingSince: null };
  const since = failingSince ?? now;
  if (outcome.status === 410) return { failingSince: since, disable: 'GONE' };
  if (now - since >= DISABLE_AFTER_FAILING_MS) return { failingSince: since, disable: 'FAILING_5_DAYS' };
  return { failingSince: since };
}

/** Retry-After as milliseconds from now: delta-seconds or an HTTP date (RFC 9110 10.2.3); undefined if unreadable. */
export function parseRetryAfter(value: string, now: number): number | undefined {
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
