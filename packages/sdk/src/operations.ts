/**
 * Every merchant operation of openapi.json (security `bearerAuth`) and the SDK method that calls it.
 * The resources send their requests through this table (method and path come from here), and
 * `npm run check` (scripts/check-coverage.ts) fails when the document has a merchant operation this
 * table lacks, when an entry's method or path differs from the document, or when a named method does
 * not exist on the client. A new operation therefore means: an entry here and a method in a resource.
 */
export const OPERATIONS = {
  listWarehouses: { method: 'GET', path: '/warehouses', sdk: 'warehouses.list' },
  createWarehouse: { method: 'POST', path: '/warehouses', sdk: 'warehouses.create' },
  getWarehouse: { method: 'GET', path: '/warehouses/{id}', sdk: 'warehouses.get' },
  replaceWarehouse: { method: 'PUT', path: '/warehouses/{id}', sdk: 'warehouses.replace' },
  createQuote: { method: 'POST', path: '/options', sdk: 'quotes.create' },
  createTransfer: { method: 'POST', path: '/transfer', sdk: 'transfers.create' },
  listTransfers: { method: 'GET', path: '/transfer', sdk: 'transfers.list' },
  getTransfer: { method: 'GET', path: '/transfer/{transferId}', sdk: 'transfers.get' },
  listTransferEvents: { method: 'GET', path: '/transfer/{transferId}/events', sdk: 'transfers.events' },
  cancelTransfer: { method: 'POST', path: '/transfer/{transferId}/cancel', sdk: 'transfers.cancel' },
  advanceSandboxTransfer: { method: 'POST', path: '/sandbox/transfer/{transferId}/advance', sdk: 'sandbox.advance' },
  getBalance: { method: 'GET', path: '/balance', sdk: 'balance.get' },
  createWebhookEndpoint: { method: 'POST', path: '/webhook-endpoints', sdk: 'webhookEndpoints.create' },
  listWebhookEndpoints: { method: 'GET', path: '/webhook-endpoints', sdk: 'webhookEndpoints.list' },
  getWebhookEndpoint: { method: 'GET', path: '/webhook-endpoints/{id}', sdk: 'webhookEndpoints.get' },
  replaceWebhookEndpoint: { method: 'PUT', path: '/webhook-endpoints/{id}', sdk: 'webhookEndpoints.replace' },
  deleteWebhookEndpoint: { method: 'DELETE', path: '/webhook-endpoints/{id}', sdk: 'webhookEndpoints.delete' },
  rotateWebhookSecret: { method: 'POST', path: '/webhook-endpoints/{id}/rotate-secret', sdk: 'webhookEndpoints.rotateSecret' },
  testWebhookEndpoint: { method: 'POST', path: '/webhook-endpoints/{id}/test', sdk: 'webhookEndpoints.test' },
  listWebhookAttempts: { method: 'GET', path: '/webhook-endpoints/{id}/attempts', sdk: 'webhookEndpoints.attempts' },
  replayWebhooks: { method: 'POST', path: '/webhook-endpoints/{id}/replay', sdk: 'webhookEndpoints.replay' },
  redeliverWebhook: { method: 'POST', path: '/webhook-endpoints/{id}/redeliver', sdk: 'webhookEndpoints.redeliver' },
} as const satisfies Record<string, { method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'; path: string; sdk: string }>;

export type MerchantOperationId = keyof typeof OPERATIONS;

/** The token endpoint is public (client credentials); the client calls it itself. */
export const TOKEN_OPERATION = { operationId: 'createAccessToken', method: 'POST', path: '/auth/token' } as const;
