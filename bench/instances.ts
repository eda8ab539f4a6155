// `node bench/instances.ts [--b-env JSON] [--a-env JSON] [--row get|list] [--rounds 8] [--seconds 3] [--tour N]
// [--inside root|beside [--memory]]`: what one setting costs the real server, measured on two instances of `mds serve`
// (A and B) that differ only by environment, next to the guarded floor (bench/floor.mjs, /guarded/...) on the
// same SQLite file. Each is pinned to CPU 0, autocannon (50 connections) runs on CPU 1; per round A, the floor
// and B each take one run, in one order and then the reverse. CPU per answer comes from /proc (the process's own user + system time).
//
// Two instances that differ by nothing still differ by a few per cent (the one that served the seeding requests
// pays about 4 % more a read afterwards; docs/benchmarks.md "Nineteenth pass"). So the tool runs twice, the
// second time with the roles swapped, and divides that order effect out: with x = B's CPU ÷ A's in the first
// run and y the same in the second, the setting's effect is sqrt(x / y) and the order effect sqrt(x · y), if the
// order effect was the same in both runs (it is printed: it varied between 0.88 and 1.01 from pair to pair).
// Both instances start before the seeding (a merchant, 50 warehouses), which goes through A. With `--tour N`
// each instance is then taken N times through thirteen merchant routes (401 and 400 answers, the list, a quote,
// a transfer, its reads, the balance, a cancellation, the webhook endpoints...) before the rounds, as
// `npm run bench`'s service has answered every other row before its paired rounds.
//
// `--inside root|beside`: no B instance and no second run. B is the floor's guarded read served from inside A's
// own process by bench/inside.mjs: as a route at the root of the service's application (root), or from a bare
// Fastify instance beside it (beside). It also prints the standalone floor's CPU an answer ÷ the service's. Next
// to the standalone floor + guarantees, that splits the service's gap into what its route does, what its
// application does around every route, and what being a larger process costs (bench/README.md says how).
// `--memory` (with --inside): the guarded read inside and the standalone floor's each answer from memory after
// their first read (GUARDED_FROM_MEMORY=1, bench/guarded.mjs), so the store's cost and its noise are left out
// and what is compared is the same work in the service's application or process against a process of its own.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { moscowQuoteBody, transferBody } from '../scripts/lib/fixtures.ts';
import { freePort, type ServerChild, startServer, stopChild } from '../scripts/lib/server-process.ts';
import { startFloor } from './floors.ts';
import { cpuMicros, pinToCpu } from './process-cpu.ts';
import { mdsWith, seedWarehouses, sqliteBenchEnv } from './sqlite-instances.ts';
import { median } from './tokens.ts';

