import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, IDEMPOTENCY_ERRORS, IdempotencyHeader, json, nextLink } from '../../lib/schemas.ts';
import {
  ATTEMPT_EXAMPLE,
  AttemptListQuery,
  ENDPOINT_EXAMPLE,
  ENDPOINT_WITH_SECRET_EXAMPLE,
  EndpointParams,
  Queued,
  RedeliverRequest,
  ReplayRequest,
  WebhookAttempt,
  WebhookEndpoint,
  WebhookEndpointInput,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
} from './schemas.ts';

/** Endpoint management (merchant token). Thin: the rules are in WebhooksService. */
export async function webhookRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ bearerAuth: [] }];
  const tags = ['webhooks'];
  const badId = {
    VALIDATION_FAILED: {
      detail: 'Path parameter failed validation: /id must match format "uuid"',
      extra: { errors: [{ path: '/id', message: 'must match format "uuid"' }] },
    },
  };
  const service = () => app.services.webhooks;

  app.post(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'createWebhookEndpoint',
        tags,
        summary: 'Register a webhook endpoint',
        description:
          'Every event of the merchant (see the `webhooks` section: transfer events, and `webhook.endpoint_disabled`) is POSTed to `url`, signed per Standard Webhooks. The answer carries the signing `secret`, shown only here (and on rotation): it is stored by the service (signing needs it) but never returned again. The URL must be https and must not point at a loopback, private, link-local or metadata address (422 `WEBHOOK_URL_REFUSED`).',
        security,
        headers: IdempotencyHeader,
        body: WebhookEndpointInput,
        response: {
          201: {
            ...json(WebhookEndpointWithSecret, 'The endpoint, with its secret (shown once)', ENDPOINT_WITH_SECRET_EXAMPLE),
            headers: { location: { type: 'string', description: 'Path of the new endpoint: /webhook-endpoints/{id}' } },
          },
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'WEBHOOK_URL_REFUSED', 'WEBHOOK_ENDPOINT_LIMIT_REACHED']),
        },
      },
    },
    async (request, reply) => {
      const endpoint = await service().create(request.principal.merchantId, request.body);
      return reply.code(201).header('location', `/webhook-endpoints/${endpoint.id}`).send(endpoint);
    },
  );

  app.get(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        tags,
        summary: 'List webhook endpoints',
        description: "The merchant's endpoints, oldest first (never their secrets).",
        security,
        response: { 200: json(Type.Array(WebhookEndpoint), 'The endpoints', [ENDPOINT_EXAMPLE]), ...errorResponses([...AUTH_ERRORS]) },
      },
    },
    async (request) => service().list(request.principal.merchantId),
  );

  app.get(
    '/webhook-endpoints/:id',
    {
      schema: {
        operationId: 'getWebhookEndpoint',
        tags,
        summary: 'One webhook endpoint',
        description: 'The endpoint as it is now (never its secret): status, the reason it was disabled, the end of a secret rotation.',
        security,
        params: EndpointParams,
        response: {
          200: json(WebhookEndpoint, 'The endpoint', ENDPOINT_EXAMPLE),
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND', 'ROUTE_NOT_FOUND'], badId),
        },
      },
    },
    async (request) => service().get(request.principal.merchantId, request.params.id),
  );

  app.put(
    '/webhook-endpoints/:id',
    {
      schema: {
        operationId: 'replaceWebhookEndpoint',
        tags,
        summary: 'Replace a webhook endpoint',
        description:
          'Replaces `url`, `eventTypes`, `description` and `status` (omitted optionals are cleared; `status` defaults to ENABLED, which also re-enables an endpoint the service disabled: its pending deliveries resume). The secret is kept.',
        security,
        params: EndpointParams,
        body: WebhookEndpointUpdate,
        response: {
          200: json(WebhookEndpoint, 'The endpoint as it is now', ENDPOINT_EXAMPLE),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND', 'ROUTE_NOT_FOUND', 'WEBHOOK_URL_REFUSED']),
        },
      },
    },
    async (request) => service().replace(request.principal.merchantId, request.params.id, request.body),
  );

  app.delete(
    '/webhook-endpoints/:id',
    {
      schema: {
        operationId: 'deleteWebhookEndpoint',
        tags,
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint with its pending deliveries and its attempt history.',
        security,
        params: EndpointParams,
        response: {
          204: { type: 'null', description: 'Deleted' },
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND', 'ROUTE_NOT_FOUND'], badId),
        },
      },
    },
    async (request, reply) => {
      await service().delete(request.principal.merchantId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/webhook-endpoints/:id/rotate-secret',
    {
      schema: {
        operationId: 'rotateWebhookSecret',
        tags,
        summary: 'Rotate the signing secret',
        description:
          'A new secret, shown once in the answer. For 24 h (`previousSecretExpiresAt`) every webhook carries two signatures, with the new and the old secret (space separated in `webhook-signature`), so the receiver can switch without losing a message.',
        security,
        params: EndpointParams,
        headers: IdempotencyHeader,
        response: {
          200: json(WebhookEndpointWithSecret, 'The endpoint with its new secret', {
            ...ENDPOINT_WITH_SECRET_EXAMPLE,
            previousSecretExpiresAt: '2026-11-22T10:00:00.000Z',
          }),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND'], badId),
        },
      },
    },
    async (request) => service().rotateSecret(request.principal.merchantId, request.params.id),
  );

  app.post(
    '/webhook-endpoints/:id/test',
    {
      schema: {
        operationId: 'testWebhookEndpoint',
        tags,
        summary: 'Send a webhook.test message',
        description: 'Queues a signed `webhook.test` message to this endpoint (whatever its `eventTypes`); see its attempts for the outcome.',
        security,
        params: EndpointParams,
        headers: IdempotencyHeader,
        response: {
          202: json(Queued, 'Queued', { queued: 1, webhookId: '01a2005e-5a8d-7f9b-8c7d-0b1c2d3e4f5a' }),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND', 'WEBHOOK_ENDPOINT_DISABLED'], badId),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await service().sendTest(request.principal.merchantId, request.params.id)),
  );

  app.get(
    '/webhook-endpoints/:id/attempts',
    {
      schema: {
        operationId: 'listWebhookAttempts',
        tags,
        summary: 'Delivery attempts to an endpoint',
        description:
          'Every HTTP try, newest first: status, response code, the first 1 KiB of the answer, latency, error and the next retry. Pages of `limit` (default 50); the next page is announced in a `Link: <...>; rel="next"` header.',
        security,
        params: EndpointParams,
        querystring: AttemptListQuery,
        response: {
          200: {
            ...json(Type.Array(WebhookAttempt), 'The attempts, newest first', [ATTEMPT_EXAMPLE]),
            headers: { link: { type: 'string', description: 'Present when there is a next page: <url>; rel="next"' } },
          },
          ...errorResponses(['VALIDATION_FAILED', ...AUTH_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND'], badId),
        },
      },
    },
    async (request, reply) => {
      const page = await service().attempts(request.principal.merchantId, request.params.id, request.query);
      if (page.nextCursor) reply.header('link', nextLink(`/webhook-endpoints/${request.params.id}/attempts`, request.query, page.nextCursor));
      return page.items;
    },
  );

  app.post(
    '/webhook-endpoints/:id/replay',
    {
      schema: {
        operationId: 'replayWebhooks',
        tags,
        summary: 'Deliver every event since a time again',
        description:
          'Queues a new delivery to this endpoint of every event of the merchant that occurred at or after `since` and that the endpoint takes (at most 10 000). Each keeps its `webhook-id`, so a receiver that already processed it can skip it.',
        security,
        params: EndpointParams,
        headers: IdempotencyHeader,
        body: ReplayRequest,
        response: {
          202: json(Queued, 'Queued', { queued: 12 }),
          ...errorResponses([...BODY_ERRORS, ...AUTH_ERRORS, ...IDEMPOTENCY_ERRORS, 'WEBHOOK_ENDPOINT_NOT_FOUND', 'WEBHOOK_ENDPOINT_DISABLED']),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await service().replay(request.principal.merchantId, request.params.id, request.body)),
  );

  app.post(
    '/webhook-endpoints/:id/redeliver',
    {
      schema: {
        operationId: 'redeliverWebhook',
        tags,
        summary: 'Deliver one event again',
        description: 'Queues a new delivery of one event (by its id, the `webhook-id`) to this endpoint, whatever its `eventTypes`.',
        security,
        params: EndpointParams,
        headers: IdempotencyHeader,
        body: RedeliverRequest,
        response: {
          202: json(Queued, 'Queued', { queued: 1 }),
          ...errorResponses([
            ...BODY_ERRORS,
            ...AUTH_ERRORS,
            ...IDEMPOTENCY_ERRORS,
            'WEBHOOK_ENDPOINT_NOT_FOUND',
            'WEBHOOK_ENDPOINT_DISABLED',
            'EVENT_NOT_FOUND',
          ]),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await service().redeliver(request.principal.merchantId, request.params.id, request.body)),
  );
}
