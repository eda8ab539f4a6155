import type { FastifyInstance } from 'fastify';
import { AppError } from '../../lib/errors.ts';
import { opsAuditPages } from './audit/routes.ts';
import { opsCouriersPages } from './couriers/routes.ts';
import { opsLoginPages } from './login/routes.ts';
import { opsMerchantsPages } from './merchants/routes.ts';
import { opsOperatorsPages } from './operators/routes.ts';
import { opsTariffsPages } from './tariffs/routes.ts';
import { opsTransfersPages } from './transfers/routes.ts';
import { opsWebhooksPages } from './webhooks/routes.ts';

/**
 * The operator console (/ops/): one plugin per feature folder, as the dashboard. Every page requires
 * an operator session (password and TOTP); every action names the roles that may do it and goes
 * through the same services as the CLI, which record it in the audit log in the change's transaction.
 */
export async function opsPages(app: FastifyInstance): Promise<void> {
  app.setNotFoundHandler(async (request) => {
    throw new AppError('ROUTE_NOT_FOUND', `No page ${request.url.split('?')[0]}`);
  });
  app.get('/', async (_request, reply) => reply.redirect('/ops/transfers', 303));
  await app.register(opsLoginPages);
  await app.register(opsTransfersPages, { prefix: '/transfers' });
  await app.register(opsMerchantsPages, { prefix: '/merchants' });
  await app.register(opsCouriersPages);
  await app.register(opsTariffsPages, { prefix: '/tariffs' });
  await app.register(opsWebhooksPages, { prefix: '/webhooks' });
  await app.register(opsAuditPages, { prefix: '/audit' });
  await app.register(opsOperatorsPages, { prefix: '/operators' });
}
