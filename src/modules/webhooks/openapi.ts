import { Type } from 'typebox';
import { DateTime, EXAMPLE_IDS } from '../../lib/schemas.ts';
import { EVENT_CATALOGUE, EVENT_TYPES, pascalName } from '../events/catalogue.ts';
import { EVENT_SCHEMAS } from '../events/schemas.ts';
import { EndpointDisabledPayload, EventPayload, TestPayload } from './schemas.ts';

/** The `webhooks` section of the OpenAPI 3.1 document: what arrives at a merchant's endpoint. */

const headers = {
  'webhook-id': {
    required: true,
    schema: { type: 'string' },
    description: 'The message id (for events: the event id). The same on every retry and replay: dedupe on it.',
  },
  'webhook-timestamp': {
    required: true,
    schema: { type: 'string', pattern: '^[0-9]+$' },
    description: 'Unix seconds of this try; refuse it when too far from now (5 min)',
  },
  'webhook-signature': {
    required: true,
    schema: { type: 'string' },
    description:
      'Space-separated `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`, keyed with the base64-decoded part of the endpoint secret (after whsec_). Two signatures during a secret rotation. Verify with the standardwebhooks libraries.',
  },
};

const responses = {
  '2XX': { description: 'Received. Answer within 15 s; the body is ignored (the first 1 KiB is kept with the attempt).' },
  '410': { description: 'Gone: the endpoint is disabled, no more deliveries' },
  '429': { description: 'Slow down: retried after Retry-After (seconds or HTTP date; at most 24 h)' },
  '503': { description: 'Unavailable: retried after Retry-After if given, else on the schedule' },
  default: { description: 'Any other answer, a timeout or a refused connection: retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h' },
};

const operation = (id: string, summary: string, schema: object, example: unknown) => ({
  post: {
    operationId: id,
    summary,
    tags: ['webhooks'],
    // No HTTP authentication scheme: the receiver authenticates the sender by the webhook-signature.
    security: [],
    parameters: Object.entries(headers).map(([name, h]) => ({ name, in: 'header', ...h })),
    requestBody: { required: true, content: { 'application/json': { schema, example } } },
    responses,
  },
});

const camel = (type: (typeof EVENT_TYPES)[number]) => pascalName(type)[0].toLowerCase() + pascalName(type).slice(1);

/** The body POSTed for one event type: EventPayload with `data` narrowed to that event's schema. */
function eventOperation(type: (typeof EVENT_TYPES)[number], i: number) {
  const def = EVENT_CATALOGUE[type];
  const payload = Type.Object(
    {
      type: Type.Literal(type, { description: 'The event type (also data.type)' }),
      timestamp: DateTime('When the event occurred (data.occurredAt)'),
      data: EVENT_SCHEMAS[type],
    },
    { additionalProperties: false, description: `${(EventPayload as { description?: string }).description} This one: ${type}.` },
  );
  const occurredAt = new Date(Date.parse('2026-11-21T10:00:00.000Z') + i * 60_000).toISOString();
  const example = {
    id: EXAMPLE_IDS.event,
    type,
    transferId: EXAMPLE_IDS.transfer,
    sequence: i + 1,
    position: 41 + i,
    state: def.state,
    occurredAt,
    actor: { type: type === 'quote.created' || type === 'transfer.created' || type === 'transfer.cancelled' ? 'merchant' : 'courier' },
    data: def.example,
  };
  return operation(`${camel(type)}Webhook`, `${type}: ${def.description}`, payload, { type, timestamp: occurredAt, data: example });
}

export const WEBHOOKS_DOCUMENT: Record<string, any> = {
  // One webhook per event type, each with its own named schema, all from the event catalogue.
  ...Object.fromEntries(EVENT_TYPES.map((type, i) => [type, eventOperation(type, i)])),
  'webhook-test': operation('testWebhook', 'webhook.test, sent by POST /webhook-endpoints/{id}/test', TestPayload, {
    type: 'webhook.test',
    timestamp: '2026-11-21T10:00:00.000Z',
    data: { endpointId: '01a2005c-3e6b-7d7f-8a5b-8e9fa0b1c2d3' },
  }),
  'webhook-endpoint-disabled': operation('endpointDisabledWebhook', "webhook.endpoint_disabled, to the merchant's other endpoints", EndpointDisabledPayload, {
    type: 'webhook.endpoint_disabled',
    timestamp: '2026-11-26T10:00:00.000Z',
    data: {
      endpointId: '01a2005c-3e6b-7d7f-8a5b-8e9fa0b1c2d3',
      url: 'https://shop.example.com/webhooks/delivery',
      reason: 'FAILING_5_DAYS',
      failingSince: '2026-11-21T10:00:00.000Z',
      disabledAt: '2026-11-26T10:00:00.000Z',
    },
  }),
};
