import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IDEMPOTENCY_ERRORS, IdempotencyHeader, json, nextLink } from '../../lib/schemas.ts';
import { EVENT_EXAMPLES, Event } from '../events/schemas.ts';
import { recordOutcome } from '../idempotency/outcome.ts';
import {
  AdvanceRequest,
  CANCELLED_TRANSFER_EXAMPLE,
  CancelRequest,
  TRANSFER_EXAMPLE,
  Transfer,
  TransferListQuery,
  TransferParams,
  TransferRequest,
} from './schemas.ts';

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

  const badId = {
    VALIDATION_FAILED: {
      detail: 'Path parameter failed validation: /transferId must match format "uuid"',
      extra: { errors: [{ path: '/transferId', message: 'must match format "uuid"' }] },
    },
  };

  app.get(
    '/transfer',
    {
      schema: {
        operationId: 'listTransfers',
        tags: ['transfers'],
        summary: 'List transfers',
        description:
          'The authenticated merchant\'s transfers, newest first, as a JSON array of transfers. Optional filters: `state`, `warehouseId`, `createdFrom` (inclusive), `createdTo` (exclusive). Pages of `limit` (default 50, at most 500); the next page is announced in a `Link: <...>; rel="next"` header.',
        security,
        querystring: TransferListQuery,
        response: {
          200: {
            ...json(Type.Array(Transfer), 'The transfers', [TRANSFER_EXAMPLE]),
            headers: { link: { type: 'string', description: 'Present when there is a next page: <url>; rel="next"' } },
          },
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS], {
            VALIDATION_FAILED: {
              detail: 'Query string failed validation: /state must be equal to one of the allowed values',
              extra: { errors: [{ path: '/state', message: 'must be equal to one of the allowed values' }] },
            },
          }),
        },
      },
    },
    async (request, reply) => {
      const page = await app.services.transfers.list(request.principal.merchantId, request.query);
      if (page.nextCursor) reply.header('link', nextLink('/transfer', request.query, page.nextCursor));
      return page.items;
    },
  );

  app.get(
    '/transfer/:transferId/events',
    {
      schema: {
        operationId: 'listTransferEvents',
        tags: ['transfers'],
        summary: "A transfer's event timeline",
        description:
          "Every change of the transfer, oldest first: `quote.created` (sequence 1, its id is the quote's `event_id`), `transfer.created` (2), then each change of state. `sequence` has no gaps. The same events are delivered by webhook.",
        security,
        params: TransferParams,
        response: {
          200: json(Type.Array(Event), 'The timeline, oldest first', EVENT_EXAMPLES),
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS, 'TRANSFER_NOT_FOUND'], badId),
        },
      },
    },
    async (request) => app.services.transfers.events(request.principal.merchantId, request.params.transferId),
  );

  app.post(
    '/transfer/:transferId/cancel',
    {
      schema: {
        operationId: 'cancelTransfer',
        tags: ['transfers'],
        summary: 'Cancel a transfer and get the money back',
        description:
          "Allowed before pickup. In `inProgress` (no courier yet) the whole price is refunded; in `courierAssigned` the price less the product's cancellation fee (shown in the quote as `fees.cancellation`). The refund is a REFUND entry of `GET /balance`, in the same transaction. After pickup, or a second time, 409 `TRANSFER_NOT_CANCELLABLE` names the current `state`. Retry safely with an `Idempotency-Key`.",
        security,
        params: TransferParams,
        headers: IdempotencyHeader,
        body: CancelRequest,
        response: {
          200: json(Transfer, 'The cancelled transfer', CANCELLED_TRANSFER_EXAMPLE),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'TRANSFER_NOT_FOUND', 'TRANSFER_NOT_CANCELLABLE']),
        },
      },
    },
    async (request) => app.services.transfers.cancel(request.principal.merchantId, request.params.transferId, request.body, recordOutcome(request, 200)),
  );

  app.post(
    '/sandbox/transfer/:transferId/advance',
    {
      schema: {
        operationId: 'advanceSandboxTransfer',
        tags: ['sandbox'],
        summary: 'Sandbox: move a transfer as the simulated courier would',
        description:
          'Sandbox merchants only (404 `ROUTE_NOT_FOUND` for live merchants). Moves the transfer to `to` through any transition the lifecycle allows a courier: `courierAssigned` (accept), `inProgress` (release), `pickedUp`, `delivered`, `returning` (delivery failed, with an optional `reason`), `returned`; or `cancelled` from `inProgress`, as the system does when no courier accepts in time (full refund). The first call stops the automatic steps for that transfer. A move the lifecycle does not allow is 409 `TRANSITION_NOT_ALLOWED` with the current `state` and the `allowed` targets.',
        security,
        params: TransferParams,
        headers: IdempotencyHeader,
        body: AdvanceRequest,
        response: {
          200: json(Transfer, 'The transfer after the move', {
            ...TRANSFER_EXAMPLE,
            sandbox: true,
            state: 'courierAssigned',
            courier: { firstName: 'Sandbox' },
          }),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'ROUTE_NOT_FOUND', 'TRANSFER_NOT_FOUND', 'TRANSITION_NOT_ALLOWED'], {
            ROUTE_NOT_FOUND: { detail: 'POST /sandbox/transfer/{transferId}/advance exists for sandbox merchants only; this merchant is live' },
          }),
        },
      },
    },
    async (request) =>
      app.services.transfers.sandboxAdvance(request.principal.merchantId, request.params.transferId, request.body, recordOutcome(request, 200)),
  );

  app.get(
    '/transfer/:transferId',
    {
      schema: {
        operationId: 'getTransfer',
        tags: ['transfers'],
        summary: 'Get a transfer',
        description: 'Every field of the creation response, as it is now (state, courier, cancellation), for a transfer of the authenticated merchant.',
        security,
        params: TransferParams,
        response: {
          200: json(Transfer, 'The transfer', TRANSFER_EXAMPLE),
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS, 'TRANSFER_NOT_FOUND', 'ROUTE_NOT_FOUND'], badId),
        },
      },
    },
    async (request) => app.services.transfers.get(request.principal.merchantId, request.params.transferId),
  );
}
