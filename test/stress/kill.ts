import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import {
  ApiClient,
  createMerchant,
  fetchToken,
  type HttpResult,
  merchantTotals,
  openStore,
  payableMinor,
  type ServerProcess,
  type StoreAccess,
  startServerProcess,
} from '../helpers/server-process.ts';
import { createStore, type StoreName } from '../helpers/stores.ts';
import { prng, tallyInto } from './common.ts';

/**
 * Family 3, kill -9: the real service (a child process) under a mix of requests from several workers,
 * killed with SIGKILL at a random moment, restarted on the same database, once per seed. After every
 * restart: each acknowledged transfer and warehouse is stored exactly once, balance == ledger sum ==
 * opening balance - charges, one charge per transfer, quotes consumed == transfers, and (SQLite) the
 * file passes integrity_check. No answer is a 5xx or an unexpected refusal: a request either got its
 * full answer or none (status 0, cut by the kill).
 *
 * Extending it (e.g. cancels): add one entry to REQUEST_KINDS that performs the request, asserts its
 * answer and records what was acknowledged in `Acknowledged` (and, if it moves money, extend
 * `checkStore` with the matching sum). Workers pick kinds by weight from the seed.
 */

export interface KillFigures {
  store: StoreName;
  seeds: number;
  firstSeed: number;
  requests: number;
  statuses: Record<string, number>;
  byKind: Record<string, number>;
  inFlightAtKills: number;
  acknowledgedTransfers: number;
  committedUnanswered: number;
  ms: number;
}

export interface Acknowledged {
  transfers: Map<string, { priceMinor: number; body: unknown | undefined; maybeCancelled?: boolean }>;
  /** Transfers whose cancel was answered 200 (their whole price refunded: no courier in this load). */
  cancelled: Set<string>;
  warehouses: Set<string>;
}

export interface KindContext {
  client: ApiClient;
  warehouseId: string;
  acknowledged: Acknowledged;
  rand: () => number;
  /** Every request goes through here (status tally, in-flight count). */
  call(run: () => Promise<HttpResult>): Promise<HttpResult>;
}

export interface RequestKind {
  name: string;
  weight: number;
  /** One unit of work; returns false once the server is gone (a status-0 answer). */
  run(ctx: KindContext): Promise<boolean>;
}

/** Every answer is complete (and the one expected) or absent. */
const expect = (res: HttpResult, status: number, what: string): boolean => {
  if (res.status === 0) return false;
  assert.equal(res.status, status, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return true;
};

export const REQUEST_KINDS: RequestKind[] = [
  {
    name: 'quote + transfer',
    weight: 6,
    async run(ctx) {
      const quote = await ctx.call(() => ctx.client.options(ctx.warehouseId, Math.floor(ctx.rand() * 60)));
      if (!expect(quote, 201, 'POST /options')) return false;
      const transfer = await ctx.call(() => ctx.client.transfer(quote.body.id));
      if (!expect(transfer, 201, 'POST /transfer')) return false;
      assert.ok(!ctx.acknowledged.transfers.has(transfer.body.id), 'a transfer is acknowledged once');
      ctx.acknowledged.transfers.set(transfer.body.id, { priceMinor: payableMinor(quote.body), body: transfer.body });
      return true;
    },
  },
  {
    name: 'cancel',
    weight: 2,
    async run(ctx) {
      const open = [...ctx.acknowledged.transfers.keys()].filter((id) => !ctx.acknowledged.cancelled.has(id));
      if (open.length === 0) return true;
      const id = open[Math.floor(ctx.rand() * open.length)];
      const res = await ctx.call(() => ctx.client.request('POST', `/transfer/${id}/cancel`, { body: { reason: 'OTHER' } }));
      const entry = ctx.acknowledged.transfers.get(id)!;
      if (res.status === 0) {
        entry.maybeCancelled = true; // cut by a kill: it may have committed; the read-back accepts either state
        return false;
      }
      // 409: another worker's cancel of it won, or an earlier cancel committed but its answer was cut by a kill.
      if (res.status === 409) {
        assert.deepEqual([res.body.type, res.body.state], ['TRANSFER_NOT_CANCELLABLE', 'cancelled']);
        entry.body = undefined; // its cancelled form was never answered: the read-back checks the state only
      } else {
        assert.equal(res.status, 200, `POST /transfer/{id}/cancel: ${res.status} ${JSON.stringify(res.body)}`);
        entry.body = res.body;
      }
      ctx.acknowledged.cancelled.add(id);
      return true;
    },
  },
  {
    name: 'create warehouse',
    weight: 1,
    async run(ctx) {
      const res = await ctx.call(() => ctx.client.request('POST', '/warehouses', { body: { ...warehouse, name: `Crash ${Math.floor(ctx.rand() * 1e6)}` } }));
      if (!expect(res, 201, 'POST /warehouses')) return false;
      ctx.acknowledged.warehouses.add(res.body.id);
      return true;
    },
  },
  {
    name: 'read',
    weight: 2,
    async run(ctx) {
      const ids = [...ctx.acknowledged.transfers.keys()];
      const res =
        ids.length > 0 && ctx.rand() < 0.5
          ? await ctx.call(() => ctx.client.request('GET', `/transfer/${ids[Math.floor(ctx.rand() * ids.length)]}`))
          : await ctx.call(() => ctx.client.request('GET', '/warehouses?limit=20'));
      return expect(res, 200, 'GET');
    },
  },
];

const warehouse = {
  name: 'Crash warehouse',
  address: 'Tverskaya St 1, Moscow',
  locationMetadata: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136 },
};

