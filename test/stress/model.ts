import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import { parseMajorAmount } from '../../src/lib/money.ts';
import { createTestApp, type TestApp, warehouseBody } from '../helpers/app.ts';
import { transferBody } from '../helpers/server-process.ts';
import type { StoreName } from '../helpers/stores.ts';
import { tallyInto } from './common.ts';

/**
 * Family 2, model-based: fast-check generates sequences of commands (warehouses, quotes, transfers,
 * top-ups, credential revokes, reads) for two merchants, runs each through the real pipeline and an
 * in-memory model, and compares: every answer is the one the model predicts. After every step: each
 * balance equals the model's and its ledger sum and is never negative; no quote produced two transfers
 * and consumed quotes == transfers; every read returns only the caller's data.
 *
 * Extending it (e.g. cancels): write one class implementing `Command` that predicts the answer from
 * the model and updates it, and add its arbitrary to COMMANDS. The invariants run after it unchanged.
 */

export interface ModelFigures {
  store: StoreName;
  runs: number;
  seed: number;
  commands: number;
  byCommand: Record<string, number>;
  outcomes: Record<string, number>;
  ms: number;
}

type ProductKey = 'standard' | 'express';
interface QuoteModel {
  id: string;
  transferIdHint: string;
  warehouseId: string;
  products: Record<string, { available: boolean; priceMinor: number }>;
  status: 'pending' | 'consumed';
  transferId?: string;
}
interface MerchantModel {
  merchantId: string;
  clientId: string;
  token: string;
  revokedTokens: string[];
  balanceMinor: number;
  warehouses: Array<{ id: string; status: 'ACTIVE' | 'DISABLED' }>;
  quotes: QuoteModel[];
  transfers: Array<{ id: string; quoteId: string; priceMinor: number; body: unknown; cancelled?: boolean }>;
}
export interface Model {
  merchants: [MerchantModel, MerchantModel];
}
export interface Real {
  t: TestApp;
  figures: ModelFigures;
}

export type Command = fc.AsyncCommand<Model, Real, false>;

const outcome = (real: Real, name: string, status: number) => tallyInto(real.figures.outcomes, `${name} ${status}`);
const pick = <T>(xs: T[], i: number): T | undefined => (xs.length === 0 ? undefined : xs[i % xs.length]);

/** A destination relative to the default test warehouse (Tverskaya St, Moscow). */
const DESTINATIONS = {
  near: { lat: 55.7375, lng: 37.6236 }, // ~2.4 km: every product in range
  mid: { lat: 56.1175, lng: 37.6136 }, // ~40 km: beyond express (25 km), within standard (60 km)
  far: { lat: 56.7575, lng: 37.6136 }, // ~111 km: beyond every product
} as const;
type Distance = keyof typeof DESTINATIONS;

