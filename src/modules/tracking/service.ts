import type { Kysely } from 'kysely';
import type { DB, TransferState } from '../../db/types.ts';
import { iso } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { EVENT_CATALOGUE, isEventType } from '../events/catalogue.ts';
import { TERMINAL_STATES } from '../transfers/lifecycle.ts';
import type { TrackingView } from './schemas.ts';

export interface GeoPoint {
  lat: number;
  lng: number;
}

/** The courier's last known position (the courier work provides it); undefined when unknown. */
export type CourierPositionSource = (transfer: { id: string; courierId: string | null }) => Promise<(GeoPoint & { at: number }) | undefined>;

/** The timeline line of an event: the catalogue's label, or the type itself for one without a label. */
function timelineLabel(type: string, courier: string | null): string {
  const label = isEventType(type) ? EVENT_CATALOGUE[type].label : null;
  return label ? label(courier) : type;
}

/** States in which the courier's position is shown (the parcel, or the courier for it, is moving). */
const MOVING: TransferState[] = ['courierAssigned', 'pickedUp', 'returning'];

/** What a tracking code can look like (newTrackingCode's base64url, with room to grow). */
const TRACKING_CODE = /^[A-Za-z0-9_-]{1,64}$/;

/** The public tracking page's data: found by the unguessable tracking code, reduced to what a recipient may see. */
export class TrackingService {
  readonly #db: Kysely<DB>;
  readonly refreshSeconds: number;
  /** Replaceable: the courier work plugs its position source in here. */
  courierPosition: CourierPositionSource;

  constructor(db: Kysely<DB>, opts: { refreshSeconds: number; courierPosition?: CourierPositionSource }) {
    this.#db = db;
    this.refreshSeconds = opts.refreshSeconds;
    this.courierPosition = opts.courierPosition ?? (async () => undefined);
  }

  async view(trackingCode: string): Promise<TrackingView> {
    // A code no transfer could have (another alphabet, too long) is as unknown as any other: the same 404, no query.
    if (!TRACKING_CODE.test(trackingCode)) throw new AppError('TRACKING_CODE_NOT_FOUND', 'No delivery with this tracking code');
    const t = await this.#db
      .selectFrom('transfers')
      .innerJoin('merchants', 'merchants.id', 'transfers.merchant_id')
      .select([
        'transfers.id',
        'transfers.merchant_id',
        'transfers.state',
        'transfers.mode',
        'transfers.details',
        'transfers.courier_id',
        'transfers.courier_name',
        'transfers.updated_at',
        'transfers.estimated_delivery_at',
        'merchants.name as merchant_name',
      ])
      .where('transfers.tracking_code', '=', trackingCode)
      .executeTakeFirst();
    if (!t) throw new AppError('TRACKING_CODE_NOT_FOUND', 'No delivery with this tracking code');
    const events = await this.#db
      .selectFrom('events')
      .select(['type', 'state', 'occurred_at', 'data'])
      .where('merchant_id', '=', t.merchant_id)
      .where('transfer_id', '=', t.id)
      .where('state', 'is not', null)
      .orderBy('sequence')
      .execute();
    // Only what the page needs is read out of the stored details: never the recipient, the address or the price.
    const details = JSON.parse(t.details) as {
      pickupLocation: { coordinates: [number, number] };
      destinationLocation: { coordinates: [number, number] };
      pickupAddressMetaData?: { city?: unknown };
      destinationAddressMetadata?: { city?: unknown };
    };
    const point = (c: [number, number]): GeoPoint => ({ lat: c[1], lng: c[0] });
    const pickup = point(details.pickupLocation.coordinates);
    const destination = point(details.destinationLocation.coordinates);
    const courier = MOVING.includes(t.state) ? await this.courierPosition({ id: t.id, courierId: t.courier_id }) : undefined;
    const drawn = fitToBox([pickup, destination, ...(courier ? [courier] : [])]);
    const city = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : null);
    return {
      trackingCode,
      state: t.state,
      active: !TERMINAL_STATES.includes(t.state),
      merchant: { name: t.merchant_name },
      pickup: { city: city(details.pickupAddressMetaData?.city) },
      destination: { city: city(details.destinationAddressMetadata?.city) },
      courier: t.courier_name ? { firstName: t.courier_name } : null,
      map: { pickup: drawn[0], destination: drawn[1], courier: courier ? { ...drawn[2], at: iso(courier.at) } : null },
      timeline: events.map((e) => {
        const data = JSON.parse(e.data) as { courier?: { firstName?: string } };
        return {
          type: e.type,
          state: e.state as TransferState,
          label: timelineLabel(e.type, data.courier?.firstName ?? null),
          occurredAt: iso(Number(e.occurred_at)),
        };
      }),
      updatedAt: iso(Number(t.updated_at)),
      sandbox: t.mode === 'sandbox',
      estimatedDeliveryAt: TERMINAL_STATES.includes(t.state) || t.estimated_delivery_at == null ? null : iso(Number(t.estimated_delivery_at)),
    };
  }
}

/**
 * Places points in a 0-100 box (y down), scaled to fit with a margin and the same scale on both axes
 * (longitude shrunk by cos(latitude)), so the drawing keeps its shape but gives away no coordinates.
 */
export function fitToBox(points: GeoPoint[]): Array<{ x: number; y: number }> {
  const k = Math.cos((points[0].lat * Math.PI) / 180);
  const xs = points.map((p) => p.lng * k);
  const ys = points.map((p) => -p.lat);
  const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const span = Math.max(maxX - minX, maxY - minY) || 1;
  const margin = 12;
  const scale = (100 - 2 * margin) / span;
  // Centre the smaller side.
  const offX = margin + (100 - 2 * margin - (maxX - minX) * scale) / 2;
  const offY = margin + (100 - 2 * margin - (maxY - minY) * scale) / 2;
  const round = (v: number) => Math.round(v * 10) / 10;
  return points.map((_, i) => ({ x: round(offX + (xs[i] - minX) * scale), y: round(offY + (ys[i] - minY) * scale) }));
}
