import { type Static, type TObject, Type } from 'typebox';
import { TRANSFER_STATES } from '../../db/types.ts';
import { component } from '../../lib/openapi-components.ts';
import { DateTime, EXAMPLE_IDS, StringEnum, Uuid } from '../../lib/schemas.ts';
import { EVENT_CATALOGUE, EVENT_TYPES, type EventType, pascalName } from './catalogue.ts';

export const TransferStateSchema = StringEnum([...TRANSFER_STATES], {
  description:
    'inProgress (paid, waiting for a courier), courierAssigned, pickedUp, delivered (terminal), returning (delivery failed, on the way back), returned (terminal), cancelled (terminal)',
});

const eventProperties = {
  id: Uuid("Event id; for quote.created it is the quote's event_id. Webhook deliveries carry it as webhook-id"),
  type: StringEnum(EVENT_TYPES, { description: 'What happened' }),
  transferId: Uuid('The transfer (for quote.created: the transfer_id the quote announced)'),
  sequence: Type.Integer({ minimum: 1, description: 'Per transfer: 1, 2, 3... with no gaps (quote.created is 1, transfer.created 2). Order by it.' }),
  position: Type.Integer({ minimum: 1, description: 'Global position across all events (ascending in the order they were written)' }),
  state: Type.Union([TransferStateSchema, Type.Null()], { description: 'The transfer state after the event (null for quote.created)' }),
  occurredAt: DateTime(),
  actor: Type.Object(
    {
      type: StringEnum(['merchant', 'courier', 'operator', 'system'], { description: 'Who made the change' }),
      id: Type.Optional(
        Type.String({
          description:
            "Events caused by people: the courier's id, the operator's (cli:<machine user> for the command line), or that of the merchant's user who acted in the dashboard. Absent for the merchant's API calls and the system",
        }),
      ),
      name: Type.Optional(
        Type.String({
          description:
            "Events caused by people: a courier's first name (never more), an operator's display name (\"cli (<machine user>)\" for the command line), a merchant's user's name. Absent for the merchant's API calls, the system and events written before names were kept",
        }),
      ),
    },
    { additionalProperties: false, description: 'Who made the change; an operator assigning a courier is the actor, the courier is in data and the transfer' },
  ),
  data: Type.Object({}, { additionalProperties: true, description: 'Details of the event (see its type); previousState on every state change' }),
};

/** Any event: the timeline of GET /transfer/{id}/events. */
export const Event = component('Event', Type.Object(eventProperties, { additionalProperties: false }));
export type Event = Static<typeof Event>;

/** One named schema per event type (<Pascal>Event, its data <Pascal>Data), from the catalogue: the webhooks section and the SDK's types. */
export const EVENT_SCHEMAS = Object.fromEntries(
  EVENT_TYPES.map((type) => {
    const def = EVENT_CATALOGUE[type];
    const schema = Type.Object(
      {
        ...eventProperties,
        type: Type.Literal(type),
        state: def.state === null ? Type.Null() : Type.Literal(def.state),
        data: component(`${pascalName(type)}Data`, { ...def.data, description: def.description }),
      },
      { additionalProperties: false, description: `${type}: ${def.description}` },
    );
    return [type, component(`${pascalName(type)}Event`, schema)];
  }),
) as unknown as Record<EventType, TObject>;

export const EVENT_EXAMPLES: Event[] = [
  {
    id: EXAMPLE_IDS.event,
    type: 'quote.created',
    transferId: EXAMPLE_IDS.transfer,
    sequence: 1,
    position: 41,
    state: null,
    occurredAt: '2026-11-21T10:00:00.000Z',
    actor: { type: 'merchant' },
    data: { quoteId: EXAMPLE_IDS.quote, warehouseId: EXAMPLE_IDS.warehouse, expiresAt: '2026-11-21T10:15:00.000Z' },
  },
  {
    id: '01a2005a-1c4f-7b5d-8e3f-6c7d8e9fa0b1',
    type: 'transfer.created',
    transferId: EXAMPLE_IDS.transfer,
    sequence: 2,
    position: 42,
    state: 'inProgress',
    occurredAt: '2026-11-21T10:05:00.000Z',
    actor: { type: 'merchant' },
    data: { totalPrice: 314.38, currency: 'RUB', productKey: 'standard', warehouseId: EXAMPLE_IDS.warehouse },
  },
  {
    id: '01a2005b-2d5a-7c6e-9f4a-7d8e9fa0b1c2',
    type: 'transfer.cancelled',
    transferId: EXAMPLE_IDS.transfer,
    sequence: 3,
    position: 57,
    state: 'cancelled',
    occurredAt: '2026-11-21T10:09:00.000Z',
    actor: { type: 'merchant' },
    data: { previousState: 'inProgress', reason: 'CUSTOMER_REQUESTED', refundAmount: 314.38, currency: 'RUB' },
  },
];

/** A merchant's user acting in the dashboard: the events they cause keep their id and display name (actor.id, actor.name). */
export interface MerchantPerson {
  id: string;
  name: string;
}

export function toEvent(row: {
  id: string;
  type: string;
  transfer_id: string;
  sequence: number;
  position: number;
  state: string | null;
  occurred_at: number;
  actor_type: string;
  actor_id?: string | null;
  actor_name?: string | null;
  data: string;
}): Event {
  // People: couriers and operators, and a merchant's users in the dashboard (a merchant's API calls keep no actor_id).
  const person = row.actor_type === 'courier' || row.actor_type === 'operator' || row.actor_type === 'merchant';
  return {
    id: row.id,
    type: row.type as Event['type'],
    transferId: row.transfer_id,
    sequence: Number(row.sequence),
    position: Number(row.position),
    state: row.state as Event['state'],
    occurredAt: new Date(Number(row.occurred_at)).toISOString(),
    actor: {
      type: row.actor_type as Event['actor']['type'],
      ...(person && row.actor_id ? { id: row.actor_id } : {}),
      ...(person && row.actor_id && row.actor_name ? { name: row.actor_name } : {}),
    },
    data: JSON.parse(row.data),
  };
}
