import { type Static, Type } from 'typebox';
import { DateTime, EXAMPLE_IDS, MULTI_LINE, StringEnum, Uuid } from '../../lib/schemas.ts';
import { EVENT_TYPES } from '../events/catalogue.ts';
import { EVENT_EXAMPLES, Event } from '../events/schemas.ts';

/** Messages that are not transfer events. */
export const WEBHOOK_MESSAGE_TYPES = ['webhook.test', 'webhook.endpoint_disabled'] as const;
export const SUBSCRIBABLE_TYPES = [...EVENT_TYPES, 'webhook.endpoint_disabled'];

const Url = Type.String({
  minLength: 8,
  maxLength: 2000,
  description:
    'Where to POST the webhooks: https (http only with WEBHOOK_ALLOW_PRIVATE=true, in development). Loopback, private, link-local and metadata addresses are refused, also when a name resolves to them at send time.',
});
const EventTypes = Type.Array(StringEnum([...SUBSCRIBABLE_TYPES]), {
  minItems: 1,
  maxItems: SUBSCRIBABLE_TYPES.length,
  uniqueItems: true,
  description: 'Only these types are delivered; absent or null: every type',
});
const Description = Type.String({ maxLength: 500, pattern: MULTI_LINE, description: 'Free text for your records' });

export const WebhookEndpointInput = Type.Object(
  {
    url: Url,
    eventTypes: Type.Optional(Type.Union([EventTypes, Type.Null()])),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
  },
  {
    additionalProperties: false,
    examples: [{ url: 'https://shop.example.com/webhooks/delivery', eventTypes: ['transfer.delivered'], description: 'Order system' }],
  },
);
export type WebhookEndpointInput = Static<typeof WebhookEndpointInput>;

export const WebhookEndpointUpdate = Type.Object(
  {
    url: Url,
    eventTypes: Type.Optional(Type.Union([EventTypes, Type.Null()])),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    status: Type.Optional(
      StringEnum(['ENABLED', 'DISABLED'], { description: 'ENABLED (default) resumes deliveries to a disabled endpoint; DISABLED pauses them' }),
    ),
  },
  { additionalProperties: false, examples: [{ url: 'https://shop.example.com/webhooks/delivery', status: 'ENABLED' }] },
);
export type WebhookEndpointUpdate = Static<typeof WebhookEndpointUpdate>;

export const WebhookEndpoint = Type.Object(
  {
    id: Uuid('Endpoint id'),
    url: Type.String(),
    eventTypes: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'The types delivered; null: every type' }),
    description: Type.Union([Type.String(), Type.Null()]),
    status: StringEnum(['ENABLED', 'DISABLED'], { description: 'Only ENABLED endpoints receive deliveries; pending ones resume when it is enabled again' }),
    disabledReason: Type.Union([StringEnum(['GONE', 'FAILING_5_DAYS', 'MERCHANT']), Type.Null()], {
      description: 'GONE: it answered 410; FAILING_5_DAYS: every attempt failed for 5 days; MERCHANT: disabled with PUT',
    }),
    previousSecretExpiresAt: Type.Union([DateTime(), Type.Null()], { description: 'After a rotation: until then the old secret signs too' }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { additionalProperties: false },
);
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = Type.Object(
  {
    ...WebhookEndpoint.properties,
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
      description: 'The signing secret (Standard Webhooks: whsec_ + base64). Shown only in this response: store it in your secret store.',
    }),
  },
  { additionalProperties: false },
);
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>;

export const ENDPOINT_EXAMPLE: WebhookEndpoint = {
  id: '01a2005c-3e6b-7d7f-8a5b-8e9fa0b1c2d3',
  url: 'https://shop.example.com/webhooks/delivery',
  eventTypes: null,
  description: 'Order system',
  status: 'ENABLED',
  disabledReason: null,
  previousSecretExpiresAt: null,
  createdAt: '2026-11-21T10:00:00.000Z',
  updatedAt: '2026-11-21T10:00:00.000Z',
};
export const ENDPOINT_WITH_SECRET_EXAMPLE: WebhookEndpointWithSecret = {
  ...ENDPOINT_EXAMPLE,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
};

