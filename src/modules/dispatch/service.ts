import type { Kysely } from 'kysely';
import { inTransaction, isUniqueViolation } from '../../db/transaction.ts';
import type { DB } from '../../db/types.ts';
import { dispatchOutcome } from '../../lib/channels.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { checkReason, type OperatorActor } from '../audit/service.ts';
import { couriersRepository } from '../couriers/repository.ts';
import type { CurrentJob } from '../couriers/schemas.ts';
import { type CouriersService, firstName, openJob } from '../couriers/service.ts';
import type { TravelTimeModel } from '../eta/model.ts';
import { distanceMetres } from '../tariffs/pricing.ts';
import { transfersRepository } from '../transfers/repository.ts';
import type { Transfer } from '../transfers/schemas.ts';
import type { TransfersService } from '../transfers/service.ts';
import type { OfferFeed } from './feed.ts';
import { type AvailableCourier, type OfferRow, offersRepository } from './repository.ts';
import type { Offer } from './schemas.ts';

export interface DispatchSettings {
  /** First search radius around the pickup, km; doubles each round with nobody in it, up to maxRadiusKm. */
  radiusKm: number;
  maxRadiusKm: number;
  offerTtlSeconds: number;
  /** Offers expired in a row that set a courier offline. */
  missesBeforeOffline: number;
  maxJobsPerCourier: number;
}

/** What one dispatcher pass did. */
export interface DispatchPass {
  expired: number;
  withdrawn: number;
  offered: number;
  widened: number;
  /** Couriers set offline after too many missed offers. */
  setOffline: number;
}

const BATCH = 500;

/**
 * Dispatch: live paid transfers are offered to one courier at a time, the best by estimated time to
 * the pickup from the courier's last position, within a radius that widens; never one who had it
 * before (declined, missed, accepted and released). Offers are rows; each ends once (conditional
 * updates from `open`), so an accept racing an expiry, a decline or another instance's dispatcher has
 * exactly one outcome. All state lives in the database: a restarted dispatcher carries on.
 */
