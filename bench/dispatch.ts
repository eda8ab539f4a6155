// Dispatch under load: 1,000 open (paid, live) transfers and 200 online couriers, in-process against a
// real store (the dispatcher is a background module; no HTTP in the way). Run alone:
//
//   node bench/dispatch.ts              SQLite (temp file)
//   node bench/dispatch.ts --postgres   PostgreSQL, fresh schema (BENCH_DATABASE_URL, TEST_POSTGRES_URL or local default)
//   node bench/dispatch.ts --smoke      100 transfers, 20 couriers: a few seconds (CI); exit 1 if anything is left unoffered
//
// 1. A merchant with 20 warehouses spread over a 16 km square, 200 couriers online at random points in it
//    (MAX_JOBS_PER_COURIER=10, so every transfer can end with a courier).
// 2. The backlog: 1,000 transfers paid (POST /transfer's service) while no dispatcher runs.
// 3. Dispatch passes back to back; after each, every courier accepts the offer it got (the service's
//    accept, as the courier API calls it). Measured: CPU of the passes per offer made (process.cpuUsage
//    around each pass, nothing else running meanwhile), wall time per pass, and time from payment to the
//    first offer for the backlog.
// 4. Live: the background dispatcher running (woken by each payment), 50 more transfers paid one at a
//    time, each courier's offer stream subscribed: time from the payment's commit to the offer's
//    notification (p50, p95, max).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { quoteBody, transferBody, warehouseBody } from '../scripts/lib/fixtures.ts';
import { startDispatcher } from '../src/background/dispatcher.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { migrateToLatest, openDatabase } from '../src/db/database.ts';
import { systemClock } from '../src/lib/clock.ts';
import { generateSigningKey } from '../src/modules/auth/signing-keys.ts';
import { createServices } from '../src/services.ts';

const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
const { values: args } = parseArgs({
  strict: false,
  options: { postgres: { type: 'boolean', default: false }, smoke: { type: 'boolean', default: false } },
});
const SMOKE = args.smoke === true;
const TRANSFERS = SMOKE ? 100 : 1_000;
const COURIERS = SMOKE ? 20 : 200;
const LIVE = SMOKE ? 10 : 50;
const WAREHOUSES = 20;
const CENTRE = { lat: 55.75, lng: 37.62 };
const SPAN = 0.14; // degrees of latitude: about 16 km

