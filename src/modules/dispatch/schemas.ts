import { type Static, Type } from 'typebox';
import { DateTime, EXAMPLE_IDS, StringEnum, Uuid } from '../../lib/schemas.ts';
import { OPEN_JOB_EXAMPLE, OpenJob } from '../couriers/schemas.ts';

export const OFFER_STATUSES = ['open', 'accepted', 'declined', 'expired', 'withdrawn'] as const;

/** A job offered to one courier for a limited time: the open job's facts plus the offer's own. */
export const Offer = Type.Object(
  {
    id: Uuid('The offer'),
    status: StringEnum([...OFFER_STATUSES], {
      description: 'open until you accept or decline it, it expires, or it is withdrawn (the job was taken from the job list, assigned or cancelled)',
    }),
    expiresAt: DateTime('Accept before this time; then the next courier gets the job'),
    distanceMeters: Type.Integer({ description: 'From your position when offered to the pickup, great-circle' }),
    estimatedPickupAt: DateTime('When you would reach the pickup by the travel-time model, from your position when offered'),
    ...OpenJob.properties,
  },
  { additionalProperties: false },
);
export type Offer = Static<typeof Offer>;

export const OfferParams = Type.Object(
  { offerId: Uuid('The offer id', { examples: ['01a2005e-1f2a-7b3c-8d4e-5f6a7b8c9d0e'] }) },
  { additionalProperties: false },
);

export const OFFER_EXAMPLE: Offer = {
  id: '01a2005e-1f2a-7b3c-8d4e-5f6a7b8c9d0e',
  status: 'open',
  expiresAt: '2026-11-21T10:05:30.000Z',
  distanceMeters: 300,
  estimatedPickupAt: '2026-11-21T10:06:13.000Z',
  ...OPEN_JOB_EXAMPLE,
  transferId: EXAMPLE_IDS.transfer,
};

/** Assign a courier as an operator (CLI and console): why, for the audit. */
export interface AssignRequest {
  courierId: string;
  reason: string;
}
