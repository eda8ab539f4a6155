import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { divRoundHalfUp, formatMinor, parseDecimal, parseMajorAmount } from '../src/lib/money.ts';
import defaultTariff from '../src/modules/tariffs/default-tariff.json' with { type: 'json' };
import { distanceMetres, type PricingInput, priceAll, priceProduct } from '../src/modules/tariffs/pricing.ts';
import type { TariffDocument, TariffProduct } from '../src/modules/tariffs/schemas.ts';
import { validateTariff } from '../src/modules/tariffs/service.ts';

const tariff = defaultTariff as TariffDocument;
const base: Omit<PricingInput, 'from' | 'to'> = { parcelSize: 'SMALL', deliveryType: 'DOOR_TO_DOOR', isFragile: false, isPerishable: false };

function product(overrides: Partial<TariffProduct>): TariffProduct {
  return {
    name: 'P',
    pattern: 'p',
    routerId: 'r',
    tags: [],
    deliveryTypes: ['DOOR_TO_DOOR'],
    parcelSizes: ['SMALL', 'MEDIUM', 'LARGE', 'EXTRA_LARGE'],
    baseFee: 0,
    perKmFee: 0,
    fragileSurcharge: 0,
    perishableSurcharge: 0,
    serviceFee: 0,
    stopFee: 0,
    discountPct: '0',
    maxDistanceKm: 100,
    ...overrides,
  };
}

describe('money primitives', () => {
  test('formatMinor, parseMajorAmount, parseDecimal, half-up division', () => {
    assert.equal(formatMinor(125000), '1250.00');
    assert.equal(formatMinor(5), '0.05');
    assert.equal(formatMinor(-5), '-0.05');
    assert.equal(formatMinor(0), '0.00');
    assert.equal(parseMajorAmount('1250'), 125000);
    assert.equal(parseMajorAmount('1250.5'), 125050);
    assert.equal(parseMajorAmount('0.07'), 7);
    for (const bad of ['1.234', '-1', 'abc', '', '1e3', '01']) assert.throws(() => parseMajorAmount(bad), RangeError, bad);
    assert.equal(parseDecimal('12.5'), 125000n);
    assert.equal(parseDecimal('0.0001'), 1n);
    assert.throws(() => parseDecimal('0.00001'), RangeError);
    assert.equal(divRoundHalfUp(5n, 10n), 1n); // 0.5 -> 1
    assert.equal(divRoundHalfUp(4n, 10n), 0n);
    assert.equal(divRoundHalfUp(15n, 10n), 2n);
    assert.equal(divRoundHalfUp(25n, 10n), 3n); // half-up, not banker's rounding
  });
});

describe('distance', () => {
  test('great-circle distance in whole metres', () => {
    assert.equal(distanceMetres({ lat: 0, lng: 0 }, { lat: 0, lng: 0 }), 0);
    assert.equal(distanceMetres({ lat: 0, lng: 0 }, { lat: 0, lng: 0.1 }), 11120); // 0.1 deg of the equator = 11119.5 m
    assert.equal(distanceMetres({ lat: 0, lng: 0 }, { lat: 1, lng: 0 }), 111195);
    // Moscow Kremlin -> Moscow State University: 5.415 km south, 5.463 km west (flat estimate 7.692 km)
    const d = distanceMetres({ lat: 55.752, lng: 37.6175 }, { lat: 55.7033, lng: 37.5302 });
    assert.ok(Math.abs(d - 7_692) < 10, String(d));
  });
});

