// The work the contract asks of a quote beyond writing its rows, done as cheaply as the floor knows how:
// the body validated by hand (every rule of the QuoteRequest schema the bench's body meets: types,
// ranges, lengths, enums, no unknown fields), the products priced from the tariff in force and their
// estimates (the service's own compiled pricing and ETA model, dist/: the contract's arithmetic, not
// its plumbing), the request, the products and the event's data written as JSON, and time-ordered ids
// (the decisions' UUIDv7, the service's own generator). The warehouse it is priced from is remembered
// with its row version (xmin), which its statement checks with the tariff version in force and the merchant's
// (absent) webhook endpoints: what the service's write checks.
// Loaded at the first request, so that the floor's idle memory does not include it.
const dist = new URL('../dist/', import.meta.url);
const [{ priceAll }, { quoteEstimates }, { GreatCircleModel }, { newId }] = await Promise.all([
  import(new URL('modules/tariffs/pricing.js', dist).href),
  import(new URL('modules/eta/estimates.js', dist).href),
  import(new URL('modules/eta/model.js', dist).href),
  import(new URL('lib/ids.js', dist).href),
]);

const PARCEL_SIZES = new Set(['SMALL', 'MEDIUM', 'LARGE', 'EXTRA_LARGE']);
const DELIVERY_TYPES = new Set(['DOOR_TO_DOOR', 'CURBSIDE']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// biome-ignore lint/suspicious/noControlCharactersInRegex: single-line text, as the schema's pattern
const CONTROL = /[\u0000-\u001f\u007f]/;
const QUOTE_KEYS = new Set(['destinationLocation', 'warehouseId', 'parcelSize', 'isFragile', 'isPerishable', 'deliveryType', 'pickupWindow']);
const LOCATION_KEYS = new Set(['lat', 'lng', 'display_name', 'city']);
const text = (v, max) => typeof v === 'string' && v.length >= 1 && v.length <= max && !CONTROL.test(v);
const number = (v, min, max) => typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;
const onlyKeys = (o, keys) => {
  for (const k in o) if (!keys.has(k)) return false;
  return true;
};

/** The quote request with its defaults, or undefined if it breaks a rule (the bench's body never does; no pickup window). */
function validQuote(b) {
  if (typeof b !== 'object' || b === null || !onlyKeys(b, QUOTE_KEYS)) return undefined;
  const d = b.destinationLocation;
  if (typeof d !== 'object' || d === null || !onlyKeys(d, LOCATION_KEYS)) return undefined;
  if (!number(d.lat, -90, 90) || !number(d.lng, -180, 180) || !text(d.display_name, 500) || (d.city !== undefined && !text(d.city, 200))) return undefined;
  if (typeof b.warehouseId !== 'string' || !UUID.test(b.warehouseId)) return undefined;
  if (!PARCEL_SIZES.has(b.parcelSize) || !DELIVERY_TYPES.has(b.deliveryType)) return undefined;
  if ((b.isFragile !== undefined && typeof b.isFragile !== 'boolean') || (b.isPerishable !== undefined && typeof b.isPerishable !== 'boolean'))
    return undefined;
  if (b.pickupWindow !== undefined) return undefined;
  return { ...b, isFragile: b.isFragile ?? false, isPerishable: b.isPerishable ?? false };
}

const publicProduct = ({ payableMinor, cancellationFeeMinor, returnFeeMinor, courierFeeMinor, ...p }) => p;
const iso = (ms) => new Date(ms).toISOString();

/**
 * The quote's work on `one(sql, values)` (a row or undefined, `?` placeholders): validQuote, warehouse
 * (remembered with its row version, which the statement checks) and priced (the rows to write and the answer).
 */
export async function contractWork(one) {
  const tariff = await one('select version, document from tariffs order by version desc limit 1', []);
  const document = tariff
    ? JSON.parse(tariff.document)
    : JSON.parse(await (await import('node:fs/promises')).readFile(new URL('modules/tariffs/default-tariff.json', dist), 'utf8'));
  const travel = new GreatCircleModel();
  const warehouses = new Map();
  return {
    tariffVersion: tariff ? Number(tariff.version) : null,
    validQuote,
    async warehouse(merchantId, id) {
      const key = `${merchantId} ${id}`;
      let w = warehouses.get(key);
      if (!w) {
        const row = await one('select *, xmin::text as version from warehouses where merchant_id = ? and id = ?', [merchantId, id]);
        if (!row) return undefined;
        const pickup = {
          name: row.name,
          address: row.address,
          lat: row.lat,
          lng: row.lng,
          locationMetadata: JSON.parse(row.location_metadata),
          contactPhone: row.contact_phone,
          contactEmail: row.contact_email,
        };
        w = { id: row.id, lat: row.lat, lng: row.lng, version: row.version, pickup: JSON.stringify(pickup) };
        warehouses.set(key, w);
      }
      return w;
    },
    /** The quote priced: its row and its event (t: the template's other columns), and its answer. */
    priced(merchantId, w, request, now, t) {
      const to = request.destinationLocation;
      const { metres, products } = priceAll(document, {
        from: { lat: w.lat, lng: w.lng },
        to,
        parcelSize: request.parcelSize,
        deliveryType: request.deliveryType,
        isFragile: request.isFragile,
        isPerishable: request.isPerishable,
      });
      const shown = {};
      for (const key in products) {
        const p = products[key];
        if (p.status === 'AVAILABLE') {
          const e = quoteEstimates(travel, w, to, key, now);
          p.estimatedPickupAt = iso(e.pickupAt);
          p.estimatedDeliveryAt = iso(e.deliveryAt);
        }
        shown[key] = publicProduct(p);
      }
      const [id, transferId, eventId] = [newId(), newId(), newId()];
      const expiresAt = now + (Number(t.quote.expires_at) - Number(t.quote.created_at)); // the service's quote lifetime
      const row = {
        ...t.quote,
        id,
        merchant_id: merchantId,
        warehouse_id: w.id,
        transfer_id: transferId,
        event_id: eventId,
        status: 'pending',
        request: JSON.stringify(request),
        pickup: w.pickup,
        products: JSON.stringify(products),
        expires_at: expiresAt,
        created_at: now,
        consumed_at: null,
      };
      const quote = {
        id,
        transfer_id: transferId,
        event_id: eventId,
        products: shown,
        currency: row.currency,
        distanceMeters: metres,
        expiresAt: iso(expiresAt),
      };
      const event = {
        ...t.quoteEvent,
        id: eventId,
        merchant_id: merchantId,
        transfer_id: transferId,
        data: JSON.stringify({ quoteId: id, warehouseId: w.id, expiresAt: quote.expiresAt }),
        occurred_at: now,
      };
      return { quote, row, event };
    },
  };
}
