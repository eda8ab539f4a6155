import type { MerchantDeliveryClient, RequestOptions } from '../client.ts';
import type { Quote, QuoteRequest } from '../types.ts';

/** Delivery options: POST /options prices every product and stores a pending quote. */
export class QuotesResource {
  readonly #client: MerchantDeliveryClient;
  constructor(client: MerchantDeliveryClient) {
    this.#client = client;
  }

  /** Gets delivery options (a pending quote; its `id` is the transfer's `matchmakingId`). */
  async create(request: QuoteRequest, options?: RequestOptions): Promise<Quote> {
    return (await this.#client.call('createQuote', { body: request }, options)).data;
  }
}
