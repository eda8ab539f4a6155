import type { Kysely } from 'kysely';
import { inTransaction, isUniqueViolation } from '../../db/transaction.ts';
import type { DB, Db } from '../../db/types.ts';
import { AppError } from '../../http/errors.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { newId, newTrackingCode, newTransferCode } from '../../lib/ids.ts';
import { minorToNumber } from '../../lib/money.ts';
import type { RecordOutcome } from '../idempotency/service.ts';
import { merchantsRepository } from '../merchants/repository.ts';
import { type QuoteRow, quotesRepository } from '../quotes/repository.ts';
import type { PickupSnapshot, StoredRequest } from '../quotes/service.ts';
import type { PricedProduct } from '../tariffs/pricing.ts';
import { warehousesRepository } from '../warehouses/repository.ts';
import { type TransferRow, transfersRepository } from './repository.ts';
import type { Transfer, TransferRequest } from './schemas.ts';

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

export class TransfersService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #paymentTtlMinutes: number;
  readonly #transferCode: () => string;
  constructor(db: Kysely<DB>, clock: Clock, paymentTtlMinutes: number, transferCode: () => string = newTransferCode) {
    this.#transferCode = transferCode;
    this.#db = db;
    this.#clock = clock;
    this.#paymentTtlMinutes = paymentTtlMinutes;
  }

  /**
   * One transaction: consume the pending quote, debit the balance with a ledger entry, create the
   * transfer. Any refusal throws, which rolls back everything, so a refused request changes nothing.
   */
  async create(merchantId: string, req: TransferRequest, record?: RecordOutcome<Transfer>): Promise<Transfer> {
    for (let attempt = 1; ; attempt++) {
      try {
        return toTransfer(await this.#create(merchantId, req, record));
      } catch (err) {
        // 40 random bits keep codes short, so two can collide (likely somewhere in a few million
        // transfers): draw a new one. The transaction rolled back, so nothing is half-done.
        if (attempt >= 3 || !isUniqueViolation(err, 'transfer_code')) throw err;
      }
    }
  }

  async #create(merchantId: string, req: TransferRequest, record?: RecordOutcome<Transfer>): Promise<TransferRow> {
    return inTransaction(
      this.#db,
      async (trx) => {
        const now = this.#clock.now();
        // Consume first, in one conditional statement: that is what makes "at most once" hold under
        // concurrency, on any instance. A refusal below throws and the rollback makes it pending again.
        const quote = await quotesRepository.consume(trx, merchantId, req.matchmakingId, now);
        if (!quote) throw await this.#whyNotConsumable(trx, merchantId, req.matchmakingId, now);
        const products = JSON.parse(quote.products) as Record<string, PricedProduct>;
        const product = Object.hasOwn(products, req.productKey) ? products[req.productKey] : undefined;
        if (!product) {
          const keys = Object.keys(products).map((k) => `"${k}"`);
          throw new AppError('PRODUCT_NOT_AVAILABLE', `The quote has no product "${req.productKey}"; its products are ${keys.join(', ')}`);
        }
        if (product.status !== 'AVAILABLE') {
          throw new AppError('PRODUCT_NOT_AVAILABLE', `Product "${req.productKey}" is not available for this quote (${product.unavailableReason})`);
        }
        const warehouse = await warehousesRepository.find(trx, merchantId, quote.warehouse_id);
        if (warehouse?.status !== 'ACTIVE') throw new AppError('WAREHOUSE_DISABLED', `Warehouse ${quote.warehouse_id} is DISABLED`);
        const merchant = await merchantsRepository.find(trx, merchantId);

        const transfer = this.#newTransfer(merchantId, merchant?.name ?? '', quote, req, product, now);
        await transfersRepository.insert(trx, transfer);

        // The balance row is the one row all of a merchant's transfers share: lock it last, so it is held
        // for the debit, its ledger entry and the commit only.
        const price = product.payableMinor;
        const balance = await merchantsRepository.adjustBalance(trx, merchantId, -price, now);
        if (balance === undefined) {
          throw new AppError('INSUFFICIENT_BALANCE', `The balance does not cover ${product.common.price.payable_amount} ${quote.currency}; top up and retry`);
        }
        if (price > 0) {
          await merchantsRepository.insertLedgerEntry(trx, {
            id: newId(),
            merchant_id: merchantId,
            kind: 'CHARGE',
            amount: -price,
            balance_after: balance,
            transfer_id: transfer.id,
            note: null,
            created_at: now,
          });
        }
        return transfer;
      },
      record && ((trx, row) => record(trx, toTransfer(row))),
    );
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
    return alreadyUsed(quote.transfer_id); // consumed by a transaction that committed after our statement began
  }

  #newTransfer(merchantId: string, merchantName: string, quote: QuoteRow, req: TransferRequest, product: PricedProduct, now: number): TransferRow {
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
    return {
      id: quote.transfer_id,
      merchant_id: merchantId,
      quote_id: quote.id,
      warehouse_id: quote.warehouse_id,
      product_key: req.productKey,
      state: 'inProgress',
      source: 'API',
      transfer_code: this.#transferCode(),
      tracking_code: newTrackingCode(),
      total_amount: product.payableMinor,
      currency: quote.currency,
      payment_ttl_minutes: this.#paymentTtlMinutes,
      payment_expires_at: now + this.#paymentTtlMinutes * 60_000,
      details: JSON.stringify(details),
      created_at: now,
      updated_at: now,
    };
  }

  async get(merchantId: string, id: string): Promise<Transfer> {
    const row = await transfersRepository.find(this.#db, merchantId, id);
    if (!row) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    return toTransfer(row);
  }
}

function alreadyUsed(transferId: string): AppError {
  return new AppError('QUOTE_ALREADY_USED', `The quote was already used by transfer ${transferId}`, { extra: { transferId } });
}

function toTransfer(row: TransferRow): Transfer {
  const d = JSON.parse(row.details) as TransferDetails;
  return {
    id: row.id,
    state: row.state,
    transferCode: row.transfer_code,
    trackingCode: row.tracking_code,
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
  };
}
