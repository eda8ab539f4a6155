import type { MerchantDeliveryClient, RequestOptions } from '../client.ts';
import { nextCursor, Page, PagePromise } from '../pagination.ts';
import type { Warehouse, WarehouseInput, WarehouseListQuery } from '../types.ts';

/** Pickup warehouses: GET/POST /warehouses, GET/PUT /warehouses/{id}. */
export class WarehousesResource {
  readonly #client: MerchantDeliveryClient;
  constructor(client: MerchantDeliveryClient) {
    this.#client = client;
  }

  /** Creates a warehouse (POST /warehouses; with an Idempotency-Key, so a retry cannot create two). */
  async create(input: WarehouseInput, options?: RequestOptions): Promise<Warehouse> {
    return (await this.#client.call('createWarehouse', { body: input }, options)).data;
  }

  async get(id: string, options?: RequestOptions): Promise<Warehouse> {
    return (await this.#client.call('getWarehouse', { path: { id } }, options)).data;
  }

  /** Replaces every editable detail (omitted optional fields are cleared). */
  async replace(id: string, input: WarehouseInput, options?: RequestOptions): Promise<Warehouse> {
    return (await this.#client.call('replaceWarehouse', { path: { id }, body: input }, options)).data;
  }

  /** The warehouses, oldest first: without `limit` all in one page; `for await` goes through every page. */
  list(query: WarehouseListQuery = {}, options?: RequestOptions): PagePromise<Warehouse> {
    const page = async (cursor?: string): Promise<Page<Warehouse>> => {
      const r = await this.#client.call('listWarehouses', { query: { ...query, cursor } }, options);
      return new Page(r.data, nextCursor(r.headers.get('link')), page);
    };
    return new PagePromise(() => page());
  }
}
