import { type Static, Type } from 'typebox';
import { PRODUCT_KEY, StringEnum } from '../../lib/schemas.ts';

/** Parcel sizes and delivery types are closed sets: the tariff prices each, requests must name one. */
export const PARCEL_SIZES = ['SMALL', 'MEDIUM', 'LARGE', 'EXTRA_LARGE'] as const;
export const DELIVERY_TYPES = ['DOOR_TO_DOOR', 'CURBSIDE'] as const;
export type ParcelSize = (typeof PARCEL_SIZES)[number];
export type DeliveryType = (typeof DELIVERY_TYPES)[number];

export const ParcelSizeSchema = StringEnum([...PARCEL_SIZES], {
  description: 'SMALL (up to 30x20x10 cm, 2 kg), MEDIUM (40x30x20 cm, 5 kg), LARGE (60x40x40 cm, 15 kg), EXTRA_LARGE (100x60x60 cm, 30 kg)',
});
export const DeliveryTypeSchema = StringEnum([...DELIVERY_TYPES], {
  description: "DOOR_TO_DOOR: the courier brings the parcel to the recipient's door; CURBSIDE: hand-over at the street entrance",
});

/** Money in the tariff: integer minor units (kopecks, cents). */
const Minor = (description: string) => Type.Integer({ minimum: 0, maximum: 100_000_000, description });
/** An exact decimal, e.g. "1.25"; never a float. */
const Decimal = (description: string) => Type.String({ pattern: '^(0|[1-9]\\d{0,5})(\\.\\d{1,4})?$', description });
/** A multiplier up to 100 (e.g. "1.25"): with fees up to 10^8 minor units and 20 000 km, amounts stay exact below 2^53. */
const Factor = (description: string) => Type.String({ pattern: '^(0|[1-9]\\d?)(\\.\\d{1,4})?$|^100$', description });

export const TariffProduct = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'Shown as deliveryOptionName on transfers' }),
    pattern: Type.String({ minLength: 1, maxLength: 100 }),
    routerId: Type.String({ minLength: 1, maxLength: 100 }),
    tags: Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 20 }),
    deliveryTypes: Type.Array(DeliveryTypeSchema, { minItems: 1, uniqueItems: true }),
    parcelSizes: Type.Array(ParcelSizeSchema, { minItems: 1, uniqueItems: true }),
    baseFee: Minor('Courier base fee'),
    perKmFee: Minor('Courier fee per km of great-circle distance (charged per metre)'),
    fragileSurcharge: Minor('Added to the courier fee for fragile parcels'),
    perishableSurcharge: Minor('Added to the courier fee for perishable parcels'),
    serviceFee: Minor('Service fee per delivery'),
    stopFee: Minor('Fee per stop (a delivery has one stop: the destination)'),
    discountPct: Decimal('Discount in percent of the original amount, 0 to 100'),
    cancellationFee: Type.Optional(
      Minor('Kept back from the refund when the merchant cancels after a courier was assigned (0 when absent); refunds never go below 0'),
    ),
    returnFee: Type.Optional(Minor('Kept back from the refund when a failed delivery is returned to the warehouse (0 when absent)')),
    maxDistanceKm: Type.Integer({ minimum: 1, maximum: 20_000, description: 'Farther destinations make the product UNAVAILABLE' }),
  },
  { additionalProperties: false },
);

export const TariffDocument = Type.Object(
  {
    parcelSizeFactors: Type.Object(
      Object.fromEntries(PARCEL_SIZES.map((s) => [s, Factor(`Courier fee multiplier for ${s}, at most 100`)])) as Record<ParcelSize, ReturnType<typeof Factor>>,
      { additionalProperties: false },
    ),
    products: Type.Record(Type.String({ pattern: PRODUCT_KEY }), TariffProduct, {
      minProperties: 1,
      maxProperties: 20,
      additionalProperties: false, // a key that breaks the pattern is an error, not ignored
      description: 'Keyed by productKey: lower case letters, digits, underscores',
    }),
  },
  { additionalProperties: false },
);
export type TariffDocument = Static<typeof TariffDocument>;
export type TariffProduct = Static<typeof TariffProduct>;
