import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { compileStrict } from '../../../lib/validation.ts';
import { SUBSCRIBABLE_TYPES, type WebhookEndpointInput, WebhookEndpointUpdate } from '../../../modules/webhooks/schemas.ts';
import { field, queryParam } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { merchantOf, requirePerson } from '../../session.ts';
import { EVENT_LABELS, localDateTime, refusalMessage, type TimeView, timeView } from '../format.ts';

/**
 * Developers (admins only, checked on the server for every route): API credentials (create with the
 * secret shown once, revoke) and webhook endpoints (create with the secret shown once, edit, rotate,
 * send a test, the attempts log, replay since a time, redeliver one event). The same services as the
 * CLI and the webhook API: CredentialsService, WebhooksService.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface DevelopersView {
  title: string;
  credentials: Array<{ clientId: string; status: string; active: boolean; created: TimeView; revoked: TimeView | null }>;
  endpoints: Array<{ id: string; href: string; url: string; description: string | null; status: string; enabled: boolean; created: TimeView }>;
  eventTypes: Array<{ value: string; label: string; checked: boolean }>;
  form: { url: string; description: string };
  tokenUrl: string;
  error: string | null;
}

export interface SecretView {
  title: string;
  what: 'credential' | 'endpoint';
  clientId: string | null;
  secret: string;
  endpointHref: string | null;
  tokenUrl: string;
}

export interface EndpointView {
  title: string;
  e: { id: string; url: string; description: string; status: string; enabled: boolean; disabledReason: string | null; rotatedUntil: TimeView | null };
  eventTypes: Array<{ value: string; label: string; checked: boolean }>;
  allTypes: boolean;
  attempts: Array<{ at: TimeView; event: string; webhookId: string; attempt: number; ok: boolean; code: string; error: string | null; durationMs: number }>;
  nextHref: string | null;
  firstHref: string | null;
  error: string | null;
}

const checkUpdate = compileStrict<WebhookEndpointUpdate>(WebhookEndpointUpdate);

const typeOptions = (selected: string[] | null) =>
  SUBSCRIBABLE_TYPES.map((v) => ({ value: v, label: EVENT_LABELS[v] ? `${v} (${EVENT_LABELS[v]})` : v, checked: selected?.includes(v) ?? false }));

/** The endpoint fields of a form: url, description, the checked event types (none checked: every type), status. */
function endpointBody(request: FastifyRequest, withStatus: boolean): WebhookEndpointUpdate {
  const body = request.body as Record<string, unknown>;
  const raw = body?.eventTypes;
  const types = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((v): v is string => typeof v === 'string');
  const description = field(request, 'description', { max: 600 });
  const input = {
    url: field(request, 'url', { max: 3000 }),
    eventTypes: types.length ? types : null,
    description: description || null,
    ...(withStatus ? { status: field(request, 'status') === 'DISABLED' ? 'DISABLED' : 'ENABLED' } : {}),
  };
  const checked = checkUpdate(input);
  if (!checked.ok) {
    const said = checked.errors.map((e) =>
      e
        .replace(/^\/url/, 'URL')
        .replace(/^\/description/, 'Description')
        .replace(/^\/eventTypes(\/\d+)?/, 'Event types'),
    );
    throw new AppError('VALIDATION_FAILED', `Please check: ${said.join('; ')}.`);
  }
  return checked.value;
}

