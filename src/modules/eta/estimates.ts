import type { TransferState } from '../../db/types.ts';
import type { Point, TravelTimeModel } from './model.ts';

export interface Estimates {
  /** Epoch ms; null when there is nothing left to estimate (terminal, or the leg does not apply). */
  pickupAt: number | null;
  deliveryAt: number | null;
}

export interface PickupWindow {
  start: number;
  end: number;
}

/**
 * A quote's product: a courier is expected to be assigned and at the pickup after the expected assign
 * time (no earlier than a booked window's start), then the parcel travels to the destination at the
 * product's speed.
 */
export function quoteEstimates(model: TravelTimeModel, from: Point, to: Point, product: string, now: number, window?: PickupWindow): Estimates {
  const pickupAt = Math.max(now + model.expectedAssignSeconds * 1000, window?.start ?? 0);
  return { pickupAt, deliveryAt: pickupAt + (model.handoverSeconds + model.travelSeconds(from, to, product)) * 1000 };
}

/** What a transfer's estimates rest on at a moment. */
export interface TransferSituation {
  state: TransferState;
  pickup: Point;
  destination: Point;
  product: string;
  window?: PickupWindow;
  /** The courier's last position, when one holds the job. */
  courier?: Point;
  pickedUpAt?: number | null;
}

/**
 * A transfer's estimates now: waiting for a courier, the quote's rule; assigned, the courier's way from
 * its position to the pickup (not before the window), then the delivery leg; picked up, the way from the
 * courier's position to the destination. Terminal states and a return have none (a return's pickup
 * happened: its time stays).
 */
export function transferEstimates(model: TravelTimeModel, s: TransferSituation, now: number): Estimates {
  const leg = (from: Point) => (model.handoverSeconds + model.travelSeconds(from, s.destination, s.product)) * 1000;
  switch (s.state) {
    case 'inProgress': {
      const e = quoteEstimates(model, s.pickup, s.destination, s.product, now, s.window);
      return e;
    }
    case 'courierAssigned': {
      const approach = s.courier ? model.travelSeconds(s.courier, s.pickup, s.product) * 1000 : 0;
      const pickupAt = Math.max(now + approach, s.window?.start ?? 0);
      return { pickupAt, deliveryAt: pickupAt + leg(s.pickup) };
    }
    case 'pickedUp':
      return {
        pickupAt: s.pickedUpAt ?? now,
        deliveryAt: now + (model.handoverSeconds + model.travelSeconds(s.courier ?? s.pickup, s.destination, s.product)) * 1000,
      };
    case 'returning':
      return { pickupAt: s.pickedUpAt ?? null, deliveryAt: null };
    default:
      return { pickupAt: null, deliveryAt: null };
  }
}
