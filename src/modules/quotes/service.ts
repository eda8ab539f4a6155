import type { Kysely } from 'kysely';
import { inTransaction, type RecordOutcome, withRetries } from '../../db/transaction.ts';
import type { DB, Dialect } from '../../db/types.ts';
import { rememberNewest } from '../../lib/bounded-map.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { quoteEstimates } from '../eta/estimates.ts';
import type { TravelTimeModel } from '../eta/model.ts';
import { eventsRepository, type NewEvent } from '../events/repository.ts';
import type { MerchantPerson } from '../events/schemas.ts';
import { eventInserted, published } from '../outbox/outbox.ts';
import { distanceMetres, type PricedProduct, priceAll } from '../tariffs/pricing.ts';
import type { TariffsService } from '../tariffs/service.ts';
import type { WarehouseRow } from '../warehouses/repository.ts';
import { endpointsTaking } from '../webhooks/repository.ts';
import type { RecentQuotes } from './recent.ts';
import { type FingerprintedContext, type QuoteContext, type QuoteRow, quotesRepository } from './repository.ts';
import type { Quote, QuoteRequest } from './schemas.ts';

/** What a quote remembers of its warehouse, so the transfer matches what was priced even if the warehouse is edited later. */
export interface PickupSnapshot {
  name: string;
  address: string;
  lat: number;
  lng: number;
  locationMetadata: Record<string, unknown>;
  contactPhone: string | null;
  contactEmail: string | null;
}

export type StoredRequest = Required<Omit<QuoteRequest, 'pickupWindow'>> & Pick<QuoteRequest, 'pickupWindow'>;

/** A pickup window starts from now up to this far ahead, and lasts at least MIN_WINDOW_MS. */
export const MAX_WINDOW_AHEAD_MS = 7 * 86_400_000;
export const MIN_WINDOW_MS = 10 * 60_000;

