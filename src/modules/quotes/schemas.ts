import { type Static, Type } from 'typebox';
import { component } from '../../lib/openapi-components.ts';
import { DateTime, EXAMPLE_IDS, Text, Uuid } from '../../lib/schemas.ts';
import { DeliveryTypeSchema, ParcelSizeSchema } from '../tariffs/schemas.ts';

export const DestinationLocation = component(
  'DestinationLocation',
  Type.Object(
    {
      lat: Type.Number({ minimum: -90, maximum: 90 }),
      lng: Type.Number({ minimum: -180, maximum: 180 }),
      display_name: Text(500),
      city: Type.Optional(Text(200)),
    },
    { additionalProperties: false },
  ),
);

export const QuoteRequest = component(
  'QuoteRequest',
  Type.Object(
    {
      destinationLocation: DestinationLocation,
      warehouseId: Uuid('Pickup warehouse (must be ACTIVE)'),
      parcelSize: ParcelSizeSchema,
      isFragile: Type.Optional(Type.Boolean({ description: 'Default false' })),
      isPerishable: Type.Optional(Type.Boolean({ description: 'Default false' })),
      deliveryType: DeliveryTypeSchema,
      pickupWindow: Type.Optional(
        Type.Object(
          {
            start: DateTime('From now to 7 days ahead'),
            end: DateTime('At least 10 minutes after start'),
          },
          {
            additionalProperties: false,
            description:
              'Book the pickup for later: a courier is dispatched so as to arrive within the window, the estimates fall inside it, and the merchant may cancel with a full refund until dispatch starts. Absent: as soon as possible.',
          },
        ),
      ),
    },
    {
      additionalProperties: false,
      examples: [
        {
          destinationLocation: { lat: 55.7339, lng: 37.5886, display_name: 'Komsomolsky Ave 24, Moscow', city: 'Moscow' },
          warehouseId: '01a20058-cb4a-7657-ba2b-fa105300957e',
          parcelSize: 'SMALL',
          isFragile: false,
          isPerishable: false,
          deliveryType: 'DOOR_TO_DOOR',
        },
      ],
    },
  ),
);
export type QuoteRequest = Static<typeof QuoteRequest>;

const Amount = Type.String({ pattern: '^-?\\d+\\.\\d{2}$', description: 'Major units, two decimals' });

export const Product = component(
  'Product',
  Type.Object(
    {
      status: Type.Unsafe<'AVAILABLE' | 'UNAVAILABLE'>({ type: 'string', enum: ['AVAILABLE', 'UNAVAILABLE'] }),
      unavailableReason: Type.Union([
        Type.Unsafe<string>({ type: 'string', enum: ['DISTANCE_EXCEEDS_RANGE', 'DELIVERY_TYPE_NOT_SUPPORTED', 'PARCEL_SIZE_NOT_SUPPORTED'] }),
        Type.Null(),
      ]),
      name: Type.String({ description: 'Delivery option name' }),
      estimatedPickupAt: Type.Optional(
        DateTime('AVAILABLE products: when a courier is expected at the warehouse (inside the pickupWindow when one was given)'),
      ),
      estimatedDeliveryAt: Type.Optional(DateTime("AVAILABLE products: when the parcel is expected at the destination, by this product's speed")),
      fees: Type.Object(
        {
          cancellation: { ...Amount, description: 'Kept back from the refund if the merchant cancels after a courier accepted (major units)' },
          return: { ...Amount, description: 'Kept back from the refund if delivery fails and the parcel is returned (major units)' },
        },
        { additionalProperties: false, description: 'Fees frozen with the quote, like its prices' },
      ),
      common: Type.Object(
        {
          pattern: Type.String(),
          router_id: Type.String(),
          price: Type.Object(
            {
              original_amount: Amount,
              payable_amount: Amount,
              discount_pct: Type.String({ pattern: '^\\d+\\.\\d{2}$', description: 'Percent, two decimals' }),
              courier_fee_total: Amount,
              service_fee_total: Amount,
              stop_fee_total: Amount,
              discount_amount: Amount,
            },
            { additionalProperties: false },
          ),
          tags: Type.Array(Type.String()),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
);

export const Quote = component(
  'Quote',
  Type.Object(
    {
      id: Uuid('Quote id; send it as matchmakingId to POST /transfer'),
      transfer_id: Uuid('The id the transfer will have when this quote is consumed'),
      event_id: Uuid('Identifies the quote-created event'),
      products: Type.Record(Type.String(), Product, { description: 'Keyed by productKey' }),
      currency: Type.String({ description: 'ISO 4217 currency of every amount' }),
      distanceMeters: Type.Integer({ description: 'Great-circle distance from the warehouse to the destination' }),
      expiresAt: DateTime('Prices are guaranteed until then; a transfer after it gets QUOTE_EXPIRED'),
    },
    { additionalProperties: false },
  ),
);
export type Quote = Static<typeof Quote>;

const price = (courier: string, service: string, original: string, pct: string, discount: string, payable: string) => ({
  original_amount: original,
  payable_amount: payable,
  discount_pct: pct,
  courier_fee_total: courier,
  service_fee_total: service,
  stop_fee_total: '10.00',
  discount_amount: discount,
});

/** A quote as the service returns it (the OpenAPI response example). */
export const QUOTE_EXAMPLE: Quote = {
  id: EXAMPLE_IDS.quote,
  transfer_id: EXAMPLE_IDS.transfer,
  event_id: EXAMPLE_IDS.event,
  products: {
    standard: {
      status: 'AVAILABLE',
      unavailableReason: null,
      name: 'Standard delivery',
      fees: { cancellation: '50.00', return: '100.00' },
      common: {
        pattern: 'standard',
        router_id: 'city-standard',
        price: price('275.38', '29.00', '314.38', '0.00', '0.00', '314.38'),
        tags: ['standard', 'same_day'],
      },
    },
    express: {
      status: 'AVAILABLE',
      unavailableReason: null,
      name: 'Express delivery',
      fees: { cancellation: '75.00', return: '150.00' },
      common: {
        pattern: 'express',
        router_id: 'city-express',
        price: price('471.20', '49.00', '530.20', '10.00', '53.02', '477.18'),
        tags: ['express', 'within_2_hours'],
      },
    },
  },
  currency: 'RUB',
  distanceMeters: 3055,
  expiresAt: '2026-11-21T10:15:00.000Z',
};
