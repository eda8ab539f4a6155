import type { EndpointTypes, QuoteRow } from './repository.ts';

/** A quote this instance wrote on PostgreSQL, with the enabled endpoints (and their fingerprint) its write checked. */
export interface RecentQuote {
  row: QuoteRow;
  endpoints: EndpointTypes[];
  endpointsFingerprint: string;
}

/**
 * How many unpaid quotes an instance remembers: about 2 KB each (more with non-Latin addresses, which V8
 * keeps two bytes a character), so 10-15 MB at most. At a thousand quotes a second that is the last
 * five seconds' worth; older quotes are read back when paid.
 */
const KEPT = 5_000;

/**
 * PostgreSQL: the quotes this instance wrote lately, so that their payment can skip reading the quote
 * back (a round trip, and about a tenth of the transfer's CPU: docs/benchmarks.md "Thirty-first pass").
 * The quote's own columns never change once written, but nothing else here is trusted: the transfer's
 * one statement checks, in the database, that the quote is still pending and unexpired, its warehouse
 * ACTIVE, and the merchant and its endpoints as remembered; when one of them changed, nothing is written
 * and the transfer reads it all afresh (as it does before refusing a quote planned from here). Keyed by
 * merchant and quote, so another merchant's request never finds it; taken once, oldest dropped first.
 */
export class RecentQuotes {
  readonly #kept = new Map<string, RecentQuote>();
  // The keys in the order they came, in a ring: the oldest goes when its slot comes round again (taken or
  // not; quote ids never repeat). Dropping it with keys().next() instead walks past every entry deleted
  // before it: 2.0 µs a quote at 5 000 entries against 0.1 (docs/benchmarks.md "Thirty-first pass").
  readonly #order: Array<string | undefined>;
  #next = 0;

  constructor(kept = KEPT) {
    this.#order = new Array(kept);
  }

  remember(quote: RecentQuote): void {
    const key = `${quote.row.merchant_id} ${quote.row.id}`;
    const oldest = this.#order[this.#next];
    if (oldest !== undefined) this.#kept.delete(oldest);
    this.#order[this.#next] = key;
    this.#next = (this.#next + 1) % this.#order.length;
    this.#kept.set(key, quote);
  }

  /** The merchant's quote if this instance wrote it and it is not yet taken; forgotten either way. */
  take(merchantId: string, id: string): RecentQuote | undefined {
    const key = `${merchantId} ${id}`;
    const quote = this.#kept.get(key);
    if (quote) this.#kept.delete(key);
    return quote;
  }
}
