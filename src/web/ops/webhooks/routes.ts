import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { refusalMessage, type TimeView, timeView } from '../../dashboard/format.ts';
import { field } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { requirePerson } from '../../session.ts';
import { actorOf, CAN } from '../operator.ts';

/** Webhooks (support, admin): endpoints failing now, the outbox lag, an endpoint's attempts, replay (audited). */

export interface OpsWebhooksView {
  title: string;
  pending: number;
  due: number;
  lagSeconds: number;
  failing: Array<{ href: string; url: string; merchantHref: string; state: string; since: TimeView | null }>;
  endpoints: Array<{ href: string; url: string; merchantHref: string; status: string; pending: number }>;
}

export interface OpsEndpointView {
  title: string;
  e: { id: string; url: string; status: string; merchantHref: string };
  attempts: Array<{ at: TimeView; eventType: string; attempt: number; status: string; response: string }>;
  since: string;
  error: string | null;
}

export async function opsWebhooksPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('operator', CAN.support));
  const s = app.services;

  app.get('/', async (_request, reply) => {
    const [health, endpoints] = await Promise.all([s.webhooks.health(), s.webhooks.listAny()]);
    return render<OpsWebhooksView>(reply, 'ops/webhooks/webhooks.eta', {
      title: 'Webhooks',
      pending: health.pending,
      due: health.due,
      lagSeconds: health.lagSeconds,
      failing: health.failing.map((f) => ({
        href: `/ops/webhooks/${f.id}`,
        url: f.url,
        merchantHref: `/ops/merchants/${f.merchantId}`,
        state: f.status === 'DISABLED' ? `disabled (${f.disabledReason})` : 'failing',
        since: f.failingSince ? timeView(f.failingSince) : null,
      })),
      endpoints: endpoints.map((e) => ({
        href: `/ops/webhooks/${e.id}`,
        url: e.url,
        merchantHref: `/ops/merchants/${e.merchantId}`,
        status: e.status,
        pending: e.pending,
      })),
    });
  });

  async function endpointPage(request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply, error: string | null = null, status = 200) {
    const id = request.params.id;
    const endpoint = (await s.webhooks.listAny()).find((e) => e.id === id);
    if (!endpoint) throw new AppError('WEBHOOK_ENDPOINT_NOT_FOUND', `No endpoint ${id}`);
    const attempts = await s.webhooks.attempts(undefined, id, { limit: 50 });
    return render<OpsEndpointView>(
      reply,
      'ops/webhooks/endpoint.eta',
      {
        title: 'Webhook endpoint',
        e: { id, url: endpoint.url, status: endpoint.status, merchantHref: `/ops/merchants/${endpoint.merchantId}` },
        attempts: attempts.items.map((a) => ({
          at: timeView(a.attemptedAt),
          eventType: a.eventType,
          attempt: a.attempt,
          status: a.status,
          response: a.responseStatus !== null ? `HTTP ${a.responseStatus}` : (a.error ?? ''),
        })),
        since: new Date(Date.now() - 86_400_000).toISOString().slice(0, 16),
        error,
      },
      status,
    );
  }

  app.get<{ Params: { id: string } }>('/:id', async (request, reply) => endpointPage(request, reply));

  app.post<{ Params: { id: string } }>('/:id/replay', async (request, reply) => {
    try {
      const since = field(request, 'since', { max: 40 });
      const at = Date.parse(since.length === 16 ? `${since}:00Z` : since);
      if (Number.isNaN(at)) throw new AppError('VALIDATION_FAILED', 'Give the time to replay from, such as 2026-11-21T10:00');
      const r = await s.webhooks.replay(
        undefined,
        request.params.id,
        { since: new Date(at).toISOString() },
        actorOf(request),
        field(request, 'reason', { max: 600 }),
      );
      return redirectWithFlash(reply, `/ops/webhooks/${request.params.id}`, `${r.queued} event(s) queued again.`);
    } catch (err) {
      return endpointPage(request, reply, refusalMessage(err), 422);
    }
  });
}
