import { type Static, Type } from 'typebox';
import { component } from '../../lib/openapi-components.ts';
import { DateTime, EXAMPLE_IDS, GeoPoint, MULTI_LINE, Phone, PRODUCT_KEY, StringEnum, Text, Uuid } from '../../lib/schemas.ts';
import { TransferStateSchema } from '../events/schemas.ts';
import { ParcelSizeSchema } from '../tariffs/schemas.ts';
import { CANCELLATION_REASONS, DELIVERY_FAILURE_REASONS } from './lifecycle.ts';

export const RecipientInfo = component(
  'RecipientInfo',
  Type.Object(
    {
      firstName: Text(100),
      lastName: Text(100),
      phone: Phone(),
    },
    { additionalProperties: false },
  ),
);

export const TransferRequest = component(
  'TransferRequest',
  Type.Object(
    {
      matchmakingId: Uuid('The quote id (id of the POST /options response)'),
      productKey: Type.String({ pattern: PRODUCT_KEY, description: "A key of the quote's products; the product must be AVAILABLE" }),
      description: Type.String({ maxLength: 1000, pattern: MULTI_LINE, description: 'Free text describing the parcel' }),
      recipientInfo: RecipientInfo,
    },
    {
      additionalProperties: false,
      examples: [
        {
          matchmakingId: EXAMPLE_IDS.quote,
          productKey: 'standard',
          description: 'Two books',
          recipientInfo: { firstName: 'Anna', lastName: 'Ivanova', phone: '+7 900 000-00-00' },
        },
      ],
    },
  ),
);
export type TransferRequest = Static<typeof TransferRequest>;

export const CancellationReasonSchema = StringEnum([...CANCELLATION_REASONS], {
  description:
    'CUSTOMER_REQUESTED (the buyer cancelled), ORDER_CHANGED, DUPLICATE (created twice), WRONG_ADDRESS, PARCEL_NOT_READY, DELIVERY_TOO_SLOW, OTHER (say why in comment)',
});

const Cancellation = Type.Object(
  {
    reason: Type.String({
      description: 'A merchant reason code, NO_COURIER_ASSIGNED (the system, after the assignment timeout) or OPERATOR (support)',
    }),
    comment: Type.Optional(Type.String()),
    actor: StringEnum(['merchant', 'operator', 'system'], { description: 'Who cancelled' }),
    refundAmount: Type.Number({ description: 'Refunded to the balance, in major units' }),
    cancelledAt: DateTime(),
  },
  { additionalProperties: false, description: 'Present once the transfer is cancelled' },
);

const FreeObject = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const Transfer = component(
  'Transfer',
  Type.Object(
    {
      id: Uuid('Transfer id (the transfer_id the quote announced)'),
      state: TransferStateSchema,
      transferCode: Type.String({ description: 'Short human-friendly code, e.g. K7Q2-M9XD' }),
      trackingCode: Type.String({ description: 'Unguessable tracking code' }),
      trackingUrl: Type.String({
        description: 'The public tracking page for the recipient: PUBLIC_BASE_URL + /track/{trackingCode} (just the path when PUBLIC_BASE_URL is unset)',
      }),
      parcelSize: ParcelSizeSchema,
      description: Type.String(),
      pickupLocation: GeoPoint,
      pickupAddress: Type.String(),
      destinationLocation: GeoPoint,
      destinationAddress: Type.String(),
      destinationAddressMetadata: FreeObject('The destinationLocation of the quote request'),
      pickupAddressMetaData: FreeObject('The locationMetadata of the pickup warehouse'),
      deliveryOptionName: Type.String(),
      paymentTtlMinutes: Type.Integer(),
      paymentExpiresAt: DateTime('createdAt + paymentTtlMinutes'),
      recipientInfo: RecipientInfo,
      source: Type.String({ description: 'API for transfers created through this interface', examples: ['API'] }),
      recipientFullName: Type.String(),
      totalPrice: Type.Number({ description: 'The payable amount charged, in major units of currency' }),
      currency: Type.String({ description: 'ISO 4217 currency of totalPrice' }),
      isFragile: Type.Boolean(),
      isPerishable: Type.Boolean(),
      senderInfo: FreeObject('The sending merchant and warehouse'),
      warehouseId: Uuid('Pickup warehouse'),
      matchmakingId: Uuid('The quote this transfer consumed'),
      productKey: Type.String(),
      createdAt: DateTime(),
      updatedAt: DateTime('Last change of state'),
      deliveryPin: Type.String({
        pattern: '^[0-9]{4}$',
        description: 'Give it to the recipient: the courier needs it to complete the delivery. Couriers never see it.',
      }),
      sandbox: Type.Boolean({ description: 'true for a sandbox merchant: play money, a simulated courier' }),
      refundedAmount: Type.Number({ description: 'Refunded to the balance so far, in major units (0 until a cancellation or return)' }),
      courier: Type.Optional(
        Type.Object({ firstName: Type.String() }, { additionalProperties: false, description: 'The assigned courier (first name only), once one accepted' }),
      ),
      estimatedPickupAt: Type.Union([DateTime('When a courier is expected at the warehouse (after pickup: when it happened)'), Type.Null()], {
        description: "Recomputed on every event and from the courier's position (the travel-time model); null once terminal",
      }),
      estimatedDeliveryAt: Type.Union([DateTime('When the parcel is expected at the destination'), Type.Null()], {
        description: "Recomputed on every event and from the courier's position; null once terminal and while returning",
      }),
      pickedUpAt: Type.Optional(DateTime('When the courier collected the parcel')),
      deliveredAt: Type.Optional(DateTime('When the parcel was delivered')),
      pickupWindow: Type.Optional(
        Type.Object(
          { start: DateTime(), end: DateTime() },
          { additionalProperties: false, description: 'A scheduled pickup: the window booked with the quote' },
        ),
      ),
      cancellation: Type.Optional(Cancellation),
      deliveryFailure: Type.Optional(
        Type.Object(
          { reason: Type.String({ description: DELIVERY_FAILURE_REASONS.join(', ') }), comment: Type.Optional(Type.String()) },
          { additionalProperties: false, description: 'Why the delivery failed (state returning or returned)' },
        ),
      ),
    },
    { additionalProperties: false },
  ),
);
export type Transfer = Static<typeof Transfer>;

