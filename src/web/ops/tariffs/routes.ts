import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { formatMinor } from '../../../lib/money.ts';
import type { PricedProduct } from '../../../modules/tariffs/pricing.ts';
import { DELIVERY_TYPES, type DeliveryType, PARCEL_SIZES, type ParcelSize } from '../../../modules/tariffs/schemas.ts';
import { refusalMessage } from '../../dashboard/format.ts';
import { field } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { requirePerson } from '../../session.ts';
import { actorOf, CAN, may } from '../operator.ts';

/**
 * Tariffs: the tariff in force as its JSON document (the file `mds tariffs set` takes), edited with
 * the same validation, and a preview of what a sample request would be quoted, now and under the
 * edit, before saving. Saving makes a new version: new quotes use it, existing quotes keep their prices.
 */

export interface Sample {
  fromLat: string;
  fromLng: string;
  toLat: string;
  toLng: string;
  parcelSize: string;
  deliveryType: string;
}

export interface OpsTariffsView {
  title: string;
  version: number;
  document: string;
  sample: Sample;
  parcelSizes: readonly string[];
  deliveryTypes: readonly string[];
  preview: { km: string; rows: Array<{ name: string; current: string; proposed: string; changed: boolean }> } | null;
  canEdit: boolean;
  reason: string;
  error: string | null;
}

// Tverskaya St 1 to Komsomolsky Ave 24, Moscow (the README's quick start): about 3 km.
const DEFAULT_SAMPLE: Sample = {
  fromLat: '55.7575',
  fromLng: '37.6136',
  toLat: '55.7339',
  toLng: '37.5886',
  parcelSize: 'SMALL',
  deliveryType: 'DOOR_TO_DOOR',
};

export async function opsTariffsPages(app: FastifyInstance): Promise<void> {
  app.addHook('preHandler', requirePerson('operator', CAN.read));
  const s = app.services;

  const sampleOf = (request: FastifyRequest): Sample => ({
    fromLat: field(request, 'fromLat', { max: 30 }) || DEFAULT_SAMPLE.fromLat,
    fromLng: field(request, 'fromLng', { max: 30 }) || DEFAULT_SAMPLE.fromLng,
    toLat: field(request, 'toLat', { max: 30 }) || DEFAULT_SAMPLE.toLat,
    toLng: field(request, 'toLng', { max: 30 }) || DEFAULT_SAMPLE.toLng,
    parcelSize: field(request, 'parcelSize', { max: 30 }) || DEFAULT_SAMPLE.parcelSize,
    deliveryType: field(request, 'deliveryType', { max: 30 }) || DEFAULT_SAMPLE.deliveryType,
  });

  async function page(
    request: FastifyRequest,
    reply: FastifyReply,
    o: { document?: string; sample?: Sample; preview?: OpsTariffsView['preview']; reason?: string; error?: string | null; status?: number } = {},
  ) {
    const current = await s.tariffs.current();
    return render<OpsTariffsView>(
      reply,
      'ops/tariffs/tariffs.eta',
      {
        title: 'Tariffs',
        version: current.version,
        document: o.document ?? JSON.stringify(current.document, null, 2),
        sample: o.sample ?? DEFAULT_SAMPLE,
        parcelSizes: PARCEL_SIZES,
        deliveryTypes: DELIVERY_TYPES,
        preview: o.preview ?? null,
        canEdit: may(request, CAN.finance),
        reason: o.reason ?? '',
        error: o.error ?? null,
      },
      o.status ?? 200,
    );
  }

  app.get('/', async (request, reply) => page(request, reply));

  const edit = { preHandler: requirePerson('operator', CAN.finance) };

  /** Parses the textarea; a readable refusal for bad JSON, then the service's validation. */
  function documentOf(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new AppError('VALIDATION_FAILED', `The tariff is not valid JSON: ${(err as Error).message}`);
    }
  }

  app.post('/preview', edit, async (request, reply) => {
    const text = field(request, 'document', { trim: false, max: 60_000 });
    const sample = sampleOf(request);
    try {
      const point = (lat: string, lng: string, what: string) => {
        const p = { lat: Number(lat), lng: Number(lng) };
        if (!Number.isFinite(p.lat) || !Number.isFinite(p.lng) || Math.abs(p.lat) > 90 || Math.abs(p.lng) > 180) {
          throw new AppError('VALIDATION_FAILED', `The sample's ${what} needs a latitude and longitude such as 55.7575 and 37.6136`);
        }
        return p;
      };
      if (!(PARCEL_SIZES as readonly string[]).includes(sample.parcelSize)) throw new AppError('VALIDATION_FAILED', 'Choose a parcel size');
      if (!(DELIVERY_TYPES as readonly string[]).includes(sample.deliveryType)) throw new AppError('VALIDATION_FAILED', 'Choose a delivery type');
      const r = await s.tariffs.preview(documentOf(text), {
        from: point(sample.fromLat, sample.fromLng, 'pickup'),
        to: point(sample.toLat, sample.toLng, 'destination'),
        parcelSize: sample.parcelSize as ParcelSize,
        deliveryType: sample.deliveryType as DeliveryType,
        isFragile: false,
        isPerishable: false,
      });
      const shown = (p: PricedProduct | null) =>
        !p ? 'not offered' : p.status === 'AVAILABLE' ? formatMinor(p.payableMinor) : `unavailable (${p.unavailableReason})`;
      const preview = {
        km: (r.metres / 1000).toFixed(1),
        rows: r.products.map((p) => ({
          name: p.name,
          current: shown(p.current),
          proposed: shown(p.proposed),
          changed: shown(p.current) !== shown(p.proposed),
        })),
      };
      return page(request, reply, { document: text, sample, preview, reason: field(request, 'reason', { max: 600 }) });
    } catch (err) {
      return page(request, reply, { document: text, sample, error: refusalMessage(err), status: 422 });
    }
  });

  app.post('/', edit, async (request, reply) => {
    const text = field(request, 'document', { trim: false, max: 60_000 });
    const reason = field(request, 'reason', { max: 600 });
    try {
      const t = await s.tariffs.set(documentOf(text), actorOf(request), reason);
      return redirectWithFlash(reply, '/ops/tariffs', `Tariff version ${t.version} is in force: new quotes use it; existing quotes keep their prices.`);
    } catch (err) {
      return page(request, reply, { document: text, sample: sampleOf(request), reason, error: refusalMessage(err), status: 422 });
    }
  });
}
