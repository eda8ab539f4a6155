import { type Static, Type } from 'typebox';
import { DateTime } from '../../lib/schemas.ts';
import { TransferStateSchema } from '../events/schemas.ts';

const Point = Type.Object(
  { x: Type.Number({ minimum: 0, maximum: 100 }), y: Type.Number({ minimum: 0, maximum: 100 }) },
  { additionalProperties: false, description: 'Position in the drawing (0-100, y down): relative, never coordinates' },
);

export const TrackingView = Type.Object(
  {
    trackingCode: Type.String(),
    state: TransferStateSchema,
    active: Type.Boolean({ description: 'true while the delivery is under way (the page refreshes itself)' }),
    merchant: Type.Object({ name: Type.String() }, { additionalProperties: false }),
    pickup: Type.Object({ city: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
    destination: Type.Object({ city: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
    courier: Type.Union([Type.Object({ firstName: Type.String() }, { additionalProperties: false }), Type.Null()]),
    map: Type.Object(
      {
        pickup: Point,
        destination: Point,
        courier: Type.Union([Type.Object({ ...Point.properties, at: DateTime('When the courier was there') }, { additionalProperties: false }), Type.Null()], {
          description: "The courier's last known position while the parcel is on its way",
        }),
      },
      { additionalProperties: false, description: 'A simple drawing, scaled to fit: no coordinates, so the link does not reveal the address' },
    ),
    timeline: Type.Array(
      Type.Object({ type: Type.String(), state: TransferStateSchema, label: Type.String(), occurredAt: DateTime() }, { additionalProperties: false }),
      { description: 'Every change of state, oldest first' },
    ),
    updatedAt: DateTime(),
    sandbox: Type.Boolean(),
    estimatedDeliveryAt: Type.Union([DateTime('When the parcel is expected, by the travel-time model; recomputed as the courier moves'), Type.Null()], {
      description: 'null once the delivery ended (or while the parcel goes back)',
    }),
  },
  {
    additionalProperties: false,
    description: "What a recipient may see. Never the recipient's phone or address, the price, the deliveryPin or the transferCode.",
  },
);
export type TrackingView = Static<typeof TrackingView>;

export const TRACKING_EXAMPLE: TrackingView = {
  trackingCode: 'mgSZa_Rr-FhQxUy0sjLSDQ',
  state: 'pickedUp',
  active: true,
  merchant: { name: 'Demo shop' },
  pickup: { city: 'Moscow' },
  destination: { city: 'Moscow' },
  courier: { firstName: 'Ivan' },
  map: { pickup: { x: 80, y: 10 }, destination: { x: 20, y: 90 }, courier: null },
  timeline: [
    { type: 'transfer.created', state: 'inProgress', label: 'Order placed', occurredAt: '2026-11-21T10:05:00.000Z' },
    { type: 'transfer.courier_assigned', state: 'courierAssigned', label: 'Courier Ivan is on the way to pick it up', occurredAt: '2026-11-21T10:07:00.000Z' },
    { type: 'transfer.picked_up', state: 'pickedUp', label: 'Picked up: on its way to you', occurredAt: '2026-11-21T10:20:00.000Z' },
  ],
  updatedAt: '2026-11-21T10:20:00.000Z',
  sandbox: false,
  estimatedDeliveryAt: '2026-11-21T10:32:00.000Z',
};

export const TrackingParams = Type.Object(
  {
    // No pattern: a malformed code is an unknown code, answered with the same 404 page (TrackingService.view).
    trackingCode: Type.String({ description: 'The trackingCode of the transfer', examples: [TRACKING_EXAMPLE.trackingCode] }),
  },
  { additionalProperties: false },
);
