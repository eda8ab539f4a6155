import { DECIMAL_SCALE, divRoundHalfUp, formatDecimal2, formatMinor, parseDecimal } from '../../lib/money.ts';
import type { DeliveryType, ParcelSize, TariffDocument, TariffProduct } from './schemas.ts';

/**
 * The pricing engine: pure, exact, no floating point on money. The only float is the great-circle
 * distance, which is rounded to whole metres before any money is computed from it.
 *
 *   courier_fee_total = round((baseFee + perKmFee * metres / 1000) * sizeFactor) + fragile + perishable surcharges
 *   original_amount   = courier_fee_total + service_fee_total + stop_fee_total
 *   discount_amount   = round(original_amount * discountPct / 100)
 *   payable_amount    = original_amount - discount_amount
 * round = half-up to the minor unit.
 */

export interface Point {
  lat: number;
  lng: number;
}

export interface PricingInput {
  from: Point;
  to: Point;
  parcelSize: ParcelSize;
  deliveryType: DeliveryType;
  isFragile: boolean;
  isPerishable: boolean;
}

export type UnavailableReason = 'DISTANCE_EXCEEDS_RANGE' | 'DELIVERY_TYPE_NOT_SUPPORTED' | 'PARCEL_SIZE_NOT_SUPPORTED';

export interface PriceBreakdown {
  original_amount: string;
  payable_amount: string;
  discount_pct: string;
  courier_fee_total: string;
  service_fee_total: string;
  stop_fee_total: string;
  discount_amount: string;
}

export interface PricedProduct {
  status: 'AVAILABLE' | 'UNAVAILABLE';
  unavailableReason: UnavailableReason | null;
  name: string;
  payableMinor: number;
  /** Frozen with the quote: what a cancellation after assignment, and a return, keep back from the refund. */
  cancellationFeeMinor: number;
  returnFeeMinor: number;
  /** The courier fee: what the courier who delivers it earns. */
  courierFeeMinor: number;
  fees: { cancellation: string; return: string };
  common: { pattern: string; router_id: string; price: PriceBreakdown; tags: string[] };
  /** AVAILABLE products: the travel-time model's estimates when quoted (ISO), set by the quotes service. */
  estimatedPickupAt?: string;
  estimatedDeliveryAt?: string;
}

const EARTH_RADIUS_M = 6_371_008.8; // mean Earth radius (IUGG)

/** Great-circle (haversine) distance in whole metres. */
export function distanceMetres(a: Point, b: Point): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLng = (b.lng - a.lng) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLng / 2) ** 2;
  return Math.round(2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h))));
}

export function priceProduct(tariff: TariffDocument, product: TariffProduct, input: PricingInput, metres: number): PricedProduct {
  const factor = parseDecimal(tariff.parcelSizeFactors[input.parcelSize]);
  // (baseFee * 1000 + perKmFee * metres) is in thousandths of a minor unit; the factor is scaled by 10^4.
  const courierBase = divRoundHalfUp((BigInt(product.baseFee) * 1000n + BigInt(product.perKmFee) * BigInt(metres)) * factor, 1000n * DECIMAL_SCALE);
  const courier = courierBase + (input.isFragile ? BigInt(product.fragileSurcharge) : 0n) + (input.isPerishable ? BigInt(product.perishableSurcharge) : 0n);
  const service = BigInt(product.serviceFee);
  const stop = BigInt(product.stopFee);
  const original = courier + service + stop;
  const pct = parseDecimal(product.discountPct);
  const discount = divRoundHalfUp(original * pct, 100n * DECIMAL_SCALE);
  const payable = original - discount;

  let unavailableReason: UnavailableReason | null = null;
  if (!product.deliveryTypes.includes(input.deliveryType)) unavailableReason = 'DELIVERY_TYPE_NOT_SUPPORTED';
  else if (!product.parcelSizes.includes(input.parcelSize)) unavailableReason = 'PARCEL_SIZE_NOT_SUPPORTED';
  else if (metres > product.maxDistanceKm * 1000) unavailableReason = 'DISTANCE_EXCEEDS_RANGE';

  return {
    status: unavailableReason ? 'UNAVAILABLE' : 'AVAILABLE',
    unavailableReason,
    name: product.name,
    payableMinor: Number(payable),
    cancellationFeeMinor: product.cancellationFee ?? 0,
    returnFeeMinor: product.returnFee ?? 0,
    courierFeeMinor: Number(courier),
    fees: { cancellation: formatMinor(product.cancellationFee ?? 0), return: formatMinor(product.returnFee ?? 0) },
    common: {
      pattern: product.pattern,
      router_id: product.routerId,
      tags: [...product.tags],
      price: {
        original_amount: formatMinor(original),
        payable_amount: formatMinor(payable),
        discount_pct: formatDecimal2(pct),
        courier_fee_total: formatMinor(courier),
        service_fee_total: formatMinor(service),
        stop_fee_total: formatMinor(stop),
        discount_amount: formatMinor(discount),
      },
    },
  };
}

/** Prices every product of the tariff for one request. */
export function priceAll(tariff: TariffDocument, input: PricingInput): { metres: number; products: Record<string, PricedProduct> } {
  const metres = distanceMetres(input.from, input.to);
  const products: Record<string, PricedProduct> = {};
  for (const [key, product] of Object.entries(tariff.products)) products[key] = priceProduct(tariff, product, input, metres);
  return { metres, products };
}
