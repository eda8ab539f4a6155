import { type Static, Type } from 'typebox';
import { DateTime, EXAMPLE_IDS, GeoPoint, MULTI_LINE, Phone, PRODUCT_KEY, Text, Uuid } from '../../http/schemas.ts';
import { ParcelSizeSchema } from '../tariffs/schemas.ts';

export const RecipientInfo = Type.Object(
  {
    firstName: Text(100),
    lastName: Text(100),
    phone: Phone(),
  },
  { additionalProperties: false },
);

export const TransferRequest = Type.Object(
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
);
export type TransferRequest = Static<typeof TransferRequest>;

const FreeObject = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const Transfer = Type.Object(
  {
    id: Uuid('Transfer id (the transfer_id the quote announced)'),
    state: Type.String({ description: 'inProgress on creation', examples: ['inProgress'] }),
    transferCode: Type.String({ description: 'Short human-friendly code, e.g. K7Q2-M9XD' }),
    trackingCode: Type.String({ description: 'Unguessable tracking code' }),
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
  },
  { additionalProperties: false },
);
export type Transfer = Static<typeof Transfer>;

/** A transfer as the service returns it (the OpenAPI response example). */
export const TRANSFER_EXAMPLE: Transfer = {
  id: EXAMPLE_IDS.transfer,
  state: 'inProgress',
  transferCode: 'Y9MK-N7B9',
  trackingCode: 'mgSZa_Rr-FhQxUy0sjLSDQ',
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
};

export const TransferParams = Type.Object({ transferId: Uuid('Transfer id', { examples: [EXAMPLE_IDS.transfer] }) }, { additionalProperties: false });
