import { isIP } from 'node:net';
import type { Kysely } from 'kysely';
import { inTransaction } from '../../db/transaction.ts';
import type { DB } from '../../db/types.ts';
import { type Clock, iso } from '../../lib/clock.ts';
import { decodeTimeCursor, encodeTimeCursor } from '../../lib/cursor.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type AuditService, checkReason, type OperatorActor } from '../audit/service.ts';
import { eventsRepository } from '../events/repository.ts';
import { checkDestination, DestinationRefused, hostOf, type Resolver } from './destination.ts';
import { type AttemptRow, type EndpointRow, webhooksRepository } from './repository.ts';
import type {
  AttemptListQuery,
  Queued,
  RedeliverRequest,
  ReplayRequest,
  WebhookAttempt,
  WebhookEndpoint,
  WebhookEndpointInput,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
} from './schemas.ts';
import { newSecret } from './signing.ts';

export interface WebhooksOptions {
  allowPrivate: boolean;
  maxEndpointsPerMerchant?: number;
  resolve?: Resolver;
  /** Where operators' replays are audited. */
  audit?: AuditService;
}

/** Old and new secrets both sign for this long after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
const REPLAY_LIMIT = 10_000;

/** Endpoint management for merchants (tenant-scoped) and operators (unscoped reads and replays). */
export class WebhooksService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #opts: Required<Omit<WebhooksOptions, 'resolve' | 'audit'>> & { resolve?: Resolver; audit?: AuditService };

  get #audit(): AuditService | undefined {
    return this.#opts.audit;
  }

  constructor(db: Kysely<DB>, clock: Clock, opts: WebhooksOptions) {
    this.#db = db;
    this.#clock = clock;
    this.#opts = { maxEndpointsPerMerchant: 20, ...opts };
  }

  async create(merchantId: string, input: WebhookEndpointInput): Promise<WebhookEndpointWithSecret> {
    const url = await this.#checkUrl(input.url);
    if ((await webhooksRepository.countEndpoints(this.#db, merchantId)) >= this.#opts.maxEndpointsPerMerchant) {
      throw new AppError('WEBHOOK_ENDPOINT_LIMIT_REACHED', `A merchant can have at most ${this.#opts.maxEndpointsPerMerchant} webhook endpoints`);
    }
    const now = this.#clock.now();
    const row: EndpointRow = {
      id: newId(),
      merchant_id: merchantId,
      url,
      description: input.description ?? null,
      event_types: input.eventTypes ? JSON.stringify(input.eventTypes) : null,
      status: 'ENABLED',
      disabled_reason: null,
      secret: newSecret(),
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    };
    await webhooksRepository.insertEndpoint(this.#db, row);
    return { ...toEndpoint(row), secret: row.secret };
  }

  async list(merchantId: string): Promise<WebhookEndpoint[]> {
    return (await webhooksRepository.listEndpoints(this.#db, merchantId)).map(toEndpoint);
  }

  /** Every merchant's endpoints, or one merchant's (operators). */
  async listAny(merchantId?: string): Promise<Array<WebhookEndpoint & { merchantId: string; pending: number }>> {
    const rows = await webhooksRepository.listEndpoints(this.#db, merchantId);
    const pending = await this.#db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', '=', 'pending')
      .groupBy('endpoint_id')
      .execute();
    const byEndpoint = new Map(pending.map((p) => [p.endpoint_id, Number(p.n)]));
    return rows.map((r) => ({ ...toEndpoint(r), merchantId: r.merchant_id, pending: byEndpoint.get(r.id) ?? 0 }));
  }

  async get(merchantId: string, id: string): Promise<WebhookEndpoint> {
    return toEndpoint(await this.#require(merchantId, id));
  }

  /** PUT: replaces url, eventTypes, description and status (omitted optionals are cleared; status defaults to ENABLED). */
  async replace(merchantId: string, id: string, input: WebhookEndpointUpdate): Promise<WebhookEndpoint> {
    const current = await this.#require(merchantId, id);
    const url = input.url === current.url ? current.url : await this.#checkUrl(input.url);
    const status = input.status ?? 'ENABLED';
    const row = await webhooksRepository.updateEndpoint(this.#db, merchantId, id, {
      url,
      description: input.description ?? null,
      event_types: input.eventTypes ? JSON.stringify(input.eventTypes) : null,
      status,
      disabled_reason: status === 'DISABLED' ? (current.status === 'DISABLED' ? current.disabled_reason : 'MERCHANT') : null,
      // Enabled again: a fresh start, not 5 days of failures remembered.
      ...(status === 'ENABLED' && current.status === 'DISABLED' ? { failing_since: null } : {}),
      updated_at: this.#clock.now(),
    });
    if (!row) throw notFound(id);
    return toEndpoint(row);
  }

  async delete(merchantId: string, id: string): Promise<void> {
    const deleted = await inTransaction(this.#db, (trx) => webhooksRepository.deleteEndpoint(trx, merchantId, id));
    if (!deleted) throw notFound(id);
  }

  /** A new secret; the old one keeps signing (both signatures are sent) for 24 h, so receivers can switch without losing a message. */
  async rotateSecret(merchantId: string, id: string): Promise<WebhookEndpointWithSecret> {
    const current = await this.#require(merchantId, id);
    const now = this.#clock.now();
    const secret = newSecret();
    const row = await webhooksRepository.updateEndpoint(this.#db, merchantId, id, {
      secret,
      previous_secret: current.secret,
      previous_secret_expires_at: now + ROTATION_OVERLAP_MS,
      updated_at: now,
    });
    if (!row) throw notFound(id);
    return { ...toEndpoint(row), secret };
  }

  /** Queues a webhook.test message to this endpoint (whatever its event types). */
  async sendTest(merchantId: string, id: string): Promise<Queued> {
    const endpoint = await this.#require(merchantId, id);
    const now = this.#clock.now();
    const messageId = newId();
    const payload = JSON.stringify({ type: 'webhook.test', timestamp: iso(now), data: { endpointId: endpoint.id } });
    const queued = await inTransaction(this.#db, (trx) =>
      webhooksRepository.fanOut(trx, { merchantId, messageId, type: 'webhook.test', eventPosition: null, payload, at: now }, { only: endpoint.id }),
    );
    if (queued === 0) throw disabled(endpoint);
    return { queued, webhookId: messageId };
  }

  /**
   * Operators: the outbox's health (deliveries pending, due now, and how long the oldest due one has
   * waited: the lag) and the endpoints failing now (failing since a time, or disabled by the service).
   */
  async health(): Promise<{
    pending: number;
    due: number;
    lagSeconds: number;
    failing: Array<{ id: string; merchantId: string; url: string; status: string; disabledReason: string | null; failingSince: string | null }>;
  }> {
    const now = this.#clock.now();
    const summary = await webhooksRepository.dueSummary(this.#db, now);
    const rows = await webhooksRepository.listEndpoints(this.#db, undefined);
    return {
      pending: summary.pending,
      due: summary.due,
      lagSeconds: summary.oldestDueAt === null ? 0 : Math.max(0, Math.round((now - summary.oldestDueAt) / 1000)),
      failing: rows
        .filter((r) => r.failing_since !== null || (r.status === 'DISABLED' && r.disabled_reason !== 'MERCHANT'))
        .map((r) => ({
          id: r.id,
          merchantId: r.merchant_id,
          url: r.url,
          status: r.status,
          disabledReason: r.disabled_reason,
          failingSince: r.failing_since === null ? null : new Date(Number(r.failing_since)).toISOString(),
        })),
    };
  }

  /** Operators: what was sent (or is queued) to any endpoint for these events, e.g. one transfer's timeline. */
  async deliveriesOfEvents(
    eventIds: string[],
  ): Promise<Array<{ id: string; endpointId: string; url: string; eventType: string; eventId: string; status: string; attempts: number; updatedAt: string }>> {
    return (await webhooksRepository.deliveriesOfMessages(this.#db, eventIds)).map((d) => ({
      id: d.id,
      endpointId: d.endpoint_id,
      url: d.url,
      eventType: d.event_type,
      eventId: d.message_id,
      status: d.status,
      attempts: d.attempts,
      updatedAt: new Date(Number(d.updated_at)).toISOString(),
    }));
  }

  /** Delivers again every event since `since` (same webhook-id: receivers that kept it ignore it). */
  async replay(merchantId: string | undefined, id: string, req: ReplayRequest, by?: OperatorActor, reason?: string): Promise<Queued> {
    const why = by ? checkReason(reason) : null;
    const endpoint = merchantId === undefined ? await webhooksRepository.findEndpointAny(this.#db, id) : await this.#require(merchantId, id);
    if (!endpoint) throw notFound(id);
    if (endpoint.status !== 'ENABLED') throw disabled(endpoint);
    const queued = await inTransaction(this.#db, async (trx) => {
      const n = await webhooksRepository.replay(
        trx,
        endpoint,
        await eventsRepository.since(trx, endpoint.merchant_id, Date.parse(req.since), REPLAY_LIMIT),
        this.#clock.now(),
      );
      if (by) {
        await this.#audit?.record(trx, by, {
          action: 'webhook.replay',
          subjectType: 'webhook_endpoint',
          subjectId: endpoint.id,
          merchantId: endpoint.merchant_id,
          reason: why,
          after: { since: req.since, queued: n },
        });
      }
      return n;
    });
    return { queued };
  }

  async redeliver(merchantId: string, id: string, req: RedeliverRequest): Promise<Queued> {
    const endpoint = await this.#require(merchantId, id);
    if (endpoint.status !== 'ENABLED') throw disabled(endpoint);
    const event = await eventsRepository.find(this.#db, merchantId, req.eventId);
    if (!event) throw new AppError('EVENT_NOT_FOUND', `No event ${req.eventId}`);
    const now = this.#clock.now();
    const queued = await inTransaction(this.#db, (trx) =>
      webhooksRepository.fanOut(
        trx,
        { merchantId, messageId: event.id, type: event.type, eventPosition: Number(event.position), payload: null, at: now },
        { only: endpoint.id },
      ),
    );
    return { queued };
  }

  /** Attempts to one endpoint, newest first (merchantId undefined: operators). */
  async attempts(merchantId: string | undefined, id: string, query: AttemptListQuery): Promise<{ items: WebhookAttempt[]; nextCursor?: string }> {
    const endpoint = merchantId === undefined ? await webhooksRepository.findEndpointAny(this.#db, id) : await this.#require(merchantId, id);
    if (!endpoint) throw notFound(id);
    const limit = query.limit ?? 50;
    const before = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor);
    const rows = await webhooksRepository.attempts(this.#db, endpoint.id, before, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(toAttempt), ...(rows.length > limit ? { nextCursor: encodeTimeCursor(last) } : {}) };
  }

  async #require(merchantId: string, id: string): Promise<EndpointRow> {
    const row = await webhooksRepository.findEndpoint(this.#db, merchantId, id);
    if (!row) throw notFound(id);
    return row;
  }

  /**
   * Registration check: an absolute http(s) URL without credentials; https unless private destinations
   * are allowed (development); the host resolves, and not to a refused address. The same check runs
   * again at every send (DNS can change), this one only answers early.
   */
  async #checkUrl(raw: string): Promise<string> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw refused(raw, 'it is not an absolute URL');
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.#opts.allowPrivate)) throw refused(raw, 'use https');
    if (url.username || url.password) throw refused(raw, 'credentials in the URL would be sent in clear; authenticate with the signature instead');
    if (url.hash) throw refused(raw, 'no fragment');
    const host = hostOf(url);
    if (!isIP(host) && !/^[a-z0-9.-]+$/i.test(host)) throw refused(raw, 'the host name is not valid');
    try {
      await checkDestination(url, this.#opts.allowPrivate, this.#opts.resolve);
    } catch (err) {
      if (err instanceof DestinationRefused) throw refused(raw, err.message);
      throw err;
    }
    return url.href;
  }
}

function refused(url: string, why: string): AppError {
  return new AppError('WEBHOOK_URL_REFUSED', `The webhook URL ${url} is refused: ${why}`);
}

function notFound(id: string): AppError {
  return new AppError('WEBHOOK_ENDPOINT_NOT_FOUND', `No webhook endpoint ${id}`);
}

function disabled(e: EndpointRow): AppError {
  return new AppError('WEBHOOK_ENDPOINT_DISABLED', `Webhook endpoint ${e.id} is disabled (${e.disabled_reason}); enable it with PUT first`);
}

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    eventTypes: row.event_types === null ? null : (JSON.parse(row.event_types) as string[]),
    description: row.description,
    status: row.status,
    disabledReason: row.disabled_reason as WebhookEndpoint['disabledReason'],
    previousSecretExpiresAt: row.previous_secret_expires_at === null ? null : iso(Number(row.previous_secret_expires_at)),
    createdAt: iso(Number(row.created_at)),
    updatedAt: iso(Number(row.updated_at)),
  };
}

function toAttempt(r: AttemptRow): WebhookAttempt {
  return {
    id: r.id,
    deliveryId: r.delivery_id,
    webhookId: r.message_id,
    eventType: r.event_type,
    attempt: Number(r.attempt),
    status: r.status,
    responseStatus: r.response_status === null ? null : Number(r.response_status),
    responseBody: r.response_body,
    error: r.error,
    durationMs: Number(r.duration_ms),
    attemptedAt: iso(Number(r.created_at)),
    nextAttemptAt: r.next_attempt_at === null ? null : iso(Number(r.next_attempt_at)),
  };
}
