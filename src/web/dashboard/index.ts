import type { FastifyInstance } from 'fastify';
import { AppError } from '../../lib/errors.ts';
import { accountPages } from './account/routes.ts';
import { balancePages } from './balance/routes.ts';
import { deliveriesPages } from './deliveries/routes.ts';
import { developersPages } from './developers/routes.ts';
import { loginPages } from './login/routes.ts';
import { usersPages } from './users/routes.ts';
import { warehousesPages } from './warehouses/routes.ts';

/**
 * The merchant dashboard (/dashboard/): one plugin per feature folder, registered here. Pages use
 * the same services as the API (app.services.*), scoped to request.person.merchantId.
 */
export async function dashboardPages(app: FastifyInstance): Promise<void> {
  // An unknown dashboard path gets the HTML 404 page (the web plugin's error handler renders it).
  app.setNotFoundHandler(async (request) => {
    throw new AppError('ROUTE_NOT_FOUND', `No page ${request.url.split('?')[0]}`);
  });
  app.get('/', async (_request, reply) => reply.redirect('/dashboard/deliveries', 303));
  await app.register(loginPages);
  await app.register(warehousesPages, { prefix: '/warehouses' });
  await app.register(usersPages, { prefix: '/users' });
  await app.register(accountPages, { prefix: '/account' });
  await app.register(deliveriesPages, { prefix: '/deliveries' });
  await app.register(balancePages, { prefix: '/balance' });
  await app.register(developersPages, { prefix: '/developers' });
}
