import type { Transfer } from '../../src/modules/transfers/schemas.ts';
import type { Warehouse } from '../../src/modules/warehouses/schemas.ts';
import { type Merchant, type TestApp, warehouseBody } from './app.ts';

/**
 * A merchant with history, made through the services (the same rules as the API): warehouses,
 * transfers spread over time and warehouses in every common state (some cancelled with refunds, one
 * delivered, one returned), top-ups. Deterministic: the same names, phones and places every time, the
 * clock advanced a fixed step per transfer.
 */
export const SEED_RECIPIENTS = [
  { firstName: 'Anna', lastName: 'Ivanova', phone: '+7 900 000-00-01' },
  { firstName: 'Boris', lastName: 'Sokolov', phone: '+7 900 000-00-02' },
  { firstName: 'Clara', lastName: 'Mendes', phone: '+7 900 000-00-03' },
  { firstName: 'Dmitri', lastName: 'Orlov', phone: '+7 900 000-00-04' },
] as const;

export const SEED_PLACES = [
  { display_name: 'Komsomolsky Ave 24, Moscow', lat: 55.7339, lng: 37.5886, city: 'Moscow' },
  { display_name: 'Arbat St 10, Moscow', lat: 55.7522, lng: 37.5927, city: 'Moscow' },
  { display_name: 'Lesnaya St 5, Moscow', lat: 55.7791, lng: 37.5889, city: 'Moscow' },
] as const;

export interface SeedOptions {
  name?: string;
  /** Opening balance, major units. */
  balance?: string;
  mode?: 'live' | 'sandbox';
  warehouses?: number;
  transfers?: number;
  /** Clock step between transfers, ms (default 7 minutes). */
  stepMs?: number;
  /** Overrides the recipient of transfer i. */
  recipient?: (i: number) => { firstName: string; lastName: string; phone: string } | undefined;
}

export interface SeededMerchant extends Merchant {
  name: string;
  warehouses: Warehouse[];
  /** Oldest first, as they are now (after cancels and moves). */
  transfers: Transfer[];
}

const COURIER = { id: null, firstName: 'Ivan' };

export async function seedMerchant(t: TestApp, opts: SeedOptions = {}): Promise<SeededMerchant> {
  const { name = 'Seeded shop', balance = '100000', mode = 'live', warehouses: nw = 2, transfers: nt = 8, stepMs = 7 * 60_000 } = opts;
  const m = await t.merchant(name, balance, mode);
  const warehouses: Warehouse[] = [];
  for (let i = 0; i < nw; i++) {
    const lat = 55.7575 + i * 0.01;
    const body = warehouseBody({
      name: `Warehouse ${String.fromCharCode(65 + i)}`,
      nameInt: `warehouse-${i + 1}`,
      address: `Tverskaya St ${i + 1}, Moscow`,
      locationMetadata: { display_name: `Tverskaya St ${i + 1}, Moscow`, lat, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
    });
    warehouses.push(await t.services.warehouses.create(m.merchantId, body as never));
  }
  const transfers: Transfer[] = [];
  for (let i = 0; i < nt; i++) {
    t.clock.advance(stepMs);
    const w = warehouses[i % warehouses.length];
    const q = await t.services.quotes.create(m.merchantId, {
      warehouseId: w.id,
      destinationLocation: { ...SEED_PLACES[i % SEED_PLACES.length] },
      parcelSize: i % 3 === 0 ? 'MEDIUM' : 'SMALL',
      isFragile: i % 4 === 1,
      isPerishable: false,
      deliveryType: 'DOOR_TO_DOOR',
    } as never);
    const recipient = opts.recipient?.(i) ?? SEED_RECIPIENTS[i % SEED_RECIPIENTS.length];
    let tr = await t.services.transfers.create(m.merchantId, {
      matchmakingId: q.id,
      productKey: i % 2 === 0 ? 'standard' : 'express',
      description: `Parcel ${i + 1}`,
      recipientInfo: { ...recipient },
    });
    // Every fourth one cancelled at once (full refund); the sixth accepted then cancelled (refund less the fee);
    // the third delivered; the seventh returned (refund less the return fee).
    const move = (to: Transfer['state'], actor: 'courier' | 'merchant' = 'courier') =>
      t.services.transfers.transition(tr.id, {
        to,
        actor: actor === 'courier' ? { type: 'courier', courier: COURIER } : { type: 'merchant', merchantId: m.merchantId },
        reason: to === 'cancelled' ? 'CUSTOMER_REQUESTED' : to === 'returning' ? 'RECIPIENT_UNAVAILABLE' : undefined,
      }) as Promise<Transfer>;
    if (i % 4 === 3) tr = await move('cancelled', 'merchant');
    else if (i % 8 === 5) {
      await move('courierAssigned');
      tr = await move('cancelled', 'merchant');
    } else if (i % 8 === 2) {
      await move('courierAssigned');
      await move('pickedUp');
      tr = await move('delivered');
    } else if (i % 8 === 6) {
      await move('courierAssigned');
      await move('pickedUp');
      await move('returning');
      tr = await move('returned');
    }
    transfers.push(tr);
    if (i === Math.floor(nt / 2)) await t.services.merchants.topUp(m.merchantId, 500_000, 'Top-up by bank transfer');
  }
  return { ...m, name, warehouses, transfers };
}
