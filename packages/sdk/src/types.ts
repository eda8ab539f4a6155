import type { components, operations } from './generated/openapi.ts';

/**
 * The API's types, by name. Every one comes from src/generated/openapi.ts, which openapi-typescript
 * generates from the committed openapi.json (`npm run check` fails when the two differ), so the SDK's
 * types cannot drift from the contract.
 */
type Schemas = components['schemas'];
export type Warehouse = Schemas['Warehouse'];
export type WarehouseInput = Schemas['WarehouseInput'];
export type LocationMetadata = Schemas['LocationMetadata'];
export type GeoPoint = Schemas['GeoPoint'];
export type Quote = Schemas['Quote'];
export type QuoteRequest = Schemas['QuoteRequest'];
export type DestinationLocation = Schemas['DestinationLocation'];
export type Product = Schemas['Product'];
export type Transfer = Schemas['Transfer'];
export type TransferState = Transfer['state'];
export type TransferRequest = Schemas['TransferRequest'];
export type RecipientInfo = Schemas['RecipientInfo'];
export type CancelRequest = Schemas['CancelRequest'];
export type AdvanceRequest = Schemas['AdvanceRequest'];
export type TransferEvent = Schemas['Event'];
export type TransferEventType = TransferEvent['type'];
export type Balance = Schemas['Balance'];
export type LedgerEntry = Schemas['LedgerEntry'];
export type Problem = Schemas['Problem'];

export type OperationId = keyof operations;
type Op<O extends OperationId> = operations[O];
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** The JSON body of an operation's success response (200, 201 or 202; a 204 has none: undefined). */
export type SuccessBody<O extends OperationId> = 204 extends keyof Op<O>['responses']
  ? undefined
  : JsonOf<Op<O>['responses'][Extract<keyof Op<O>['responses'], 200 | 201 | 202>]>;
/** The JSON request body of an operation. */
export type RequestBody<O extends OperationId> =
  Op<O> extends { requestBody: { content: { 'application/json': infer B } } }
    ? B
    : Op<O> extends { requestBody?: { content: { 'application/json': infer B } } }
      ? B
      : never;
/** The query parameters of an operation. */
export type QueryOf<O extends OperationId> = NonNullable<Op<O>['parameters']['query']>;
/** The path parameters of an operation. */
export type PathParams<O extends OperationId> = NonNullable<Op<O>['parameters']['path']>;

export type WarehouseListQuery = Omit<QueryOf<'listWarehouses'>, 'cursor'>;
export type TransferListQuery = Omit<QueryOf<'listTransfers'>, 'cursor'>;
export type BalanceQuery = Omit<QueryOf<'getBalance'>, 'cursor'>;
export type WebhookEndpoint = SuccessBody<'getWebhookEndpoint'>;
/** The answer of create and rotate-secret: the endpoint with its `secret` (shown only then). */
export type WebhookEndpointWithSecret = SuccessBody<'createWebhookEndpoint'>;
export type WebhookEndpointInput = RequestBody<'createWebhookEndpoint'>;
export type WebhookEndpointReplacement = RequestBody<'replaceWebhookEndpoint'>;
export type WebhookAttempt = SuccessBody<'listWebhookAttempts'>[number];
export type WebhookAttemptsQuery = Omit<QueryOf<'listWebhookAttempts'>, 'cursor'>;
export type TokenResponse = SuccessBody<'createAccessToken'>;
