import type { MerchantDeliveryClient, RequestOptions } from '../client.ts';
import { nextCursor, Page, PagePromise } from '../pagination.ts';
import type { Balance, BalanceQuery, LedgerEntry } from '../types.ts';

/** The balance and its ledger: GET /balance. */
export class BalanceResource {
  readonly #client: MerchantDeliveryClient;
  constructor(client: MerchantDeliveryClient) {
    this.#client = client;
  }

  /** The balance, currency and one page of ledger entries (newest first). */
  async get(query: BalanceQuery & { cursor?: string } = {}, options?: RequestOptions): Promise<Balance> {
    return (await this.#client.call('getBalance', { query }, options)).data;
  }

  /** Every ledger entry, newest first, across pages. */
  entries(query: BalanceQuery = {}, options?: RequestOptions): PagePromise<LedgerEntry> {
    const page = async (cursor?: string): Promise<Page<LedgerEntry>> => {
      const r = await this.#client.call('getBalance', { query: { ...query, cursor } }, options);
      return new Page(r.data.entries, nextCursor(r.headers.get('link')), page);
    };
    return new PagePromise(() => page());
  }
}
