import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import type { Offer } from '../../../modules/dispatch/schemas.ts';
import { streamOffers } from '../../../modules/dispatch/stream.ts';
import { redirectWithFlash } from '../../render.ts';
import { courierIdOf, requireCourier } from '../courier.ts';

/**
 * Offers: a card per open offer (pickup and destination areas, distances, payout, a countdown),
 * arriving without a reload through this session's stream of the dispatch service's offers
 * (server-sent events, the dispatch service's subscribe: any instance's offers), and Accept / Decline
 * through the dispatch service, as the courier API does.
 */

export interface OfferCard {
  id: string;
  pickupName: string;
  pickupAddress: string;
  destinationArea: string;
  distanceKm: string;
  deliveryDistanceKm: string;
  payout: string;
  expiresAt: string;
  /** Seconds left by the service's clock when the card was made (the page counts down from it). */
  secondsLeft: number;
}

export function offerCard(o: Offer, now: number): OfferCard {
  return {
    id: o.id,
    pickupName: o.pickup.name,
    pickupAddress: o.pickup.address,
    destinationArea: o.destination.city ?? 'the destination area',
    distanceKm: (o.distanceMeters / 1000).toFixed(1),
    deliveryDistanceKm: o.deliveryDistanceKm.toFixed(1),
    payout: `${o.payout.toFixed(2)} ${o.currency}`,
    expiresAt: o.expiresAt,
    secondsLeft: Math.max(0, Math.round((Date.parse(o.expiresAt) - now) / 1000)),
  };
}

/** The open offers of a courier as cards (the shift and jobs pages show them when the courier is online). */
export async function offerCards(request: FastifyRequest): Promise<OfferCard[]> {
  const { dispatch, couriers } = request.server.services;
  const now = couriers.now();
  return (await dispatch.listOffers(courierIdOf(request))).map((o) => offerCard(o, now));
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function offerIdOf(request: FastifyRequest): string {
  const id = String((request.params as { offerId?: string }).offerId ?? '').toLowerCase();
  if (!UUID_RE.test(id)) throw new AppError('OFFER_NOT_FOUND', 'No such offer');
  return id;
}

export async function offersPages(app: FastifyInstance): Promise<void> {
  const { dispatch, couriers } = app.services;
  app.addHook('preHandler', requireCourier);

  // This session's offers as server-sent events: first the open ones, then each new one (event "offer", data: the card).
  // Streams end when the server starts closing (they never go idle, so they would hold the close up).
  const streams = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of streams) end();
  });
  app.get('/stream', async (request, reply) => {
    // Each heartbeat also checks the session: a stream of a session that ended (logout, disabled, expired) closes.
    const cookie = request.webSession?.cookie ?? '';
    return streamOffers(request, reply, {
      dispatch,
      courierId: courierIdOf(request),
      data: (offer) => offerCard(offer, couriers.now()),
      alive: async () => Boolean(await app.services.accounts.resolveSession(cookie)),
      streams,
    });
  });

  app.post('/:offerId/accept', async (request, reply) => {
    let transferId: string;
    try {
      transferId = (await dispatch.accept(courierIdOf(request), offerIdOf(request))).transferId;
    } catch (err) {
      if (err instanceof AppError && err.code === 'OFFER_EXPIRED')
        return redirectWithFlash(reply, '/courier-app/shift', 'That offer has expired: the job went to another courier.');
      if (err instanceof AppError && ['JOB_TAKEN', 'TOO_MANY_JOBS', 'COURIER_OFFLINE', 'JOB_LOCKED'].includes(err.code)) {
        return redirectWithFlash(reply, '/courier-app/shift', err.code === 'JOB_TAKEN' ? 'That job is no longer open.' : err.detail);
      }
      throw err;
    }
    return redirectWithFlash(reply, `/courier-app/jobs/${transferId}`, 'The job is yours. Go to the pickup.');
  });

  app.post('/:offerId/decline', async (request, reply) => {
    try {
      await dispatch.decline(courierIdOf(request), offerIdOf(request));
    } catch (err) {
      if (err instanceof AppError && err.code === 'OFFER_EXPIRED') return redirectWithFlash(reply, '/courier-app/shift', 'That offer had already expired.');
      throw err;
    }
    return redirectWithFlash(reply, '/courier-app/shift', 'Offer declined: it goes to another courier.');
  });
}
