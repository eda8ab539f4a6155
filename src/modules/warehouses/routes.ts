import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IDEMPOTENCY_ERRORS, IdempotencyHeader, json, nextLink } from '../../lib/schemas.ts';
import { recordOutcome } from '../idempotency/outcome.ts';
import { WAREHOUSE_EXAMPLE, Warehouse, WarehouseInput, WarehouseListQuery, WarehouseParams } from './schemas.ts';

export async function warehouseRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ bearerAuth: [] }];
  const badId = {
    VALIDATION_FAILED: {
      detail: 'Path parameter failed validation: /id must match format "uuid"',
      extra: { errors: [{ path: '/id', message: 'must match format "uuid"' }] },
    },
  };

  app.get(
    '/warehouses',
    {
      schema: {
        operationId: 'listWarehouses',
        tags: ['warehouses'],
        summary: 'List warehouses',
        description:
          'Warehouses of the authenticated merchant, oldest first, as a JSON array. Optional `status` filters; optional `limit` pages, with the next page announced in a `Link: <...>; rel="next"` header.',
        security,
        querystring: WarehouseListQuery,
        response: {
          200: {
            ...json(Type.Array(Warehouse), 'The warehouses', [WAREHOUSE_EXAMPLE]),
            headers: { link: { type: 'string', description: 'Present when there is a next page: <url>; rel="next"' } },
          },
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS], {
            VALIDATION_FAILED: {
              detail: 'Query string failed validation: /limit must be <= 1000',
              extra: { errors: [{ path: '/limit', message: 'must be <= 1000' }] },
            },
          }),
        },
      },
    },
    async (request, reply) => {
      const page = await app.services.warehouses.list(request.principal.merchantId, request.query);
      if (page.nextCursor) reply.header('link', nextLink('/warehouses', request.query, page.nextCursor));
      return page.items;
    },
  );

  app.post(
    '/warehouses',
    {
      schema: {
        operationId: 'createWarehouse',
        tags: ['warehouses'],
        summary: 'Create a pickup warehouse',
        description:
          'Creates a warehouse of the authenticated merchant. Required: `name`, `address`, `locationMetadata` (`display_name`, `lat`, `lng`); `status` defaults to ACTIVE. Unknown fields are rejected. A merchant can hold a limited number of warehouses (422 `WAREHOUSE_LIMIT_REACHED`). Retry safely with an `Idempotency-Key`.',
        security,
        headers: IdempotencyHeader,
        body: WarehouseInput,
        response: {
          201: {
            ...json(Warehouse, 'The created warehouse', WAREHOUSE_EXAMPLE),
            headers: { location: { type: 'string', description: 'Path of the new warehouse: /warehouses/{id}' } },
          },
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'WAREHOUSE_LIMIT_REACHED']),
        },
      },
    },
    async (request, reply) => {
      const headers = (w: { id: string }) => ({ location: `/warehouses/${w.id}` });
      const warehouse = await app.services.warehouses.create(request.principal.merchantId, request.body, recordOutcome(request, 201, headers));
      return reply.code(201).headers(headers(warehouse)).send(warehouse);
    },
  );

  app.get(
    '/warehouses/:id',
    {
      schema: {
        operationId: 'getWarehouse',
        tags: ['warehouses'],
        summary: 'Get a warehouse',
        description: "One warehouse of the authenticated merchant. Another merchant's warehouse id answers 404 `WAREHOUSE_NOT_FOUND`, as an unknown id does.",
        security,
        params: WarehouseParams,
        response: {
          200: json(Warehouse, 'The warehouse', WAREHOUSE_EXAMPLE),
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS, 'WAREHOUSE_NOT_FOUND', 'ROUTE_NOT_FOUND'], badId),
        },
      },
    },
    async (request) => app.services.warehouses.get(request.principal.merchantId, request.params.id),
  );

  app.put(
    '/warehouses/:id',
    {
      schema: {
        operationId: 'replaceWarehouse',
        tags: ['warehouses'],
        summary: 'Replace a warehouse',
        description: 'Replaces every editable detail: omitted optional fields are cleared and `status` defaults to ACTIVE. `updatedAt` changes.',
        security,
        params: WarehouseParams,
        body: WarehouseInput,
        response: {
          200: json(Warehouse, 'The updated warehouse', { ...WAREHOUSE_EXAMPLE, updatedAt: '2026-11-21T11:30:00.000Z' }),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, 'WAREHOUSE_NOT_FOUND', 'ROUTE_NOT_FOUND']),
        },
      },
    },
    async (request) => app.services.warehouses.replace(request.principal.merchantId, request.params.id, request.body),
  );
}
