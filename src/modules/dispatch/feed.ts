import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { afterCommit } from '../../db/transaction.ts';
import type { DB } from '../../db/types.ts';
import { type OfferMade, offerMade } from '../../lib/channels.ts';

export type OfferListener = (offerId: string) => void;

const CHANNEL = 'offers';

/**
 * Who hears of a new offer: the courier's open streams, on whichever instance they are connected to.
 * PostgreSQL: NOTIFY in the offer's own transaction (sent on commit, never for a rollback), heard by
 * one LISTEN connection per instance. SQLite (one process owns the file): the in-process channel.
 * Listeners get the offer id only and read the offer themselves, so a stray message is harmless.
 */
export class OfferFeed {
  readonly #database: Database;
  readonly #listeners = new Map<string, Set<OfferListener>>();
  #listening: Promise<unknown> | undefined;
  readonly #onLocal = (m: unknown) => this.#deliver(m as OfferMade);

  constructor(database: Database) {
    this.#database = database;
  }

  /** Announces an offer made in `trx`, to be heard once it commits. */
  async announce(trx: Transaction<DB>, message: OfferMade): Promise<void> {
    const n = this.#database.notifications;
    if (n) await sql`select pg_notify(${n.channel(CHANNEL)}, ${JSON.stringify(message)})`.execute(trx);
    else afterCommit(trx, () => offerMade.publish(message));
  }

  /** Calls `fn` with the id of every offer made to this courier from now on; returns how to stop. */
  async subscribe(courierId: string, fn: OfferListener): Promise<() => void> {
    const set = this.#listeners.get(courierId) ?? new Set<OfferListener>();
    set.add(fn);
    this.#listeners.set(courierId, set);
    try {
      await this.#listen();
    } catch (err) {
      this.#remove(courierId, fn);
      throw err;
    }
    return () => this.#remove(courierId, fn);
  }

  #remove(courierId: string, fn: OfferListener): void {
    const set = this.#listeners.get(courierId);
    set?.delete(fn);
    if (set?.size === 0) this.#listeners.delete(courierId);
    // SQLite: nobody listening in this process, so stop hearing the channel (PostgreSQL's LISTEN stays until the database closes).
    if (this.#listeners.size === 0 && !this.#database.notifications && this.#listening) {
      offerMade.unsubscribe(this.#onLocal);
      this.#listening = undefined;
    }
  }

  #listen(): Promise<unknown> {
    if (this.#listening) return this.#listening;
    const n = this.#database.notifications;
    if (n) {
      this.#listening = n
        .listen(CHANNEL, (payload) => {
          try {
            this.#deliver(JSON.parse(payload) as OfferMade);
          } catch {} // not ours
        })
        .catch((err) => {
          this.#listening = undefined;
          throw err;
        });
    } else {
      offerMade.subscribe(this.#onLocal);
      this.#listening = Promise.resolve();
    }
    return this.#listening;
  }

  #deliver(m: OfferMade): void {
    for (const fn of this.#listeners.get(m.courierId) ?? []) fn(m.offerId);
  }
}
