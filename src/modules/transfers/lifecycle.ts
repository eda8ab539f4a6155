import type { ActorType, TransferState } from '../../db/types.ts';
import type { EventType } from '../events/catalogue.ts';

/**
 * The transfer lifecycle as one table. Every change of state goes through TransfersService.transition,
 * which finds the row here and applies it with one conditional UPDATE (WHERE state = from), so of two
 * racing changes exactly one wins. Nothing else in the code decides which moves are allowed.
 *
 *   inProgress ──accept──▶ courierAssigned ──pickup──▶ pickedUp ──deliver──▶ delivered
 *       ▲  │                  │    │                      │
 *       │  │       release ───┘    │                      └─fail──▶ returning ──return──▶ returned
 *       │  └──cancel──▶ cancelled ◀┘ cancel
 */

/** How much of the price goes back to the merchant when a transition happens. */
export type Refund = 'none' | 'full' | 'minusCancellationFee' | 'minusReturnFee';

export interface Transition {
  from: TransferState;
  to: TransferState;
  /** Who may make it. Couriers' moves are also the sandbox's simulated courier's. */
  by: readonly ActorType[];
  /** Its event; the catalogue's state after it is `to` (a test checks). */
  event: EventType;
  /** The refund, by actor where it differs. */
  refund: Refund | Partial<Record<ActorType, Refund>>;
}

export const TRANSITIONS: readonly Transition[] = [
  // A courier takes a job (an offer or the job list), or an operator assigns a named courier (dispatch's assign).
  { from: 'inProgress', to: 'courierAssigned', by: ['courier', 'operator'], event: 'transfer.courier_assigned', refund: 'none' },
  { from: 'courierAssigned', to: 'inProgress', by: ['courier', 'operator'], event: 'transfer.courier_released', refund: 'none' },
  { from: 'courierAssigned', to: 'pickedUp', by: ['courier', 'operator'], event: 'transfer.picked_up', refund: 'none' },
  { from: 'pickedUp', to: 'delivered', by: ['courier', 'operator'], event: 'transfer.delivered', refund: 'none' },
  { from: 'pickedUp', to: 'returning', by: ['courier', 'operator'], event: 'transfer.delivery_failed', refund: 'none' },
  { from: 'returning', to: 'returned', by: ['courier', 'operator'], event: 'transfer.returned', refund: 'minusReturnFee' },
  // Cancellation. The system cancels when no courier accepted within the assignment timeout.
  { from: 'inProgress', to: 'cancelled', by: ['merchant', 'operator', 'system'], event: 'transfer.cancelled', refund: 'full' },
  {
    from: 'courierAssigned',
    to: 'cancelled',
    by: ['merchant', 'operator'],
    event: 'transfer.cancelled',
    refund: { merchant: 'minusCancellationFee', operator: 'full' },
  },
  // After pickup only support can cancel (the parcel is in a courier's hands): a full refund, audited.
  { from: 'pickedUp', to: 'cancelled', by: ['operator'], event: 'transfer.cancelled', refund: 'full' },
  { from: 'returning', to: 'cancelled', by: ['operator'], event: 'transfer.cancelled', refund: 'full' },
];

export const TERMINAL_STATES: readonly TransferState[] = ['delivered', 'returned', 'cancelled'];

/** The transition from `from` to `to` that `actor` may make, if any. */
export function findTransition(from: TransferState, to: TransferState, actor: ActorType): Transition | undefined {
  return TRANSITIONS.find((t) => t.from === from && t.to === to && t.by.includes(actor));
}

/** States any of `actors` may move a transfer to from `from`, in the table's order. */
export function nextStates(from: TransferState, actors: readonly ActorType[]): TransferState[] {
  return TRANSITIONS.filter((t) => t.from === from && t.by.some((a) => actors.includes(a))).map((t) => t.to);
}

/** The refund in minor units: never negative, never more than was paid. */
export function refundAmount(t: Transition, actor: ActorType, price: number, fees: { cancellation: number; return: number }): number {
  const rule = typeof t.refund === 'string' ? t.refund : (t.refund[actor] ?? 'none');
  switch (rule) {
    case 'none':
      return 0;
    case 'full':
      return price;
    case 'minusCancellationFee':
      return Math.max(0, price - fees.cancellation);
    case 'minusReturnFee':
      return Math.max(0, price - fees.return);
  }
}

/** Why a merchant cancels; enumerated so reports can count them. */
export const CANCELLATION_REASONS = [
  'CUSTOMER_REQUESTED',
  'ORDER_CHANGED',
  'DUPLICATE',
  'WRONG_ADDRESS',
  'PARCEL_NOT_READY',
  'DELIVERY_TOO_SLOW',
  'OTHER',
] as const;
export type CancellationReason = (typeof CANCELLATION_REASONS)[number];

/** Reasons the service itself or support records. */
export const SYSTEM_CANCELLATION_REASON = 'NO_COURIER_ASSIGNED';
export const OPERATOR_CANCELLATION_REASON = 'OPERATOR';

/** Why a courier could not deliver (transfer.delivery_failed); the parcel goes back to the warehouse. */
export const DELIVERY_FAILURE_REASONS = ['RECIPIENT_UNAVAILABLE', 'WRONG_ADDRESS', 'RECIPIENT_REFUSED', 'PARCEL_DAMAGED', 'OTHER'] as const;
export type DeliveryFailureReason = (typeof DELIVERY_FAILURE_REASONS)[number];
