import { type Static, Type } from 'typebox';
import { DateTime, EXAMPLE_IDS, StringEnum, Uuid } from '../../lib/schemas.ts';
import { TransferStateSchema } from '../events/schemas.ts';
import { ParcelSizeSchema } from '../tariffs/schemas.ts';
import { DELIVERY_FAILURE_REASONS } from '../transfers/lifecycle.ts';

const Lat = Type.Number({ minimum: -90, maximum: 90 });
const Lng = Type.Number({ minimum: -180, maximum: 180 });
const Point = Type.Object({ lat: Lat, lng: Lng }, { additionalProperties: false });

export const CourierStatusInput = Type.Object(
  {
    online: Type.Boolean({ description: 'true: ready to see and accept jobs (lat and lng required); false: off shift' }),
    lat: Type.Optional(Lat),
    lng: Type.Optional(Lng),
  },
  { additionalProperties: false, examples: [{ online: true, lat: 55.7601, lng: 37.6187 }] },
);
export type CourierStatusInput = Static<typeof CourierStatusInput>;

export const LocationInput = Type.Object({ lat: Lat, lng: Lng }, { additionalProperties: false, examples: [{ lat: 55.7532, lng: 37.6089 }] });
export type LocationInput = Static<typeof LocationInput>;

export const CourierStatus = Type.Object(
  {
    id: Uuid(),
    firstName: Type.String({ description: 'What merchants and recipients see' }),
    online: Type.Boolean(),
    location: Type.Union([Type.Object({ lat: Lat, lng: Lng, updatedAt: DateTime() }, { additionalProperties: false }), Type.Null()]),
    activeJobs: Type.Integer({ description: 'Accepted jobs not yet ended' }),
    maxJobs: Type.Integer({ description: 'How many active jobs a courier may hold' }),
  },
  { additionalProperties: false },
);
export type CourierStatus = Static<typeof CourierStatus>;

/** An open job as a courier sees it before accepting: where to collect, roughly where to go, what it pays. Nothing about the recipient. */
export const OpenJob = Type.Object(
  {
    transferId: Uuid(),
    pickup: Type.Object(
      {
        name: Type.String({ description: 'The warehouse' }),
        address: Type.String(),
        location: Point,
        contactPhone: Type.Union([Type.String(), Type.Null()]),
      },
      { additionalProperties: false },
    ),
    destination: Type.Object(
      {
        city: Type.Union([Type.String(), Type.Null()]),
        approximateLocation: Type.Object({ lat: Lat, lng: Lng }, { additionalProperties: false, description: 'Rounded to about 1 km' }),
      },
      { additionalProperties: false, description: 'The destination area; the exact address comes with the job once accepted' },
    ),
    distanceToPickupKm: Type.Number({ description: 'From the courier to the warehouse, great-circle, one decimal' }),
    deliveryDistanceKm: Type.Number({ description: 'From the warehouse to the destination, great-circle, one decimal' }),
    parcelSize: ParcelSizeSchema,
    isFragile: Type.Boolean(),
    isPerishable: Type.Boolean(),
    payout: Type.Number({ description: "The courier's earnings for this delivery (the tariff's courier fee), major units" }),
    currency: Type.String(),
    createdAt: DateTime(),
  },
  { additionalProperties: false },
);
export type OpenJob = Static<typeof OpenJob>;

/** A job the courier holds: the open job's facts plus the exact destination and, until delivery, the recipient. */
export const CurrentJob = Type.Object(
  {
    ...OpenJob.properties,
    state: TransferStateSchema,
    destination: Type.Object(
      {
        city: Type.Union([Type.String(), Type.Null()]),
        address: Type.String(),
        location: Point,
      },
      { additionalProperties: false },
    ),
    recipient: Type.Optional(
      Type.Object(
        { name: Type.String(), phone: Type.String() },
        { additionalProperties: false, description: 'Only between accept and delivery (courierAssigned, pickedUp)' },
      ),
    ),
    description: Type.String({ description: "The merchant's description of the parcel" }),
    codeAttemptsLeft: Type.Integer({ description: 'Wrong transferCode / deliveryPin entries left before the job is locked' }),
    locked: Type.Boolean({ description: 'After 5 wrong codes: nothing more can be done with the job until support unlocks it' }),
  },
  { additionalProperties: false },
);
export type CurrentJob = Static<typeof CurrentJob>;

export const JobsQuery = Type.Object(
  { radiusKm: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 50, description: 'Search radius around your position (default 5)', examples: [5] })) },
  { additionalProperties: false },
);
export type JobsQuery = Static<typeof JobsQuery>;

export const JobParams = Type.Object({ transferId: Uuid('The job (transfer) id', { examples: [EXAMPLE_IDS.transfer] }) }, { additionalProperties: false });

export const CodeInput = Type.Object(
  { transferCode: Type.String({ minLength: 1, maxLength: 20, description: 'The code shown at the warehouse, e.g. K7Q2-M9XD (case and dash optional)' }) },
  { additionalProperties: false, examples: [{ transferCode: 'Y9MK-N7B9' }] },
);
export const PinInput = Type.Object(
  { deliveryPin: Type.String({ minLength: 1, maxLength: 10, description: "The recipient's 4-digit PIN" }) },
  { additionalProperties: false, examples: [{ deliveryPin: '4821' }] },
);
export const FailInput = Type.Object(
  {
    reason: StringEnum([...DELIVERY_FAILURE_REASONS], { description: 'Why the parcel could not be delivered' }),
    comment: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  },
  { additionalProperties: false, examples: [{ reason: 'RECIPIENT_UNAVAILABLE', comment: 'No answer at the door or on the phone' }] },
);

export const OPEN_JOB_EXAMPLE: OpenJob = {
  transferId: EXAMPLE_IDS.transfer,
  pickup: {
    name: 'Main warehouse',
    address: 'Tverskaya St 1, Moscow',
    location: { lat: 55.7575, lng: 37.6136 },
    contactPhone: '+7 495 000-00-00',
  },
  destination: { city: 'Moscow', approximateLocation: { lat: 55.73, lng: 37.59 } },
  distanceToPickupKm: 0.3,
  deliveryDistanceKm: 3.1,
  parcelSize: 'SMALL',
  isFragile: false,
  isPerishable: false,
  payout: 275.38,
  currency: 'RUB',
  createdAt: '2026-11-21T10:05:00.000Z',
};

export const CURRENT_JOB_EXAMPLE: CurrentJob = {
  ...OPEN_JOB_EXAMPLE,
  state: 'courierAssigned',
  destination: { city: 'Moscow', address: 'Komsomolsky Ave 24, Moscow', location: { lat: 55.7339, lng: 37.5886 } },
  recipient: { name: 'Anna Ivanova', phone: '+7 900 000-00-00' },
  description: 'Two books',
  codeAttemptsLeft: 5,
  locked: false,
};

export const COURIER_STATUS_EXAMPLE: CourierStatus = {
  id: '01a20057-9d1c-7b2e-8a4f-5c6d7e8f9a0c',
  firstName: 'Ivan',
  online: true,
  location: { lat: 55.7601, lng: 37.6187, updatedAt: '2026-11-21T10:06:00.000Z' },
  activeJobs: 0,
  maxJobs: 1,
};