describe('pricing with the default tariff (hand-computed)', () => {
  test('standard, SMALL, 10 km, no flags: 199.00 + 25.00/km', () => {
    const p = priceProduct(tariff, tariff.products.standard, { ...base, from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } }, 10_000);
    // courier = 199.00 + 10 km * 25.00 = 449.00; + service 29.00 + stop 10.00 = 488.00
    assert.deepEqual(p, {
      status: 'AVAILABLE',
      unavailableReason: null,
      name: 'Standard delivery',
      payableMinor: 48800,
      cancellationFeeMinor: 5000,
      returnFeeMinor: 10000,
      courierFeeMinor: 44900,
      fees: { cancellation: '50.00', return: '100.00' },
      common: {
        pattern: 'standard',
        router_id: 'city-standard',
        tags: ['standard', 'same_day'],
        price: {
          original_amount: '488.00',
          payable_amount: '488.00',
          discount_pct: '0.00',
          courier_fee_total: '449.00',
          service_fee_total: '29.00',
          stop_fee_total: '10.00',
          discount_amount: '0.00',
        },
      },
    });
  });

  test('standard, MEDIUM (x1.25), 3.333 km, perishable: rounding of the courier fee', () => {
    const p = priceProduct(
      tariff,
      tariff.products.standard,
      { ...base, parcelSize: 'MEDIUM', isPerishable: true, from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } },
      3_333,
    );
    // (199.00 + 3.333 * 25.00) * 1.25 = (19900 + 8332.5) * 1.25 = 35290.625 -> 35291; + perishable 7000 = 42291
    assert.deepEqual(p.common.price, {
      original_amount: '461.91',
      payable_amount: '461.91',
      discount_pct: '0.00',
      courier_fee_total: '422.91',
      service_fee_total: '29.00',
      stop_fee_total: '10.00',
      discount_amount: '0.00',
    });
  });

  test('express, SMALL, 10 km, fragile: 10% discount', () => {
    const p = priceProduct(tariff, tariff.products.express, { ...base, isFragile: true, from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } }, 10_000);
    // courier = 349.00 + 10 * 40.00 + fragile 75.00 = 824.00; original = 824 + 49 + 10 = 883.00; discount 88.30
    assert.deepEqual(p.common.price, {
      original_amount: '883.00',
      payable_amount: '794.70',
      discount_pct: '10.00',
      courier_fee_total: '824.00',
      service_fee_total: '49.00',
      stop_fee_total: '10.00',
      discount_amount: '88.30',
    });
    assert.equal(p.payableMinor, 79470);
  });

  test('priceAll: equator 0.1 degree (11 120 m), both products', () => {
    const { metres, products } = priceAll(tariff, { ...base, from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0.1 } });
    assert.equal(metres, 11_120);
    // standard: 199.00 + 11.12 * 25.00 = 477.00 -> 516.00; express: 349.00 + 11.12 * 40.00 = 793.80 -> 852.80, -10% 85.28 = 767.52
    assert.equal(products.standard.common.price.payable_amount, '516.00');
    assert.equal(products.express.common.price.original_amount, '852.80');
    assert.equal(products.express.common.price.discount_amount, '85.28');
    assert.equal(products.express.common.price.payable_amount, '767.52');
  });
});

