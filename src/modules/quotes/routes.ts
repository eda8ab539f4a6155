import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IDEMPOTENCY_ERRORS, IdempotencyHeader, json } from '../../lib/schemas.ts';
import { recordOutcome } from '../idempotency/outcome.ts';
import { QUOTE_EXAMPLE, Quote, QuoteRequest } from './schemas.ts';

export async function quoteRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/options',
    {
      schema: {
        operationId: 'createQuote',
        tags: ['quotes'],
        summary: 'Get delivery options (creates a pending quote)',
        description:
          'Prices every delivery product from one of your ACTIVE warehouses to the destination and stores a pending quote. Its prices are guaranteed until `expiresAt`; consume it with POST /transfer, sending its `id` as `matchmakingId` and a key of `products` as `productKey`. Products the parcel or distance rule out are listed as UNAVAILABLE with an `unavailableReason`. Amounts are two-decimal strings in major units of `currency`. Retry safely with an `Idempotency-Key`.',
        security: [{ bearerAuth: [] }],
        headers: IdempotencyHeader,
        body: QuoteRequest,
        response: {
          201: json(Quote, 'The pending quote with every product and its price', QUOTE_EXAMPLE),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'WAREHOUSE_NOT_FOUND', 'WAREHOUSE_DISABLED', 'OUT_OF_SERVICE_AREA']),
        },
      },
    },
    async (request, reply) => reply.code(201).send(await app.services.quotes.create(request.principal.merchantId, request.body, recordOutcome(request, 201))),
  );
}