async function api(real: Real, token: string, method: string, url: string, payload?: unknown) {
  const res = await real.t.as(token, { method: method as 'GET', url, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

class CreateWarehouse implements Command {
  readonly m: 0 | 1;
  readonly status: 'ACTIVE' | 'DISABLED';
  constructor(m: 0 | 1, status: 'ACTIVE' | 'DISABLED') {
    this.m = m;
    this.status = status;
  }
  check = () => true;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    const res = await api(real, mm.token, 'POST', '/warehouses', warehouseBody({ status: this.status }));
    outcome(real, 'CreateWarehouse', res.status);
    assert.equal(res.status, 201);
    mm.warehouses.push({ id: res.body.id, status: this.status });
  }
  toString = () => `CreateWarehouse(m${this.m}, ${this.status})`;
}

class SetWarehouseStatus implements Command {
  readonly m: 0 | 1;
  readonly w: number;
  readonly status: 'ACTIVE' | 'DISABLED';
  constructor(m: 0 | 1, w: number, status: 'ACTIVE' | 'DISABLED') {
    this.m = m;
    this.w = w;
    this.status = status;
  }
  check = (model: Readonly<Model>) => model.merchants[this.m].warehouses.length > 0;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    const w = pick(mm.warehouses, this.w)!;
    const res = await api(real, mm.token, 'PUT', `/warehouses/${w.id}`, warehouseBody({ status: this.status }));
    outcome(real, 'SetWarehouseStatus', res.status);
    assert.equal(res.status, 200);
    assert.equal(res.body.status, this.status);
    w.status = this.status;
  }
  toString = () => `SetWarehouseStatus(m${this.m}, w${this.w}, ${this.status})`;
}

class Quote implements Command {
  readonly m: 0 | 1;
  readonly w: number;
  readonly distance: Distance;
  readonly parcelSize: 'SMALL' | 'EXTRA_LARGE';
  readonly deliveryType: 'DOOR_TO_DOOR' | 'CURBSIDE';
  constructor(m: 0 | 1, w: number, distance: Distance, parcelSize: 'SMALL' | 'EXTRA_LARGE', deliveryType: 'DOOR_TO_DOOR' | 'CURBSIDE') {
    this.m = m;
    this.w = w;
    this.distance = distance;
    this.parcelSize = parcelSize;
    this.deliveryType = deliveryType;
  }
  check = (model: Readonly<Model>) => model.merchants[this.m].warehouses.length > 0;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    const w = pick(mm.warehouses, this.w)!;
    const res = await api(real, mm.token, 'POST', '/options', {
      destinationLocation: { ...DESTINATIONS[this.distance], display_name: `Destination (${this.distance})` },
      warehouseId: w.id,
      parcelSize: this.parcelSize,
      deliveryType: this.deliveryType,
    });
    outcome(real, 'Quote', res.status);
    if (w.status === 'DISABLED') {
      assert.equal(res.status, 422);
      assert.equal(res.body.type, 'WAREHOUSE_DISABLED');
      return;
    }
    if (this.distance === 'far') {
      assert.equal(res.status, 422);
      assert.equal(res.body.type, 'OUT_OF_SERVICE_AREA');
      return;
    }
    assert.equal(res.status, 201);
    const products: QuoteModel['products'] = {};
    for (const [key, p] of Object.entries(res.body.products as Record<string, any>)) {
      products[key] = { available: p.status === 'AVAILABLE', priceMinor: parseMajorAmount(p.common.price.payable_amount) };
    }
    assert.equal(products.standard.available, true, 'standard takes every size and type, up to 60 km');
    if (this.distance === 'mid' || this.parcelSize === 'EXTRA_LARGE' || this.deliveryType === 'CURBSIDE') assert.equal(products.express.available, false);
    mm.quotes.push({ id: res.body.id, transferIdHint: res.body.transfer_id, warehouseId: w.id, products, status: 'pending' });
  }
  toString = () => `Quote(m${this.m}, w${this.w}, ${this.distance}, ${this.parcelSize}, ${this.deliveryType})`;
}

class Transfer implements Command {
  readonly m: 0 | 1;
  readonly q: number;
  readonly productKey: ProductKey | 'teleport';
  readonly foreign: boolean;
  constructor(m: 0 | 1, q: number, productKey: ProductKey | 'teleport', foreign: boolean) {
    this.m = m;
    this.q = q;
    this.productKey = productKey;
    this.foreign = foreign;
  }
  check = (model: Readonly<Model>) => model.merchants[this.foreign ? 1 - this.m : this.m].quotes.length > 0;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    const owner = model.merchants[this.foreign ? 1 - this.m : this.m];
    const quote = pick(owner.quotes, this.q)!;
    const res = await api(real, mm.token, 'POST', '/transfer', transferBody(quote.id, { productKey: this.productKey }));
    outcome(real, 'Transfer', res.status);
    const product = Object.hasOwn(quote.products, this.productKey) ? quote.products[this.productKey] : undefined;
    const warehouse = owner.warehouses.find((w) => w.id === quote.warehouseId)!;
    // The service's order of checks: the quote, the product, the warehouse, the balance.
    if (this.foreign) return assert.deepEqual([res.status, res.body.type], [404, 'QUOTE_NOT_FOUND']);
    if (quote.status === 'consumed') {
      assert.deepEqual([res.status, res.body.type, res.body.transferId], [409, 'QUOTE_ALREADY_USED', quote.transferId]);
      return;
    }
    if (!product?.available) return assert.deepEqual([res.status, res.body.type], [422, 'PRODUCT_NOT_AVAILABLE']);
    if (warehouse.status !== 'ACTIVE') return assert.deepEqual([res.status, res.body.type], [422, 'WAREHOUSE_DISABLED']);
    if (mm.balanceMinor < product.priceMinor) return assert.deepEqual([res.status, res.body.type], [402, 'INSUFFICIENT_BALANCE']);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.id, quote.transferIdHint, 'the transfer gets the id the quote announced');
    assert.equal(Math.round(res.body.totalPrice * 100), product.priceMinor);
    quote.status = 'consumed';
    quote.transferId = res.body.id;
    mm.balanceMinor -= product.priceMinor;
    mm.transfers.push({ id: res.body.id, quoteId: quote.id, priceMinor: product.priceMinor, body: res.body });
  }
  toString = () => `Transfer(m${this.m}, q${this.q}, ${this.productKey}${this.foreign ? ', foreign' : ''})`;
}

