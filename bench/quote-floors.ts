// `node bench/quote-floors.ts [--rounds 8] [--seconds 4]`: the PostgreSQL quote against two floors, to split its
// gap into what the contract requires and what is the service's own. In paired rounds on one fresh schema:
//   service                         `mds serve` (the built bundle), POST /options
//   floor + guarantees              bench/floor.mjs POST /contract/options: npm run bench's yardstick for the quote
//   floor + guarantees + the work   bench/floor.mjs POST /work/options: the same, plus what that yardstick leaves
//                                   out and every implementation of the contract must still do, done as cheaply as
//                                   the floor knows how (bench/contract-work.mjs): the body validated, the products
//                                   priced with their estimates, the request and products written as JSON,
//                                   time-ordered ids, and the warehouse, tariff version and endpoints checked by
//                                   the write itself
// Each server is pinned to CPU 0 and the load (autocannon, 10 connections, in this process) to CPU 1; per round
// each target takes one run, in a rotating order, reversed every other round. It prints req/s and CPU an answer
// (the server process's, and the PostgreSQL server's from /proc: whoever else uses that server is counted too),
// medians, and the paired ratios. Before the rounds it stops unless the two floors answer what the service
// answers (the same fields, types and values but ids and times). BENCH_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/test); the schema is dropped after.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { freshBuild } from '../bin/fresh-build.js';
import { moscowQuoteBody } from '../scripts/lib/fixtures.ts';
import { freePort, runMds, SERVER_ENV, startServer, stopChild } from '../scripts/lib/server-process.ts';
import { generateSigningKey } from '../src/modules/auth/signing-keys.ts';
import { comparable, startFloor } from './floors.ts';
import { cpuMicros, pinToCpu, postgresCpuMicros, postmasterOf } from './process-cpu.ts';
import { seedWarehouses } from './sqlite-instances.ts';
import { median } from './tokens.ts';

const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '8' }, seconds: { type: 'string', default: '4' } } });
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || !(SECONDS > 0)) throw new Error('--rounds is a whole number from 1, --seconds a number above 0');
if (!pinToCpu(process.pid, 1)) throw new Error('this tool compares processes on one CPU: it needs taskset and two CPUs');

const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `quote_floors_${process.pid}`;
const admin = new pg.Client({ connectionString: url });
await admin.connect();
const postmaster = postmasterOf((await admin.query('select pg_backend_pid() as pid')).rows[0].pid);
if (postmaster === undefined) throw new Error('the PostgreSQL server is not visible from here (/proc): its CPU cannot be read');
const env: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  ...SERVER_ENV,
  DATABASE_URL: url,
  DATABASE_SCHEMA: schema,
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  HOST: '127.0.0.1',
  PORT: String(await freePort()),
  TOKEN_SIGNING_KEYS: generateSigningKey(),
  MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000', // counted, never refused, as in npm run bench
};
if (!freshBuild(join(import.meta.dirname, '..'), env))
  console.log('WARNING: dist/ is older than src/: the service runs the TypeScript sources; run npm run build first');
