// `node bench/after-idle.ts [--rounds 3] [--pause 20] [--seconds 3]`: what a pause without requests costs the
// requests after it. Two instances of `mds serve` on one SQLite file, pinned to CPU 0 (autocannon on CPU 1):
// A with V8's memory reducer in its default mode (`--memory-reducer-favors-memory`), B as the service runs
// (SERVER_NODE_FLAGS: `--no-memory-reducer-favors-memory`). Each round reads GET /warehouses/{id} for
// --seconds on each, pauses --pause seconds (both idle), then reads again on each: the CPU an answer after the
// pause ÷ before it, and the optimised code V8 threw away during the pause because objects it embedded were
// collected ("embedded weak objects cleared" in --trace-deopt's output). docs/benchmarks.md, "Twenty-fifth pass".
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { moscowQuoteBody } from '../scripts/lib/fixtures.ts';
import { freePort, type ServerChild, startServer } from '../scripts/lib/server-process.ts';
import { cpuMicros, pinToCpu } from './process-cpu.ts';
import { mdsWith, seedWarehouses, sqliteBenchEnv } from './sqlite-instances.ts';
import { median } from './tokens.ts';

const { values: args } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, pause: { type: 'string', default: '20' }, seconds: { type: 'string', default: '3' } },
});
const ROUNDS = Number(args.rounds);
const PAUSE = Number(args.pause);
const SECONDS = Number(args.seconds);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || !(PAUSE >= 0) || !(SECONDS > 0))
  throw new Error('--rounds is a whole number from 1, --pause and --seconds numbers of seconds');
const pin = (pid: number, cpu: number) => {
  if (!pinToCpu(pid, cpu)) throw new Error(`could not pin process ${pid} to CPU ${cpu} (taskset, two CPUs)`);
};
pin(process.pid, 1);

const dir = mkdtempSync(join(tmpdir(), 'mds-after-idle-'));
const servers: ServerChild[] = [];
try {
  const env = sqliteBenchEnv(dir);
  const mds = mdsWith(env);
  await mds(['migrate']);
  const created = JSON.parse(await mds(['merchants', 'create', '--name', 'After-idle shop', '--balance', '100000000', '--json']));
  // Later V8 flags win: A puts the reducer's default mode back after SERVER_NODE_FLAGS.
  const serve = async (name: string, nodeFlags: string[]) => {
    const server = startServer({
      env: { ...env, PORT: String(await freePort()) },
      readyTimeoutMs: 60_000,
      nodeFlags: [...nodeFlags, '--trace-deopt'],
      logChars: 50_000_000,
    });
    servers.push(server);
    const base = await server.ready.catch((err: Error) => {
      throw new Error(`${err.message}:\n${server.log()}`);
    });
    pin(server.pid, 0);
    return { name, base, pid: server.pid, server };
  };
  const instances = [
    await serve('A, the reducer favouring memory (V8 default)', ['--memory-reducer-favors-memory']),
    await serve('B, as the service runs', []),
  ];
  const [a] = instances;
  const { headers, warehouses } = await seedWarehouses(a.base, created);
  const warehouseId = (warehouses.at(-1) as { id: string }).id;
  type Instance = (typeof instances)[number];
  const load = async (t: Instance, path: string, expect: number, h: Record<string, string> = headers, body?: string) => {
    const before = cpuMicros(t.pid);
    const r = await autocannon({
      url: t.base + path,
      connections: 50,
      duration: SECONDS,
      ...(body ? { method: 'POST' as const, body, headers: { ...h, 'content-type': 'application/json' } } : { headers: h }),
    });
    const unexpected = r.requests.total - (r.statusCodeStats[String(expect) as '200']?.count ?? 0);
    if (unexpected > 0 || r.errors > 0) throw new Error(`${t.name} ${path}: ${unexpected} answers other than ${expect}, ${r.errors} errors`);
    return (cpuMicros(t.pid) - before) / r.requests.total;
  };
  const read = (t: Instance) => load(t, `/warehouses/${warehouseId}`, 200);
  const weakDeopts = (t: Instance) => t.server.log().split('embedded weak objects cleared').length - 1;
  // The warm-up npm run bench gives its service: the refused reads, the read, the list and quotes.
  for (const t of instances) {
    await load(t, `/warehouses/${warehouseId}`, 401, {});
    await load(t, '/warehouses/not-a-uuid', 400);
    await read(t);
    await load(t, '/warehouses', 200);
    await load(t, '/options', 201, headers, JSON.stringify(moscowQuoteBody(warehouseId, 0)));
    await read(t);
  }
  const ratios = instances.map(() => [] as number[]);
  const deopts = instances.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    const before: number[] = [];
    for (const t of instances) before.push(await read(t));
    const seen = instances.map(weakDeopts);
    await new Promise((r) => setTimeout(r, PAUSE * 1000));
    const lost = instances.map((t, i) => weakDeopts(t) - seen[i]);
    const after: number[] = [];
    for (const t of instances) after.push(await read(t));
    instances.forEach((_, i) => {
      ratios[i].push(after[i] / before[i]);
      deopts[i].push(lost[i]);
    });
    console.log(
      `round ${round + 1}: ${instances.map((t, i) => `${t.name.split(',')[0]} ${before[i].toFixed(1)} → ${after[i].toFixed(1)} µs an answer, ${lost[i]} code objects thrown away`).join('; ')}`,
    );
  }
  for (const [i, t] of instances.entries())
    console.log(
      `${t.name}: CPU an answer in the ${SECONDS} s after a ${PAUSE} s pause ÷ before it, median ${median(ratios[i]).toFixed(2)} (${ratios[i].map((r) => r.toFixed(2)).join(', ')}); optimised code thrown away in the pause: ${deopts[i].join(', ')}`,
    );
} finally {
  for (const server of servers) await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