/** A seeded generator, so every run places couriers and warehouses alike. */
let seed = 42;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const somewhere = () => ({ lat: CENTRE.lat + (random() - 0.5) * SPAN, lng: CENTRE.lng + (random() - 0.5) * SPAN * 1.8 });
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function main() {
  let url: string;
  let schema: string | undefined;
  let cleanup: () => Promise<void>;
  if (args.postgres) {
    url = process.env.BENCH_DATABASE_URL || process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL;
    schema = `bench_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    cleanup = async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
    };
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'mds-bench-dispatch-'));
    url = `sqlite:${join(dir, 'bench.sqlite')}`;
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  }
  const key = generateSigningKey();
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: url,
    ...(schema ? { DATABASE_SCHEMA: schema } : {}),
    TOKEN_SIGNING_KEYS: key,
    MAX_JOBS_PER_COURIER: '10',
    LOG_LEVEL: 'silent',
  });
  const database = openDatabase({ url, schema, poolSize: 10 });
  await migrateToLatest(database);
  const services = createServices({ config, database, clock: systemClock, signingKeys: parseSigningKeys(key) });
  try {
    // 1. Merchant, warehouses, couriers.
    const { merchant } = await services.merchants.create('Bench shop', 10_000_000_00, 'live');
    const warehouses: string[] = [];
    for (let i = 0; i < WAREHOUSES; i++) {
      const at = somewhere();
      const w = await services.warehouses.create(
        merchant.id,
        warehouseBody({ name: `W${i}`, locationMetadata: { display_name: `W${i}`, lat: at.lat, lng: at.lng, city: 'Moscow', country_code: 'ru' } }) as never,
      );
      warehouses.push(w.id);
    }
    const couriers: string[] = [];
    for (let i = 0; i < COURIERS; i++) {
      const { courier } = await services.couriers.create(`Courier ${i}`, '+7 900 000-00-00');
      await services.couriers.updateStatus(courier.id, { online: true, ...somewhere() });
      couriers.push(courier.id);
    }
    const pay = async (i: number) => {
      const at = somewhere();
      const body = quoteBody(warehouses[i % WAREHOUSES], { destinationLocation: { lat: at.lat, lng: at.lng, display_name: `D${i}`, city: 'Moscow' } });
      const q = await services.quotes.create(merchant.id, body as never);
      return services.transfers.create(merchant.id, transferBody(q.id) as never);
    };

    // 2. The backlog.
    const started = performance.now();
    for (let i = 0; i < TRANSFERS; i += 20) await Promise.all(Array.from({ length: Math.min(20, TRANSFERS - i) }, (_, k) => pay(i + k)));
    const seeded = performance.now() - started;

    // 3. Passes back to back, couriers accepting between them.
    const passes: Array<{ ms: number; cpuMs: number; offered: number }> = [];
    for (let round = 0; round < 200; round++) {
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      const pass = await services.dispatch.runOnce();
      const used = process.cpuUsage(cpu);
      passes.push({ ms: performance.now() - t0, cpuMs: (used.user + used.system) / 1000, offered: pass.offered });
      if (pass.offered === 0) break;
      for (const c of couriers) for (const o of await services.dispatch.listOffers(c)) await services.dispatch.accept(c, o.id);
    }
    const offered = passes.reduce((n, p) => n + p.offered, 0);
    const cpuMs = passes.reduce((n, p) => n + p.cpuMs, 0);
    const waits = (
      await database.db
        .selectFrom('offers')
        .innerJoin('transfers', 'transfers.id', 'offers.transfer_id')
        .select((eb) => [eb.fn.min('offers.created_at').as('offered'), 'transfers.created_at as paid'])
        .groupBy(['offers.transfer_id', 'transfers.created_at'])
        .execute()
    ).map((r) => Number(r.offered) - Number(r.paid));

    // 4. Live: the background dispatcher, one payment at a time, the offer heard on the courier's stream.
    for (const c of couriers) await services.couriers.updateStatus(c, { online: true, ...somewhere() });
    const heard = new Map<string, number>();
    const unsubscribe = await Promise.all(couriers.map((c) => services.dispatch.subscribe(c, (offerId) => heard.set(offerId, performance.now()))));
    const log = {
      info() {},
      error(o: object) {
        console.error(o);
      },
    };
    const dispatcher = startDispatcher({ dispatch: services.dispatch, intervalMs: config.dispatchIntervalMs, log });
    const live: number[] = [];
    for (let i = 0; i < LIVE; i++) {
      const t = await pay(TRANSFERS + i);
      const paidAt = performance.now();
      let offerId: string | undefined;
      for (let k = 0; k < 2500 && !offerId; k++) {
        await new Promise((r) => setTimeout(r, 2));
        const row = await database.db.selectFrom('offers').select('id').where('transfer_id', '=', t.id).executeTakeFirst();
        if (row && heard.has(row.id)) offerId = row.id;
      }
      if (offerId) live.push(heard.get(offerId)! - paidAt);
      // The courier takes it, so the next payment finds free couriers as before.
      const row = offerId && (await database.db.selectFrom('offers').select('courier_id').where('id', '=', offerId).executeTakeFirst());
      if (row && offerId) await services.dispatch.accept(row.courier_id, offerId);
    }
    await dispatcher.stop();
    for (const u of unsubscribe) u();

    const store = args.postgres ? 'PostgreSQL' : 'SQLite';
    const fmt = (n: number) => n.toFixed(1);
    console.log(`\n## Dispatch (${store}${SMOKE ? ', smoke' : ''}; ${availableParallelism()} CPUs; node ${process.version})\n`);
    console.log(`${TRANSFERS} open transfers (seeded in ${(seeded / 1000).toFixed(1)} s), ${COURIERS} online couriers\n`);
    console.log('| measure | value |');
    console.log('|---|---|');
    console.log(`| passes to offer the backlog (one offer per free courier a pass) | ${passes.filter((p) => p.offered > 0).length} |`);
    console.log(`| offers made | ${offered} of ${TRANSFERS} transfers |`);
    console.log(`| CPU per offer (dispatch passes only) | ${fmt(cpuMs / Math.max(1, offered))} ms |`);
    console.log(
      `| wall time per pass: p50 / max | ${fmt(
        pct(
          passes.map((p) => p.ms),
          50,
        ),
      )} / ${fmt(Math.max(...passes.map((p) => p.ms)))} ms |`,
    );
    console.log(
      `| backlog: payment → first offer p50 / p95 (includes waiting for a free courier) | ${fmt(pct(waits, 50) / 1000)} / ${fmt(pct(waits, 95) / 1000)} s |`,
    );
    console.log(
      `| live: payment committed → offer on the courier's stream p50 / p95 / max (${live.length} of ${LIVE}) | ${fmt(pct(live, 50))} / ${fmt(pct(live, 95))} / ${fmt(Math.max(...live))} ms |`,
    );
    if (offered < TRANSFERS || live.length < LIVE) {
      console.error(`not every transfer was offered: ${offered}/${TRANSFERS} backlog, ${live.length}/${LIVE} live`);
      process.exitCode = 1;
    }
  } finally {
    await database.close();
    await cleanup();
  }
}

await main();
