import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { recordOutcome } from '../../http/protected.ts';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IDEMPOTENCY_ERRORS, IdempotencyHeader, json } from '../../http/schemas.ts';
import { TRANSFER_EXAMPLE, Transfer, TransferParams, TransferRequest } from './schemas.ts';

export async function transferRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ bearerAuth: [] }];

  app.post(
    '/transfer',
    {
      schema: {
        operationId: 'createTransfer',
        tags: ['transfers'],
        summary: 'Create and pay a transfer from a pending quote',
        description:
          'In one transaction: consumes the quote (at most once, ever), charges the payable amount of the chosen product to the merchant balance, and creates the delivery in state `inProgress`. A refused request changes nothing. A quote that was already consumed answers 409 `QUOTE_ALREADY_USED` with the `transferId` it produced. Retry safely with an `Idempotency-Key`: the same key and body replay the first response.',
        security,
        headers: IdempotencyHeader,
        body: TransferRequest,
        response: {
          201: {
            ...json(Transfer, 'The created transfer', TRANSFER_EXAMPLE),
            headers: { location: { type: 'string', description: 'Path of the new transfer: /transfer/{transferId}' } },
          },
          ...errorResponses([
            ...BODY_ERRORS,
            ...AUTH_ERRORS,
            ...IDEMPOTENCY_ERRORS,
            'INSUFFICIENT_BALANCE',
            'QUOTE_NOT_FOUND',
            'QUOTE_ALREADY_USED',
            'QUOTE_EXPIRED',
            'PRODUCT_NOT_AVAILABLE',
            'WAREHOUSE_DISABLED',
          ]),
        },
      },
    },
    async (request, reply) => {
      const headers = (t: { id: string }) => ({ location: `/transfer/${t.id}` });
      const transfer = await app.services.transfers.create(request.principal.merchantId, request.body, recordOutcome(request, 201, headers));
      return reply.code(201).headers(headers(transfer)).send(transfer);
    },
  );

  app.get(
    '/transfer/:transferId',
    {
      schema: {
        operationId: 'getTransfer',
        tags: ['transfers'],
        summary: 'Get a transfer',
        description: 'Every field of the creation response, for a transfer the authenticated merchant created through the API.',
        security,
        params: TransferParams,
        response: {
          200: json(Transfer, 'The transfer', TRANSFER_EXAMPLE),
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS, 'TRANSFER_NOT_FOUND'], {
            VALIDATION_FAILED: {
              detail: 'Path parameter failed validation: /transferId must match format "uuid"',
              extra: { errors: [{ path: '/transferId', message: 'must match format "uuid"' }] },
            },
          }),
        },
      },
    },
    async (request) => app.services.transfers.get(request.principal.merchantId, request.params.transferId),
  );
}
