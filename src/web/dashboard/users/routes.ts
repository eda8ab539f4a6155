import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { MERCHANT_ROLES, type MerchantRole, type MerchantUser } from '../../../modules/accounts/service.ts';
import { baseUrlOf, field } from '../../forms.ts';
import { errorMessage, redirectWithFlash, render } from '../../render.ts';
import { merchantOf, requirePerson } from '../../session.ts';

/** Users (admins only): invite (the one-time link is shown), change role, send a reset link, remove. */

export interface UserRow extends MerchantUser {
  createdAtIso: string;
  isMe: boolean;
}

export interface UsersView {
  title: string;
  users: UserRow[];
  roles: readonly MerchantRole[];
  /** The invite form's values after a refusal. */
  form: { email: string; name: string; role: MerchantRole };
  error?: string;
  /** A link just made (invite or reset), shown once on this page. */
  link?: { email: string; url: string; mailed: boolean; purpose: 'invite' | 'reset' };
}

export async function usersPages(app: FastifyInstance): Promise<void> {
  const accounts = app.services.accounts;
  app.addHook('preHandler', requirePerson('merchant', ['admin']));

  const page = async (request: FastifyRequest, reply: FastifyReply, extra: Partial<UsersView> = {}, status = 200) => {
    const me = merchantOf(request);
    const users = (await accounts.listMerchantUsers(me.merchantId)).map((u) => ({
      ...u,
      createdAtIso: new Date(u.createdAt).toISOString(),
      isMe: u.id === me.id,
    }));
    return render<UsersView>(
      reply,
      'dashboard/users/users.eta',
      { title: 'Users', users, roles: MERCHANT_ROLES, form: { email: '', name: '', role: 'employee' }, ...extra },
      status,
    );
  };
  const roleOf = (value: string): MerchantRole | undefined => ((MERCHANT_ROLES as readonly string[]).includes(value) ? (value as MerchantRole) : undefined);
  /** The user an action is about: never yourself here (your own account is on the Account page). */
  const target = async (request: FastifyRequest) => {
    const me = merchantOf(request);
    const id = (request.params as { id: string }).id;
    const user = await accounts.requireMerchantUser(me.merchantId, id);
    if (user.id === me.id) throw new AppError('FORBIDDEN', 'You cannot change or remove your own account here: ask another admin');
    return { me, user };
  };

  app.get('/', async (request, reply) => page(request, reply));

  app.post('/', async (request, reply) => {
    const me = merchantOf(request);
    const form = {
      email: field(request, 'email', { max: 320 }),
      name: field(request, 'name', { max: 200 }),
      role: roleOf(field(request, 'role')) ?? 'employee',
    };
    if (!roleOf(field(request, 'role'))) return page(request, reply, { form, error: 'Choose a role: admin or employee.' }, 400);
    try {
      const r = await accounts.inviteMerchantUser(
        { merchantId: me.merchantId, email: form.email, role: form.role, name: form.name },
        baseUrlOf(request, app.webConfig.publicBaseUrl),
      );
      reply.header('referrer-policy', 'no-referrer');
      return page(request, reply, { link: { email: r.user.email, url: r.url, mailed: r.mailed, purpose: 'invite' } });
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return page(request, reply, { form, error: `${message}.` }, (err as AppError).status);
    }
  });

  app.post('/:id/role', async (request, reply) => {
    const { me, user } = await target(request);
    const role = roleOf(field(request, 'role'));
    if (!role) return page(request, reply, { error: 'Choose a role: admin or employee.' }, 400);
    try {
      await accounts.changeRole(me.merchantId, user.id, role);
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return page(request, reply, { error: `${message}.` }, (err as AppError).status);
    }
    return redirectWithFlash(reply, '/dashboard/users', `${user.email} is now ${role}; they log in again.`);
  });

  app.post('/:id/reset', async (request, reply) => {
    const { me, user } = await target(request);
    const r = await accounts.resetLink(me.merchantId, user.id, baseUrlOf(request, app.webConfig.publicBaseUrl));
    reply.header('referrer-policy', 'no-referrer');
    return page(request, reply, { link: { email: user.email!, url: r.url, mailed: r.mailed, purpose: 'reset' } });
  });

  app.post('/:id/remove', async (request, reply) => {
    const { me, user } = await target(request);
    try {
      await accounts.removeMerchantUser(me.merchantId, user.id);
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return page(request, reply, { error: `${message}.` }, (err as AppError).status);
    }
    return redirectWithFlash(reply, '/dashboard/users', `${user.email} is removed; their sessions have ended.`);
  });
}