let floor: ChildProcess | undefined;
let service: ReturnType<typeof startServer> | undefined;
try {
  await admin.query(`create schema ${schema}`);
  const mds = async (cliArgs: string[]) => {
    const r = await runMds(cliArgs, env);
    if (r.code !== 0) throw new Error(`mds ${cliArgs.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  await mds(['migrate']);
  service = startServer({ env, readyTimeoutMs: 60_000 });
  const base = await service.ready;
  pinToCpu(service.pid, 0);
  const { headers, warehouses } = await seedWarehouses(
    base,
    JSON.parse(await mds(['merchants', 'create', '--name', 'Floors', '--balance', '1000000000000', '--json'])),
  );
  const warehouse = warehouses[0] as { id: string; merchantId: string };
  const body = JSON.stringify(moscowQuoteBody(warehouse.id));
  const post = { method: 'POST' as const, headers: { ...headers, 'content-type': 'application/json' }, body };
  // The floor copies the newest quote the service wrote: it needs one first.
  const first = await fetch(`${base}/options`, post);
  if (first.status !== 201) throw new Error(`POST /options answered ${first.status}: ${await first.text()}`);

  const started = await startFloor(
    { PATH: process.env.PATH, DATABASE_URL: url, DATABASE_SCHEMA: schema, TOKEN_SIGNING_KEYS: env.TOKEN_SIGNING_KEYS },
    warehouse.merchantId,
  );
  floor = started.child;
  pinToCpu(started.pid, 0);
  const floorBase = started.base;
  const targets = [
    { name: 'service', base, path: '/options', pid: service.pid },
    { name: 'floor + guarantees', base: floorBase, path: '/contract/options', pid: started.pid },
    { name: 'floor + guarantees + the work', base: floorBase, path: '/work/options', pid: started.pid },
  ];

  // The same answer from each, but ids and times (key order aside), or the comparison means nothing.
  const VARYING = new Set(['id', 'transfer_id', 'event_id', 'expiresAt', 'estimatedPickupAt', 'estimatedDeliveryAt']);
  const answers = await Promise.all(targets.map(async (t) => ({ t, res: await fetch(t.base + t.path, post) })));
  const expected = JSON.stringify(comparable(await answers[0]?.res.json(), VARYING));
  for (const { t, res } of answers.slice(1)) {
    const text = await res.text();
    if (res.status !== 201 || JSON.stringify(comparable(JSON.parse(text), VARYING)) !== expected)
      throw new Error(`${t.name} (${t.path}) does not answer what the service does: ${res.status} ${text}`);
  }

  const load = async (t: (typeof targets)[number], seconds: number) => {
    const r = await autocannon({ url: t.base + t.path, ...post, connections: 10, duration: seconds });
    if (r.non2xx > 0) throw new Error(`${t.name}: ${r.non2xx} answers were not 2xx`);
    return r.requests.total;
  };
  for (const t of targets) await load(t, 3); // warm-up
  const measured = new Map(targets.map((t) => [t.name, [] as Array<{ rate: number; process: number; database: number }>]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = [...targets.slice(round % 3), ...targets.slice(0, round % 3)];
    for (const t of round % 2 ? order.reverse() : order) {
      const [process0, database0, t0] = [cpuMicros(t.pid), postgresCpuMicros(postmaster) ?? 0, performance.now()];
      const n = await load(t, SECONDS);
      const [process1, database1, t1] = [cpuMicros(t.pid), postgresCpuMicros(postmaster) ?? 0, performance.now()];
      measured.get(t.name)?.push({ rate: n / ((t1 - t0) / 1000), process: (process1 - process0) / n, database: (database1 - database0) / n });
    }
  }

  const of = (name: string) => measured.get(name) ?? [];
  console.log(`\n${ROUNDS} rounds of ${SECONDS} s, 10 connections; medians (CPU µs an answer)\n`);
  console.log('| target | req/s | its process | PostgreSQL | together |\n|---|---:|---:|---:|---:|');
  for (const t of targets) {
    const m = of(t.name);
    const [p, d] = [median(m.map((x) => x.process)), median(m.map((x) => x.database))];
    console.log(`| ${t.name} | ${median(m.map((x) => x.rate)).toFixed(0)} | ${p.toFixed(0)} | ${d.toFixed(0)} | ${(p + d).toFixed(0)} |`);
  }
  const ratio = (a: string, b: string) => {
    const [x, y] = [of(a), of(b)];
    const r = x.map((m, i) => m.rate / (y[i]?.rate ?? Number.NaN));
    return `${median(r).toFixed(3)} (${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)})`;
  };
  console.log('\n| paired req/s ratio, median (range) | |\n|---|---:|');
  console.log(`| (floor + guarantees + the work) ÷ (floor + guarantees): what the left-out work costs | ${ratio(targets[2]!.name, targets[1]!.name)} |`);
  console.log(`| service ÷ (floor + guarantees): npm run bench's bar (0.90), here at 10 connections | ${ratio(targets[0]!.name, targets[1]!.name)} |`);
  console.log(`| service ÷ (floor + guarantees + the work): the service's own share | ${ratio(targets[0]!.name, targets[2]!.name)} |`);
} finally {
  if (floor) await stopChild(floor);
  await service?.stop();
  await admin.query(`drop schema if exists ${schema} cascade`);
  await admin.end();
}