function chooseKind(rand: () => number): RequestKind {
  const total = REQUEST_KINDS.reduce((s, k) => s + k.weight, 0);
  let x = rand() * total;
  for (const kind of REQUEST_KINDS) {
    x -= kind.weight;
    if (x < 0) return kind;
  }
  return REQUEST_KINDS[0];
}

export async function checkStore(access: StoreAccess, merchantId: string, openingMinor: number, acknowledged: Acknowledged): Promise<number> {
  const totals = await merchantTotals(access, merchantId);
  const stored = new Set(totals.transfers.map((t) => t.id));
  assert.equal(stored.size, totals.transfers.length, 'transfer ids unique');
  for (const id of acknowledged.transfers.keys()) assert.ok(stored.has(id), `acknowledged transfer ${id} survived`);
  assert.equal(totals.ledgerSum, totals.balance, 'balance == ledger sum');
  assert.equal(totals.balance, openingMinor - totals.chargedSum + totals.refundedSum, 'balance == opening - charges + refunds');
  // Refunds: at most one per transfer, exactly the price, only for cancelled transfers; every acknowledged cancel refunded.
  const refunded = new Map(totals.refunds.map((r) => [r.transfer_id, r.amount]));
  assert.equal(refunded.size, totals.refunds.length, 'one refund per transfer at most');
  const cancelledRows = await access.database.db
    .selectFrom('transfers')
    .select(['id', 'total_amount'])
    .where('merchant_id', '=', merchantId)
    .where('state', '=', 'cancelled')
    .execute();
  assert.deepEqual(new Set(refunded.keys()), new Set(cancelledRows.map((t) => t.id)), 'refunded == cancelled');
  for (const t of cancelledRows) assert.equal(refunded.get(t.id), t.total_amount, 'the whole price refunded');
  for (const id of acknowledged.cancelled) assert.ok(refunded.has(id), `acknowledged cancel of ${id} survived with its refund`);
  assert.ok(totals.balance >= 0);
  assert.equal(totals.chargedSum, totals.transferredSum, 'charges == transfer amounts');
  assert.equal(totals.charges.length, totals.transfers.length, 'one charge per transfer');
  assert.equal(totals.consumedQuotes, totals.transfers.length, 'quotes consumed == transfers');
  const warehouses = await access.database.db.selectFrom('warehouses').select('id').where('merchant_id', '=', merchantId).execute();
  const ids = new Set(warehouses.map((w) => w.id));
  for (const id of acknowledged.warehouses) assert.ok(ids.has(id), `acknowledged warehouse ${id} survived`);
  if (access.database.dialect === 'sqlite') {
    const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(access.database.db);
    assert.deepEqual(
      rows.map((r) => r.integrity_check),
      ['ok'],
    );
  }
  return totals.transfers.length - acknowledged.transfers.size;
}