/** The pickup window as epoch ms, or a 400 naming the field that is wrong. */
export function parsePickupWindow(w: { start: string; end: string }, now: number): { start: number; end: number } {
  const start = Date.parse(w.start);
  const end = Date.parse(w.end);
  const errors: { path: string; message: string }[] = [];
  // A minute of slack: "now" as the client saw it is a little in our past.
  if (Number.isNaN(start)) errors.push({ path: '/pickupWindow/start', message: 'must be an ISO 8601 date-time' });
  else if (start < now - 60_000) errors.push({ path: '/pickupWindow/start', message: 'must not be in the past' });
  else if (start > now + MAX_WINDOW_AHEAD_MS) errors.push({ path: '/pickupWindow/start', message: 'must be at most 7 days ahead' });
  if (Number.isNaN(end)) errors.push({ path: '/pickupWindow/end', message: 'must be an ISO 8601 date-time' });
  else if (!Number.isNaN(start) && end - start < MIN_WINDOW_MS) errors.push({ path: '/pickupWindow/end', message: 'must be at least 10 minutes after start' });
  if (errors.length) {
    throw new AppError('VALIDATION_FAILED', `Request body failed validation: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, { errors });
  }
  return { start, end };
}

/** A priced quote before it is written: its row, its public form, its quote.created event and the endpoints that take it. */
interface QuotePlan {
  row: QuoteRow;
  quote: Quote;
  event: NewEvent;
  endpointIds: string[];
}

/**
 * A pricing context as #plan uses it, with its pickup snapshot's JSON once written: a PostgreSQL instance prices
 * quote after quote from one remembered context, so they share one string (parsing the metadata and writing the
 * JSON again was about a fifth of #plan's own time, and RecentQuotes keeps a copy per quote otherwise).
 */
type PricingContext = QuoteContext & { pickupJson?: string };

/** What a quote remembers of its warehouse (PickupSnapshot), as stored. */
function pickupJson(warehouse: WarehouseRow): string {
  const pickup: PickupSnapshot = {
    name: warehouse.name,
    address: warehouse.address,
    lat: warehouse.lat,
    lng: warehouse.lng,
    locationMetadata: JSON.parse(warehouse.location_metadata),
    contactPhone: warehouse.contact_phone,
    contactEmail: warehouse.contact_email,
  };
  return JSON.stringify(pickup);
}

/** How many warehouses' pricing contexts a PostgreSQL instance remembers (about 1 KB each). */
const CONTEXTS_KEPT = 10_000;

export class QuotesService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #tariffs: TariffsService;
  readonly #dialect: Dialect;
  /** PostgreSQL: what quotes from a warehouse were last priced from, checked by their write (#createOnPostgres). */
  readonly #contexts = new Map<string, FingerprintedContext>();
  readonly #ttlMs: number;
  readonly #currency: string;
  readonly #retentionMs: number;
  readonly #travel: TravelTimeModel | undefined;
  readonly #recent: RecentQuotes | undefined;
  constructor(opts: {
    db: Kysely<DB>;
    clock: Clock;
    tariffs: TariffsService;
    /** PostgreSQL writes a quote in one statement (quotesRepository.insertWithEventOnPostgres). */
    dialect: Dialect;
    ttlSeconds: number;
    currency: string;
    /** Unused quotes are deleted this long after they expired (consumed ones stay with their transfer). */
    retentionDays: number;
    /** The products' estimated pickup and delivery times. */
    travel?: TravelTimeModel;
    /** PostgreSQL: where the quotes written here are remembered for their payment (TransfersService reads it). */
    recentQuotes?: RecentQuotes;
  }) {
    this.#recent = opts.recentQuotes;
    this.#travel = opts.travel;
    this.#db = opts.db;
    this.#clock = opts.clock;
    this.#tariffs = opts.tariffs;
    this.#dialect = opts.dialect;
    this.#ttlMs = opts.ttlSeconds * 1000;
    this.#currency = opts.currency;
    this.#retentionMs = opts.retentionDays * 86_400_000;
  }

  /** Retention: deletes up to `limit` unused quotes expired for longer than QUOTE_RETENTION_DAYS. */
  async purgeExpired(limit: number): Promise<number> {
    return quotesRepository.deleteUnusedExpiredBefore(this.#db, this.#clock.now() - this.#retentionMs, limit);
  }

  /** One of the merchant's quotes (another merchant's id is not found, as a random one). */
  async get(merchantId: string, id: string): Promise<QuoteView> {
    const row = await quotesRepository.find(this.#db, merchantId, id);
    if (!row) throw new AppError('QUOTE_NOT_FOUND', `No quote ${id}`);
    const products = JSON.parse(row.products) as Record<string, PricedProduct>;
    const request = JSON.parse(row.request) as StoredRequest;
    const pickup = JSON.parse(row.pickup) as PickupSnapshot;
    const to = request.destinationLocation;
    return {
      id: row.id,
      transfer_id: row.transfer_id,
      event_id: row.event_id,
      products: Object.fromEntries(Object.entries(products).map(([k, p]) => [k, publicProduct(p)])),
      currency: row.currency,
      distanceMeters: distanceMetres(pickup, to),
      expiresAt: iso(Number(row.expires_at)),
      status: row.status,
      request,
      pickup,
      warehouseId: row.warehouse_id,
    };
  }

  /**
   * Prices every product from the merchant's ACTIVE warehouse to the destination and stores a pending
   * quote with those prices frozen; `person` is the merchant's user who asked in the dashboard (the event names them).
   */
  async create(merchantId: string, req: QuoteRequest, record?: RecordOutcome<Quote>, person?: MerchantPerson): Promise<Quote> {
    if (this.#dialect === 'postgres') return this.#createOnPostgres(merchantId, req, record, person);
    // One read for the warehouse, the tariff version in force and the endpoints that take the event.
    const context = await quotesRepository.context(this.#db, merchantId, req.warehouseId);
    if (!context) throw new AppError('WAREHOUSE_NOT_FOUND', `No warehouse ${req.warehouseId}`);
    const { row, quote, event, endpointIds } = await this.#plan(merchantId, context, req, person);
    // The quote and its quote.created event (sequence 1 of the transfer it announces) commit together.
    return inTransaction(
      this.#db,
      async (trx) => {
        await quotesRepository.insert(trx, row);
        await eventInserted(trx, event, await eventsRepository.insert(trx, event), endpointIds);
        return quote;
      },
      record,
    );
  }

  /**
   * PostgreSQL: usually ONE round trip. What a quote is priced from (the warehouse, the tariff version,
   * the endpoints) is remembered per warehouse, and the one statement that writes the quote, its event
   * and its deliveries checks, in the database, that it still holds (fingerprints of what was read).
   * When it does not (an edit, a new tariff, another instance's change), nothing is written: the
   * context is read again and the quote priced again. A refusal (disabled, out of range) is only ever
   * given from a fresh read. With an Idempotency-Key the statement also stores the key's outcome.
   */
  async #createOnPostgres(merchantId: string, req: QuoteRequest, record?: RecordOutcome<Quote>, person?: MerchantPerson): Promise<Quote> {
    const key = `${merchantId} ${req.warehouseId}`;
    let remembered = this.#contexts.get(key);
    for (let attempt = 1; ; attempt++) {
      const context = remembered ?? (await quotesRepository.contextOnPostgres(this.#db, merchantId, req.warehouseId));
      if (!context) throw new AppError('WAREHOUSE_NOT_FOUND', `No warehouse ${req.warehouseId}`);
      if (!remembered) rememberNewest(this.#contexts, key, context, CONTEXTS_KEPT);
      let plan: QuotePlan | undefined;
      try {
        plan = await this.#plan(merchantId, context, req, person);
      } catch (err) {
        if (!remembered || !(err instanceof AppError)) throw err;
      }
      if (plan) {
        const written = await this.#writeOnPostgres(context, plan, record);
        if (written) return written;
      }
      // Changed since it was read (or a remembered context would refuse): read it again. Only this
      // context is forgotten, not a fresher one another request may have remembered meanwhile.
      if (this.#contexts.get(key) === context) this.#contexts.delete(key);
      remembered = undefined;
      if (attempt >= 3) {
        throw new AppError('SERVICE_UNAVAILABLE', 'The warehouse, the tariff or the webhook endpoints are changing too often; retry shortly', {
          headers: { 'retry-after': '1' },
        });
      }
    }
  }

  /** The quote's one statement; undefined (nothing written) when its context no longer holds. */
  async #writeOnPostgres(context: FingerprintedContext, plan: QuotePlan, record?: RecordOutcome<Quote>): Promise<Quote | undefined> {
    const { row, quote, event, endpointIds } = plan;
    const deliveries = { ids: endpointIds.map(() => newId()), endpointIds };
    // With a key, its outcome is stored by the same statement (see transfers' #createOnPostgres).
    const stored = record?.asValues(quote);
    // One statement that commits by itself, the key's outcome included: one round trip for the whole write.
    const write = async () => {
      if (!(await quotesRepository.insertWithEventOnPostgres(this.#db, context, row, event, deliveries, stored))) return undefined;
      published(undefined, event, deliveries.ids.length);
      return quote;
    };
    const written = await withRetries(write);
    if (written) {
      stored?.committed();
      this.#recent?.remember({ row, endpoints: context.endpoints, endpointsFingerprint: context.fingerprint.endpoints });
    }
    return written;
  }

  /**
   * The quote priced from its context: the row, its public form, its quote.created event and the
   * endpoints that take it. Throws the refusal for a disabled warehouse or a destination out of range.
   */
  async #plan(merchantId: string, context: PricingContext, req: QuoteRequest, person?: MerchantPerson): Promise<QuotePlan> {
    const { warehouse } = context;
    if (warehouse.status !== 'ACTIVE') throw new AppError('WAREHOUSE_DISABLED', `Warehouse ${warehouse.id} is DISABLED and cannot be quoted from`);
    const request: StoredRequest = { ...req, isFragile: req.isFragile ?? false, isPerishable: req.isPerishable ?? false };
    const window = req.pickupWindow && parsePickupWindow(req.pickupWindow, this.#clock.now());
    const tariff = await this.#tariffs.atVersion(context.tariffVersion);
    const { metres, products } = priceAll(tariff.document, {
      from: { lat: warehouse.lat, lng: warehouse.lng },
      to: request.destinationLocation,
      parcelSize: request.parcelSize,
      deliveryType: request.deliveryType,
      isFragile: request.isFragile,
      isPerishable: request.isPerishable,
    });
    // Out of the service area: beyond every product's range, whatever else makes a product unavailable.
    if (Object.values(tariff.document.products).every((p) => metres > p.maxDistanceKm * 1000)) {
      throw new AppError('OUT_OF_SERVICE_AREA', `The destination is ${(metres / 1000).toFixed(1)} km from the warehouse, beyond every product's range`);
    }
    const now = this.#clock.now();
    if (this.#travel) {
      for (const [key, p] of Object.entries(products)) {
        if (p.status !== 'AVAILABLE') continue;
        const e = quoteEstimates(this.#travel, warehouse, request.destinationLocation, key, now, window);
        p.estimatedPickupAt = iso(e.pickupAt ?? now);
        p.estimatedDeliveryAt = iso(e.deliveryAt ?? now);
      }
    }
    context.pickupJson ??= pickupJson(warehouse);
    const row: QuoteRow = {
      id: newId(),
      merchant_id: merchantId,
      warehouse_id: warehouse.id,
      transfer_id: newId(),
      event_id: newId(),
      status: 'pending',
      tariff_version: tariff.version,
      currency: this.#currency,
      request: JSON.stringify(request),
      pickup: context.pickupJson,
      products: JSON.stringify(products),
      expires_at: now + this.#ttlMs,
      created_at: now,
      consumed_at: null,
    };
    const quote: Quote = {
      id: row.id,
      transfer_id: row.transfer_id,
      event_id: row.event_id,
      products: Object.fromEntries(Object.entries(products).map(([k, p]) => [k, publicProduct(p)])),
      currency: row.currency,
      distanceMeters: metres,
      expiresAt: iso(row.expires_at),
    };
    const event: NewEvent = {
      id: row.event_id,
      merchant_id: merchantId,
      transfer_id: row.transfer_id,
      sequence: 1,
      type: 'quote.created',
      state: null,
      actor_type: 'merchant',
      actor_id: person?.id ?? null,
      actor_name: person?.name ?? null,
      data: JSON.stringify({ quoteId: row.id, warehouseId: row.warehouse_id, expiresAt: quote.expiresAt }),
      occurred_at: now,
    };
    // Who takes the event was read with the warehouse, before the write (as the transfer's PostgreSQL path does).
    return { row, quote, event, endpointIds: endpointsTaking(context.endpoints, event.type) };
  }
}

/** A stored quote as the merchant sees it, with what was asked and from where (the dashboard's second step). */
export interface QuoteView extends Quote {
  status: 'pending' | 'consumed';
  request: StoredRequest;
  pickup: PickupSnapshot;
  warehouseId: string;
}

/** The product as merchants see it (the minor-unit amounts are internal). */
function publicProduct(p: PricedProduct) {
  const { payableMinor: _p, cancellationFeeMinor: _c, returnFeeMinor: _r, courierFeeMinor: _f, ...rest } = p;
  return rest;
}
