import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TRANSFER_STATES, type TransferState } from '../../../db/types.ts';
import { AppError } from '../../../lib/errors.ts';
import { sha256, stableStringify } from '../../../lib/stable-json.ts';
import { compileStrict } from '../../../lib/validation.ts';
import { keyOutcome } from '../../../modules/idempotency/outcome.ts';
import { QuoteRequest } from '../../../modules/quotes/schemas.ts';
import { DELIVERY_TYPES, PARCEL_SIZES } from '../../../modules/tariffs/schemas.ts';
import { fitToBox } from '../../../modules/tracking/service.ts';
import { CANCELLATION_REASONS, DELIVERY_FAILURE_REASONS, nextStates } from '../../../modules/transfers/lifecycle.ts';
import { type Transfer, TransferRequest } from '../../../modules/transfers/schemas.ts';
import { field, queryParam } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { type MerchantUser, merchantOf, personOf, requirePerson } from '../../session.ts';
import { CANCELLATION_REASON_LABELS, dateStart, EVENT_LABELS, money, refusalMessage, STATE_LABELS, STATE_TONE, type TimeView, timeView } from '../format.ts';

/**
 * Deliveries: the list (filters, one search box, pages), a delivery's page (timeline, map drawing,
 * tracking link, money, Cancel, the sandbox's Advance) and New delivery (quote, pick a product, pay).
 * Every action is the API's service call: QuotesService.create as POST /options, TransfersService.create
 * as POST /transfer (with an Idempotency-Key from the form), cancel and sandboxAdvance as theirs.
 */

const PAGE_SIZE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface Option {
  value: string;
  label: string;
  selected: boolean;
}

export interface DeliveryRowView {
  href: string;
  id: string;
  shortId: string;
  created: TimeView;
  state: string;
  tone: string;
  recipient: string;
  phone: string;
  destination: string;
  warehouse: string;
  price: string;
}

export interface DeliveriesListView {
  title: string;
  filters: { state: string; warehouseId: string; from: string; to: string; q: string; tz: string };
  states: Option[];
  warehouses: Option[];
  rows: DeliveryRowView[];
  filtered: boolean;
  nextHref: string | null;
  firstHref: string | null;
  error: string | null;
}

export interface TimelineItem {
  label: string;
  at: TimeView;
  by: string;
  detail: string | null;
}

export interface DeliveryView {
  title: string;
  t: Transfer;
  state: string;
  tone: string;
  created: TimeView;
  warehouse: string;
  trackingUrl: string;
  price: string;
  refunded: string;
  entries: Array<{ kind: string; amount: string; at: TimeView; balanceAfter: string }>;
  timeline: TimelineItem[];
  map: { pickup: { x: number; y: number }; destination: { x: number; y: number }; label: string };
  cancel: { refund: string; feeKept: string; reasons: Option[] } | null;
  cancellation: { reason: string; comment: string | null; refund: string; at: TimeView } | null;
  advance: { targets: Option[]; reasons: Option[] } | null;
  error: string | null;
}

export interface NewDeliveryView {
  title: string;
  warehouses: Option[];
  sizes: Option[];
  types: Option[];
  form: { address: string; lat: string; lng: string; fragile: boolean; perishable: boolean };
  error: string | null;
}

export interface ChooseView {
  title: string;
  quoteId: string;
  expires: TimeView;
  from: string;
  to: string;
  distanceKm: string;
  products: Array<{ key: string; name: string; price: string; fees: string; available: boolean; why: string | null; checked: boolean }>;
  form: { firstName: string; lastName: string; phone: string; description: string };
  idempotencyKey: string;
  error: string | null;
}

const checkTransfer = compileStrict<TransferRequest>(TransferRequest);
const checkQuote = compileStrict<QuoteRequest>(QuoteRequest);

/** The API schema's refusal as a sentence naming the form's fields. */
function invalid(errors: string[], labels: Record<string, string>): AppError {
  const said = errors.map((e) => {
    const [path, ...rest] = e.split(' ');
    const label = Object.entries(labels).find(([p]) => path.startsWith(p))?.[1] ?? path;
    return `${label} ${rest.join(' ')}`;
  });
  return new AppError('VALIDATION_FAILED', `Please check: ${said.join('; ')}.`);
}

