import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OperatorRole } from '../../../modules/audit/service.ts';
import { refusalMessage } from '../../dashboard/format.ts';
import { baseUrlOf, field } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { requirePerson } from '../../session.ts';
import { actorOf, CAN, operatorOf } from '../operator.ts';

/** Operators (admin only): who they are, invite one (a one-time link, as `mds operators invite`), change a role. */

export interface OpsOperatorsView {
  title: string;
  rows: Array<{ id: string; email: string; name: string; role: string; active: boolean; twoFactor: boolean; self: boolean }>;
  roles: readonly OperatorRole[];
  invited: { email: string; url: string } | null;
  error: string | null;
}

export async function opsOperatorsPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('operator', CAN.admin));
  const s = app.services;

  async function page(request: FastifyRequest, reply: FastifyReply, o: { invited?: OpsOperatorsView['invited']; error?: string; status?: number } = {}) {
    const me = operatorOf(request);
    const list = await s.accounts.listOperators();
    return render<OpsOperatorsView>(
      reply,
      'ops/operators/operators.eta',
      {
        title: 'Operators',
        rows: list.map((p) => ({ ...p, self: p.id === me.id })),
        roles: ['support', 'finance', 'admin'],
        invited: o.invited ?? null,
        error: o.error ?? null,
      },
      o.status ?? 200,
    );
  }

  app.get('/', async (request, reply) => page(request, reply));

  app.post('/invite', async (request, reply) => {
    try {
      const r = await s.accounts.inviteOperator(
        { email: field(request, 'email', { max: 320 }), role: field(request, 'role') as OperatorRole, name: field(request, 'name', { max: 200 }) || undefined },
        baseUrlOf(request, app.webConfig.publicBaseUrl),
        actorOf(request),
      );
      return page(request, reply, { invited: { email: r.operator.email, url: r.url } });
    } catch (err) {
      return page(request, reply, { error: refusalMessage(err), status: 422 });
    }
  });

  app.post<{ Params: { id: string } }>('/:id/role', async (request, reply) => {
    try {
      await s.accounts.changeOperatorRole(request.params.id, field(request, 'role') as OperatorRole, actorOf(request));
      return redirectWithFlash(reply, '/ops/operators', 'Role changed: their sessions have ended.');
    } catch (err) {
      return page(request, reply, { error: refusalMessage(err), status: 422 });
    }
  });
}
