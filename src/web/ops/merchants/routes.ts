import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { LEDGER_KIND_LABELS, money, refusalMessage, type TimeView, timeView } from '../../dashboard/format.ts';
import { baseUrlOf, field, queryParam } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { requirePerson } from '../../session.ts';
import { actorOf, amountField, CAN, may, signedAmountField } from '../operator.ts';

/**
 * Merchants: list and search; create (live or sandbox; the client secret shown once); a merchant's
 * page with its balance and ledger (who topped up and why), top-up and adjust (finance), its users, its
 * credentials (revoke, issue), disable (revoke every credential), and "view as merchant" (read-only).
 */

export interface OpsMerchantsView {
  title: string;
  q: string;
  rows: Array<{ id: string; name: string; mode: string; balance: string; created: TimeView }>;
  canCreate: boolean;
  error: string | null;
  form: { name: string; balance: string; mode: string };
}

export interface OpsMerchantView {
  title: string;
  m: { id: string; name: string; mode: string; balance: string; currency: string };
  entries: Array<{ at: TimeView; kind: string; amount: string; balanceAfter: string; note: string; by: string; transferHref: string | null }>;
  users: Array<{ email: string; name: string; role: string; active: boolean; twoFactor: boolean }>;
  credentials: Array<{ clientId: string; status: string; created: TimeView }>;
  canTopUp: boolean;
  canAdmin: boolean;
  canSupport: boolean;
  rateLimit: string;
  invited: { email: string; url: string } | null;
  canViewAs: boolean;
  error: string | null;
}

export interface OpsSecretView {
  title: string;
  merchantHref: string;
  clientId: string;
  clientSecret: string;
}

