import { distanceMetres } from '../tariffs/pricing.ts';

export interface Point {
  lat: number;
  lng: number;
}

/**
 * How long a trip takes. The service asks only this; a routing engine (OSRM's /route, Valhalla's
 * /route) can implement it later with real roads, one call per leg.
 */
export interface TravelTimeModel {
  /** Seconds to travel from `from` to `to` for a delivery of `product` (the tariff's product key: its speed). */
  travelSeconds(from: Point, to: Point, product?: string): number;
  /** Seconds a paid delivery typically waits for a courier to accept it (before the courier sets off). */
  readonly expectedAssignSeconds: number;
  /** Seconds at the pickup (finding the parcel, the code) and at the door. */
  readonly handoverSeconds: number;
  /** Where a courier going from `from` to `to` is after `seconds` (the sandbox's simulated courier); optional. */
  positionAfter?(from: Point, to: Point, seconds: number, product?: string): Point;
}

/** The model's values; documented in the README ("ETAs") and set with ETA_* variables. */
export interface GreatCircleSettings {
  /** Road distance over great-circle distance in a city (1.3 to 1.4 is typical). */
  detourFactor: number;
  /** Average door-to-door speed in km/h, per product key; `default` for any other. */
  speedKmh: Record<string, number> & { default: number };
  expectedAssignSeconds: number;
  handoverSeconds: number;
}

export const DEFAULT_ETA_SETTINGS: GreatCircleSettings = {
  detourFactor: 1.35,
  // A city courier on a scooter or a car in traffic; express is a dedicated trip.
  speedKmh: { default: 20, standard: 20, express: 25 },
  expectedAssignSeconds: 120,
  handoverSeconds: 180,
};

/** Great-circle distance × a detour factor ÷ a speed per product. */
export class GreatCircleModel implements TravelTimeModel {
  readonly #s: GreatCircleSettings;
  constructor(settings: GreatCircleSettings = DEFAULT_ETA_SETTINGS) {
    this.#s = settings;
  }
  get expectedAssignSeconds(): number {
    return this.#s.expectedAssignSeconds;
  }
  get handoverSeconds(): number {
    return this.#s.handoverSeconds;
  }
  /** km/h for a product. */
  speedKmh(product?: string): number {
    return (product !== undefined && Object.hasOwn(this.#s.speedKmh, product) ? this.#s.speedKmh[product] : undefined) ?? this.#s.speedKmh.default;
  }
  travelSeconds(from: Point, to: Point, product?: string): number {
    const km = (distanceMetres(from, to) / 1000) * this.#s.detourFactor;
    return Math.round((km / this.speedKmh(product)) * 3600);
  }
  /** Where a courier travelling from `from` to `to` is after `seconds` (straight line at the model's pace): the sandbox courier. */
  positionAfter(from: Point, to: Point, seconds: number, product?: string): Point {
    const total = this.travelSeconds(from, to, product);
    const f = total <= 0 ? 1 : Math.min(1, Math.max(0, seconds / total));
    return { lat: from.lat + (to.lat - from.lat) * f, lng: from.lng + (to.lng - from.lng) * f };
  }
}
