import type { MerchantDeliveryClient, RequestOptions } from '../client.ts';
import type { AdvanceRequest, Transfer } from '../types.ts';

/** Sandbox merchants only: drive the simulated courier. */
export class SandboxResource {
  readonly #client: MerchantDeliveryClient;
  constructor(client: MerchantDeliveryClient) {
    this.#client = client;
  }

  /** Moves a sandbox transfer as a courier would (`{ to: 'pickedUp' }`); live merchants get 404. */
  async advance(transferId: string, request: AdvanceRequest, options?: RequestOptions): Promise<Transfer> {
    return (await this.#client.call('advanceSandboxTransfer', { path: { transferId }, body: request }, options)).data;
  }
}
