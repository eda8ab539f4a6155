import type { FastifyInstance } from 'fastify';
import { render } from '../../render.ts';
import { merchantOf, requirePerson } from '../../session.ts';

/** Account: who you are, your password, two-factor authentication, your sessions. */

export interface AccountView {
  title: string;
  name: string;
  email: string;
  role: string;
}

export async function accountPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('merchant'));

  app.get('/', async (request, reply) => {
    const me = merchantOf(request);
    return render<AccountView>(reply, 'dashboard/account/account.eta', { title: 'Account', name: me.name, email: me.email, role: me.role });
  });
}