export async function developersPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('merchant', ['admin']));
  const s = app.services;
  const tokenUrl = () => `${(app.webConfig.publicBaseUrl ?? '').replace(/\/$/, '')}/auth/token`;

  async function overview(
    request: FastifyRequest,
    reply: FastifyReply,
    error: string | null,
    status = 200,
    form = { url: '', description: '' },
    types: string[] | null = null,
  ) {
    const me = merchantOf(request);
    const [credentials, endpoints] = await Promise.all([s.credentials.list(me.merchantId), s.webhooks.list(me.merchantId)]);
    return render<DevelopersView>(
      reply,
      'dashboard/developers/developers.eta',
      {
        title: 'Developers',
        credentials: credentials.map((c) => ({
          clientId: c.clientId,
          status: c.status === 'ACTIVE' ? 'Active' : 'Revoked',
          active: c.status === 'ACTIVE',
          created: timeView(c.createdAt),
          revoked: c.revokedAt ? timeView(c.revokedAt) : null,
        })),
        endpoints: endpoints.map((e) => ({
          id: e.id,
          href: `/dashboard/developers/webhooks/${e.id}`,
          url: e.url,
          description: e.description,
          status: e.status === 'ENABLED' ? 'Enabled' : `Disabled${e.disabledReason ? ` (${e.disabledReason.toLowerCase().replace(/_/g, ' ')})` : ''}`,
          enabled: e.status === 'ENABLED',
          created: timeView(e.createdAt),
        })),
        eventTypes: typeOptions(types),
        form,
        tokenUrl: tokenUrl(),
        error,
      },
      status,
    );
  }

  app.get('/', async (request, reply) => overview(request, reply, null));

  // The secret is shown on this answer only (it is stored hashed, or never shown again): no redirect.
  app.post('/credentials', async (request, reply) => {
    const me = merchantOf(request);
    const issued = await s.credentials.issue(me.merchantId);
    return render<SecretView>(reply, 'dashboard/developers/secret.eta', {
      title: 'New API credential',
      what: 'credential',
      clientId: issued.clientId,
      secret: issued.clientSecret,
      endpointHref: null,
      tokenUrl: tokenUrl(),
    });
  });

  app.post<{ Params: { clientId: string } }>('/credentials/:clientId/revoke', async (request, reply) => {
    const me = merchantOf(request);
    try {
      await s.credentials.revokeOwn(me.merchantId, request.params.clientId);
    } catch (err) {
      return overview(request, reply, refusalMessage(err), err instanceof AppError ? err.status : 400);
    }
    return redirectWithFlash(reply, '/dashboard/developers', `Credential ${request.params.clientId} revoked: its tokens stop working now.`);
  });

  app.post('/webhooks', async (request, reply) => {
    const me = merchantOf(request);
    let body: WebhookEndpointUpdate | undefined;
    try {
      body = endpointBody(request, false);
      const created = await s.webhooks.create(me.merchantId, body as WebhookEndpointInput);
      return render<SecretView>(reply, 'dashboard/developers/secret.eta', {
        title: 'New webhook endpoint',
        what: 'endpoint',
        clientId: null,
        secret: created.secret,
        endpointHref: `/dashboard/developers/webhooks/${created.id}`,
        tokenUrl: tokenUrl(),
      });
    } catch (err) {
      const message = refusalMessage(err);
      return overview(
        request,
        reply,
        message,
        err instanceof AppError ? err.status : 400,
        { url: field(request, 'url', { max: 3000 }), description: field(request, 'description', { max: 600 }) },
        body?.eventTypes ?? null,
      );
    }
  });

  async function endpointPage(request: FastifyRequest, reply: FastifyReply, id: string, error: string | null, status = 200) {
    const me = merchantOf(request);
    if (!UUID.test(id)) throw new AppError('WEBHOOK_ENDPOINT_NOT_FOUND', `No webhook endpoint ${id}`);
    const e = await s.webhooks.get(me.merchantId, id);
    const cursor = queryParam(request, 'cursor');
    let attempts: Awaited<ReturnType<typeof s.webhooks.attempts>> = { items: [] };
    try {
      attempts = await s.webhooks.attempts(me.merchantId, id, { limit: 25, cursor: cursor || undefined });
    } catch (err) {
      error ??= refusalMessage(err);
      status = 400;
    }
    const base = `/dashboard/developers/webhooks/${id}`;
    return render<EndpointView>(
      reply,
      'dashboard/developers/endpoint.eta',
      {
        title: 'Webhook endpoint',
        e: {
          id: e.id,
          url: e.url,
          description: e.description ?? '',
          status: e.status,
          enabled: e.status === 'ENABLED',
          disabledReason: e.disabledReason ? e.disabledReason.toLowerCase().replace(/_/g, ' ') : null,
          rotatedUntil: e.previousSecretExpiresAt ? timeView(e.previousSecretExpiresAt) : null,
        },
        eventTypes: typeOptions(e.eventTypes),
        allTypes: e.eventTypes === null,
        attempts: attempts.items.map((a) => ({
          at: timeView(a.attemptedAt),
          event: a.eventType,
          webhookId: a.webhookId,
          attempt: a.attempt,
          ok: a.status === 'succeeded',
          code: a.responseStatus === null ? 'no answer' : String(a.responseStatus),
          error: a.error,
          durationMs: a.durationMs,
        })),
        nextHref: attempts.nextCursor ? `${base}?cursor=${encodeURIComponent(attempts.nextCursor)}` : null,
        firstHref: cursor ? base : null,
        error,
      },
      status,
    );
  }

  app.get<{ Params: { id: string } }>('/webhooks/:id', async (request, reply) => endpointPage(request, reply, request.params.id, null));

  /** An endpoint action: the service call, then back to the endpoint's page with a message, or the page again with the refusal. */
  const action = (run: (merchantId: string, id: string, request: FastifyRequest) => Promise<string>) =>
    async function endpointAction(request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) {
      const me = merchantOf(request);
      const { id } = request.params;
      if (!UUID.test(id)) throw new AppError('WEBHOOK_ENDPOINT_NOT_FOUND', `No webhook endpoint ${id}`);
      try {
        const flash = await run(me.merchantId, id, request);
        return redirectWithFlash(reply, `/dashboard/developers/webhooks/${id}`, flash);
      } catch (err) {
        const message = refusalMessage(err);
        if (err instanceof AppError && err.status === 404 && err.code === 'WEBHOOK_ENDPOINT_NOT_FOUND') throw err;
        return endpointPage(request, reply, id, message, err instanceof AppError ? err.status : 400);
      }
    };

  app.post<{ Params: { id: string } }>(
    '/webhooks/:id',
    action(async (merchantId, id, request) => {
      await s.webhooks.replace(merchantId, id, endpointBody(request, true));
      return 'Endpoint saved.';
    }),
  );
  app.post<{ Params: { id: string } }>(
    '/webhooks/:id/test',
    action(async (merchantId, id) => {
      const q = await s.webhooks.sendTest(merchantId, id);
      return `Test message ${q.webhookId} queued: it appears in the attempts below within a few seconds.`;
    }),
  );
  app.post<{ Params: { id: string } }>(
    '/webhooks/:id/replay',
    action(async (merchantId, id, request) => {
      const since = localDateTime(field(request, 'since', { max: 40 }), field(request, 'tz', { max: 6 }), 'since');
      const q = await s.webhooks.replay(merchantId, id, { since });
      return `${q.queued} event${q.queued === 1 ? '' : 's'} since ${since} queued again.`;
    }),
  );
  app.post<{ Params: { id: string } }>(
    '/webhooks/:id/redeliver',
    action(async (merchantId, id, request) => {
      const eventId = field(request, 'eventId', { max: 100 }).toLowerCase();
      if (!UUID.test(eventId))
        throw new AppError('VALIDATION_FAILED', 'The event id is a UUID such as 0193a1b2-…: copy it from the attempts log or the transfer timeline');
      await s.webhooks.redeliver(merchantId, id, { eventId });
      return `Event ${eventId} queued again.`;
    }),
  );
  // Rotation shows the new secret once, like creation.
  app.post<{ Params: { id: string } }>('/webhooks/:id/rotate', async (request, reply) => {
    const me = merchantOf(request);
    const { id } = request.params;
    if (!UUID.test(id)) throw new AppError('WEBHOOK_ENDPOINT_NOT_FOUND', `No webhook endpoint ${id}`);
    const rotated = await s.webhooks.rotateSecret(me.merchantId, id);
    return render<SecretView>(reply, 'dashboard/developers/secret.eta', {
      title: 'New signing secret',
      what: 'endpoint',
      clientId: null,
      secret: rotated.secret,
      endpointHref: `/dashboard/developers/webhooks/${id}`,
      tokenUrl: tokenUrl(),
    });
  });
}
