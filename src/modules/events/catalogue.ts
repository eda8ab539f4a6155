import { type TObject, Type } from 'typebox';
import { TRANSFER_STATES, type TransferState } from '../../db/types.ts';
import { DateTime, StringEnum, Uuid } from '../../lib/schemas.ts';

/**
 * The event catalogue: every event type, once. The union type and EVENT_TYPES, the OpenAPI `webhooks`
 * section (one named schema per event, hence the SDK's types), docs/events.md (`npm run docs`), the
 * README's table (generated from it) and the tracking page's timeline labels all read this table.
 * Adding an event type is one entry here (plus the transition that emits it and its tests).
 * This module imports no other module: events are the bottom of the features.
 */

export interface EventDefinition {
  /** The transfer state after the event; null when it does not change a transfer (quote.created). */
  state: TransferState | null;
  /** One line for the docs. */
  description: string;
  /** The schema of `data` (named <Pascal>Data in the OpenAPI document). */
  data: TObject;
  /** An example of `data` (the OpenAPI document and docs/events.md show it). */
  example: Record<string, unknown>;
  /** The tracking page's timeline line (given the courier's first name when known); null: not shown there. */
  label: ((courier: string | null) => string) | null;
}

const TransferStateSchema = StringEnum([...TRANSFER_STATES]);
const previousState = { previousState: { ...TransferStateSchema, description: 'The state before this event' } };
const comment = { comment: Type.Optional(Type.String({ description: "Free text: the merchant's or courier's comment, or an operator's note" })) };
const money = (description: string) => Type.Number({ description: `${description}, in major units` });
const currency = { currency: Type.String({ description: 'ISO 4217 currency of the amounts' }) };
const data = (properties: Parameters<typeof Type.Object>[0]) => Type.Object(properties, { additionalProperties: false });
/** Every transfer event carries the estimates of its moment (the travel-time model's; absent on events written before ETAs, null once terminal). */
const estimates = {
  estimatedPickupAt: Type.Optional(Type.Union([DateTime('When the courier is expected at the pickup (or when it happened)'), Type.Null()])),
  estimatedDeliveryAt: Type.Optional(Type.Union([DateTime('When the parcel is expected at the destination'), Type.Null()])),
};

export const EVENT_CATALOGUE = {
  'quote.created': {
    state: null,
    description: "A quote was made (POST /options); its `id` is the quote's `event_id`, its `transferId` the quote's `transfer_id`",
    data: data({ quoteId: Uuid('The quote'), warehouseId: Uuid('The pickup warehouse'), expiresAt: DateTime('Until then the quote can be used') }),
    example: { quoteId: '01a20059-0b3e-7a4c-9d2e-3f5a6b7c8d9e', warehouseId: '01a20058-cb4a-7657-ba2b-fa105300957e', expiresAt: '2026-11-21T10:15:00.000Z' },
    label: null,
  },
  'transfer.created': {
    state: 'inProgress',
    description: 'The merchant paid for a delivery (POST /transfer); a courier is sought',
    data: data({
      ...estimates,
      totalPrice: money('The price paid'),
      ...currency,
      productKey: Type.Optional(Type.String({ description: 'The product bought (absent on transfers made before it was recorded)' })),
      warehouseId: Type.Optional(Uuid('The pickup warehouse (absent on transfers made before it was recorded)')),
    }),
    example: { totalPrice: 314.38, currency: 'RUB', productKey: 'standard', warehouseId: '01a20058-cb4a-7657-ba2b-fa105300957e' },
    label: () => 'Order placed',
  },
  'transfer.courier_assigned': {
    state: 'courierAssigned',
    description: 'A courier accepted the job and is on the way to the warehouse',
    data: data({
      ...estimates,
      ...previousState,
      courier: Type.Optional(
        Type.Object({ firstName: Type.String() }, { additionalProperties: false, description: 'The courier, as the recipient may see them' }),
      ),
      ...comment,
    }),
    example: { previousState: 'inProgress', courier: { firstName: 'Ivan' } },
    label: (c) => (c ? `Courier ${c} is on the way to pick it up` : 'A courier is on the way to pick it up'),
  },
  'transfer.courier_released': {
    state: 'inProgress',
    description: 'The courier gave the job back; another courier is sought',
    data: data({ ...estimates, ...previousState, ...comment }),
    example: { previousState: 'courierAssigned' },
    label: () => 'Looking for another courier',
  },
  'transfer.picked_up': {
    state: 'pickedUp',
    description: 'The courier collected the parcel at the warehouse (with the transferCode)',
    data: data({ ...estimates, ...previousState, ...comment }),
    example: { previousState: 'courierAssigned' },
    label: () => 'Picked up: on its way to you',
  },
  'transfer.delivered': {
    state: 'delivered',
    description: "The parcel was handed over (with the recipient's deliveryPin); terminal",
    data: data({ ...estimates, ...previousState, ...comment }),
    example: { previousState: 'pickedUp' },
    label: () => 'Delivered',
  },
  'transfer.delivery_failed': {
    state: 'returning',
    description: 'The courier could not deliver; the parcel goes back to the warehouse',
    data: data({
      ...estimates,
      ...previousState,
      reason: Type.String({ description: 'RECIPIENT_UNAVAILABLE, WRONG_ADDRESS, RECIPIENT_REFUSED, PARCEL_DAMAGED or OTHER' }),
      ...comment,
    }),
    example: { previousState: 'pickedUp', reason: 'RECIPIENT_UNAVAILABLE', comment: 'Nobody at the door' },
    label: () => 'Delivery failed: going back to the sender',
  },
  'transfer.returned': {
    state: 'returned',
    description: "The parcel is back at the warehouse; the price less the product's return fee is refunded; terminal",
    data: data({ ...estimates, ...previousState, refundAmount: money('The refund'), returnFee: money('The return fee kept'), ...currency, ...comment }),
    example: { previousState: 'returning', refundAmount: 264.38, returnFee: 50, currency: 'RUB' },
    label: () => 'Returned to the sender',
  },
  'transfer.cancelled': {
    state: 'cancelled',
    description: 'Cancelled by the merchant, an operator or the system (no courier in time), with a refund; terminal',
    data: data({
      ...estimates,
      ...previousState,
      reason: Type.String({
        description: 'A cancellation reason of POST /transfer/{id}/cancel, NO_COURIER_ASSIGNED (the system) or OPERATOR',
      }),
      ...comment,
      refundAmount: money('The refund'),
      ...currency,
    }),
    example: { previousState: 'inProgress', reason: 'CUSTOMER_REQUESTED', refundAmount: 314.38, currency: 'RUB' },
    label: () => 'Cancelled',
  },
} as const satisfies Record<string, EventDefinition>;

export type EventType = keyof typeof EVENT_CATALOGUE;

/** Every event type, in the catalogue's order. */
export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

export const isEventType = (type: string): type is EventType => Object.hasOwn(EVENT_CATALOGUE, type);

/** "transfer.courier_assigned" -> "TransferCourierAssigned": the stem of the event's OpenAPI schema names. */
export const pascalName = (type: EventType) =>
  type
    .split(/[._]/)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