const options = (values: readonly string[], labels: Record<string, string> | ((v: string) => string), selected: string): Option[] =>
  values.map((v) => ({ value: v, label: typeof labels === 'function' ? labels(v) : (labels[v] ?? v), selected: v === selected }));

export async function deliveriesPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('merchant'));
  const s = app.services;

  async function warehouseNames(merchantId: string): Promise<Map<string, { name: string; active: boolean }>> {
    const page = await s.warehouses.list(merchantId, {});
    return new Map(page.items.map((w) => [w.id, { name: w.name, active: w.status === 'ACTIVE' }]));
  }

  // ------------------------------------------------------------------ the list

  app.get('/', async (request, reply) => {
    const me = merchantOf(request);
    const f = {
      state: queryParam(request, 'state'),
      warehouseId: queryParam(request, 'warehouseId'),
      from: queryParam(request, 'from'),
      to: queryParam(request, 'to'),
      q: queryParam(request, 'q').trim(),
      tz: queryParam(request, 'tz'),
    };
    const cursor = queryParam(request, 'cursor');
    const names = await warehouseNames(me.merchantId);
    let error: string | null = null;
    let page: { items: Transfer[]; nextCursor?: string } = { items: [] };
    try {
      page = await s.transfers.search(me.merchantId, {
        state: f.state || undefined,
        warehouseId: f.warehouseId || undefined,
        createdFrom: f.from ? dateStart(f.from, f.tz, 'from') : undefined,
        createdTo: f.to ? dateStart(f.to, f.tz, 'to', true) : undefined,
        q: f.q || undefined,
        cursor: cursor || undefined,
        limit: PAGE_SIZE,
      });
    } catch (err) {
      error = refusalMessage(err);
    }
    const keep = new URLSearchParams(Object.entries(f).filter(([, v]) => v !== ''));
    const href = (extra: Record<string, string>) => {
      const q = new URLSearchParams(keep);
      for (const [k, v] of Object.entries(extra)) q.set(k, v);
      const text = q.toString();
      return `/dashboard/deliveries${text ? `?${text}` : ''}`;
    };
    return render<DeliveriesListView>(
      reply,
      'dashboard/deliveries/list.eta',
      {
        title: 'Deliveries',
        filters: f,
        states: options(TRANSFER_STATES, STATE_LABELS, f.state),
        warehouses: [...names].map(([id, w]) => ({ value: id, label: w.name, selected: id === f.warehouseId })),
        rows: page.items.map((t) => ({
          href: `/dashboard/deliveries/${t.id}`,
          id: t.id,
          shortId: t.id.slice(-8),
          created: timeView(t.createdAt),
          state: STATE_LABELS[t.state],
          tone: STATE_TONE[t.state],
          recipient: t.recipientFullName,
          phone: t.recipientInfo.phone,
          destination: t.destinationAddress,
          warehouse: names.get(t.warehouseId)?.name ?? String((t.senderInfo as { warehouseName?: string }).warehouseName ?? ''),
          price: money(t.totalPrice, t.currency),
        })),
        filtered: keep.size > 0 && !(keep.size === 1 && keep.has('tz')),
        nextHref: page.nextCursor ? href({ cursor: page.nextCursor }) : null,
        firstHref: cursor ? href({}) : null,
        error,
      },
      error ? 400 : 200,
    );
  });

  // ------------------------------------------------------------------ new delivery

  async function newForm(
    reply: FastifyReply,
    merchantId: string,
    form: NewDeliveryView['form'] & { warehouseId: string; size: string; type: string },
    error: string | null,
    status = 200,
  ) {
    const names = await warehouseNames(merchantId);
    return render<NewDeliveryView>(
      reply,
      'dashboard/deliveries/new.eta',
      {
        title: 'New delivery',
        warehouses: [...names].filter(([, w]) => w.active).map(([id, w]) => ({ value: id, label: w.name, selected: id === form.warehouseId })),
        sizes: options(PARCEL_SIZES, (v) => v.charAt(0) + v.slice(1).toLowerCase(), form.size || 'SMALL'),
        types: options(DELIVERY_TYPES, { DOOR_TO_DOOR: 'To the door', CURBSIDE: 'To the curb' }, form.type || 'DOOR_TO_DOOR'),
        form,
        error,
      },
      status,
    );
  }

  app.get('/new', async (request, reply) =>
    newForm(
      reply,
      merchantOf(request).merchantId,
      { warehouseId: '', size: '', type: '', address: '', lat: '', lng: '', fragile: false, perishable: false },
      null,
    ),
  );

  // Step 1: price every product (POST /options), then show them (post/redirect/get).
  app.post('/new', async (request, reply) => {
    const me = merchantOf(request);
    const form = {
      warehouseId: field(request, 'warehouseId'),
      size: field(request, 'parcelSize'),
      type: field(request, 'deliveryType'),
      address: field(request, 'address', { max: 500 }),
      lat: field(request, 'lat', { max: 40 }),
      lng: field(request, 'lng', { max: 40 }),
      fragile: field(request, 'isFragile') === 'on',
      perishable: field(request, 'isPerishable') === 'on',
    };
    try {
      const number = (v: string) => (/^-?\d{1,3}(\.\d{1,10})?$/.test(v) ? Number(v) : Number.NaN);
      if (!form.warehouseId) throw new AppError('VALIDATION_FAILED', 'Choose a warehouse to pick up from (add one on the Warehouses page first).');
      if (Number.isNaN(number(form.lat)) || Number.isNaN(number(form.lng))) {
        throw new AppError('VALIDATION_FAILED', 'Latitude and longitude must be numbers such as 55.7339 and 37.5886.');
      }
      const body = {
        warehouseId: form.warehouseId,
        destinationLocation: { display_name: form.address, lat: number(form.lat), lng: number(form.lng) },
        parcelSize: form.size,
        deliveryType: form.type,
        isFragile: form.fragile,
        isPerishable: form.perishable,
      };
      const checked = checkQuote(body);
      if (!checked.ok) {
        throw invalid(checked.errors, {
          '/warehouseId': 'Warehouse',
          '/destinationLocation/display_name': 'Address',
          '/destinationLocation/lat': 'Latitude',
          '/destinationLocation/lng': 'Longitude',
          '/parcelSize': 'Parcel size',
          '/deliveryType': 'Delivery type',
        });
      }
      const quote = await s.quotes.create(me.merchantId, checked.value, undefined, personOf(me));
      return reply.redirect(`/dashboard/deliveries/new/${quote.id}`, 303);
    } catch (err) {
      const message = refusalMessage(err);
      return newForm(reply, me.merchantId, form, message, err instanceof AppError ? err.status : 400);
    }
  });

  async function chooseForm(
    reply: FastifyReply,
    merchantId: string,
    quoteId: string,
    form: ChooseView['form'] & { productKey: string; idempotencyKey?: string },
    error: string | null,
    status = 200,
  ) {
    const q = await s.quotes.get(merchantId, quoteId);
    if (q.status === 'consumed') return reply.redirect(`/dashboard/deliveries/${q.transfer_id}`, 303);
    const keys = Object.keys(q.products);
    const firstAvailable = keys.find((k) => q.products[k].status === 'AVAILABLE') ?? '';
    const chosen = form.productKey || firstAvailable;
    return render<ChooseView>(
      reply,
      'dashboard/deliveries/choose.eta',
      {
        title: 'New delivery: choose and pay',
        quoteId: q.id,
        expires: timeView(q.expiresAt),
        from: `${q.pickup.name}, ${q.pickup.address}`,
        to: q.request.destinationLocation.display_name ?? `${q.request.destinationLocation.lat}, ${q.request.destinationLocation.lng}`,
        distanceKm: (q.distanceMeters / 1000).toFixed(1),
        products: keys.map((k) => {
          const p = q.products[k];
          return {
            key: k,
            name: p.name,
            price: money(p.common.price.payable_amount, q.currency),
            fees: `Cancelling after a courier accepted keeps ${money(p.fees.cancellation, q.currency)}; a return keeps ${money(p.fees.return, q.currency)}.`,
            available: p.status === 'AVAILABLE',
            why: p.unavailableReason
              ? ({
                  DISTANCE_EXCEEDS_RANGE: 'too far for this option',
                  DELIVERY_TYPE_NOT_SUPPORTED: 'not for this delivery type',
                  PARCEL_SIZE_NOT_SUPPORTED: 'not for this parcel size',
                }[p.unavailableReason] ?? p.unavailableReason)
              : null,
            checked: k === chosen,
          };
        }),
        form,
        // A fresh key per form shown: the same form submitted twice (a double click, a retry) creates one delivery.
        idempotencyKey: form.idempotencyKey || randomUUID(),
        error,
      },
      status,
    );
  }

  app.get<{ Params: { quoteId: string } }>('/new/:quoteId', async (request, reply) => {
    const me = merchantOf(request);
    if (!UUID.test(request.params.quoteId)) throw new AppError('QUOTE_NOT_FOUND', 'No such quote');
    return chooseForm(reply, me.merchantId, request.params.quoteId, { productKey: '', firstName: '', lastName: '', phone: '', description: '' }, null);
  });

  // Step 2: pay (POST /transfer's service call) under the form's Idempotency-Key.
  app.post<{ Params: { quoteId: string } }>('/new/:quoteId', async (request, reply) => {
    const me = merchantOf(request);
    const { quoteId } = request.params;
    if (!UUID.test(quoteId)) throw new AppError('QUOTE_NOT_FOUND', 'No such quote');
    const form = {
      productKey: field(request, 'productKey', { max: 100 }),
      firstName: field(request, 'firstName', { max: 200 }),
      lastName: field(request, 'lastName', { max: 200 }),
      phone: field(request, 'phone', { max: 100 }),
      description: field(request, 'description', { max: 2000 }),
      idempotencyKey: field(request, 'idempotencyKey', { max: 100 }),
    };
    const body = {
      matchmakingId: quoteId,
      productKey: form.productKey,
      description: form.description,
      recipientInfo: { firstName: form.firstName, lastName: form.lastName, phone: form.phone },
    };
    const key = UUID.test(form.idempotencyKey) ? form.idempotencyKey : undefined;
    try {
      const checked = checkTransfer(body);
      if (!checked.ok) {
        throw invalid(checked.errors, {
          '/productKey': 'Delivery option',
          '/description': 'What is in the parcel',
          '/recipientInfo/firstName': "Recipient's first name",
          '/recipientInfo/lastName': "Recipient's last name",
          '/recipientInfo/phone': "Recipient's phone",
          '/recipientInfo': 'Recipient',
        });
      }
      if (!key) return await payOnce(request, reply, me, checked.value);
      return await payIdempotent(request, reply, me, key, checked.value);
    } catch (err) {
      const message = refusalMessage(err);
      if (err instanceof AppError && (err.code === 'QUOTE_ALREADY_USED' || err.code === 'QUOTE_EXPIRED' || err.code === 'QUOTE_NOT_FOUND')) {
        if (err.code === 'QUOTE_ALREADY_USED')
          return redirectWithFlash(reply, `/dashboard/deliveries/${String(err.options.extra?.transferId)}`, 'This delivery was already paid.');
        return newForm(
          reply,
          me.merchantId,
          { warehouseId: '', size: '', type: '', address: '', lat: '', lng: '', fragile: false, perishable: false },
          `${message}.`,
          err.status,
        );
      }
      return chooseForm(reply, me.merchantId, quoteId, form, message, err instanceof AppError ? err.status : 400);
    }
  });

  async function payOnce(_request: FastifyRequest, reply: FastifyReply, me: MerchantUser, body: TransferRequest) {
    const t = await s.transfers.create(me.merchantId, body, undefined, personOf(me));
    return redirectWithFlash(reply, `/dashboard/deliveries/${t.id}`, `Delivery created and paid: ${money(t.totalPrice, t.currency)}.`);
  }

  /**
   * The API's Idempotency-Key rules (IdempotencyService), with the page's answer as the stored outcome:
   * the first submission pays and records "303 to the delivery" with the payment (in its transaction;
   * on PostgreSQL in its one statement); a repeat
   * (or one that arrives while the first still runs) waits for that outcome and gets the same redirect.
   */
  async function payIdempotent(request: FastifyRequest, reply: FastifyReply, me: MerchantUser, key: string, body: TransferRequest) {
    const { merchantId } = me;
    const fingerprint = sha256(`POST /dashboard/deliveries/new\n${stableStringify(body)}`);
    for (let attempt = 0; ; attempt++) {
      let begun: Awaited<ReturnType<typeof s.idempotency.begin>>;
      try {
        begun = await s.idempotency.begin(merchantId, key, fingerprint);
      } catch (err) {
        if (err instanceof AppError && err.code === 'IDEMPOTENCY_KEY_IN_USE' && attempt < 50) {
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        throw err;
      }
      if (begun.kind === 'replay') {
        const location = begun.response.headers.location;
        if (!location) throw new AppError('VALIDATION_FAILED', 'This form was already sent; reload the page to start again');
        return redirectWithFlash(reply, location, 'This delivery was already paid.');
      }
      try {
        const t = await s.transfers.create(
          merchantId,
          body,
          keyOutcome(s.idempotency, merchantId, key, (created: Transfer) => ({
            status: 303,
            headers: { location: `/dashboard/deliveries/${created.id}` },
            body: '',
          })),
          personOf(me),
        );
        return redirectWithFlash(reply, `/dashboard/deliveries/${t.id}`, `Delivery created and paid: ${money(t.totalPrice, t.currency)}.`);
      } catch (err) {
        // Refused (nothing changed) or failed: forget the key, so the corrected form can be sent again.
        await s.idempotency.release(merchantId, key).catch((e) => request.log.warn({ err: e }, 'could not release the idempotency key'));
        throw err;
      }
    }
  }

  // ------------------------------------------------------------------ a delivery

  async function deliveryPage(reply: FastifyReply, merchantId: string, id: string, error: string | null, status = 200) {
    if (!UUID.test(id)) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    const t = await s.transfers.get(merchantId, id);
    const [events, entries, preview, merchant, names] = await Promise.all([
      s.transfers.events(merchantId, id),
      s.merchants.transferEntries(merchantId, id),
      s.transfers.cancellationPreview(merchantId, id),
      s.merchants.get(merchantId),
      warehouseNames(merchantId),
    ]);
    const [pickup, destination] = fitToBox([
      { lat: t.pickupLocation.coordinates[1], lng: t.pickupLocation.coordinates[0] },
      { lat: t.destinationLocation.coordinates[1], lng: t.destinationLocation.coordinates[0] },
    ]);
    const base = (reply.server.webConfig.publicBaseUrl ?? '').replace(/\/$/, '');
    const sandboxTargets = merchant.mode === 'sandbox' ? nextStates(t.state, ['courier', 'system']) : [];
    return render<DeliveryView>(
      reply,
      'dashboard/deliveries/delivery.eta',
      {
        title: `Delivery to ${t.recipientFullName}`,
        t,
        state: STATE_LABELS[t.state],
        tone: STATE_TONE[t.state],
        created: timeView(t.createdAt),
        warehouse: names.get(t.warehouseId)?.name ?? String((t.senderInfo as { warehouseName?: string }).warehouseName ?? ''),
        trackingUrl: t.trackingUrl.startsWith('/') ? `${base}${t.trackingUrl}` : t.trackingUrl,
        price: money(t.totalPrice, t.currency),
        refunded: money(t.refundedAmount, t.currency),
        entries: entries.map((e) => ({
          kind: e.kind === 'CHARGE' ? 'Charged' : e.kind === 'REFUND' ? 'Refunded' : e.kind,
          amount: money(e.amount, t.currency),
          at: timeView(e.createdAt),
          balanceAfter: money(e.balanceAfter, t.currency),
        })),
        timeline: events.map((e) => {
          const data = e.data as Record<string, unknown>;
          const details: string[] = [];
          if (typeof data.reason === 'string') details.push(CANCELLATION_REASON_LABELS[data.reason] ?? data.reason.replace(/_/g, ' ').toLowerCase());
          if (typeof data.comment === 'string') details.push(`“${data.comment}”`);
          if (typeof data.refundAmount === 'number') details.push(`refund ${money(data.refundAmount, t.currency)}`);
          const courier = (data.courier as { firstName?: string } | undefined)?.firstName;
          if (courier) details.push(`courier ${courier}`);
          return {
            label: EVENT_LABELS[e.type] ?? e.type,
            at: timeView(e.occurredAt),
            // A merchant's user in the dashboard is named (the event keeps who it was); the merchant's own API calls are "the API".
            by:
              e.actor.type === 'merchant' && e.actor.name
                ? e.actor.name
                : ({ merchant: 'the API', courier: 'the courier', operator: 'support', system: 'the service' }[e.actor.type] ?? e.actor.type),
            detail: details.length ? details.join(', ') : null,
          };
        }),
        map: { pickup, destination, label: `Pickup at ${t.pickupAddress}; destination ${t.destinationAddress}` },
        cancel: preview.cancellable
          ? {
              refund: money(preview.refund, preview.currency),
              feeKept: money(preview.feeKept, preview.currency),
              reasons: options(CANCELLATION_REASONS, CANCELLATION_REASON_LABELS, 'CUSTOMER_REQUESTED'),
            }
          : null,
        cancellation: t.cancellation
          ? {
              reason: CANCELLATION_REASON_LABELS[t.cancellation.reason] ?? t.cancellation.reason,
              comment: t.cancellation.comment ?? null,
              refund: money(t.cancellation.refundAmount, t.currency),
              at: timeView(t.cancellation.cancelledAt),
            }
          : null,
        advance: sandboxTargets.length
          ? {
              targets: sandboxTargets.map((v) => ({ value: v, label: STATE_LABELS[v], selected: false })),
              reasons: options(DELIVERY_FAILURE_REASONS, (v) => v.replace(/_/g, ' ').toLowerCase(), 'RECIPIENT_UNAVAILABLE'),
            }
          : null,
        error,
      },
      status,
    );
  }

  app.get<{ Params: { id: string } }>('/:id', async (request, reply) => deliveryPage(reply, merchantOf(request).merchantId, request.params.id, null));

  app.post<{ Params: { id: string } }>('/:id/cancel', async (request, reply) => {
    const me = merchantOf(request);
    const { id } = request.params;
    if (!UUID.test(id)) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    const reason = field(request, 'reason', { max: 40 });
    const comment = field(request, 'comment', { max: 600 });
    try {
      if (!(CANCELLATION_REASONS as readonly string[]).includes(reason)) throw new AppError('VALIDATION_FAILED', 'Choose a reason for cancelling');
      if (comment.length > 500) throw new AppError('VALIDATION_FAILED', 'The comment can be at most 500 characters');
      const t = await s.transfers.cancel(me.merchantId, id, { reason: reason as never, ...(comment ? { comment } : {}) }, undefined, personOf(me));
      return redirectWithFlash(
        reply,
        `/dashboard/deliveries/${id}`,
        `Delivery cancelled; ${money(t.cancellation?.refundAmount ?? 0, t.currency)} refunded to your balance.`,
      );
    } catch (err) {
      const message = refusalMessage(err);
      if (err instanceof AppError && err.status === 404) throw err;
      return deliveryPage(reply, me.merchantId, id, message, err instanceof AppError ? err.status : 400);
    }
  });

  app.post<{ Params: { id: string } }>('/:id/advance', async (request, reply) => {
    const me = merchantOf(request);
    const { id } = request.params;
    if (!UUID.test(id)) throw new AppError('TRANSFER_NOT_FOUND', `No transfer ${id}`);
    const to = field(request, 'to', { max: 40 });
    const reason = field(request, 'reason', { max: 40 });
    try {
      if (!(TRANSFER_STATES as readonly string[]).includes(to)) throw new AppError('VALIDATION_FAILED', 'Choose the state to move to');
      if (reason && !(DELIVERY_FAILURE_REASONS as readonly string[]).includes(reason)) throw new AppError('VALIDATION_FAILED', 'Choose a reason');
      const t = await s.transfers.sandboxAdvance(me.merchantId, id, {
        to: to as TransferState,
        ...(to === 'returning' && reason ? { reason: reason as never } : {}),
      });
      return redirectWithFlash(reply, `/dashboard/deliveries/${id}`, `Sandbox: the delivery is now "${STATE_LABELS[t.state]}".`);
    } catch (err) {
      const message = refusalMessage(err);
      if (err instanceof AppError && err.status === 404) throw err;
      return deliveryPage(reply, me.merchantId, id, message, err instanceof AppError ? err.status : 400);
    }
  });
}