/** Cancels a transfer (its own or, foreign, the other merchant's): the model predicts 200 with the whole price refunded (no courier here), 409 the second time, 404 across merchants. */
class Cancel implements Command {
  readonly m: 0 | 1;
  readonly i: number;
  readonly foreign: boolean;
  constructor(m: 0 | 1, i: number, foreign: boolean) {
    this.m = m;
    this.i = i;
    this.foreign = foreign;
  }
  check = (model: Readonly<Model>) => model.merchants[this.foreign ? 1 - this.m : this.m].transfers.length > 0;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    const owner = model.merchants[this.foreign ? 1 - this.m : this.m];
    const transfer = pick(owner.transfers, this.i)!;
    const res = await api(real, mm.token, 'POST', `/transfer/${transfer.id}/cancel`, { reason: 'OTHER' });
    outcome(real, 'Cancel', res.status);
    if (this.foreign) return assert.deepEqual([res.status, res.body.type], [404, 'TRANSFER_NOT_FOUND']);
    if (transfer.cancelled) return assert.deepEqual([res.status, res.body.type, res.body.state], [409, 'TRANSFER_NOT_CANCELLABLE', 'cancelled']);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.state, Math.round(res.body.refundedAmount * 100)], ['cancelled', transfer.priceMinor]);
    transfer.cancelled = true;
    transfer.body = res.body;
    mm.balanceMinor += transfer.priceMinor;
  }
  toString = () => `Cancel(m${this.m}, t${this.i}${this.foreign ? ', foreign' : ''})`;
}

class TopUp implements Command {
  readonly m: 0 | 1;
  readonly amountMinor: number;
  constructor(m: 0 | 1, amountMinor: number) {
    this.m = m;
    this.amountMinor = amountMinor;
  }
  check = () => true;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    const view = await real.t.services.merchants.topUp(mm.merchantId, this.amountMinor, 'model top-up');
    outcome(real, 'TopUp', 200);
    mm.balanceMinor += this.amountMinor;
    assert.equal(view.balanceMinor, mm.balanceMinor);
  }
  toString = () => `TopUp(m${this.m}, ${this.amountMinor})`;
}

class RevokeCredential implements Command {
  readonly m: 0 | 1;
  constructor(m: 0 | 1) {
    this.m = m;
  }
  check = () => true;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    await real.t.services.credentials.revoke(mm.clientId);
    const refused = await api(real, mm.token, 'GET', '/warehouses');
    outcome(real, 'RevokeCredential', refused.status);
    assert.deepEqual([refused.status, refused.body.type], [401, 'CREDENTIALS_REVOKED']);
    mm.revokedTokens.push(mm.token);
    const issued = await real.t.services.credentials.issue(mm.merchantId);
    mm.clientId = issued.clientId;
    mm.token = await real.t.token({ clientId: issued.clientId, clientSecret: issued.clientSecret });
  }
  toString = () => `RevokeCredential(m${this.m})`;
}