const { values: args } = parseArgs({
  options: {
    'a-env': { type: 'string', default: '{}' },
    'b-env': { type: 'string', default: '{}' },
    row: { type: 'string', default: 'get' },
    rounds: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '3' },
    inside: { type: 'string' },
    tour: { type: 'string', default: '0' },
    memory: { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
if (args.row !== 'get' && args.row !== 'list') throw new Error('--row is get or list');
const INSIDE = args.inside as 'root' | 'beside' | undefined;
if (INSIDE !== undefined && INSIDE !== 'root' && INSIDE !== 'beside') throw new Error('--inside is root or beside');
if (INSIDE && args['b-env'] !== '{}') throw new Error('--inside has no B instance: --b-env does not apply');
if (args.memory && !INSIDE) throw new Error('--memory compares the guarded read inside and outside: it needs --inside');
const TOUR = Number(args.tour);
if (!Number.isInteger(TOUR) || TOUR < 0) throw new Error('--tour is a whole number from 0');
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || !(SECONDS > 0)) throw new Error('--rounds is a whole number from 1, --seconds a number above 0');

/** The tool compares processes on one CPU: without pinning it measures nothing. */
const pin = (pid: number, cpu: number) => {
  if (!pinToCpu(pid, cpu)) throw new Error(`could not pin process ${pid} to CPU ${cpu} (taskset, two CPUs)`);
};

interface Run {
  rps: number;
  cpuUs: number;
}

/** One measurement: the medians over the rounds of A's and B's req/s ÷ the floor's, of B's and the floor's CPU an answer ÷ A's, and of B's ÷ the floor's. */
async function measure(aEnv: Record<string, string>, bEnv: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'mds-instances-'));
  const servers: ServerChild[] = [];
  let floorChild: ChildProcess | undefined;
  try {
    // GUARDED_FROM_MEMORY is read by bench/guarded.mjs only (inside the service's process and in the floor's): the service ignores it.
    const env = sqliteBenchEnv(dir, args.memory ? { GUARDED_FROM_MEMORY: '1' } : {});
    const mds = mdsWith(env);
    await mds(['migrate']);
    const created = JSON.parse(await mds(['merchants', 'create', '--name', 'Instances shop', '--balance', '100000000', '--json']));
    const serve = async (extra: Record<string, string>, nodeFlags: string[] = []) => {
      const server = startServer({ env: { ...env, ...extra, PORT: String(await freePort()) }, readyTimeoutMs: 60_000, nodeFlags });
      servers.push(server);
      const base = await server.ready.catch((err: Error) => {
        throw new Error(`${err.message}:\n${server.log()}`);
      });
      pin(server.pid, 0);
      return { base, pid: server.pid };
    };
    const insidePort = INSIDE ? await freePort() : 0;
    const a = INSIDE
      ? await serve({ ...aEnv, INSIDE, INSIDE_PORT: String(insidePort) }, ['--import', join(import.meta.dirname, 'inside.mjs')])
      : await serve(aEnv);
    const b = !INSIDE ? await serve(bEnv) : INSIDE === 'root' ? a : { base: `http://127.0.0.1:${insidePort}`, pid: a.pid };
    const { headers, warehouses } = await seedWarehouses(a.base, created);
    // The tour (--tour): the other merchant routes, answered by each instance before the rounds.
    const call = async (base: string, method: string, p: string, body?: unknown, h: Record<string, string> = headers) => {
      const r = await fetch(base + p, {
        method,
        headers: body ? { ...h, 'content-type': 'application/json' } : h,
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : undefined };
    };
    for (const instance of INSIDE ? [a] : [a, b]) {
      for (let i = 0; i < TOUR; i++) {
        await call(instance.base, 'GET', '/healthz', undefined, {});
        await call(instance.base, 'GET', `/warehouses/${warehouses[0].id}`, undefined, {});
        await call(instance.base, 'GET', '/warehouses/not-a-uuid');
        await call(instance.base, 'GET', '/warehouses');
        const quote = await call(instance.base, 'POST', '/options', moscowQuoteBody(warehouses[0].id, i));
        const transfer = await call(instance.base, 'POST', '/transfer', transferBody(quote.body?.id));
        if (quote.status !== 201 || transfer.status !== 201) throw new Error(`tour: a quote answered ${quote.status}, a transfer ${transfer.status}`);
        await call(instance.base, 'GET', `/transfer/${transfer.body.id}`);
        await call(instance.base, 'GET', `/transfer/${transfer.body.id}/events`);
        await call(instance.base, 'GET', '/transfer?limit=50');
        await call(instance.base, 'GET', '/balance');
        await call(instance.base, 'POST', `/transfer/${transfer.body.id}/cancel`, {});
        await call(instance.base, 'GET', '/webhook-endpoints');
      }
    }
    // The floor prints "ready" once it listens (as npm run bench waits for it).
    const started = await startFloor(env, warehouses[0].merchantId);
    floorChild = started.child;
    pin(started.pid, 0);
    const floor = { base: started.base, pid: started.pid };
    const path = args.row === 'get' ? `/warehouses/${warehouses[0].id}` : '/warehouses';
    const run = async (target: { base: string; pid: number }, p: string, seconds: number): Promise<Run> => {
      const before = cpuMicros(target.pid);
      const r = await autocannon({ url: target.base + p, connections: 50, duration: seconds, headers });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${target.base}${p}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      return { rps: r.requests.average, cpuUs: (cpuMicros(target.pid) - before) / r.requests.total };
    };
    const targets = { a: [a, path], floor: [floor, `/guarded${path}`], b: [b, INSIDE ? `/guarded${path}` : path] } as const;
    if (INSIDE) {
      // The read inside answers what the service answers (the same work), and at the root the service's own
      // root hooks run first: its routing check answers a trailing slash with its 404, where the guarded route
      // alone would refuse the empty id with a 400.
      const [mine, theirs] = await Promise.all([a.base + path, `${b.base}/guarded${path}`].map((u) => fetch(u, { headers }).then((r) => r.json())));
      if (JSON.stringify(mine) !== JSON.stringify(theirs))
        throw new Error(`the read inside answers differently:\n${JSON.stringify(theirs)}\nthe service:\n${JSON.stringify(mine)}`);
      const slash = await fetch(`${b.base}/guarded/warehouses/`, { headers });
      if (slash.status !== (INSIDE === 'root' ? 404 : 400)) throw new Error(`--inside ${INSIDE}: GET /guarded/warehouses/ answered ${slash.status}`);
    }
    for (const [target, p] of Object.values(targets)) await run(target, p, SECONDS); // the JIT settles
    const ratios = { aToFloor: [] as number[], bToFloor: [] as number[], bCpuToA: [] as number[], floorCpuToA: [] as number[], bCpuToFloor: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? (['b', 'floor', 'a'] as const) : (['a', 'floor', 'b'] as const);
      const got: Partial<Record<keyof typeof targets, Run>> = {};
      for (const k of order) got[k] = await run(targets[k][0], targets[k][1], SECONDS);
      const { a: ra, floor: rf, b: rb } = got as Record<keyof typeof targets, Run>;
      ratios.aToFloor.push(ra.rps / rf.rps);
      ratios.bToFloor.push(rb.rps / rf.rps);
      ratios.bCpuToA.push(rb.cpuUs / ra.cpuUs);
      ratios.floorCpuToA.push(rf.cpuUs / ra.cpuUs);
      ratios.bCpuToFloor.push(rb.cpuUs / rf.cpuUs);
      console.log(
        `  round ${round + 1}: A ${ra.rps.toFixed(0)} req/s, ${ra.cpuUs.toFixed(1)} µs; floor + guarantees ${rf.rps.toFixed(0)}, ${rf.cpuUs.toFixed(1)}; B ${rb.rps.toFixed(0)}, ${rb.cpuUs.toFixed(1)}`,
      );
    }
    return {
      aToFloor: median(ratios.aToFloor),
      bToFloor: median(ratios.bToFloor),
      bCpuToA: median(ratios.bCpuToA),
      floorCpuToA: median(ratios.floorCpuToA),
      bCpuToFloor: median(ratios.bCpuToFloor),
    };
  } finally {
    for (const server of servers) await server.stop();
    await stopChild(floorChild);
    rmSync(dir, { recursive: true, force: true });
  }
}

const aEnv = JSON.parse(args['a-env'] as string);
const bEnv = JSON.parse(args['b-env'] as string);
pin(process.pid, 1);
if (INSIDE) {
  console.log(
    `A = ${JSON.stringify(aEnv)}, B = the floor + guarantees inside A's process (${INSIDE}${args.memory ? ', both it and the standalone floor + guarantees answering from memory' : ''}); ${args.row === 'get' ? 'GET /warehouses/{id}' : 'GET /warehouses (50)'}`,
  );
  const r = await measure(aEnv, {});
  console.log(
    `req/s ÷ the standalone floor + guarantees': the service ${r.aToFloor.toFixed(2)}, the floor + guarantees inside (${INSIDE}) ${r.bToFloor.toFixed(2)}; CPU an answer ÷ the service's: inside ${r.bCpuToA.toFixed(3)}, standalone ${r.floorCpuToA.toFixed(3)}; the inside's CPU an answer ÷ the standalone's ${r.bCpuToFloor.toFixed(3)}`,
  );
  process.exit(0);
}
console.log(`A = ${JSON.stringify(aEnv)}, B = ${JSON.stringify(bEnv)}; ${args.row === 'get' ? 'GET /warehouses/{id}' : 'GET /warehouses (50)'}`);
const first = await measure(aEnv, bEnv);
console.log(
  `first run: req/s ÷ the floor + guarantees' A ${first.aToFloor.toFixed(2)}, B ${first.bToFloor.toFixed(2)}; CPU an answer B ÷ A ${first.bCpuToA.toFixed(3)}`,
);
console.log('second run, the roles swapped:');
const second = await measure(bEnv, aEnv);
console.log(
  `second run: req/s ÷ the floor + guarantees' A ${second.aToFloor.toFixed(2)}, B ${second.bToFloor.toFixed(2)}; CPU an answer B ÷ A ${second.bCpuToA.toFixed(3)}`,
);
const effect = Math.sqrt(first.bCpuToA / second.bCpuToA);
const order = Math.sqrt(first.bCpuToA * second.bCpuToA);
console.log(
  `CPU an answer with ${JSON.stringify(bEnv)} ÷ with ${JSON.stringify(aEnv)}: ${effect.toFixed(3)} (divided out: the order effect, B ÷ A with the same setting, ${order.toFixed(3)})`,
);
