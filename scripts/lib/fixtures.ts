// Request bodies for the API, shared by the tests (test/helpers), the stress runs, `npm run bench` and
// `npm run demo`: one place to change when a request schema changes.

/** The recipient every fixture transfer goes to. */
export const RECIPIENT = { firstName: 'Anna', lastName: 'Ivanova', phone: '+7 900 000-00-00' };

/** A warehouse on the equator at 0,0; destinations along the equator have hand-computable distances. */
export const WAREHOUSE_META = { display_name: 'Null Island 1', lat: 0, lng: 0, city: 'Gulf', country_code: 'xx' };
/** 11 120 m east of WAREHOUSE_META. */
export const DESTINATION = { lat: 0, lng: 0.1, display_name: 'Destination 5', city: 'Gulf' };

/** A valid POST /warehouses body (Tverskaya St, Moscow); override fields as needed. */
export function warehouseBody(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Main warehouse',
    nameInt: 'main-warehouse',
    status: 'ACTIVE',
    address: 'Tverskaya St 1, Moscow',
    contactPhone: '+7 495 000-00-00',
    contactEmail: 'warehouse@example.com',
    locationMetadata: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
    ...overrides,
  };
}

/** A POST /options body to DESTINATION; override fields as needed. */
export function quoteBody(warehouseId: string, overrides: Record<string, unknown> = {}) {
  return {
    destinationLocation: DESTINATION,
    warehouseId,
    parcelSize: 'SMALL',
    isFragile: false,
    isPerishable: false,
    deliveryType: 'DOOR_TO_DOOR',
    ...overrides,
  };
}

/** A POST /options body ~2 to 12 km from the default warehouseBody() (Tverskaya St, Moscow); i moves the destination so prices differ. */
export function moscowQuoteBody(warehouseId: string, i = 0) {
  return {
    destinationLocation: { lat: 55.7575 - 0.001 * (i % 90) - 0.01, lng: 37.6136 + 0.001 * (i % 70), display_name: `Destination ${i}, Moscow`, city: 'Moscow' },
    warehouseId,
    parcelSize: 'SMALL',
    deliveryType: 'DOOR_TO_DOOR',
  };
}

/** A POST /transfer body for the quote's standard product; override fields (productKey, ...) as needed. */
export function transferBody(quoteId: string, overrides: Record<string, unknown> = {}) {
  return { matchmakingId: quoteId, productKey: 'standard', description: 'Two books', recipientInfo: RECIPIENT, ...overrides };
}
