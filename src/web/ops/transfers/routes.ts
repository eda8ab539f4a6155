import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TRANSFER_STATES, type TransferState } from '../../../db/types.ts';
import { AppError } from '../../../lib/errors.ts';
import { nextStates } from '../../../modules/transfers/lifecycle.ts';
import { dateStart, EVENT_LABELS, money, refusalMessage, STATE_LABELS, STATE_TONE, type TimeView, timeView } from '../../dashboard/format.ts';
import { field, queryParam } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { requirePerson } from '../../session.ts';
import { actorOf, CAN, may } from '../operator.ts';

/**
 * Transfers: every merchant's, searched by id, tracking code or link, transfer code, recipient phone,
 * merchant, state and dates; a transfer's page with its timeline (operators named), courier, the
 * webhooks sent for it, the audit entries, and the support actions (cancel with a full refund,
 * advance, unlock), each with a reason, through the same services as the CLI.
 */

export interface OpsTransferRow {
  id: string;
  href: string;
  created: TimeView;
  merchant: string;
  state: string;
  tone: string;
  price: string;
  recipient: string;
  sandbox: boolean;
}

export interface OpsTransfersView {
  title: string;
  rows: OpsTransferRow[];
  filters: { q: string; merchant: string; state: string; from: string; to: string; tz: string };
  merchants: Array<{ id: string; name: string }>;
  states: Array<{ value: string; label: string }>;
  nextHref: string | null;
  error: string | null;
}

export interface OpsTransferView {
  title: string;
  t: {
    id: string;
    state: string;
    tone: string;
    trackingCode: string;
    trackingUrl: string;
    transferCode: string;
    price: string;
    refunded: string;
    recipient: string;
    from: string;
    to: string;
    courier: string | null;
    sandbox: boolean;
    locked: boolean;
  };
  merchant: { id: string; name: string };
  created: TimeView;
  events: Array<{ at: TimeView; label: string; state: string; who: string; note: string | null }>;
  webhooks: Array<{ url: string; eventType: string; status: string; attempts: number; endpointHref: string }>;
  audit: Array<{ at: TimeView; who: string; action: string; reason: string | null }>;
  canAct: boolean;
  cancellable: boolean;
  advanceTo: Array<{ value: string; label: string }>;
  /** Assign (waiting) or reassign (assigned, not picked up) a live transfer: active couriers, online first. */
  assign: { reassign: boolean; couriers: Array<{ id: string; label: string }> } | null;
  error: string | null;
}

