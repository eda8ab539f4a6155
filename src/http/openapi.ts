import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export const API_DESCRIPTION = `HTTP JSON API for merchants' servers: exchange client credentials for a token, manage pickup
warehouses, get delivery quotes and create paid transfers.

* Every endpoint except \`POST /auth/token\` needs \`Authorization: Bearer <access_token>\`.
* Errors are \`application/problem+json\` (RFC 9457) with a stable \`type\` such as \`ACCESS_TOKEN_EXPIRED\`.
* Every response carries \`X-Request-Id\`. POSTs accept an \`Idempotency-Key\` header.
* Clients must ignore unknown response fields: new fields can be added at any time.`;

/** The OpenAPI 3.1 document is generated from the route schemas; GET /openapi.json serves it, /docs renders it (assets served locally, no CDN). */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Merchant Delivery Service', version: '1.0.0', description: API_DESCRIPTION },
      tags: [
        { name: 'auth', description: 'OAuth 2.0 client credentials' },
        { name: 'warehouses', description: 'Pickup warehouses of the merchant' },
        { name: 'quotes', description: 'Delivery options (pending quotes)' },
        { name: 'transfers', description: 'Paid deliveries' },
        { name: 'operations', description: 'Health checks for load balancers' },
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from POST /auth/token' },
          clientBasic: { type: 'http', scheme: 'basic', description: 'client_id and client_secret as HTTP Basic (RFC 6749 2.3.1)' },
        },
      },
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    staticCSP: true,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
