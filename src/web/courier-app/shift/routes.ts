import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import type { CourierStatus, CurrentJob } from '../../../modules/couriers/schemas.ts';
import { LOCATION_MIN_INTERVAL_MS } from '../../../modules/couriers/service.ts';
import { field } from '../../forms.ts';
import { errorMessage, redirectWithFlash, render } from '../../render.ts';
import { courierIdOf, requireCourier } from '../courier.ts';
import { type OfferCard, offerCards } from '../offers/routes.ts';

/**
 * The shift: go online (with the phone's position) or offline, and while the app is open the position
 * goes to POST /courier-app/shift/location (the courier API's rule: one point a second is kept, a
 * flood is refused), sent by courier.js every LOCATION_SEND_INTERVAL_MS.
 */

/** How often the app sends the position: well inside the one-a-second the service keeps, so none is refused. */
export const LOCATION_SEND_INTERVAL_MS = 5000;
/** A fix older than this is shown as stale (and, kept while offline, dropped instead of sent). */
export const LOCATION_STALE_MS = 60_000;

export interface ShiftView {
  title: string;
  status: CourierStatus;
  jobs: CurrentJob[];
  /** Open offers (online only); new ones arrive through the offers stream. */
  offers: OfferCard[];
  sendIntervalMs: number;
  staleMs: number;
  error?: string;
}

export async function shiftPages(app: FastifyInstance): Promise<void> {
  const couriers = app.services.couriers;
  app.addHook('preHandler', requireCourier);

  const page = async (request: FastifyRequest, error?: string): Promise<ShiftView> => {
    const courierId = courierIdOf(request);
    const status = await couriers.status(courierId);
    return {
      title: 'Shift',
      status,
      jobs: await couriers.currentJobs(courierId),
      offers: status.online ? await offerCards(request) : [],
      sendIntervalMs: Math.max(LOCATION_SEND_INTERVAL_MS, LOCATION_MIN_INTERVAL_MS),
      staleMs: LOCATION_STALE_MS,
      error,
    };
  };

  app.get('/', async (request, reply) => render<ShiftView>(reply, 'courier-app/shift/shift.eta', await page(request)));

  // Online needs a position: the page's script reads the phone's and fills lat/lng before the form goes.
  app.post('/status', async (request, reply) => {
    const courierId = courierIdOf(request);
    const online = field(request, 'online') === 'true';
    const lat = Number.parseFloat(field(request, 'lat', { max: 40 }));
    const lng = Number.parseFloat(field(request, 'lng', { max: 40 }));
    const position = Number.isFinite(lat) && Number.isFinite(lng) && Math.abs(lat) <= 90 && Math.abs(lng) <= 180 ? { lat, lng } : {};
    if (online && !('lat' in position)) {
      return render<ShiftView>(
        reply,
        'courier-app/shift/shift.eta',
        await page(request, 'To go online the app needs your position: allow location for this site in your browser settings, then try again.'),
        422,
      );
    }
    try {
      await couriers.updateStatus(courierId, { online, ...position });
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return render<ShiftView>(reply, 'courier-app/shift/shift.eta', await page(request, message), (err as AppError).status);
    }
    return redirectWithFlash(reply, '/courier-app/shift', online ? 'You are online.' : 'You are offline. Jobs you hold stay yours.');
  });

  // The script's position reports (JSON, CSRF in the x-csrf-token header): 204 kept or dropped, 409 when offline, 429 on a flood.
  app.post('/location', async (request, reply) => {
    const courierId = courierIdOf(request);
    const body = request.body as { lat?: unknown; lng?: unknown } | undefined;
    const lat = body?.lat;
    const lng = body?.lng;
    if (typeof lat !== 'number' || typeof lng !== 'number' || Math.abs(lat) > 90 || Math.abs(lng) > 180) {
      return reply.code(400).send({ sent: false, message: 'lat and lng must be numbers' });
    }
    const status = await couriers.status(courierId);
    if (!status.online) return reply.code(409).send({ sent: false, message: 'You are offline: go online to share your position' });
    try {
      await couriers.moveTo(courierId, lat, lng);
    } catch (err) {
      if (err instanceof AppError && err.code === 'RATE_LIMITED') return reply.code(429).header('retry-after', '1').send({ sent: false, message: err.detail });
      throw err;
    }
    return reply.code(204).send();
  });
}