export async function opsTransfersPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('operator', CAN.read));
  const s = app.services;

  app.get('/', async (request, reply) => {
    const filters = {
      q: queryParam(request, 'q').slice(0, 300),
      merchant: queryParam(request, 'merchant'),
      state: queryParam(request, 'state'),
      from: queryParam(request, 'from'),
      to: queryParam(request, 'to'),
      tz: queryParam(request, 'tz'),
    };
    const merchants = await s.merchants.list();
    const names = new Map(merchants.map((m) => [m.id, m.name]));
    let rows: OpsTransferRow[] = [];
    let nextHref: string | null = null;
    let error: string | null = null;
    try {
      const merchantId = filters.merchant && names.has(filters.merchant) ? filters.merchant : undefined;
      if (filters.merchant && !merchantId) throw new Error('unknown merchant');
      const page = await s.transfers.searchAny({
        merchantId,
        q: filters.q || undefined,
        state: filters.state || undefined,
        createdFrom: filters.from ? dateStart(filters.from, filters.tz, 'From') : undefined,
        createdTo: filters.to ? dateStart(filters.to, filters.tz, 'To', true) : undefined,
        cursor: queryParam(request, 'cursor') || undefined,
        limit: 50,
      });
      rows = page.items.map((t) => ({
        id: t.id,
        href: `/ops/transfers/${t.id}`,
        created: timeView(t.createdAt),
        merchant: names.get(t.merchantId) ?? '',
        state: STATE_LABELS[t.state],
        tone: STATE_TONE[t.state],
        price: money(t.totalPrice, t.currency),
        recipient: `${t.recipientFullName}, ${t.recipientInfo.phone}`,
        sandbox: t.sandbox,
      }));
      if (page.nextCursor) {
        const q = new URLSearchParams({ ...filters, cursor: page.nextCursor });
        nextHref = `/ops/transfers?${q}`;
      }
    } catch (err) {
      error = err instanceof Error && err.message === 'unknown merchant' ? 'There is no such merchant.' : refusalMessage(err);
    }
    return render<OpsTransfersView>(
      reply,
      'ops/transfers/list.eta',
      {
        title: 'Transfers',
        rows,
        filters,
        merchants: merchants.map((m) => ({ id: m.id, name: m.name })),
        states: TRANSFER_STATES.map((v) => ({ value: v, label: STATE_LABELS[v] })),
        nextHref,
        error,
      },
      error ? 400 : 200,
    );
  });

  async function transferPage(request: FastifyRequest, reply: FastifyReply, id: string, error: string | null = null, status = 200) {
    const t = await s.transfers.getAny(id);
    const [merchant, events, audit] = await Promise.all([s.merchants.get(t.merchantId), s.transfers.eventsWithActors(id), s.audit.about('transfer', id)]);
    const webhooks = await s.webhooks.deliveriesOfEvents(events.map((e) => e.id));
    const names = new Map<string, string>();
    for (const e of events) {
      if (e.actor.type !== 'operator' || !e.actorId || names.has(e.actorId)) continue;
      if (e.actorId.startsWith('cli:')) names.set(e.actorId, `cli (${e.actorId.slice(4)})`);
      else {
        const p = await s.accounts.person(e.actorId);
        names.set(e.actorId, p ? `${p.name} (${p.role})` : 'an operator');
      }
    }
    const who = (e: (typeof events)[number]) =>
      e.actor.type === 'operator'
        ? `Operator ${e.actorId ? (names.get(e.actorId) ?? '') : ''}`.trim()
        : e.actor.type === 'courier'
          ? // The name kept with the event (older events: the current holder's, on its assignment).
            `Courier${e.actor.name ? ` ${e.actor.name}` : t.courier && e.type === 'transfer.courier_assigned' ? ` ${t.courier.firstName}` : ''}`
          : e.actor.type === 'merchant'
            ? `Merchant${e.actor.name ? ` (${e.actor.name}, in the dashboard)` : ''}`
            : 'System';
    const lock = await s.couriers.lockStateOf(id);
    // Assigning names a courier: its own form, not an advance.
    const advance = nextStates(t.state as TransferState, ['operator']).filter((st) => st !== 'cancelled' && st !== 'courierAssigned');
    const assignable = !t.sandbox && (t.state === 'inProgress' || t.state === 'courierAssigned') && may(request, CAN.support);
    const fleet = assignable ? (await s.couriers.fleet()).couriers.filter((c) => c.status === 'ACTIVE') : [];
    return render<OpsTransferView>(
      reply,
      'ops/transfers/transfer.eta',
      {
        title: `Transfer ${t.trackingCode.slice(0, 8)}…`,
        t: {
          id: t.id,
          state: STATE_LABELS[t.state],
          tone: STATE_TONE[t.state],
          trackingCode: t.trackingCode,
          trackingUrl: t.trackingUrl,
          transferCode: t.transferCode,
          price: money(t.totalPrice, t.currency),
          refunded: money(t.refundedAmount, t.currency),
          recipient: `${t.recipientFullName}, ${t.recipientInfo.phone}`,
          from: t.pickupAddress,
          to: t.destinationAddress,
          courier: t.courier?.firstName ?? null,
          sandbox: t.sandbox,
          locked: lock.locked,
        },
        merchant: { id: merchant.id, name: merchant.name },
        created: timeView(t.createdAt),
        events: events.map((e) => ({
          at: timeView(e.occurredAt),
          label: EVENT_LABELS[e.type] ?? e.type,
          state: e.state ? STATE_LABELS[e.state] : '',
          who: who(e),
          note: commentOf(e.data),
        })),
        webhooks: webhooks.map((w) => ({
          url: w.url,
          eventType: w.eventType,
          status: w.status,
          attempts: w.attempts,
          endpointHref: `/ops/webhooks/${w.endpointId}`,
        })),
        audit: audit.map((a) => ({ at: timeView(a.occurredAt), who: a.operator.label, action: a.action, reason: a.reason })),
        canAct: may(request, CAN.support),
        cancellable: !['delivered', 'returned', 'cancelled'].includes(t.state),
        advanceTo: advance.map((v) => ({ value: v, label: STATE_LABELS[v] })),
        assign: assignable
          ? {
              reassign: t.state === 'courierAssigned',
              couriers: fleet
                .sort((a, b) => Number(b.online) - Number(a.online) || a.name.localeCompare(b.name))
                .map((c) => ({
                  id: c.id,
                  label: `${c.name}, ${c.phone}${c.online ? ' (online)' : ' (offline)'}${c.jobs.length ? `, ${c.jobs.length} job(s)` : ''}`,
                })),
            }
          : null,
        error,
      },
      status,
    );
  }

  app.get<{ Params: { id: string } }>('/:id', async (request, reply) => transferPage(request, reply, request.params.id));

  // Support actions: support and admin only (finance is refused here even by a direct POST).
  const act = { preHandler: requirePerson('operator', CAN.support) };

  app.post<{ Params: { id: string } }>('/:id/cancel', act, async (request, reply) => {
    const id = request.params.id;
    try {
      const t = await s.transfers.operatorCancel(id, field(request, 'reason', { max: 600 }), actorOf(request));
      return redirectWithFlash(reply, `/ops/transfers/${id}`, `Cancelled: ${money(t.refundedAmount, t.currency)} refunded to the merchant.`);
    } catch (err) {
      return transferPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/advance', act, async (request, reply) => {
    const id = request.params.id;
    const to = field(request, 'to') as TransferState;
    try {
      if (!TRANSFER_STATES.includes(to)) throw new AppError('VALIDATION_FAILED', 'Choose the state to move it to');
      const t = await s.transfers.operatorAdvance(id, to, field(request, 'reason', { max: 600 }), actorOf(request));
      return redirectWithFlash(reply, `/ops/transfers/${id}`, `Moved to: ${STATE_LABELS[t.state]}.`);
    } catch (err) {
      return transferPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/unlock', act, async (request, reply) => {
    const id = request.params.id;
    try {
      await s.couriers.unlock(id, actorOf(request), field(request, 'reason', { max: 600 }));
      return redirectWithFlash(reply, `/ops/transfers/${id}`, 'Unlocked: the courier has 5 attempts at the code again.');
    } catch (err) {
      return transferPage(request, reply, id, refusalMessage(err), 422);
    }
  });

  // Assign a waiting transfer to a courier, or give an assigned one to another: the dispatch service, audited.
  app.post<{ Params: { id: string } }>('/:id/assign', act, async (request, reply) => {
    const id = request.params.id;
    try {
      const t = await s.dispatch.reassign(id, field(request, 'courier', { max: 100 }), field(request, 'reason', { max: 600 }), actorOf(request));
      return redirectWithFlash(reply, `/ops/transfers/${id}`, `Assigned to ${t.courier?.firstName ?? 'the courier'}.`);
    } catch (err) {
      return transferPage(request, reply, id, refusalMessage(err), 422);
    }
  });
}

function commentOf(data: object): string | null {
  const c = (data as { comment?: unknown }).comment;
  return typeof c === 'string' ? c : null;
}
