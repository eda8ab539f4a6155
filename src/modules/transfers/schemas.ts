import { type Static, Type } from 'typebox';
import { DateTime, GeoPoint, Uuid } from '../../http/schemas.ts';
import { ParcelSizeSchema } from '../tariffs/schema.ts';

const PHONE = '^\\+?[0-9][0-9 ()\\-]{3,30}$';

export const RecipientInfo = Type.Object(
  {
    firstName: Type.String({ minLength: 1, maxLength: 100 }),
    lastName: Type.String({ minLength: 1, maxLength: 100 }),
    phone: Type.String({ pattern: PHONE, maxLength: 32 }),
  },
  { additionalProperties: false },
);

export const TransferRequest = Type.Object(
  {
    matchmakingId: Uuid('The quote id (id of the POST /options response)'),
    productKey: Type.String({ minLength: 1, maxLength: 64, description: "A key of the quote's products; the product must be AVAILABLE" }),
    description: Type.String({ maxLength: 1000, description: 'Free text describing the parcel' }),
    recipientInfo: RecipientInfo,
  },
  {
    additionalProperties: false,
    examples: [
      {
        matchmakingId: '01a20059-0b3e-7a4c-9d2e-3f5a6b7c8d9e',
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

export const TransferParams = Type.Object({ transferId: Uuid('Transfer id') }, { additionalProperties: false });