export class DispatchService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #couriers: CouriersService;
  readonly #transfers: TransfersService;
  readonly #model: TravelTimeModel;
  readonly #feed: OfferFeed;
  readonly #s: DispatchSettings;
  readonly #wakers = new Set<() => void>();

  constructor(opts: {
    db: Kysely<DB>;
    clock: Clock;
    couriers: CouriersService;
    transfers: TransfersService;
    model: TravelTimeModel;
    feed: OfferFeed;
    settings: DispatchSettings;
  }) {
    this.#db = opts.db;
    this.#clock = opts.clock;
    this.#couriers = opts.couriers;
    this.#transfers = opts.transfers;
    this.#model = opts.model;
    this.#feed = opts.feed;
    this.#s = opts.settings;
  }

  // --- Couriers ----------------------------------------------------------------------------------

  /** The courier's open offers, oldest first. */
  async listOffers(courierId: string): Promise<Offer[]> {
    const rows = await offersRepository.openForCourier(this.#db, courierId, this.#clock.now());
    return (await Promise.all(rows.map((r) => this.#view(r)))).filter((o): o is Offer => o !== undefined);
  }

  /** One of the courier's offers, whatever its status (a stream reads the offer it was told of). */
  async getOffer(courierId: string, offerId: string): Promise<Offer> {
    const row = await offersRepository.findForCourier(this.#db, courierId, offerId);
    const offer = row && (await this.#view(row));
    if (!offer) throw offerNotFound(offerId);
    return offer;
  }

  /**
   * Takes the offered job: the offer becomes accepted and the transfer courierAssigned to this courier
   * in one transaction. 409 OFFER_EXPIRED after its time, or when it lost a race (expiry, withdrawal);
   * accepting again an offer you won answers the job again.
   */
  async accept(courierId: string, offerId: string): Promise<CurrentJob> {
    const offer = await offersRepository.findForCourier(this.#db, courierId, offerId);
    if (!offer) throw offerNotFound(offerId);
    try {
      const job = await this.#couriers.accept(courierId, offer.transfer_id, {
        within: async (trx, row) => {
          const now = this.#clock.now();
          if (row.state !== 'inProgress' || row.courier_id !== null) throw offerExpired(offer, 'the job was taken or ended');
          if (!(await offersRepository.decide(trx, offerId, courierId, 'accepted', now, true))) throw offerExpired(offer);
        },
      });
      await offersRepository.resetMisses(this.#db, courierId);
      publish('accepted');
      return job;
    } catch (err) {
      // A retry of an accept that won (or a concurrent duplicate): the job is this courier's.
      if (err instanceof AppError && err.code === 'OFFER_EXPIRED') {
        const now = await offersRepository.findForCourier(this.#db, courierId, offerId);
        if (now?.status === 'accepted') return this.#couriers.accept(courierId, offer.transfer_id);
      }
      throw err;
    }
  }

  /** Turns the offer down: the next courier gets the job at once, and it is never offered to this courier again. */
  async decline(courierId: string, offerId: string): Promise<Offer> {
    const offer = await offersRepository.findForCourier(this.#db, courierId, offerId);
    if (!offer) throw offerNotFound(offerId);
    const now = this.#clock.now();
    if (!(await offersRepository.decide(this.#db, offerId, courierId, 'declined', now, false))) throw offerExpired(offer);
    await offersRepository.resetMisses(this.#db, courierId);
    publish('declined');
    this.#wake();
    return this.getOffer(courierId, offerId);
  }

  /** Calls `fn` with each offer made to this courier from now on (any instance); returns how to stop. */
  subscribe(courierId: string, fn: (offerId: string) => void): Promise<() => void> {
    return this.#feed.subscribe(courierId, fn);
  }

  // --- Operators ---------------------------------------------------------------------------------

  /**
   * An operator gives a waiting transfer to a named courier (active; online or not): courierAssigned,
   * an operator event naming the operator, with the reason (audited); any open offer for it is withdrawn
   * in the same transaction.
   */
  async assign(transferId: string, courierId: string, reason: string, by: OperatorActor): Promise<Transfer> {
    const text = checkReason(reason);
    const courier = await couriersRepository.find(this.#db, courierId);
    if (!courier) throw new AppError('COURIER_NOT_FOUND', `No courier ${courierId}`);
    if (courier.status !== 'ACTIVE') throw new AppError('VALIDATION_FAILED', `Courier ${courierId} is DISABLED`);
    const t = await this.#transfers.transition(transferId, {
      to: 'courierAssigned',
      actor: { type: 'operator', operator: by, courier: { id: courierId, firstName: firstName(courier.name) } },
      comment: text,
      guard: async (trx, row) => {
        if (row.mode !== 'live') throw new AppError('TRANSITION_NOT_ALLOWED', `Transfer ${transferId} is a sandbox transfer: its courier is simulated`);
        await offersRepository.withdrawStale(trx, this.#clock.now(), transferId);
      },
    });
    return t as Transfer;
  }

  /**
   * Gives an assigned (not yet picked up) transfer to another courier: the operator releases it from its
   * courier (transfer.courier_released) and assigns it (transfer.courier_assigned), two events, both audited.
   */
  async reassign(transferId: string, courierId: string, reason: string, by: OperatorActor): Promise<Transfer> {
    const text = checkReason(reason);
    const current = await transfersRepository.findAny(this.#db, transferId);
    if (current?.state === 'courierAssigned') {
      if (current.courier_id === courierId) throw new AppError('VALIDATION_FAILED', 'That courier already has this job');
      await this.#transfers.operatorAdvance(transferId, 'inProgress', text, by);
    }
    return this.assign(transferId, courierId, text, by);
  }

  // --- The dispatcher ----------------------------------------------------------------------------

  /** Called when there may be work at once (a decline here); the background dispatcher registers. */
  onWork(fn: () => void): () => void {
    this.#wakers.add(fn);
    return () => this.#wakers.delete(fn);
  }

  /**
   * One pass: expire offers past their time (counting misses; too many in a row set the courier
   * offline), withdraw offers whose job went elsewhere, then offer every waiting transfer to the best
   * free courier in its radius. Safe on every instance at once: an offer per transfer and per courier
   * is unique while open, so a racing instance's insert fails and is skipped.
   *
   * `offersOnly`: the offers alone, for a pass woken by a payment, a release or a decline. Expiries and
   * withdrawals become due with time or another action, not with these, and the background dispatcher
   * runs them at least once an interval; under a burst of payments, a full pass after each one was three
   * more statements per payment (docs/benchmarks.md, "Fifteenth pass").
   */
  async runOnce(opts: { offersOnly?: boolean } = {}): Promise<DispatchPass> {
    const now = this.#clock.now();
    const pass: DispatchPass = { expired: 0, withdrawn: 0, offered: 0, widened: 0, setOffline: 0 };
    if (!opts.offersOnly) {
      const expired = await offersRepository.expireDue(this.#db, now, BATCH);
      pass.expired = expired.length;
      for (const o of expired) {
        publish('expired');
        if (await offersRepository.recordMiss(this.#db, o.courier_id, this.#s.missesBeforeOffline, now)) pass.setOffline++;
      }
      pass.withdrawn = await offersRepository.withdrawStale(this.#db, now);
    }

    // The free couriers first: with none (nobody online, or all busy), the waiting transfers are not read.
    const free = await offersRepository.availableCouriers(this.#db, this.#s.maxJobsPerCourier);
    if (free.length === 0) return pass;
    const waiting = await offersRepository.awaitingOffer(this.#db, now, BATCH);
    if (waiting.length === 0) return pass;
    const excluded = await offersRepository.excluded(
      this.#db,
      waiting.map((t) => t.id),
    );
    const taken = new Set<string>();
    const chosen: Array<{ transferId: string; courierId: string; metres: number; seconds: number }> = [];
    for (const t of waiting) {
      if (taken.size === free.length) break;
      const radiusKm = Math.min(this.#s.radiusKm * 2 ** t.dispatch_round, this.#s.maxRadiusKm);
      const pickup = { lat: t.pickup_lat, lng: t.pickup_lng };
      const never = excluded.get(t.id);
      let best: { c: AvailableCourier; metres: number; seconds: number } | undefined;
      for (const c of free) {
        if (taken.has(c.id) || never?.has(c.id)) continue;
        const metres = distanceMetres(c, pickup);
        if (metres > radiusKm * 1000) continue;
        const seconds = this.#model.travelSeconds(c, pickup);
        if (!best || seconds < best.seconds || (seconds === best.seconds && c.id < best.c.id)) best = { c, metres, seconds };
      }
      if (!best) {
        if (radiusKm < this.#s.maxRadiusKm) {
          await offersRepository.widen(this.#db, t.id, t.dispatch_round + 1);
          pass.widened++;
        }
        continue;
      }
      taken.add(best.c.id);
      chosen.push({ transferId: t.id, courierId: best.c.id, metres: best.metres, seconds: best.seconds });
    }
    // Each offer commits on its own (one refused by another instance's leaves the others), all at once:
    // SQLite's group commit makes them one fsync, PostgreSQL spreads them over the pool.
    const made = await Promise.all(chosen.map((o) => this.#offer(o.transferId, o.courierId, o.metres, now + o.seconds * 1000, now)));
    pass.offered = made.filter(Boolean).length;
    return pass;
  }

  /** Inserts the offer and announces it in the same transaction; false when another instance got there first. */
  async #offer(transferId: string, courierId: string, metres: number, estimatedPickupAt: number, now: number): Promise<boolean> {
    const row: OfferRow = {
      id: newId(),
      transfer_id: transferId,
      courier_id: courierId,
      status: 'open',
      distance_metres: metres,
      estimated_pickup_at: estimatedPickupAt,
      created_at: now,
      expires_at: now + this.#s.offerTtlSeconds * 1000,
      decided_at: null,
    };
    try {
      await inTransaction(this.#db, async (trx) => {
        await offersRepository.insert(trx, row);
        await this.#feed.announce(trx, { courierId, offerId: row.id });
      });
    } catch (err) {
      if (isUniqueViolation(err, 'transfer_id') || isUniqueViolation(err, 'courier_id')) return false;
      throw err;
    }
    publish('made');
    return true;
  }

  #wake(): void {
    for (const fn of this.#wakers) fn();
  }

  async #view(o: OfferRow): Promise<Offer | undefined> {
    const t = await transfersRepository.findAny(this.#db, o.transfer_id);
    if (!t) return undefined;
    return {
      id: o.id,
      status: o.status,
      expiresAt: iso(o.expires_at),
      distanceMeters: Number(o.distance_metres),
      estimatedPickupAt: iso(o.estimated_pickup_at),
      ...openJob(t, Number(o.distance_metres)),
    };
  }
}

function publish(outcome: 'made' | 'accepted' | 'declined' | 'expired'): void {
  if (dispatchOutcome.hasSubscribers) dispatchOutcome.publish({ outcome });
}

const offerNotFound = (id: string) => new AppError('OFFER_NOT_FOUND', `No offer ${id}`);

function offerExpired(o: OfferRow, why?: string): AppError {
  const reason = why ?? `expired at ${iso(o.expires_at)}`;
  return new AppError('OFFER_EXPIRED', `Offer ${o.id} is no longer open (${reason})`);
}