describe('pricing: rounding at the boundaries', () => {
  const price = (p: Partial<TariffProduct>, metres: number, extra: Partial<typeof base> = {}) =>
    priceProduct(tariff, product(p), { ...base, ...extra, from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } }, metres).common.price;

  test('per-metre fee: exactly half a minor unit rounds up, just below rounds down', () => {
    assert.equal(price({ perKmFee: 1 }, 500).courier_fee_total, '0.01');
    assert.equal(price({ perKmFee: 1 }, 499).courier_fee_total, '0.00');
    assert.equal(price({ perKmFee: 1 }, 1500).courier_fee_total, '0.02');
  });

  test('size factor: .5 rounds up, .25 rounds down', () => {
    assert.equal(price({ baseFee: 102 }, 0, { parcelSize: 'MEDIUM' }).courier_fee_total, '1.28'); // 127.5 -> 128
    assert.equal(price({ baseFee: 101 }, 0, { parcelSize: 'MEDIUM' }).courier_fee_total, '1.26'); // 126.25 -> 126
  });

  test('discount: half a minor unit rounds up; payable = original - discount exactly', () => {
    const p = price({ baseFee: 1004, discountPct: '12.5' }, 0); // 1004 * 12.5% = 125.5 -> 126
    assert.deepEqual([p.original_amount, p.discount_amount, p.payable_amount, p.discount_pct], ['10.04', '1.26', '8.78', '12.50']);
    const q = price({ baseFee: 1000, discountPct: '33.3333' }, 0); // 333.333 -> 333
    assert.deepEqual([q.discount_amount, q.payable_amount, q.discount_pct], ['3.33', '6.67', '33.33']);
    const full = price({ baseFee: 999, discountPct: '100' }, 0);
    assert.deepEqual([full.discount_amount, full.payable_amount], ['9.99', '0.00']);
  });

  test('large amounts stay exact (no float drift)', () => {
    const p = price({ baseFee: 99_999_999, perKmFee: 99_999_999, serviceFee: 99_999_999 }, 19_999_999, { parcelSize: 'EXTRA_LARGE' });
    // (99999999 + 99999999 * 19999.999) * 2.2 = 4400000053.99998..., exact in BigInt
    assert.equal(p.courier_fee_total, formatMinor(divRoundHalfUp((99_999_999n * 1000n + 99_999_999n * 19_999_999n) * 22_000n, 10_000_000n)));
  });
});

describe('availability', () => {
  test("beyond a product's range: UNAVAILABLE with DISTANCE_EXCEEDS_RANGE; at the limit: AVAILABLE", () => {
    const at = priceProduct(tariff, tariff.products.express, { ...base, from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } }, 25_000);
    assert.equal(at.status, 'AVAILABLE');
    const beyond = priceProduct(tariff, tariff.products.express, { ...base, from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } }, 25_001);
    assert.equal(beyond.status, 'UNAVAILABLE');
    assert.equal(beyond.unavailableReason, 'DISTANCE_EXCEEDS_RANGE');
    // courier 349.00 + 25.001 * 40.00 = 1349.04; original 1408.04; discount 140.80 (140.804)
    assert.equal(beyond.common.price.payable_amount, '1267.24', 'the price is still shown for information');
  });

  test('delivery type and parcel size the product does not take', () => {
    const curb = priceProduct(tariff, tariff.products.express, { ...base, deliveryType: 'CURBSIDE', from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } }, 1000);
    assert.deepEqual([curb.status, curb.unavailableReason], ['UNAVAILABLE', 'DELIVERY_TYPE_NOT_SUPPORTED']);
    const xl = priceProduct(tariff, tariff.products.express, { ...base, parcelSize: 'EXTRA_LARGE', from: { lat: 0, lng: 0 }, to: { lat: 0, lng: 0 } }, 1000);
    assert.deepEqual([xl.status, xl.unavailableReason], ['UNAVAILABLE', 'PARCEL_SIZE_NOT_SUPPORTED']);
  });
});

describe('tariff validation', () => {
  test('the shipped default is valid', () => {
    assert.equal(validateTariff(defaultTariff).ok, true);
  });

  test('every problem is reported with its path', () => {
    const bad = structuredClone(defaultTariff) as any;
    bad.products.standard.baseFee = 12.5;
    bad.products.express.discountPct = '150';
    delete bad.parcelSizeFactors.LARGE;
    bad.products['Bad Key'] = bad.products.standard;
    bad.extra = true;
    const r = validateTariff(bad);
    assert.equal(r.ok, false);
    assert.ok(!r.ok);
    assert.deepEqual(
      r.errors.sort(),
      [
        '/extra is not a known field',
        '/parcelSizeFactors/LARGE is required',
        '/products/Bad Key is not a known field',
        '/products/standard/baseFee must be integer',
      ].sort(),
    );
    const pct = structuredClone(defaultTariff) as any;
    pct.products.express.discountPct = '150';
    const r2 = validateTariff(pct);
    assert.deepEqual(r2, { ok: false, errors: ['/products/express/discountPct must be at most 100'] });
  });
});
