import type { MerchantDeliveryClient, RequestOptions } from '../client.ts';
import { nextCursor, Page, PagePromise } from '../pagination.ts';
import type {
  RequestBody,
  SuccessBody,
  WebhookAttempt,
  WebhookAttemptsQuery,
  WebhookEndpoint,
  WebhookEndpointInput,
  WebhookEndpointReplacement,
  WebhookEndpointWithSecret,
} from '../types.ts';

/**
 * Webhook endpoints: where the service POSTs the merchant's events, signed per Standard Webhooks.
 * The `secret` comes back only from create and rotateSecret: keep it with your receiver and verify
 * every delivery with verifyWebhook().
 */
export class WebhookEndpointsResource {
  readonly #client: MerchantDeliveryClient;
  constructor(client: MerchantDeliveryClient) {
    this.#client = client;
  }

  async create(request: WebhookEndpointInput, options?: RequestOptions): Promise<WebhookEndpointWithSecret> {
    return (await this.#client.call('createWebhookEndpoint', { body: request }, options)).data;
  }

  async list(options?: RequestOptions): Promise<SuccessBody<'listWebhookEndpoints'>> {
    return (await this.#client.call('listWebhookEndpoints', {}, options)).data;
  }

  async get(id: string, options?: RequestOptions): Promise<WebhookEndpoint> {
    return (await this.#client.call('getWebhookEndpoint', { path: { id } }, options)).data;
  }

  /** Replaces url, eventTypes, description and status (set status ENABLED to re-enable a disabled endpoint). */
  async replace(id: string, request: WebhookEndpointReplacement, options?: RequestOptions): Promise<WebhookEndpoint> {
    return (await this.#client.call('replaceWebhookEndpoint', { path: { id }, body: request }, options)).data;
  }

  async delete(id: string, options?: RequestOptions): Promise<void> {
    await this.#client.call('deleteWebhookEndpoint', { path: { id } }, options);
  }

  /** A new secret; the old one keeps signing alongside it for 24 h. */
  async rotateSecret(id: string, options?: RequestOptions): Promise<SuccessBody<'rotateWebhookSecret'>> {
    return (await this.#client.call('rotateWebhookSecret', { path: { id } }, options)).data;
  }

  /** Queues a signed webhook.test message to the endpoint. */
  async test(id: string, options?: RequestOptions): Promise<SuccessBody<'testWebhookEndpoint'>> {
    return (await this.#client.call('testWebhookEndpoint', { path: { id } }, options)).data;
  }

  /** Every delivery attempt, newest first, a page at a time; `for await` goes through every page. */
  attempts(id: string, query: WebhookAttemptsQuery = {}, options?: RequestOptions): PagePromise<WebhookAttempt> {
    const page = async (cursor?: string): Promise<Page<WebhookAttempt>> => {
      const r = await this.#client.call('listWebhookAttempts', { path: { id }, query: { ...query, cursor } }, options);
      return new Page(r.data, nextCursor(r.headers.get('link')), page);
    };
    return new PagePromise(() => page());
  }

  /** Delivers every event since `since` again (the same webhook-id: receivers dedupe). */
  async replay(id: string, request: RequestBody<'replayWebhooks'>, options?: RequestOptions): Promise<SuccessBody<'replayWebhooks'>> {
    return (await this.#client.call('replayWebhooks', { path: { id }, body: request }, options)).data;
  }

  /** Delivers one event again. */
  async redeliver(id: string, request: RequestBody<'redeliverWebhook'>, options?: RequestOptions): Promise<SuccessBody<'redeliverWebhook'>> {
    return (await this.#client.call('redeliverWebhook', { path: { id }, body: request }, options)).data;
  }
}