export async function killFamily(storeName: StoreName, seeds: number, firstSeed: number, workers = 6): Promise<KillFigures> {
  const started = performance.now();
  const figures: KillFigures = {
    store: storeName,
    seeds: 0,
    firstSeed,
    requests: 0,
    statuses: {},
    byKind: {},
    inFlightAtKills: 0,
    acknowledgedTransfers: 0,
    committedUnanswered: 0,
    ms: 0,
  };
  const store = await createStore(storeName);
  let server: ServerProcess | undefined;
  let access: StoreAccess | undefined;
  try {
    access = await openStore(store.env);
    // Its one merchant's load and read-back (hundreds of GETs in a few seconds) must not meet the per-merchant
    // rate limit: this family tests durability; the limits have their own tests.
    const serverEnv = { ...store.env, MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000' };
    const m = await createMerchant(access, 'Kill merchant', '100000000');
    server = await startServerProcess({ env: serverEnv });
    const token = await fetchToken(server.url, m.clientId, m.clientSecret);
    const warehouseId = await new ApiClient(server.url, token).createWarehouse();
    const acknowledged: Acknowledged = { transfers: new Map(), cancelled: new Set(), warehouses: new Set([warehouseId]) };

    for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
      const rand = prng(seed);
      const client = new ApiClient(server.url, token);
      let inFlight = 0;
      let stop = false;
      const ctx: KindContext = {
        client,
        warehouseId,
        acknowledged,
        rand,
        async call(run) {
          inFlight++;
          const res = await run();
          inFlight--;
          figures.requests++;
          tallyInto(figures.statuses, res.status);
          return res;
        },
      };
      const worker = async () => {
        while (!stop) {
          const kind = chooseKind(rand);
          tallyInto(figures.byKind, kind.name);
          if (!(await kind.run(ctx))) return;
        }
      };
      const running = Array.from({ length: workers }, worker);
      await sleep(100 + rand() * 700);
      figures.inFlightAtKills += inFlight;
      server.kill('SIGKILL');
      const exit: { signal: NodeJS.Signals | null } = await server.exited;
      assert.equal(exit.signal, 'SIGKILL');
      stop = true;
      await Promise.all(running);
      server = await startServerProcess({ env: serverEnv });
      figures.committedUnanswered = await checkStore(access, m.merchantId, m.openingMinor, acknowledged);
      figures.seeds++;
    }

    // Every acknowledged transfer reads back exactly as it was last answered (created, or cancelled).
    const client = new ApiClient(server.url, token);
    for (const [id, { body, maybeCancelled }] of acknowledged.transfers) {
      const res = await client.request('GET', `/transfer/${id}`);
      assert.equal(res.status, 200);
      if (body === undefined) assert.equal(res.body.state, 'cancelled');
      else if (maybeCancelled && res.body.state === 'cancelled')
        assert.equal(res.body.id, id); // its cancel committed, the answer was cut
      else assert.deepEqual(res.body, body);
    }
    figures.acknowledgedTransfers = acknowledged.transfers.size;
    // 409: a cancel that lost the race to another worker's cancel of the same transfer, or whose first try's answer a kill cut (asserted as such in the cancel kind).
    const unexpected = Object.keys(figures.statuses).filter((s) => s !== '0' && s !== '409' && !/^2/.test(s));
    assert.deepEqual(unexpected, [], 'only full answers (2xx, or the 409 of a cancel already made) or none (cut by a kill)');
  } finally {
    figures.ms = Math.round(performance.now() - started);
    await server?.stop();
    await access?.close();
    await store.cleanup();
  }
  return figures;
}