/** A transfer as the service returns it (the OpenAPI response example). */
export const TRANSFER_EXAMPLE: Transfer = {
  id: EXAMPLE_IDS.transfer,
  state: 'inProgress',
  transferCode: 'Y9MK-N7B9',
  trackingCode: 'mgSZa_Rr-FhQxUy0sjLSDQ',
  trackingUrl: 'https://api.example.com/track/mgSZa_Rr-FhQxUy0sjLSDQ',
  parcelSize: 'SMALL',
  description: 'Two books',
  pickupLocation: { type: 'Point', coordinates: [37.6136, 55.7575] },
  pickupAddress: 'Tverskaya St 1, Moscow',
  destinationLocation: { type: 'Point', coordinates: [37.5886, 55.7339] },
  destinationAddress: 'Komsomolsky Ave 24, Moscow',
  destinationAddressMetadata: { lat: 55.7339, lng: 37.5886, display_name: 'Komsomolsky Ave 24, Moscow', city: 'Moscow' },
  pickupAddressMetaData: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
  deliveryOptionName: 'Standard delivery',
  paymentTtlMinutes: 30,
  paymentExpiresAt: '2026-11-21T10:35:00.000Z',
  recipientInfo: { firstName: 'Anna', lastName: 'Ivanova', phone: '+7 900 000-00-00' },
  source: 'API',
  recipientFullName: 'Anna Ivanova',
  totalPrice: 314.38,
  currency: 'RUB',
  isFragile: false,
  isPerishable: false,
  senderInfo: {
    merchantId: EXAMPLE_IDS.merchant,
    name: 'Demo shop',
    warehouseName: 'Main warehouse',
    phone: '+7 495 000-00-00',
    email: 'warehouse@example.com',
  },
  warehouseId: EXAMPLE_IDS.warehouse,
  matchmakingId: EXAMPLE_IDS.quote,
  productKey: 'standard',
  createdAt: '2026-11-21T10:05:00.000Z',
  updatedAt: '2026-11-21T10:05:00.000Z',
  deliveryPin: '4821',
  sandbox: false,
  refundedAmount: 0,
  estimatedPickupAt: '2026-11-21T10:07:00.000Z',
  estimatedDeliveryAt: '2026-11-21T10:22:32.000Z',
};

export const CANCELLED_TRANSFER_EXAMPLE: Transfer = {
  ...TRANSFER_EXAMPLE,
  state: 'cancelled',
  updatedAt: '2026-11-21T10:09:00.000Z',
  refundedAmount: 314.38,
  estimatedPickupAt: null,
  estimatedDeliveryAt: null,
  cancellation: { reason: 'CUSTOMER_REQUESTED', actor: 'merchant', refundAmount: 314.38, cancelledAt: '2026-11-21T10:09:00.000Z' },
};

export const CancelRequest = component(
  'CancelRequest',
  Type.Object(
    {
      reason: CancellationReasonSchema,
      comment: Type.Optional(Type.String({ minLength: 1, maxLength: 500, pattern: MULTI_LINE, description: 'Free text for your records' })),
    },
    { additionalProperties: false, examples: [{ reason: 'CUSTOMER_REQUESTED', comment: 'Order 1042 cancelled by the buyer' }] },
  ),
);
export type CancelRequest = Static<typeof CancelRequest>;

export const AdvanceRequest = component(
  'AdvanceRequest',
  Type.Object(
    {
      to: TransferStateSchema,
      reason: Type.Optional(
        StringEnum([...DELIVERY_FAILURE_REASONS], { description: 'With to=returning: why delivery failed (default RECIPIENT_UNAVAILABLE)' }),
      ),
    },
    { additionalProperties: false, examples: [{ to: 'courierAssigned' }] },
  ),
);
export type AdvanceRequest = Static<typeof AdvanceRequest>;

export const TransferListQuery = Type.Object(
  {
    state: Type.Optional(TransferStateSchema),
    warehouseId: Type.Optional(Uuid('Only transfers picked up from this warehouse')),
    createdFrom: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after (inclusive)' })),
    createdTo: Type.Optional(Type.String({ format: 'date-time', description: 'Created before (exclusive)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'Page size (default 50)', examples: [50] })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'From the Link rel="next" header of the previous page' })),
  },
  { additionalProperties: false },
);
export type TransferListQuery = Static<typeof TransferListQuery>;

export const TransferParams = Type.Object({ transferId: Uuid('Transfer id', { examples: [EXAMPLE_IDS.transfer] }) }, { additionalProperties: false });