/** Reads as one merchant: exactly its own warehouses and transfers; the other merchant's ids look unknown. */
class Read implements Command {
  readonly m: 0 | 1;
  readonly i: number;
  constructor(m: 0 | 1, i: number) {
    this.m = m;
    this.i = i;
  }
  check = () => true;
  async run(model: Model, real: Real) {
    const mm = model.merchants[this.m];
    const other = model.merchants[1 - this.m];
    const list = await api(real, mm.token, 'GET', '/warehouses');
    outcome(real, 'Read', list.status);
    assert.equal(list.status, 200);
    assert.deepEqual(
      (list.body as Array<{ id: string; status: string; merchantId: string }>).map((w) => [w.id, w.status, w.merchantId]),
      mm.warehouses.map((w) => [w.id, w.status, mm.merchantId]),
    );
    const own = pick(mm.transfers, this.i);
    if (own) assert.deepEqual(await api(real, mm.token, 'GET', `/transfer/${own.id}`), { status: 200, body: own.body });
    const theirs = pick(other.transfers, this.i);
    if (theirs) assert.equal((await api(real, mm.token, 'GET', `/transfer/${theirs.id}`)).body.type, 'TRANSFER_NOT_FOUND');
    const theirWarehouse = pick(other.warehouses, this.i);
    if (theirWarehouse) {
      assert.equal((await api(real, mm.token, 'GET', `/warehouses/${theirWarehouse.id}`)).body.type, 'WAREHOUSE_NOT_FOUND');
      assert.equal((await api(real, mm.token, 'PUT', `/warehouses/${theirWarehouse.id}`, warehouseBody({ status: 'DISABLED' }))).status, 404);
    }
    const revoked = mm.revokedTokens.at(-1);
    if (revoked) assert.equal((await api(real, revoked, 'GET', '/warehouses')).status, 401);
  }
  toString = () => `Read(m${this.m}, ${this.i})`;
}

const merchant = fc.constantFrom<0 | 1>(0, 1);

const quoteCommand = fc
  .tuple(
    merchant,
    fc.nat(),
    fc.constantFrom<Distance>('near', 'near', 'near', 'mid', 'far'),
    fc.constantFrom<'SMALL' | 'EXTRA_LARGE'>('SMALL', 'SMALL', 'SMALL', 'EXTRA_LARGE'),
    fc.constantFrom<'DOOR_TO_DOOR' | 'CURBSIDE'>('DOOR_TO_DOOR', 'DOOR_TO_DOOR', 'CURBSIDE'),
  )
  .map(([m, w, d, p, t]) => new Quote(m, w, d, p, t));
const transferCommand = fc
  .tuple(
    merchant,
    fc.nat(),
    fc.constantFrom<ProductKey | 'teleport'>('standard', 'standard', 'express', 'teleport'),
    fc.oneof({ weight: 7, arbitrary: fc.constant(false) }, { weight: 3, arbitrary: fc.constant(true) }),
  )
  .map(([m, q, p, f]) => new Transfer(m, q, p, f));

/** Every command the model knows (quotes and transfers listed twice: they are the point); add one arbitrary here to add a command. */
export const COMMANDS: Array<fc.Arbitrary<Command>> = [
  quoteCommand,
  quoteCommand,
  transferCommand,
  transferCommand,
  fc.tuple(merchant, fc.constantFrom<'ACTIVE' | 'DISABLED'>('ACTIVE', 'ACTIVE', 'ACTIVE', 'DISABLED')).map(([m, s]) => new CreateWarehouse(m, s)),
  fc.tuple(merchant, fc.nat(), fc.constantFrom<'ACTIVE' | 'DISABLED'>('ACTIVE', 'DISABLED')).map(([m, w, s]) => new SetWarehouseStatus(m, w, s)),
  fc
    .tuple(merchant, fc.nat(), fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 2, arbitrary: fc.constant(true) }))
    .map(([m, i, f]) => new Cancel(m, i, f)),
  fc.tuple(merchant, fc.constantFrom(1, 10_000, 50_000, 150_000)).map(([m, a]) => new TopUp(m, a)),
  merchant.map((m) => new RevokeCredential(m)),
  fc.tuple(merchant, fc.nat()).map(([m, i]) => new Read(m, i)),
];