export async function opsMerchantsPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('operator', CAN.read));
  const s = app.services;

  async function listPage(
    request: FastifyRequest,
    reply: FastifyReply,
    error: string | null = null,
    status = 200,
    form = { name: '', balance: '', mode: 'live' },
  ) {
    const q = queryParam(request, 'q').trim().slice(0, 200);
    const needle = q.toLowerCase();
    const merchants = (await s.merchants.list()).filter((m) => !needle || m.name.toLowerCase().includes(needle) || m.id === needle);
    return render<OpsMerchantsView>(
      reply,
      'ops/merchants/list.eta',
      {
        title: 'Merchants',
        q,
        rows: merchants.map((m) => ({
          id: m.id,
          name: m.name,
          mode: m.mode,
          balance: money(m.balance, m.currency),
          created: timeView(m.createdAt),
        })),
        canCreate: may(request, CAN.admin),
        error,
        form,
      },
      status,
    );
  }

  app.get('/', async (request, reply) => listPage(request, reply));

  app.post('/', { preHandler: requirePerson('operator', CAN.admin) }, async (request, reply) => {
    const form = { name: field(request, 'name', { max: 300 }), balance: field(request, 'balance', { max: 30 }), mode: field(request, 'mode') };
    try {
      const opening = form.balance ? amountField(form.balance) : 0;
      const { merchant, credential } = await s.merchants.create(form.name, opening, form.mode === 'sandbox' ? 'sandbox' : 'live', actorOf(request));
      return render<OpsSecretView>(reply, 'ops/merchants/secret.eta', {
        title: `Merchant created: ${merchant.name}`,
        merchantHref: `/ops/merchants/${merchant.id}`,
        clientId: credential.clientId,
        clientSecret: credential.clientSecret,
      });
    } catch (err) {
      return listPage(request, reply, refusalMessage(err), 422, form);
    }
  });

  async function merchantPage(
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    error: string | null = null,
    status = 200,
    invited: OpsMerchantView['invited'] = null,
  ) {
    const merchant = await s.merchants.get(id);
    const ownLimit = await s.merchants.rateLimitOf(id);
    const [ledger, users, credentials] = await Promise.all([
      s.merchants.balancePage(id, { limit: 50 }),
      s.accounts.listMerchantUsers(id),
      s.credentials.list(id),
    ]);
    return render<OpsMerchantView>(
      reply,
      'ops/merchants/merchant.eta',
      {
        title: merchant.name,
        m: { id: merchant.id, name: merchant.name, mode: merchant.mode, balance: money(merchant.balance, merchant.currency), currency: merchant.currency },
        entries: ledger.entries.map((e) => ({
          at: timeView(e.createdAt),
          kind: LEDGER_KIND_LABELS[e.kind] ?? e.kind,
          amount: e.amount,
          balanceAfter: e.balanceAfter,
          note: e.note ?? '',
          by: e.createdBy ?? '',
          transferHref: e.transferId ? `/ops/transfers/${e.transferId}` : null,
        })),
        users: users.map((u) => ({ email: u.email, name: u.name, role: u.role, active: u.active, twoFactor: u.twoFactor })),
        credentials: credentials.map((c) => ({ clientId: c.clientId, status: c.status, created: timeView(c.createdAt) })),
        canTopUp: may(request, CAN.finance),
        canAdmin: may(request, CAN.admin),
        canSupport: may(request, CAN.support),
        rateLimit: ownLimit === null ? `the default (${app.webConfig.merchantRateLimitPerMinute} a minute)` : `${ownLimit} a minute`,
        invited,
        canViewAs: true,
        error,
      },
      status,
    );
  }

  app.get<{ Params: { id: string } }>('/:id', async (request, reply) => merchantPage(request, reply, request.params.id));

  // "View as merchant": this session opens the merchant's dashboard read-only until stopped (every operator may look; audited).
  app.post('/view-as/stop', async (request, reply) => {
    const merchantId = request.webSession?.row.view_as_merchant_id;
    await s.accounts.setViewAs(request.webSession!.id, actorOf(request), null);
    return redirectWithFlash(reply, merchantId ? `/ops/merchants/${merchantId}` : '/ops/merchants', 'You stopped viewing as the merchant.');
  });

  app.post<{ Params: { id: string } }>('/:id/view-as', async (request, reply) => {
    await s.accounts.setViewAs(request.webSession!.id, actorOf(request), request.params.id);
    return reply.redirect('/dashboard/deliveries', 303);
  });

  app.post<{ Params: { id: string } }>('/:id/top-up', { preHandler: requirePerson('operator', CAN.finance) }, async (request, reply) => {
    const id = request.params.id;
    try {
      const amount = amountField(field(request, 'amount', { max: 30 }));
      const m = await s.merchants.topUp(id, amount, field(request, 'reason', { max: 600 }), actorOf(request));
      return redirectWithFlash(reply, `/ops/merchants/${id}`, `Topped up: the balance is now ${money(m.balance, m.currency)}.`);
    } catch (err) {
      return merchantPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  // A correction, signed (negative takes money back); the service refuses one that would go below zero.
  app.post<{ Params: { id: string } }>('/:id/adjust', { preHandler: requirePerson('operator', CAN.finance) }, async (request, reply) => {
    const id = request.params.id;
    try {
      const amount = signedAmountField(field(request, 'amount', { max: 30 }));
      const m = await s.merchants.adjust(id, amount, field(request, 'reason', { max: 600 }), actorOf(request));
      return redirectWithFlash(reply, `/ops/merchants/${id}`, `Adjusted: the balance is now ${money(m.balance, m.currency)}.`);
    } catch (err) {
      return merchantPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/users/invite', { preHandler: requirePerson('operator', CAN.support) }, async (request, reply) => {
    const id = request.params.id;
    try {
      await s.merchants.get(id);
      const role = field(request, 'role') === 'employee' ? 'employee' : 'admin';
      const r = await s.accounts.inviteMerchantUser(
        { merchantId: id, email: field(request, 'email', { max: 320 }), role, name: field(request, 'name', { max: 200 }) || undefined },
        baseUrlOf(request, app.webConfig.publicBaseUrl),
        actorOf(request),
      );
      return merchantPage(request, reply, id, null, 200, { email: r.user.email, url: r.url });
    } catch (err) {
      return merchantPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/rate-limit', { preHandler: requirePerson('operator', CAN.admin) }, async (request, reply) => {
    const id = request.params.id;
    try {
      const text = field(request, 'perMinute', { max: 20 });
      const perMinute = text === '' ? null : /^\d{1,7}$/.test(text) ? Number(text) : Number.NaN;
      const r = await s.merchants.setRateLimit(id, perMinute, actorOf(request), field(request, 'reason', { max: 600 }));
      return redirectWithFlash(
        reply,
        `/ops/merchants/${id}`,
        r.rateLimitPerMinute === null ? 'The merchant is back on the default limit.' : `The merchant's limit is ${r.rateLimitPerMinute} requests a minute.`,
      );
    } catch (err) {
      return merchantPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/credentials/revoke', { preHandler: requirePerson('operator', CAN.admin) }, async (request, reply) => {
    const id = request.params.id;
    try {
      const clientId = field(request, 'clientId', { max: 100 });
      if (!(await s.credentials.list(id)).some((c) => c.clientId === clientId)) throw new AppError('CLIENT_NOT_FOUND', 'No such credential for this merchant');
      await s.credentials.revoke(clientId, actorOf(request), field(request, 'reason', { max: 600 }));
      return redirectWithFlash(reply, `/ops/merchants/${id}`, `Revoked ${clientId}.`);
    } catch (err) {
      return merchantPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/credentials/issue', { preHandler: requirePerson('operator', CAN.admin) }, async (request, reply) => {
    const id = request.params.id;
    try {
      const c = await s.credentials.issueFor(id, actorOf(request), field(request, 'reason', { max: 600 }));
      return render<OpsSecretView>(reply, 'ops/merchants/secret.eta', {
        title: 'New credential set',
        merchantHref: `/ops/merchants/${id}`,
        clientId: c.clientId,
        clientSecret: c.clientSecret,
      });
    } catch (err) {
      return merchantPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/disable', { preHandler: requirePerson('operator', CAN.admin) }, async (request, reply) => {
    const id = request.params.id;
    try {
      await s.merchants.get(id);
      const n = await s.credentials.revokeAll(id, actorOf(request), field(request, 'reason', { max: 600 }));
      return redirectWithFlash(reply, `/ops/merchants/${id}`, `Disabled: ${n} credential set(s) revoked; the merchant's API calls now fail.`);
    } catch (err) {
      return merchantPage(request, reply, id, refusalMessage(err), 422);
    }
  });
}