export const WebhookAttempt = Type.Object(
  {
    id: Uuid('Attempt id'),
    deliveryId: Uuid('The delivery (one message to this endpoint) this try belongs to'),
    webhookId: Type.String({ description: 'The webhook-id header sent (the event id): the same on every retry and replay' }),
    eventType: Type.String(),
    attempt: Type.Integer({ minimum: 1, description: '1 for the first try of the delivery' }),
    status: StringEnum(['succeeded', 'failed']),
    responseStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status of the answer; null when none came' }),
    responseBody: Type.Union([Type.String(), Type.Null()], { description: 'The first 1 KiB of the answer' }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed (timeout, refused destination, connection error, HTTP status)' }),
    durationMs: Type.Integer({ description: 'Latency of the try' }),
    attemptedAt: DateTime(),
    nextAttemptAt: Type.Union([DateTime(), Type.Null()], { description: 'When the delivery is retried; null when it succeeded or every retry was used' }),
  },
  { additionalProperties: false },
);
export type WebhookAttempt = Static<typeof WebhookAttempt>;

export const ATTEMPT_EXAMPLE: WebhookAttempt = {
  id: '01a2005d-4f7c-7e8a-9b6c-9fa0b1c2d3e4',
  deliveryId: '01a2005d-4f7c-7e8a-9b6c-0a1b2c3d4e5f',
  webhookId: EXAMPLE_IDS.event,
  eventType: 'transfer.created',
  attempt: 1,
  status: 'failed',
  responseStatus: 500,
  responseBody: 'Internal Server Error',
  error: 'HTTP 500',
  durationMs: 84,
  attemptedAt: '2026-11-21T10:05:00.120Z',
  nextAttemptAt: '2026-11-21T10:05:05.120Z',
};

export const AttemptListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'Page size (default 50)', examples: [50] })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'From the Link rel="next" header of the previous page' })),
  },
  { additionalProperties: false },
);
export type AttemptListQuery = Static<typeof AttemptListQuery>;

export const EndpointParams = Type.Object({ id: Uuid('Endpoint id', { examples: [ENDPOINT_EXAMPLE.id] }) }, { additionalProperties: false });

export const ReplayRequest = Type.Object(
  { since: Type.String({ format: 'date-time', description: 'Every event that occurred at or after this time is delivered again (at most 10 000)' }) },
  { additionalProperties: false, examples: [{ since: '2026-11-21T10:00:00.000Z' }] },
);
export type ReplayRequest = Static<typeof ReplayRequest>;

export const RedeliverRequest = Type.Object(
  { eventId: Uuid('The event (the webhook-id) to deliver again to this endpoint') },
  { additionalProperties: false, examples: [{ eventId: EXAMPLE_IDS.event }] },
);
export type RedeliverRequest = Static<typeof RedeliverRequest>;

export const Queued = Type.Object(
  {
    queued: Type.Integer({ minimum: 0, description: 'Deliveries queued; they go out within a second or so' }),
    webhookId: Type.Optional(Type.String({ description: 'webhook.test: the webhook-id of the test message' })),
  },
  { additionalProperties: false },
);
export type Queued = Static<typeof Queued>;

/** The body of every webhook (Standard Webhooks): type, timestamp, data. */
export const EventPayload = Type.Object(
  {
    type: Type.String({ description: 'The event type (also data.type)' }),
    timestamp: DateTime('When the event occurred (data.occurredAt)'),
    data: Event,
  },
  {
    additionalProperties: false,
    description:
      'A transfer event. Headers: webhook-id (the event id: dedupe on it), webhook-timestamp (Unix seconds), webhook-signature (v1,<base64 HMAC-SHA256 of id.timestamp.body>; two during a secret rotation). Order by data.sequence per data.transferId.',
  },
);
export const TestPayload = Type.Object(
  {
    type: Type.Literal('webhook.test'),
    timestamp: DateTime(),
    data: Type.Object({ endpointId: Uuid('The endpoint tested') }, { additionalProperties: false }),
  },
  { additionalProperties: false, description: 'Sent by POST /webhook-endpoints/{id}/test' },
);
export const EndpointDisabledPayload = Type.Object(
  {
    type: Type.Literal('webhook.endpoint_disabled'),
    timestamp: DateTime(),
    data: Type.Object(
      {
        endpointId: Uuid('The endpoint that was disabled'),
        url: Type.String(),
        reason: StringEnum(['GONE', 'FAILING_5_DAYS']),
        failingSince: DateTime(),
        disabledAt: DateTime(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: "Sent to the merchant's other enabled endpoints when one is disabled by the service" },
);

export const EVENT_PAYLOAD_EXAMPLE = { type: 'transfer.created', timestamp: EVENT_EXAMPLES[1].occurredAt, data: EVENT_EXAMPLES[1] };