/** After every step: money, quotes and transfers of both merchants as the model says, straight from the database. */
async function checkInvariants(model: Model, real: Real): Promise<void> {
  const { db } = real.t.database;
  for (const mm of model.merchants) {
    const row = await db.selectFrom('merchants').select('balance').where('id', '=', mm.merchantId).executeTakeFirstOrThrow();
    const { rows } = await sql<{ s: number | string | null }>`select sum(amount) as s from ledger_entries where merchant_id = ${mm.merchantId}`.execute(db);
    assert.equal(Number(row.balance), mm.balanceMinor, 'balance = model');
    assert.equal(Number(rows[0].s ?? 0), Number(row.balance), 'balance = ledger sum');
    assert.ok(Number(row.balance) >= 0, 'balance never negative');
    const dup = await sql<{
      quote_id: string;
    }>`select quote_id from transfers where merchant_id = ${mm.merchantId} group by quote_id having count(*) > 1`.execute(db);
    assert.deepEqual(dup.rows, [], 'a quote produces at most one transfer');
    const transfers = await db.selectFrom('transfers').select(['id', 'quote_id']).where('merchant_id', '=', mm.merchantId).execute();
    assert.deepEqual(new Set(transfers.map((t) => t.id)), new Set(mm.transfers.map((t) => t.id)), 'transfers = model');
    const cancelled = await db.selectFrom('transfers').select('id').where('merchant_id', '=', mm.merchantId).where('state', '=', 'cancelled').execute();
    assert.deepEqual(new Set(cancelled.map((t) => t.id)), new Set(mm.transfers.filter((t) => t.cancelled).map((t) => t.id)), 'cancelled = model');
    const refunds = await db
      .selectFrom('ledger_entries')
      .select(['transfer_id', 'amount'])
      .where('merchant_id', '=', mm.merchantId)
      .where('kind', '=', 'REFUND')
      .execute();
    assert.equal(refunds.length, cancelled.length, 'one refund per cancel, never two');
    // A cancelled transfer keeps its consumed quote: a quote is consumed at most once, ever.
    const consumed = await db.selectFrom('quotes').select('id').where('merchant_id', '=', mm.merchantId).where('status', '=', 'consumed').execute();
    assert.deepEqual(new Set(consumed.map((q) => q.id)), new Set(mm.transfers.map((t) => t.quoteId)), 'consumed quotes = quotes with a transfer');
  }
}

/** Runs every command, then the invariants. */
class Checked implements Command {
  readonly inner: Command;
  constructor(inner: Command) {
    this.inner = inner;
  }
  check = (model: Readonly<Model>) => this.inner.check(model);
  async run(model: Model, real: Real) {
    real.figures.commands++;
    tallyInto(real.figures.byCommand, this.inner.toString().split('(')[0]);
    await this.inner.run(model, real);
    await checkInvariants(model, real);
  }
  toString = () => this.inner.toString();
}

export async function modelFamily(store: StoreName, runs: number, seed: number, maxCommands: number): Promise<ModelFigures> {
  const t = await createTestApp(store);
  const started = performance.now();
  const figures: ModelFigures = { store, runs: 0, seed, commands: 0, byCommand: {}, outcomes: {}, ms: 0 };
  const opening = fc.constantFrom('0', '500', '2000', '10000');
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(opening, opening),
        fc.commands(
          COMMANDS.map((c) => c.map((cmd) => new Checked(cmd) as Command)),
          { maxCommands, size: 'max' },
        ),
        async ([o0, o1], cmds) => {
          figures.runs++;
          const setup = async () => {
            const merchants = [] as unknown as [MerchantModel, MerchantModel];
            for (const opening of [o0, o1]) {
              const m = await t.merchant('Model merchant', opening);
              merchants.push({
                merchantId: m.merchantId,
                clientId: m.clientId,
                token: await t.token(m),
                revokedTokens: [],
                balanceMinor: parseMajorAmount(opening),
                // One warehouse to start from, so that short sequences reach quotes and transfers too.
                warehouses: [
                  { id: (await t.as(await t.token(m), { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json().id, status: 'ACTIVE' },
                ],
                quotes: [],
                transfers: [],
              });
            }
            return { model: { merchants }, real: { t, figures } };
          };
          await fc.asyncModelRun(setup, cmds);
        },
      ),
      // Unbiased: fast-check otherwise favours short command sequences; long ones are where money goes wrong.
      { numRuns: runs, seed, endOnFailure: true, unbiased: true },
    );
  } finally {
    figures.ms = Math.round(performance.now() - started);
    await t.close();
  }
  return figures;
}
