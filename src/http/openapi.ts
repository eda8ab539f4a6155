import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { hoistComponents } from '../lib/openapi-components.ts';

export const API_DESCRIPTION = `HTTP JSON API for merchants' servers: exchange client credentials for a token, manage pickup
warehouses, get delivery quotes and create paid transfers.

* Every endpoint except \`POST /auth/token\`, the OAuth discovery document and the health checks needs
  \`Authorization: Bearer <access_token>\`. Standard OAuth 2.0 client libraries can obtain tokens
  (client credentials grant; discovery at \`/.well-known/oauth-authorization-server\`).
* Errors are \`application/problem+json\` (RFC 9457) with a stable \`type\` such as \`ACCESS_TOKEN_EXPIRED\`.
* Every response carries \`X-Request-Id\`. POSTs accept an \`Idempotency-Key\` header.
* Clients must ignore unknown response fields: new fields can be added at any time.
* This document is generated from the route schemas and committed as \`openapi.json\`; every test
  response of the service is validated against it.`;

/**
 * Content-Security-Policy of the docs page: everything from this server only (no CDN, not even by
 * policy). Unlike the plugin's default it allows inline styles, which Swagger UI applies at run time
 * (blocked, they are a console error), and it has no upgrade-insecure-requests, which would break the
 * page on a plain-http address other than localhost.
 */
const DOCS_CSP = {
  'default-src': ["'self'"],
  'base-uri': ["'self'"],
  'connect-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'form-action': ["'self'"],
  'frame-ancestors': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'object-src': ["'none'"],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  'style-src': ["'self'", "'unsafe-inline'"],
};

/** The OpenAPI 3.1 document is generated from the route schemas; GET /openapi.json serves it, /docs renders it (assets served locally, no CDN). */
/** `webhooks`: the OpenAPI 3.1 `webhooks` section (what the service POSTs to merchants), given by the app. */
export async function registerOpenApi(app: FastifyInstance, webhooks: Record<string, any>): Promise<void> {
  await app.register(swagger, {
    // Schemas marked with component() become components.schemas entries referenced by $ref.
    transformObject: (document) => ('openapiObject' in document ? hoistComponents(document.openapiObject as Record<string, unknown>) : document.swaggerObject),
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Merchant Delivery Service', version: '1.0.0', description: API_DESCRIPTION },
      // Relative: the paths are served from the host that serves this document (the interface's {base_url}).
      servers: [{ url: '/', description: 'The host serving this document ({base_url} of the interface)' }],
      tags: [
        { name: 'auth', description: 'OAuth 2.0 client credentials' },
        { name: 'warehouses', description: 'Pickup warehouses of the merchant' },
        { name: 'quotes', description: 'Delivery options (pending quotes)' },
        { name: 'transfers', description: 'Paid deliveries: lookup, listing, the event timeline, cancellation' },
        { name: 'balance', description: 'The merchant balance and its ledger' },
        { name: 'sandbox', description: 'Sandbox merchants: drive the simulated courier' },
        { name: 'couriers', description: 'The courier API: status, position, jobs (courier tokens)' },
        { name: 'webhooks', description: 'Signed webhooks (Standard Webhooks): endpoints, secrets, attempts, replays' },
        { name: 'tracking', description: 'The public tracking page for recipients (no token)' },
        { name: 'operations', description: 'Health checks for load balancers' },
      ],
      // OpenAPI 3.1 `webhooks`: the requests the service sends to merchants' endpoints.
      webhooks,
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "A merchant's access token from POST /auth/token" },
          courierAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              "A courier's access token from POST /auth/token (courier client credentials). Merchant tokens get 403 WRONG_ACTOR here, and courier tokens on merchant routes.",
          },
          clientBasic: { type: 'http', scheme: 'basic', description: 'client_id and client_secret as HTTP Basic (RFC 6749 2.3.1)' },
        },
      },
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // validatorUrl: null, or Swagger UI fetches a badge from validator.swagger.io.
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null },
    staticCSP: DOCS_CSP,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
