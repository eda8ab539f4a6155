import type { FastifyInstance } from 'fastify';
import { AppError } from '../../lib/errors.ts';
import { installPages } from './install/routes.ts';
import { jobsPages } from './jobs/routes.ts';
import { loginPages } from './login/routes.ts';
import { offersPages } from './offers/routes.ts';
import { shiftPages } from './shift/routes.ts';
import { todayPages } from './today/routes.ts';

/**
 * The courier app (/courier-app/): an installable phone web app (manifest, service worker) over the
 * courier API's rules. One plugin per feature folder; every page calls app.services.couriers with
 * the courier of the session (request.person.courierId), never a client secret.
 */
export async function courierAppPages(app: FastifyInstance): Promise<void> {
  app.setNotFoundHandler(async (request) => {
    throw new AppError('ROUTE_NOT_FOUND', `No page ${request.url.split('?')[0]}`);
  });
  app.get('/', async (_request, reply) => reply.redirect('/courier-app/shift', 303));
  await app.register(installPages);
  await app.register(loginPages);
  await app.register(shiftPages, { prefix: '/shift' });
  await app.register(jobsPages, { prefix: '/jobs' });
  await app.register(todayPages, { prefix: '/today' });
  await app.register(offersPages, { prefix: '/offers' });
}
