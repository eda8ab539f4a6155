import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IDEMPOTENCY_ERRORS, IdempotencyHeader, json } from '../../http/schemas.ts';
import { Warehouse, WarehouseInput, WarehouseListQuery, WarehouseParams } from './schemas.ts';

export async function warehouseRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ bearerAuth: [] }];

  app.get(
    '/warehouses',
    {
      schema: {
        tags: ['warehouses'],
        summary: 'List warehouses',
        description:
          'Warehouses of the authenticated merchant, oldest first, as a JSON array. Optional `status` filters; optional `limit` pages, with the next page announced in a `Link: <...>; rel="next"` header.',
        security,
        querystring: WarehouseListQuery,
        response: {
          200: {
            ...json(Type.Array(Warehouse), 'The warehouses'),
            headers: { link: { type: 'string', description: 'Present when there is a next page: <url>; rel="next"' } },
          },
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS]),
        },
      },
    },
    async (request, reply) => {
      const page = await app.services.warehouses.list(request.principal.merchantId, request.query);
      if (page.nextCursor) {
        const next = new URLSearchParams();
        if (request.query.status) next.set('status', request.query.status);
        if (request.query.limit) next.set('limit', String(request.query.limit));
        next.set('cursor', page.nextCursor);
        reply.header('link', `</warehouses?${next}>; rel="next"`);
      }
      return page.items;
    },
  );

  app.post(
    '/warehouses',
    {
      schema: {
        tags: ['warehouses'],
        summary: 'Create a pickup warehouse',
        security,
        headers: IdempotencyHeader,
        body: WarehouseInput,
        response: {
          201: { ...json(Warehouse, 'The created warehouse'), headers: { location: { type: 'string' } } },
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'WAREHOUSE_LIMIT_REACHED']),
        },
      },
    },
    async (request, reply) => {
      const warehouse = await app.services.warehouses.create(request.principal.merchantId, request.body);
      return reply.code(201).header('location', `/warehouses/${warehouse.id}`).send(warehouse);
    },
  );

  app.get(
    '/warehouses/:id',
    {
      schema: {
        tags: ['warehouses'],
        summary: 'Get a warehouse',
        security,
        params: WarehouseParams,
        response: { 200: json(Warehouse, 'The warehouse'), ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS, 'WAREHOUSE_NOT_FOUND']) },
      },
    },
    async (request) => app.services.warehouses.get(request.principal.merchantId, request.params.id),
  );

  app.put(
    '/warehouses/:id',
    {
      schema: {
        tags: ['warehouses'],
        summary: 'Replace a warehouse',
        description: 'Replaces every editable detail: omitted optional fields are cleared and `status` defaults to ACTIVE. `updatedAt` changes.',
        security,
        params: WarehouseParams,
        body: WarehouseInput,
        response: { 200: json(Warehouse, 'The updated warehouse'), ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, 'WAREHOUSE_NOT_FOUND']) },
      },
    },
    async (request) => app.services.warehouses.replace(request.principal.merchantId, request.params.id, request.body),
  );
}
