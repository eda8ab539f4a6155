export { type CachedToken, MemoryTokenCache, type TokenCache } from './auth.ts';
export {
  type CallInput,
  type ClientOptions,
  MerchantDeliveryClient,
  type RawResult,
  type RequestEvent,
  type RequestOptions,
  type ResponseEvent,
  SDK_VERSION,
} from './client.ts';
export { type ClientErrorType, type FieldError, MerchantDeliveryError } from './errors.ts';
export type { components, operations, paths } from './generated/openapi.ts';
export { type MerchantOperationId, OPERATIONS } from './operations.ts';
export { Page, PagePromise } from './pagination.ts';
export type * from './types.ts';
export { signWebhook, type VerifyWebhookOptions, verifyWebhook, type WebhookEvent, type WebhookHeaders } from './webhooks.ts';
