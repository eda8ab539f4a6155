import { randomInt } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { afterCommit, inTransaction, isUniqueViolation, type RecordOutcome, withRetries } from '../../db/transaction.ts';
import { type ActorType, type DB, type Db, type Dialect, type MerchantMode, TRANSFER_STATES, type TransferState } from '../../db/types.ts';
import { rememberNewest } from '../../lib/bounded-map.ts';
import { dispatchOutcome } from '../../lib/channels.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { csvRow, type ExportRange, exportRange } from '../../lib/csv.ts';
import { decodeTimeCursor, encodeTimeCursor } from '../../lib/cursor.ts';
import { AppError } from '../../lib/errors.ts';
import { newId, newTrackingCode, newTransferCode } from '../../lib/ids.ts';
import { formatMinor, minorToNumber, parseMajorAmount } from '../../lib/money.ts';
import { rememberedShapes } from '../../lib/remembered-shapes.ts';
import { storedJson } from '../../lib/stored-json.ts';
import { type AuditService, actorLabel, checkReason, type OperatorActor, actorId as operatorActorId } from '../audit/service.ts';
import { type Estimates, transferEstimates } from '../eta/estimates.ts';
import type { Point, TravelTimeModel } from '../eta/model.ts';
import { eventsRepository, type NewEvent } from '../events/repository.ts';
import { type Event, type MerchantPerson, toEvent } from '../events/schemas.ts';
import { merchantsRepository } from '../merchants/repository.ts';
import { appendEvent, published } from '../outbox/outbox.ts';
import type { RecentQuotes } from '../quotes/recent.ts';
import { type ConsumedQuote, type EndpointTypes, type QuoteRow, quotesRepository } from '../quotes/repository.ts';
import type { PickupSnapshot, StoredRequest } from '../quotes/service.ts';
import type { PricedProduct } from '../tariffs/pricing.ts';
import { endpointsTaking } from '../webhooks/repository.ts';
import {
  type DeliveryFailureReason,
  findTransition,
  nextStates,
  OPERATOR_CANCELLATION_REASON,
  refundAmount,
  SYSTEM_CANCELLATION_REASON,
  TERMINAL_STATES,
} from './lifecycle.ts';
import { isInsufficientBalanceGuard, type TransferListFilter, type TransferRow, transfersRepository } from './repository.ts';
import type { AdvanceRequest, CancelRequest, Transfer, TransferListQuery, TransferRequest } from './schemas.ts';

/** The descriptive part of a transfer, frozen at creation (stored as JSON in transfers.details). */
type TransferDetails = Pick<
  Transfer,
  | 'parcelSize'
  | 'description'
  | 'pickupLocation'
  | 'pickupAddress'
  | 'destinationLocation'
  | 'destinationAddress'
  | 'destinationAddressMetadata'
  | 'pickupAddressMetaData'
  | 'deliveryOptionName'
  | 'recipientInfo'
  | 'recipientFullName'
  | 'isFragile'
  | 'isPerishable'
  | 'senderInfo'
>;

interface StoredCancellation {
  reason: string;
  comment?: string;
  actor: ActorType;
  refundMinor: number;
  cancelledAt: number;
}

/** Who asks for a change. A merchant sees only its own transfers; operators and the system see all. */
export interface Actor {
  type: ActorType;
  /** The merchant a merchant actor acts for. */
  merchantId?: string;
  /** The courier (accept): its id and the first name merchants see. */
  courier?: { id: string | null; firstName: string };
  /** The operator (console or CLI): the event names them and the change is audited in its transaction. */
  operator?: OperatorActor;
  /** A merchant's user acting in the dashboard (a merchant actor): the event names them. The API's callers are programs and stay unnamed. */
  person?: MerchantPerson;
}

export interface TransitionRequest {
  to: TransferState;
  actor: Actor;
  /** A reason code (cancellation or delivery failure) and free text. */
  reason?: string;
  comment?: string;
  /** Only if the transfer is still in this state (the scheduler): otherwise nothing happens and undefined is returned. */
  onlyFrom?: TransferState;
  /** When the sandbox's simulated courier steps next (null: stop its automatic steps). Unchanged when absent. */
  nextStepAt?: number | null;
  /** Whose moves a refusal lists as allowed (default: the actor's); the sandbox acts as courier and system. */
  allowedAs?: ActorType[];
  /**
   * Checks of the actor's own, on the row read inside the transaction before the conditional update
   * (a courier's scope and job cap); throw to refuse.
   */
  guard?: (trx: Transaction<DB>, row: TransferRow) => Promise<void>;
  record?: RecordOutcome<Transfer>;
}

export interface TransfersOptions {
  paymentTtlMinutes: number;
  /** A transfer still without a courier this long after creation is cancelled by the system (full refund). */
  assignmentTimeoutMinutes: number;
  /** Seconds between the simulated courier's automatic steps on sandbox transfers; 0: manual only. */
  sandboxStepSeconds: number;
  /** Base of trackingUrl (PUBLIC_BASE_URL); unset: the URL is the path alone. */
  publicBaseUrl?: string;
  transferCode?: () => string;
  /** Where operators' changes are audited (in the change's transaction). */
  audit?: AuditService;
  /** The travel-time model behind the estimates; none: estimates are null. */
  travel?: TravelTimeModel;
  /** A courier's last position (the couriers' table), for the estimates of the jobs it holds. */
  courierAt?: (db: Db, courierId: string) => Promise<Point | undefined>;
  /** A scheduled pickup is offered to couriers this long before its window starts (they arrive within it). */
  dispatchLeadSeconds?: number;
  /** PostgreSQL writes a whole transfer in one statement (transfersRepository.createOnPostgres). */
  dialect?: Dialect;
  /** PostgreSQL: the quotes this instance wrote (QuotesService remembers them), paid without reading them back. */
  recentQuotes?: RecentQuotes;
}

export interface TransferPage {
  items: Transfer[];
  nextCursor?: string;
}

/** The dashboard's deliveries list: the API's filters (as form text) plus `q`, a transfer id, tracking code (or URL) or recipient phone. */
export interface TransferSearch {
  state?: string;
  warehouseId?: string;
  createdFrom?: string;
  createdTo?: string;
  q?: string;
  limit?: number;
  cursor?: string;
}

