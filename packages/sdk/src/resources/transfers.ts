import type { MerchantDeliveryClient, RequestOptions } from '../client.ts';
import { nextCursor, Page, PagePromise } from '../pagination.ts';
import type { CancelRequest, Transfer, TransferEvent, TransferListQuery, TransferRequest } from '../types.ts';

/** Paid deliveries: create, look up, list, the event timeline, cancel. */
export class TransfersResource {
  readonly #client: MerchantDeliveryClient;
  constructor(client: MerchantDeliveryClient) {
    this.#client = client;
  }

  /**
   * Consumes the quote, charges the balance and creates the delivery (POST /transfer). The call sends
   * an Idempotency-Key and repeats it on every retry, so a retry after a lost answer replays the first
   * transfer instead of creating (and paying) a second one. Pass `idempotencyKey` to make your own
   * retries (after a crash, say) safe as well: e.g. your order id.
   */
  async create(request: TransferRequest, options?: RequestOptions): Promise<Transfer> {
    return (await this.#client.call('createTransfer', { body: request }, options)).data;
  }

  async get(transferId: string, options?: RequestOptions): Promise<Transfer> {
    return (await this.#client.call('getTransfer', { path: { transferId } }, options)).data;
  }

  /** The transfers, newest first, a page of `limit` (default 50) at a time; `for await` goes through every page. */
  list(query: TransferListQuery = {}, options?: RequestOptions): PagePromise<Transfer> {
    const page = async (cursor?: string): Promise<Page<Transfer>> => {
      const r = await this.#client.call('listTransfers', { query: { ...query, cursor } }, options);
      return new Page(r.data, nextCursor(r.headers.get('link')), page);
    };
    return new PagePromise(() => page());
  }

  /** The transfer's event timeline, oldest first (gapless `sequence`). */
  async events(transferId: string, options?: RequestOptions): Promise<TransferEvent[]> {
    return (await this.#client.call('listTransferEvents', { path: { transferId } }, options)).data;
  }

  /** Cancels before pickup; the refund is in the answer (`refundedAmount`, `cancellation`) and the balance. */
  async cancel(transferId: string, request: CancelRequest, options?: RequestOptions): Promise<Transfer> {
    return (await this.#client.call('cancelTransfer', { path: { transferId }, body: request }, options)).data;
  }
}