export const DELIVERIES_CSV_HEADER = [
  'createdAt',
  'transferId',
  'state',
  'trackingCode',
  'warehouseId',
  'deliveryOption',
  'recipient',
  'recipientPhone',
  'destinationAddress',
  'totalPrice',
  'refundedAmount',
  'currency',
] as const;
const EXPORT_BATCH = 500;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TRACKING_CODE = /^[A-Za-z0-9_-]{22}$/;
const PHONE_QUERY = /^\+?[0-9 ()-]{5,40}$/;
const TRANSFER_CODE = /^[A-Za-z0-9]{4}-[A-Za-z0-9]{4}$/;

/** The simulated courier that drives sandbox transfers. */
const SANDBOX_COURIER = { id: null, firstName: 'Sandbox' };
/** The happy path the simulated courier walks on its own. */
const SANDBOX_AUTO_NEXT: Partial<Record<TransferState, TransferState>> = { inProgress: 'courierAssigned', courierAssigned: 'pickedUp', pickedUp: 'delivered' };

/** How many merchants' names and modes a PostgreSQL instance remembers for transfers (a few dozen bytes each). */
const MERCHANTS_KEPT = 10_000;

export class TransfersService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #opts: Required<Omit<TransfersOptions, 'publicBaseUrl' | 'audit' | 'travel' | 'courierAt' | 'dispatchLeadSeconds' | 'recentQuotes'>> &
    Pick<TransfersOptions, 'recentQuotes'>;
  /** PostgreSQL: each merchant's name and mode as last read here, for transfers planned without a read (#createOnPostgres). */
  readonly #merchants = new Map<string, { name: string; mode: MerchantMode }>();
  readonly #audit: AuditService | undefined;
  readonly #travel: TravelTimeModel | undefined;
  readonly #courierAt: (db: Db, courierId: string) => Promise<Point | undefined>;
  readonly #leadMs: number;
  readonly #toTransfer: (row: TransferRow) => Transfer;
  constructor(db: Kysely<DB>, clock: Clock, opts: TransfersOptions) {
    this.#db = db;
    this.#clock = clock;
    const { audit, ...rest } = opts;
    this.#opts = { transferCode: newTransferCode, dialect: 'sqlite', ...rest };
    this.#audit = audit;
    this.#travel = opts.travel;
    this.#courierAt = opts.courierAt ?? (async () => undefined);
    this.#leadMs = (opts.dispatchLeadSeconds ?? 0) * 1000;
    const base = opts.publicBaseUrl ?? '';
    // Lists and reads answer the same rows again and again: their shapes are remembered (~9 KiB each with the row and
    // the JSON of a read and of a list: 128 hold a few merchants' newest pages, ~1.2 MiB).
    this.#toTransfer = rememberedShapes((row) => toTransfer(row, base), 128);
  }

  /**
   * One transaction: consume the pending quote, debit the balance with a ledger entry, create the
   * transfer. Any refusal throws, which rolls back everything, so a refused request changes nothing.
   * `person` is the merchant's user who asked for it in the dashboard (its event names them).
   */
  async create(merchantId: string, req: TransferRequest, record?: RecordOutcome<Transfer>, person?: MerchantPerson): Promise<Transfer> {
    for (let attempt = 1; ; attempt++) {
      try {
        return this.#toTransfer(await this.#create(merchantId, req, record, person));
      } catch (err) {
        // 40 random bits keep codes short, so two can collide (likely somewhere in a few million
        // transfers): draw a new one. The transaction rolled back, so nothing is half-done.
        if (attempt >= 3 || !isUniqueViolation(err, 'transfer_code')) throw err;
      }
    }
  }

  async #create(merchantId: string, req: TransferRequest, record?: RecordOutcome<Transfer>, person?: MerchantPerson): Promise<TransferRow> {
    if (this.#opts.dialect === 'postgres') return this.#createOnPostgres(merchantId, req, record, person);
    return inTransaction(
      this.#db,
      async (trx) => {
        const now = this.#clock.now();
        // Consume first, in one conditional statement: that is what makes "at most once" hold under
        // concurrency, on any instance. A refusal below throws and the rollback makes it pending again.
        // The same statement reads the warehouse's status and the merchant's name, mode and balance.
        const quote = await quotesRepository.consumeForTransfer(trx, merchantId, req.matchmakingId, now);
        if (!quote) throw await this.#whyNotConsumable(trx, merchantId, req.matchmakingId, now);
        const { transfer, event, price, ledger, insufficient } = this.#plan(merchantId, quote, req, now, person);
        await transfersRepository.insert(trx, transfer);
        await appendEvent(trx, event);
        // The balance row is the one row all of a merchant's transfers share: lock it last, so it is held
        // for the debit, its ledger entry and the commit only.
        const balance = await merchantsRepository.adjustBalance(trx, merchantId, -price, now);
        if (balance === undefined) throw insufficient();
        if (ledger) await merchantsRepository.insertLedgerEntry(trx, { ...ledger, balance_after: balance });
        return transfer;
      },
      record && ((trx, row) => record(trx, this.#toTransfer(row))),
    );
  }

  /**
   * PostgreSQL: usually ONE round trip. A quote this instance wrote is remembered (RecentQuotes) with
   * the endpoints its write checked, and each merchant's name and mode from its last read here; the
   * transfer is planned from them, and one statement consumes the quote, debits the balance and writes
   * the rest only if both happened and what the plan came from still holds (transfersRepository.createOnPostgres).
   * Otherwise (a quote from another instance, or something changed), a read of the quote with its
   * warehouse, merchant and endpoints comes first, and a statement that wrote nothing is followed by a
   * fresh read: a refusal is only ever given from one. The statement commits by itself; with an
   * Idempotency-Key it also stores the key's outcome, so the merchant's balance row is never held
   * across round trips (a transaction around it held it for two more and the commit: keyed transfers
   * ran at about a third of the rate of the others, docs/benchmarks.md "Sixteenth pass").
   */
  async #createOnPostgres(merchantId: string, req: TransferRequest, record?: RecordOutcome<Transfer>, person?: MerchantPerson): Promise<TransferRow> {
    const now = this.#clock.now();
    const recent = this.#opts.recentQuotes?.take(merchantId, req.matchmakingId);
    const merchant = this.#merchants.get(merchantId);
    let source: { quote: ConsumedQuote; endpoints: EndpointTypes[]; endpointsFingerprint: string } | undefined =
      recent && merchant && recent.row.expires_at > now
        ? {
            // Priced while its warehouse was ACTIVE; the statement checks that it still is.
            quote: { ...recent.row, warehouse_status: 'ACTIVE', merchant_name: merchant.name, merchant_mode: merchant.mode, merchant_balance: null },
            endpoints: recent.endpoints,
            endpointsFingerprint: recent.endpointsFingerprint,
          }
        : undefined;
    for (let attempt = 1; ; attempt++) {
      const remembered = source !== undefined;
      if (!source) {
        const found = await quotesRepository.forTransfer(this.#db, merchantId, req.matchmakingId);
        if (found?.quote.status !== 'pending' || found.quote.expires_at <= now) {
          throw await this.#whyNotConsumable(this.#db, merchantId, req.matchmakingId, now);
        }
        const read = { name: found.quote.merchant_name ?? '', mode: found.quote.merchant_mode ?? 'live' };
        rememberNewest(this.#merchants, merchantId, read, MERCHANTS_KEPT);
        source = found;
      }
      const plan = this.#planUnlessRemembered(remembered, merchantId, source.quote, req, now, person);
      if (!plan) {
        // Refused from memory (a product not offered, say): the quote may have been paid on another
        // instance meanwhile, which answers first, so the refusal comes from a fresh read.
        source = undefined;
        continue;
      }
      const { transfer, event, price, ledger, insufficient } = plan;
      const endpointIds = endpointsTaking(source.endpoints, event.type);
      const deliveries = { ids: endpointIds.map(() => newId()), endpointIds };
      const planned = {
        merchantName: source.quote.merchant_name ?? '',
        merchantMode: source.quote.merchant_mode ?? 'live',
        endpointsFingerprint: source.endpoints.length > 0 ? source.endpointsFingerprint : undefined,
      };
      const stored = record?.asValues(this.#toTransfer(transfer));
      // One statement that commits by itself, the key's outcome included.
      const write = async () => {
        let outcome: { consumed: boolean };
        try {
          outcome = await transfersRepository.createOnPostgres(this.#db, {
            quoteId: req.matchmakingId,
            transfer,
            event,
            delta: -price,
            at: now,
            ledger,
            deliveries,
            outcome: stored,
            planned,
          });
        } catch (err) {
          // Refused by the debit: the balance it saw (read again; the one read with the quote may be older or absent).
          if (isInsufficientBalanceGuard(err)) throw insufficient((await merchantsRepository.find(this.#db, merchantId))?.balance);
          throw err;
        }
        if (!outcome.consumed) return undefined;
        published(undefined, event, deliveries.ids.length);
        return transfer;
      };
      const row = await withRetries(write);
      if (row) {
        stored?.committed();
        return row;
      }
      // Consumed by another request, expired, its warehouse disabled, or the merchant or its endpoints
      // changed since the plan's source was read: nothing was written. Read it all again. The merchant is
      // forgotten only as this request found it (a read since then remembered a fresher one: kept).
      if (this.#merchants.get(merchantId) === merchant) this.#merchants.delete(merchantId);
      source = undefined;
      if (attempt >= 3) {
        throw new AppError('SERVICE_UNAVAILABLE', "The merchant's account or webhook endpoints are changing too often; retry shortly", {
          headers: { 'retry-after': '1' },
        });
      }
    }
  }

  /** #plan, or undefined instead of its refusal when the quote was planned from memory. */
  #planUnlessRemembered(remembered: boolean, merchantId: string, quote: ConsumedQuote, req: TransferRequest, now: number, person?: MerchantPerson) {
    try {
      return this.#plan(merchantId, quote, req, now, person);
    } catch (err) {
      if (remembered && err instanceof AppError) return undefined;
      throw err;
    }
  }

  /**
   * What a transfer of this quote writes, once the quote's product and warehouse pass: the row, its
   * transfer.created event, the price, the ledger entry (none for a free product) and the refusal for
   * a balance that does not cover the price. Throws the refusal for a product or warehouse that cannot be used.
   */
  #plan(merchantId: string, quote: ConsumedQuote, req: TransferRequest, now: number, person?: MerchantPerson) {
    const products = JSON.parse(quote.products) as Record<string, PricedProduct>;
    const product = Object.hasOwn(products, req.productKey) ? products[req.productKey] : undefined;
    if (!product) {
      const keys = Object.keys(products).map((k) => `"${k}"`);
      throw new AppError('PRODUCT_NOT_AVAILABLE', `The quote has no product "${req.productKey}"; its products are ${keys.join(', ')}`);
    }
    if (product.status !== 'AVAILABLE') {
      throw new AppError('PRODUCT_NOT_AVAILABLE', `Product "${req.productKey}" is not available for this quote (${product.unavailableReason})`);
    }
    if (quote.warehouse_status !== 'ACTIVE') throw new AppError('WAREHOUSE_DISABLED', `Warehouse ${quote.warehouse_id} is DISABLED`);

    const transfer = this.#newTransfer(merchantId, quote.merchant_name ?? '', quote.merchant_mode ?? 'live', quote, req, product, now);
    const event: NewEvent = {
      id: newId(),
      merchant_id: merchantId,
      transfer_id: transfer.id,
      sequence: transfer.last_sequence,
      type: 'transfer.created',
      state: 'inProgress',
      actor_type: 'merchant',
      actor_id: person?.id ?? null,
      actor_name: person?.name ?? null,
      data: JSON.stringify({
        totalPrice: minorToNumber(transfer.total_amount),
        currency: transfer.currency,
        productKey: transfer.product_key,
        warehouseId: transfer.warehouse_id,
        ...estimateData(transfer.estimated_pickup_at ?? null, transfer.estimated_delivery_at ?? null),
      }),
      occurred_at: now,
    };
    const price = product.payableMinor;
    const ledger =
      price > 0
        ? { id: newId(), merchant_id: merchantId, kind: 'CHARGE' as const, amount: -price, transfer_id: transfer.id, note: null, created_at: now }
        : undefined;
    // The balance the refusal names: the one read with the quote, or a fresher one when that read was not the debit's.
    const insufficient = (current = quote.merchant_balance ?? 0) => {
      return new AppError(
        'INSUFFICIENT_BALANCE',
        `The balance (${formatMinor(current)} ${quote.currency}) does not cover ${product.common.price.payable_amount} ${quote.currency}; top up and retry`,
        { extra: { balance: minorToNumber(current), required: minorToNumber(price), currency: quote.currency } },
      );
    };
    return { transfer, event, price, ledger, insufficient };
  }

  /** The refusal for a quote that could not be consumed: missing (or another merchant's), already used, or expired. */
  async #whyNotConsumable(trx: Db, merchantId: string, quoteId: string, now: number): Promise<AppError> {
    const quote = await quotesRepository.find(trx, merchantId, quoteId);
    if (!quote) {
      // A likely mix-up: the quote's transfer_id (the id the transfer will get) sent as matchmakingId.
      const byTransferId = await trx
        .selectFrom('quotes')
        .select('id')
        .where('merchant_id', '=', merchantId)
        .where('transfer_id', '=', quoteId)
        .executeTakeFirst();
      const hint = byTransferId ? `: ${quoteId} is the transfer_id of quote ${byTransferId.id}; send the quote's id as matchmakingId` : '';
      return new AppError('QUOTE_NOT_FOUND', `No quote ${quoteId}${hint}`);
    }
    if (quote.status === 'consumed') return alreadyUsed(quote.transfer_id);
    if (quote.expires_at <= now) return new AppError('QUOTE_EXPIRED', `Quote ${quote.id} expired at ${iso(quote.expires_at)}; request new options`);
    // Still pending and unexpired: its callers ask only once a consume or a read found the quote missing, used or
    // expired, so only a consume that committed after that statement began gets here.
    return alreadyUsed(quote.transfer_id);
  }

  #newTransfer(
    merchantId: string,
    merchantName: string,
    mode: MerchantMode,
    quote: QuoteRow,
    req: TransferRequest,
    product: PricedProduct,
    now: number,
  ): TransferRow {
    const request = JSON.parse(quote.request) as StoredRequest;
    const pickup = JSON.parse(quote.pickup) as PickupSnapshot;
    const details: TransferDetails = {
      parcelSize: request.parcelSize,
      description: req.description,
      pickupLocation: { type: 'Point', coordinates: [pickup.lng, pickup.lat] },
      pickupAddress: pickup.address,
      destinationLocation: { type: 'Point', coordinates: [request.destinationLocation.lng, request.destinationLocation.lat] },
      destinationAddress: request.destinationLocation.display_name,
      destinationAddressMetadata: request.destinationLocation,
      pickupAddressMetaData: pickup.locationMetadata,
      deliveryOptionName: product.name,
      recipientInfo: req.recipientInfo,
      recipientFullName: `${req.recipientInfo.firstName} ${req.recipientInfo.lastName}`,
      isFragile: request.isFragile,
      isPerishable: request.isPerishable,
      senderInfo: { merchantId, name: merchantName, warehouseName: pickup.name, phone: pickup.contactPhone, email: pickup.contactEmail },
    };
    const window = request.pickupWindow && { start: Date.parse(request.pickupWindow.start), end: Date.parse(request.pickupWindow.end) };
    const estimates = this.#estimate({ state: 'inProgress', pickup, destination: request.destinationLocation, product: req.productKey, window }, now);
    return {
      pickup_window_start: window?.start ?? null,
      pickup_window_end: window?.end ?? null,
      // Offered so that the courier arrives within the window; at once when that moment is already here.
      dispatch_at: window && window.start - this.#leadMs > now ? window.start - this.#leadMs : null,
      dispatch_round: 0,
      estimated_pickup_at: estimates.pickupAt,
      estimated_delivery_at: estimates.deliveryAt,
      id: quote.transfer_id,
      merchant_id: merchantId,
      quote_id: quote.id,
      warehouse_id: quote.warehouse_id,
      product_key: req.productKey,
      state: 'inProgress',
      source: 'API',
      mode,
      transfer_code: this.#opts.transferCode(),
      tracking_code: newTrackingCode(),
      total_amount: product.payableMinor,
      currency: quote.currency,
      payment_ttl_minutes: this.#opts.paymentTtlMinutes,
      payment_expires_at: now + this.#opts.paymentTtlMinutes * 60_000,
      details: JSON.stringify(details),
      delivery_pin: String(randomInt(10_000)).padStart(4, '0'),
      courier_id: null,
      courier_name: null,
      // Quotes made before fees existed have none.
      cancellation_fee: product.cancellationFeeMinor ?? 0,
      return_fee: product.returnFeeMinor ?? 0,
      refunded_amount: 0,
      cancellation: null,
      delivery_failure: null,
      last_sequence: 2, // quote.created is 1, transfer.created 2
      pickup_lat: pickup.lat,
      pickup_lng: pickup.lng,
      // Quotes made before couriers existed have no courier fee: derived from the price breakdown.
      courier_payout: product.courierFeeMinor ?? parseMajorAmount(product.common.price.courier_fee_total),
      code_attempts: 0,
      locked: 0,
      recipient_phone: phoneDigits(req.recipientInfo.phone),
      next_step_at: mode === 'sandbox' && this.#opts.sandboxStepSeconds > 0 ? now + this.#opts.sandboxStepSeconds * 1000 : null,
      created_at: now,
      updated_at: now,
    };
  }

  async get(merchantId: string, id: string): Promise<Transfer> {
    return this.#toTransfer(await this.#require(this.#db, merchantId, id));
  }

  /** Any merchant's transfer (operators). */
  async getAny(id: string): Promise<Transfer & { merchantId: string }> {
    const row = await transfersRepository.findAny(this.#db, id);
    if (!row) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    return { ...this.#toTransfer(row), merchantId: row.merchant_id };
  }

  async #require(db: Db, merchantId: string, id: string): Promise<TransferRow> {
    const row = await transfersRepository.find(db, merchantId, id);
    if (!row) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    return row;
  }

  /** The timeline of a transfer, oldest first (merchantId undefined: any merchant's, for operators). */
  async events(merchantId: string | undefined, id: string): Promise<Event[]> {
    const row = merchantId === undefined ? await transfersRepository.findAny(this.#db, id) : await transfersRepository.find(this.#db, merchantId, id);
    if (!row) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    return (await eventsRepository.forTransfer(this.#db, row.merchant_id, id)).map(toEvent);
  }

  /** Operators: the timeline with who made each change (a courier's id, an operator's person id, or "cli:<machine user>"). */
  async eventsWithActors(id: string): Promise<Array<Event & { actorId: string | null }>> {
    const row = await transfersRepository.findAny(this.#db, id);
    if (!row) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    return (await eventsRepository.forTransfer(this.#db, row.merchant_id, id)).map((e) => ({ ...toEvent(e), actorId: e.actor_id }));
  }

  /** Newest first, filtered; merchantId undefined lists every merchant's (operators). */
  async list(merchantId: string | undefined, query: TransferListQuery): Promise<TransferPage> {
    const limit = query.limit ?? 50;
    const filter: TransferListFilter = {
      state: query.state,
      warehouseId: query.warehouseId,
      createdFrom: instant(query.createdFrom, 'createdFrom'),
      createdTo: instant(query.createdTo, 'createdTo'),
      before: query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor),
      limit: limit + 1, // one more tells whether a next page exists
    };
    const rows = await transfersRepository.list(this.#db, merchantId, filter);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(this.#toTransfer), ...(rows.length > limit ? { nextCursor: encodeTimeCursor(last) } : {}) };
  }

  /**
   * The dashboard's list: the API's filters, plus one search box that takes a transfer id, a tracking
   * code (or the tracking URL) or the recipient's phone in any spacing; one merchant's transfers, or
   * (merchantId undefined: the operator console) every merchant's, where the transfer code also matches.
   */
  async search(merchantId: string, query: TransferSearch): Promise<TransferPage> {
    const { rows, nextCursor } = await this.#search(merchantId, query);
    return { items: rows.map(this.#toTransfer), ...(nextCursor ? { nextCursor } : {}) };
  }

  /** The console's search: every merchant's transfers (the transfer code matches too), each with its merchant. */
  async searchAny(query: TransferSearch & { merchantId?: string }): Promise<{ items: Array<Transfer & { merchantId: string }>; nextCursor?: string }> {
    const { rows, nextCursor } = await this.#search(query.merchantId, query);
    return { items: rows.map((r) => ({ ...this.#toTransfer(r), merchantId: r.merchant_id })), ...(nextCursor ? { nextCursor } : {}) };
  }

  async #search(merchantId: string | undefined, query: TransferSearch): Promise<{ rows: TransferRow[]; nextCursor?: string }> {
    const errors: { path: string; message: string }[] = [];
    if (query.state !== undefined && !(TRANSFER_STATES as readonly string[]).includes(query.state)) {
      errors.push({ path: '/state', message: `must be one of ${TRANSFER_STATES.join(', ')}` });
    }
    if (query.warehouseId !== undefined && !UUID.test(query.warehouseId)) errors.push({ path: '/warehouseId', message: 'must be a warehouse id' });
    const search = query.q === undefined ? {} : parseSearch(query.q, merchantId === undefined);
    if (!search) errors.push({ path: '/q', message: 'search by a transfer id, a tracking code or link, or the recipient phone' });
    if (errors.length)
      throw new AppError('VALIDATION_FAILED', `Search failed validation: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, { errors });
    const limit = query.limit ?? 50;
    const rows = await transfersRepository.list(this.#db, merchantId, {
      state: query.state as TransferState | undefined,
      warehouseId: query.warehouseId,
      createdFrom: instant(query.createdFrom, 'createdFrom'),
      createdTo: instant(query.createdTo, 'createdTo'),
      ...search,
      before: query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { rows: page, ...(rows.length > limit ? { nextCursor: encodeTimeCursor(last) } : {}) };
  }

  /**
   * The merchant's deliveries created in [from, to) as CSV lines (header first), oldest first, read in
   * batches as the consumer pulls: memory stays bounded however long the range.
   */
  async *exportCsv(merchantId: string, range: ExportRange): AsyncGenerator<string> {
    const { from, to } = exportRange(range);
    yield csvRow(DELIVERIES_CSV_HEADER);
    let after: { createdAt: number; id: string } | undefined;
    for (;;) {
      const rows = await transfersRepository.range(this.#db, merchantId, from, to, after, EXPORT_BATCH);
      if (rows.length === 0) return;
      let chunk = '';
      for (const row of rows) {
        const d = JSON.parse(row.details) as TransferDetails;
        chunk += csvRow([
          iso(row.created_at),
          row.id,
          row.state,
          row.tracking_code,
          row.warehouse_id,
          d.deliveryOptionName,
          d.recipientFullName,
          d.recipientInfo.phone,
          d.destinationAddress,
          formatMinor(row.total_amount),
          formatMinor(row.refunded_amount),
          row.currency,
        ]);
      }
      yield chunk;
      const last = rows[rows.length - 1];
      after = { createdAt: Number(last.created_at), id: last.id };
      if (rows.length < EXPORT_BATCH) return;
    }
  }

  /**
   * What cancelling would do now, by the same lifecycle rules cancel() applies: whether the merchant
   * may, the refund and the fee kept back (the dashboard shows it before the merchant confirms).
   */
  async cancellationPreview(merchantId: string, id: string): Promise<{ cancellable: boolean; refund: string; feeKept: string; currency: string }> {
    const row = await this.#require(this.#db, merchantId, id);
    const rule = findTransition(row.state, 'cancelled', 'merchant');
    const refund = rule ? refundAmount(rule, 'merchant', row.total_amount, { cancellation: row.cancellation_fee, return: row.return_fee }) : 0;
    return { cancellable: rule !== undefined, refund: formatMinor(refund), feeKept: formatMinor(rule ? row.total_amount - refund : 0), currency: row.currency };
  }

  /** The merchant cancels: a full refund before a courier accepted, the price less the cancellation fee after; refused after pickup. */
  /** The merchant cancels (through the API, or its user `person` in the dashboard, whom the event names). */
  async cancel(merchantId: string, id: string, req: CancelRequest, record?: RecordOutcome<Transfer>, person?: MerchantPerson): Promise<Transfer> {
    const actor: Actor = { type: 'merchant', merchantId, ...(person ? { person } : {}) };
    return this.#applied(await this.transition(id, { to: 'cancelled', actor, reason: req.reason, comment: req.comment, record }));
  }

  /** Support cancels any transfer that has not ended, with a full refund; an operator event naming them, and an audit entry. */
  async operatorCancel(id: string, note: string, by?: OperatorActor): Promise<Transfer> {
    const reason = checkReason(note);
    return this.#applied(
      await this.transition(id, { to: 'cancelled', actor: { type: 'operator', operator: by }, reason: OPERATOR_CANCELLATION_REASON, comment: reason }),
    );
  }

  /** Support moves a transfer through any allowed transition (as if the courier had); an operator event naming them, and an audit entry. */
  async operatorAdvance(id: string, to: TransferState, note: string, by?: OperatorActor): Promise<Transfer> {
    if (to === 'cancelled') return this.operatorCancel(id, note, by);
    // An assignment names its courier: DispatchService.assign (mds transfers assign).
    if (to === 'courierAssigned') throw new AppError('VALIDATION_FAILED', 'Assign a courier with mds transfers assign ID --courier COURIER_ID --reason TEXT');
    const comment = checkReason(note);
    const reason = to === 'returning' ? 'OTHER' : undefined;
    return this.#applied(await this.transition(id, { to, actor: { type: 'operator', operator: by }, reason, comment }));
  }

  /**
   * The sandbox's on-demand courier: any transition the simulated courier could make (release, failed
   * delivery and return included), or `cancelled` as the system's no-courier timeout. The first manual
   * step stops the automatic ones for that transfer. 404 for live merchants, as if the route did not exist.
   */
  async sandboxAdvance(merchantId: string, id: string, req: AdvanceRequest, record?: RecordOutcome<Transfer>): Promise<Transfer> {
    const merchant = await merchantsRepository.find(this.#db, merchantId);
    if (merchant?.mode !== 'sandbox') {
      throw new AppError('ROUTE_NOT_FOUND', 'POST /sandbox/transfer/{transferId}/advance exists for sandbox merchants only; this merchant is live');
    }
    const actor: Actor = req.to === 'cancelled' ? { type: 'system', merchantId } : { type: 'courier', merchantId, courier: SANDBOX_COURIER };
    const reason = req.to === 'cancelled' ? SYSTEM_CANCELLATION_REASON : req.to === 'returning' ? (req.reason ?? 'RECIPIENT_UNAVAILABLE') : undefined;
    return this.#applied(await this.transition(id, { to: req.to, actor, reason, nextStepAt: null, allowedAs: ['courier', 'system'], record }));
  }

  /** Cancels (full refund) transfers that found no courier within the assignment timeout. Returns how many. */
  async cancelUnassigned(limit = 100): Promise<number> {
    const cutoff = this.#clock.now() - this.#opts.assignmentTimeoutMinutes * 60_000;
    let done = 0;
    for (const { id } of await transfersRepository.unassignedSince(this.#db, cutoff, limit)) {
      // onlyFrom: another instance, a courier or the merchant may have got there first; then nothing happens.
      const t = await this.transition(id, { to: 'cancelled', actor: { type: 'system' }, reason: SYSTEM_CANCELLATION_REASON, onlyFrom: 'inProgress' });
      if (t) done++;
    }
    return done;
  }

  /** The simulated courier's automatic steps on sandbox transfers that are due. Returns how many moved. */
  async stepSandbox(limit = 100): Promise<number> {
    const now = this.#clock.now();
    let done = 0;
    for (const { id, state } of await transfersRepository.sandboxStepsDue(this.#db, now, limit)) {
      const to = SANDBOX_AUTO_NEXT[state];
      if (!to) {
        await transfersRepository.clearNextStep(this.#db, id); // off the automatic path: nothing more to do on its own
        continue;
      }
      const nextStepAt = to === 'delivered' ? null : now + this.#opts.sandboxStepSeconds * 1000;
      const t = await this.transition(id, { to, actor: { type: 'courier', courier: SANDBOX_COURIER }, onlyFrom: state, nextStepAt });
      if (t) done++;
    }
    return done;
  }

  #applied(t: Transfer | undefined): Transfer {
    if (!t) throw new Error('transition without onlyFrom returned nothing'); // unreachable: refusals throw
    return t;
  }

  /**
   * The one way a transfer changes state, for every actor: in one transaction, the conditional update
   * (WHERE state = from), its event with the next gapless sequence, and the refund with its ledger
   * entry when money moves. A refused change throws (or, with onlyFrom, returns undefined) and writes nothing.
   */
  async transition(id: string, req: TransitionRequest): Promise<Transfer | undefined> {
    const { actor } = req;
    return inTransaction(
      this.#db,
      async (trx) => {
        // A concurrent change can win between our read and our write; read again and judge the new state.
        for (let attempt = 1; ; attempt++) {
          const row = actor.merchantId === undefined ? await transfersRepository.findAny(trx, id) : await transfersRepository.find(trx, actor.merchantId, id);
          if (!row) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
          if (req.onlyFrom !== undefined && row.state !== req.onlyFrom) return undefined;
          await req.guard?.(trx, row);
          const rule = findTransition(row.state, req.to, actor.type);
          if (!rule) throw refusal(row, req.to, actor.type, req.allowedAs ?? [actor.type]);

          const now = this.#clock.now();
          const refund = refundAmount(rule, actor.type, row.total_amount, { cancellation: row.cancellation_fee, return: row.return_fee });
          const terminal = TERMINAL_STATES.includes(req.to);
          const changes = {
            updated_at: now,
            refunded_amount: row.refunded_amount + refund,
            // A new holder (or none) starts with a clean slate of code attempts: one courier's typos never lock another's job.
            ...(req.to === 'courierAssigned'
              ? { courier_id: actor.courier?.id ?? null, courier_name: actor.courier?.firstName ?? null, code_attempts: 0, locked: 0 }
              : {}),
            ...(rule.event === 'transfer.courier_released' ? { courier_id: null, courier_name: null, code_attempts: 0, locked: 0 } : {}),
            ...(req.to === 'cancelled'
              ? {
                  cancellation: JSON.stringify({
                    reason: req.reason ?? 'OTHER',
                    comment: req.comment,
                    actor: actor.type,
                    refundMinor: refund,
                    cancelledAt: now,
                  } satisfies StoredCancellation),
                }
              : {}),
            ...(req.to === 'returning' ? { delivery_failure: JSON.stringify({ reason: req.reason ?? 'OTHER', comment: req.comment }) } : {}),
            // The sandbox courier steps on only along its own path: any other move (terminal, operator, merchant) stops it.
            ...(req.nextStepAt !== undefined && !terminal
              ? { next_step_at: req.nextStepAt }
              : actor.type === 'courier' && !terminal
                ? {}
                : { next_step_at: null }),
          };
          // Timestamps of what happened, and the estimates of this moment (from the holder's position).
          const holderId = req.to === 'courierAssigned' ? (actor.courier?.id ?? null) : rule.event === 'transfer.courier_released' ? null : row.courier_id;
          const pickedUpAt = req.to === 'pickedUp' ? now : (row.picked_up_at ?? null);
          const estimates = this.#estimate(
            { ...situation(row), state: req.to, courier: holderId ? await this.#courierAt(trx, holderId) : undefined, pickedUpAt },
            now,
          );
          Object.assign(changes, {
            estimated_pickup_at: estimates.pickupAt,
            estimated_delivery_at: estimates.deliveryAt,
            ...(req.to === 'courierAssigned' ? { assigned_at: now } : {}),
            ...(req.to === 'pickedUp' ? { picked_up_at: now } : {}),
            ...(req.to === 'delivered' ? { delivered_at: now } : {}),
          });
          // A real courier's move also needs the job to be theirs (or open, to accept it) and unlocked, in the same statement.
          const courierId = actor.type === 'courier' ? actor.courier?.id : undefined;
          const holder = courierId ? { holder: req.to === 'courierAssigned' ? null : courierId } : undefined;
          const updated = await transfersRepository.transition(trx, id, row.state, req.to, changes, holder);
          if (!updated) {
            if (attempt >= 3)
              throw new AppError('SERVICE_UNAVAILABLE', 'The transfer is changing too often; retry shortly', { headers: { 'retry-after': '1' } });
            continue;
          }
          if (req.to === 'courierAssigned' && updated.mode === 'live' && dispatchOutcome.hasSubscribers) {
            // Metrics: how long the merchant waited for a courier (from payment, or from a scheduled pickup's dispatch start).
            const waitedMs = Math.max(0, now - Math.max(updated.created_at, updated.dispatch_at ?? 0));
            afterCommit(trx, () => dispatchOutcome.publish({ outcome: 'assigned', waitedMs }));
          }
          await appendEvent(trx, {
            id: newId(),
            merchant_id: updated.merchant_id,
            transfer_id: id,
            sequence: updated.last_sequence,
            type: rule.event,
            state: req.to,
            actor_type: actor.type,
            // The courier who moved it, or the operator; an operator's assignment names the courier in data.
            ...eventActor(actor, row),
            data: JSON.stringify({ ...eventData(row, updated, req, refund), ...estimateData(estimates.pickupAt, estimates.deliveryAt) }),
            occurred_at: now,
          });
          if (actor.operator) {
            if (!this.#audit) throw new Error('an operator change needs the audit log');
            await this.#audit.record(trx, actor.operator, {
              action: req.to === 'cancelled' ? 'transfer.cancel' : req.to === 'courierAssigned' ? 'transfer.assign' : 'transfer.advance',
              subjectType: 'transfer',
              subjectId: id,
              merchantId: updated.merchant_id,
              reason: req.comment ?? null,
              before: { state: row.state, refundedAmount: minorToNumber(row.refunded_amount), courierId: row.courier_id },
              after: { state: updated.state, refundedAmount: minorToNumber(updated.refunded_amount), courierId: updated.courier_id },
            });
          }
          // The refund last: the merchant's balance row, which all its transfers share, is then held for
          // the credit, its ledger entry and the commit only (as the transfer's debit, transfersRepository.createOnPostgres).
          if (refund > 0) await this.#refund(trx, updated, refund, now);
          return this.#toTransfer(updated);
        }
      },
      req.record && ((trx, t) => (t ? req.record!(trx, t) : Promise.resolve())),
    );
  }

  #estimate(s: Parameters<typeof transferEstimates>[1], now: number): Estimates {
    return this.#travel ? transferEstimates(this.#travel, s, now) : { pickupAt: null, deliveryAt: null };
  }

  /** A courier moved: the estimates of the jobs it holds, from its new position (no event; the state is unchanged). */
  async refreshEstimates(courierId: string, at: Point): Promise<void> {
    if (!this.#travel) return;
    const now = this.#clock.now();
    for (const row of await transfersRepository.heldBy(this.#db, courierId)) {
      const e = this.#estimate({ ...situation(row), courier: at, pickedUpAt: row.picked_up_at ?? null }, now);
      await transfersRepository.setEstimates(this.#db, row.id, e.pickupAt, e.deliveryAt);
    }
  }

  /**
   * Where the sandbox's simulated courier is: waiting at the pickup once assigned, then moving along the
   * straight way to the destination at the model's speed for the product (back again when returning).
   */
  async simulatedPosition(id: string): Promise<(Point & { at: number }) | undefined> {
    const row = await transfersRepository.findAny(this.#db, id);
    const model = this.#travel;
    if (row?.mode !== 'sandbox' || !model?.positionAfter) return undefined;
    const s = situation(row);
    const now = this.#clock.now();
    const since = (t: number | null | undefined) => Math.max(0, (now - (t ?? now)) / 1000);
    if (row.state === 'courierAssigned') return { ...s.pickup, at: now };
    if (row.state === 'pickedUp') return { ...model.positionAfter(s.pickup, s.destination, since(row.picked_up_at), s.product), at: now };
    if (row.state === 'returning') return { ...model.positionAfter(s.destination, s.pickup, since(row.updated_at), s.product), at: now };
    return undefined;
  }

  async #refund(trx: Transaction<DB>, t: TransferRow, amount: number, now: number): Promise<void> {
    const balance = await merchantsRepository.adjustBalance(trx, t.merchant_id, amount, now);
    // Only the 2^53 - 1 cap can refuse a credit, and a refund never exceeds what was charged from that balance.
    if (balance === undefined) throw new Error(`refund of ${amount} for transfer ${t.id} refused by the balance bounds`);
    await merchantsRepository.insertLedgerEntry(trx, {
      id: newId(),
      merchant_id: t.merchant_id,
      kind: 'REFUND',
      amount,
      balance_after: balance,
      transfer_id: t.id,
      note: null,
      created_at: now,
    });
  }
}

/** A date-time filter as epoch ms; JSON Schema's date-time allows what Date cannot hold (a leap second :60): a 400, not a NaN. */
function instant(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw new AppError('VALIDATION_FAILED', `Query string failed validation: /${name} is not a time this service can compare`, {
      errors: [{ path: `/${name}`, message: 'must be an ISO 8601 date-time such as 2026-11-21T10:00:00.000Z' }],
    });
  }
  return ms;
}

/** The digits of a phone number: how phones are stored and searched, so spacing and punctuation never matter. */
export const phoneDigits = (phone: string): string => phone.replace(/[^0-9]/g, '');

/** One search box, three kinds of exact match; undefined when the text is none of them. */
function parseSearch(raw: string, withTransferCode = false): Pick<TransferListFilter, 'id' | 'trackingCode' | 'recipientPhone' | 'transferCode'> | undefined {
  // A leading apostrophe is the CSV export's formula guard, copied along with a tracking code.
  let q = raw.trim().replace(/^'/, '');
  // The transfer code (shown at the warehouse) is for operators: merchants' searches never match it.
  if (withTransferCode && TRANSFER_CODE.test(q)) return { transferCode: q.toUpperCase() };
  const track = /\/track\/([A-Za-z0-9_-]+)\/?$/.exec(q); // a pasted tracking link
  if (track) q = track[1];
  if (UUID.test(q)) return { id: q.toLowerCase() };
  if (TRACKING_CODE.test(q)) return { trackingCode: q };
  if (PHONE_QUERY.test(q)) {
    const digits = phoneDigits(q);
    if (digits.length >= 5) return { recipientPhone: digits };
  }
  return undefined;
}

/** The 409 for a move the lifecycle does not allow from the current state (it names the state). */
function refusal(row: TransferRow, to: TransferState, actor: ActorType, allowedAs: ActorType[]): AppError {
  if (to === 'cancelled' && actor === 'merchant') {
    const why = row.state === 'cancelled' ? 'is already cancelled' : `is ${row.state}: it can be cancelled only before pickup`;
    return new AppError('TRANSFER_NOT_CANCELLABLE', `Transfer ${row.id} ${why}`, { extra: { state: row.state } });
  }
  const allowed = nextStates(row.state, allowedAs);
  const where = allowed.length ? `from there it can move to: ${allowed.join(', ')}` : 'it cannot move from there';
  return new AppError('TRANSITION_NOT_ALLOWED', `Transfer ${row.id} is ${row.state}; ${where}`, { extra: { state: row.state, allowed } });
}

function eventData(before: TransferRow, after: TransferRow, req: TransitionRequest, refund: number): Record<string, unknown> {
  const data: Record<string, unknown> = { previousState: before.state };
  if (req.to === 'courierAssigned' && after.courier_name) data.courier = { firstName: after.courier_name };
  if (req.reason !== undefined) data.reason = req.reason;
  if (req.comment !== undefined) data.comment = req.comment;
  if (req.to === 'cancelled' || req.to === 'returned') {
    data.refundAmount = minorToNumber(refund);
    data.currency = after.currency;
  }
  if (req.to === 'returned') data.returnFee = minorToNumber(Math.min(after.return_fee, after.total_amount));
  return data;
}

/**
 * Who an event names: a courier by id and first name only (all merchants ever see of a courier; a move
 * other than accepting takes the holder's name from the row), an operator by person id (or
 * "cli:<machine user>") and display name. The sandbox's simulated courier, merchants and the system: nobody.
 */
function eventActor(actor: Actor, row: TransferRow): { actor_id: string | null; actor_name: string | null } {
  if (actor.operator) {
    const op = actor.operator;
    return { actor_id: operatorActorId(op), actor_name: op.kind === 'cli' ? actorLabel(op) : op.name };
  }
  if (actor.type === 'courier' && actor.courier?.id) return { actor_id: actor.courier.id, actor_name: actor.courier.firstName || row.courier_name || null };
  if (actor.type === 'merchant' && actor.person) return { actor_id: actor.person.id, actor_name: actor.person.name };
  return { actor_id: null, actor_name: null };
}

/** What a transfer's estimates rest on, from its row. */
function situation(row: TransferRow) {
  const d = JSON.parse(row.details) as TransferDetails;
  const [lng, lat] = d.destinationLocation.coordinates;
  const window =
    row.pickup_window_start != null && row.pickup_window_end != null
      ? { start: Number(row.pickup_window_start), end: Number(row.pickup_window_end) }
      : undefined;
  return { state: row.state, pickup: { lat: row.pickup_lat, lng: row.pickup_lng }, destination: { lat, lng }, product: row.product_key, window };
}

/** The estimates an event carries in its data. */
function estimateData(pickupAt: number | null, deliveryAt: number | null) {
  return { estimatedPickupAt: pickupAt === null ? null : iso(pickupAt), estimatedDeliveryAt: deliveryAt === null ? null : iso(deliveryAt) };
}

function alreadyUsed(transferId: string): AppError {
  return new AppError('QUOTE_ALREADY_USED', `The quote was already used by transfer ${transferId}`, { extra: { transferId } });
}

export function toTransfer(row: TransferRow, trackingBase = ''): Transfer {
  const d = storedJson<TransferDetails>(row.details);
  const terminal = TERMINAL_STATES.includes(row.state);
  return {
    id: row.id,
    state: row.state,
    transferCode: row.transfer_code,
    trackingCode: row.tracking_code,
    trackingUrl: `${trackingBase}/track/${row.tracking_code}`,
    parcelSize: d.parcelSize,
    description: d.description,
    pickupLocation: d.pickupLocation,
    pickupAddress: d.pickupAddress,
    destinationLocation: d.destinationLocation,
    destinationAddress: d.destinationAddress,
    destinationAddressMetadata: d.destinationAddressMetadata,
    pickupAddressMetaData: d.pickupAddressMetaData,
    deliveryOptionName: d.deliveryOptionName,
    paymentTtlMinutes: row.payment_ttl_minutes,
    paymentExpiresAt: iso(row.payment_expires_at),
    recipientInfo: d.recipientInfo,
    source: row.source,
    recipientFullName: d.recipientFullName,
    totalPrice: minorToNumber(row.total_amount),
    currency: row.currency,
    isFragile: d.isFragile,
    isPerishable: d.isPerishable,
    senderInfo: d.senderInfo,
    warehouseId: row.warehouse_id,
    matchmakingId: row.quote_id,
    productKey: row.product_key,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    deliveryPin: row.delivery_pin,
    sandbox: row.mode === 'sandbox',
    refundedAmount: minorToNumber(row.refunded_amount),
    ...(row.courier_name ? { courier: { firstName: row.courier_name } } : {}),
    estimatedPickupAt: terminal || row.estimated_pickup_at == null ? null : iso(Number(row.estimated_pickup_at)),
    estimatedDeliveryAt: terminal || row.estimated_delivery_at == null ? null : iso(Number(row.estimated_delivery_at)),
    ...(row.picked_up_at != null ? { pickedUpAt: iso(Number(row.picked_up_at)) } : {}),
    ...(row.delivered_at != null ? { deliveredAt: iso(Number(row.delivered_at)) } : {}),
    ...(row.pickup_window_start != null && row.pickup_window_end != null
      ? { pickupWindow: { start: iso(Number(row.pickup_window_start)), end: iso(Number(row.pickup_window_end)) } }
      : {}),
    ...(row.cancellation ? { cancellation: toCancellation(JSON.parse(row.cancellation)) } : {}),
    ...(row.delivery_failure ? { deliveryFailure: JSON.parse(row.delivery_failure) as { reason: DeliveryFailureReason; comment?: string } } : {}),
  };
}

function toCancellation(c: StoredCancellation): NonNullable<Transfer['cancellation']> {
  return {
    reason: c.reason,
    ...(c.comment !== undefined ? { comment: c.comment } : {}),
    actor: c.actor as 'merchant' | 'operator' | 'system',
    refundAmount: minorToNumber(c.refundMinor),
    cancelledAt: iso(c.cancelledAt),
  };
}
