// `node bench/allocation.ts [ROW...] [--seconds N] [--heap] [--postgres] [--semi MiB] [--pretenuring]`: bytes the server allocates per answer, over HTTP.
//
// CPU time on a shared machine moves by ±20 % between identical runs; the bytes a request allocates do
// not. The server runs in this process (SQLite in a temp dir, or with --postgres a fresh schema at
// BENCH_DATABASE_URL / TEST_POSTGRES_URL / postgres://postgres@127.0.0.1:5432/test; LOG_LEVEL=warn, limits counted but never
// reached) with its young generation held at 32 MiB (--semi: another size), so every scavenge stands for
// that much allocated; autocannon loads it from a child process (50 connections), and the scavenges
// counted during the load give KiB per answer (two runs agree within a scavenge or two). Beside it, what
// the scavenges promoted to the old generation per answer (v8.GCProfiler: the old space's growth across
// each scavenge), the time the collections paused the server and the server's CPU time, per answer: what a smaller young
// generation costs (`--semi 16` against the default). The server keeps allocation sites young as `mds
// serve` does (--pretenuring: V8's default instead). --heap takes a sampling heap profile
// of the load instead and prints the sites that allocate most per answer (to /tmp/mds-ROW.heapprofile).
// With taskset, the server is pinned to CPU 0 and the load to CPU 1.
// ROW: warehouse-get | warehouse-list | transfer-get | transfer-list | options (a quote) | no-token (the 401) | healthz
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { GCProfiler } from 'node:v8';
import { moscowQuoteBody, transferBody, warehouseBody } from '../scripts/lib/fixtures.ts';

const SEMI = Number(parseArgs({ options: { semi: { type: 'string', default: '32' } }, strict: false }).values.semi);
if (!(Number.isInteger(SEMI) && SEMI >= 1 && SEMI <= 64)) throw new Error("--semi is the young generation's semi-space in MiB, 1..64");
const YOUNG = [`--min-semi-space-size=${SEMI}`, `--max-semi-space-size=${SEMI}`];
const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!process.execArgv.includes(YOUNG[0])) {
  // Again, with the fixed young generation (and pinned): the count needs it from the start.
  const args = [...YOUNG, ...process.execArgv, ...process.argv.slice(1)];
  const child = hasTaskset
    ? spawn('taskset', ['-c', '0', process.execPath, ...args], { stdio: 'inherit' })
    : spawn(process.execPath, args, { stdio: 'inherit' });
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      seconds: { type: 'string', default: '6' },
      heap: { type: 'boolean', default: false },
      postgres: { type: 'boolean', default: false },
      semi: { type: 'string', default: '32' },
      pretenuring: { type: 'boolean', default: false },
    },
  });
  const rows = positionals.length ? positionals : ['warehouse-get', 'warehouse-list', 'transfer-get', 'transfer-list', 'no-token', 'healthz'];
  // As `mds serve` runs (src/lib/startup-memory.ts); --pretenuring keeps V8's default, to compare.
  const { keepAllocationsYoung } = await import('../src/lib/startup-memory.ts');
  if (!values.pretenuring) keepAllocationsYoung();
  const { buildApp } = await import('../src/app.ts');
  const { loadConfig, parseSigningKeys } = await import('../src/config.ts');
  const { migrateToLatest, openDatabase } = await import('../src/db/database.ts');
  const KEYS = 'bench:dGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXk';
  const dir = mkdtempSync(join(tmpdir(), 'mds-allocation-'));
  const postgresUrl = values.postgres
    ? (process.env.BENCH_DATABASE_URL ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
    : undefined;
  const schema = postgresUrl ? `allocation_${process.pid}` : undefined;
  const config = loadConfig({
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    TOKEN_SIGNING_KEYS: KEYS,
    MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000',
    DATABASE_URL: postgresUrl ?? `sqlite:${join(dir, 'a.sqlite')}`,
  });
  const admin = postgresUrl ? openDatabase({ url: postgresUrl }) : undefined;
  if (admin && schema) await admin.db.schema.createSchema(schema).execute();
  const database = openDatabase({ url: config.databaseUrl, schema });
  await migrateToLatest(database);
  const app = await buildApp({ config, database, signingKeys: parseSigningKeys(KEYS) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };

  const { credential } = await app.services.merchants.create('Allocation shop', 1e12, 'live');
  const tok = await app.inject({
    method: 'POST',
    url: '/auth/token',
    payload: { grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret },
  });
  const authorization = `Bearer ${tok.json().access_token}`;
  const headers = { authorization, 'content-type': 'application/json' };
  // The same fixtures as the tests and the demo (scripts/lib/fixtures.ts): 50 warehouses, 60 transfers.
  const post = async (url: string, payload: object) => (await app.inject({ method: 'POST', url, headers, payload })).json().id as string;
  const warehouses: string[] = [];
  for (let i = 0; i < 50; i++) warehouses.push(await post('/warehouses', warehouseBody({ name: `W${i}` })));
  const transfers: string[] = [];
  for (let i = 0; i < 60; i++) transfers.push(await post('/transfer', transferBody(await post('/options', moscowQuoteBody(warehouses[0], i)))));
  const paths: Record<string, [path: string, authorised: boolean, status: number, body?: string]> = {
    'warehouse-get': [`/warehouses/${warehouses[0]}`, true, 200],
    'warehouse-list': ['/warehouses', true, 200],
    'transfer-get': [`/transfer/${transfers[0]}`, true, 200],
    'transfer-list': ['/transfer?limit=50', true, 200],
    options: ['/options', true, 201, JSON.stringify(moscowQuoteBody(warehouses[0], 0))],
    'no-token': [`/warehouses/${warehouses[0]}`, false, 401],
    healthz: ['/healthz', false, 200],
  };

  const load = (path: string, authorised: boolean, seconds: number, body?: string) =>
    new Promise<{ requests: { total: number }; non2xx: number; '4xx'?: number }>((resolve, reject) => {
      const args = [join(import.meta.dirname, '../node_modules/autocannon/autocannon.js'), '-j', '-c', '50', '-d', String(seconds)];
      if (authorised) args.push('-H', `authorization=${authorization}`);
      if (body) args.push('-m', 'POST', '-H', 'content-type=application/json', '-b', body);
      args.push(`http://127.0.0.1:${port}${path}`);
      const child = hasTaskset
        ? spawn('taskset', ['-c', '1', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'ignore'] })
        : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      child.stdout.on('data', (c) => {
        out += c;
      });
      child.on('close', () => {
        try {
          resolve(JSON.parse(out));
        } catch (e) {
          reject(e);
        }
      });
    });

  console.log(`Young generation: ${SEMI} MiB semi-spaces.\n`);
  console.log(
    `| answer | answers | scavenges | ~KiB allocated per answer | KiB promoted per answer | GC pause µs per answer: scavenges + full collections | server CPU µs per answer |\n|---|---:|---:|---:|---:|---:|---:|`,
  );
  for (const row of rows) {
    const entry = paths[row];
    if (!entry) throw new Error(`unknown row ${row}; rows: ${Object.keys(paths).join(', ')}`);
    const [path, authorised, status, body] = entry;
    await load(path, authorised, 2, body); // warm-up: compiled serializers, JIT
    let scavenges = 0;
    const paused = { scavenges: 0, other: 0 }; // ms
    const observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) {
          scavenges++;
          paused.scavenges += e.duration;
        } else paused.other += e.duration;
      }
    });
    const session = values.heap ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 256,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    } else observer.observe({ entryTypes: ['gc'] });
    const gcs = session ? undefined : new GCProfiler();
    gcs?.start();
    const cpuBefore = process.cpuUsage();
    const result = await load(path, authorised, Number(values.seconds), body);
    const cpu = process.cpuUsage(cpuBefore); // the load runs in a child: this is the server's
    const answers = result.requests.total;
    const wrong = status < 300 ? result.non2xx : answers - (result['4xx'] ?? 0);
    if (wrong) throw new Error(`${row}: ${wrong} answers were not ${status}`);
    if (session) {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      session.disconnect();
      const out = `/tmp/mds-${row}.heapprofile`;
      writeFileSync(out, JSON.stringify(profile));
      printSites(row, profile.head, answers, out);
    } else {
      await new Promise((r) => setTimeout(r, 100)); // the last gc entries are delivered asynchronously
      observer.disconnect();
      const promoted = promotedBytes(gcs?.stop());
      const perAnswer = (micros: number) => (micros / answers).toFixed(1);
      console.log(
        `| ${row} | ${answers} | ${scavenges} | ${((scavenges * SEMI * 1024) / answers).toFixed(1)} | ${(promoted / 1024 / answers).toFixed(2)} | ${perAnswer(paused.scavenges * 1000)} + ${perAnswer(paused.other * 1000)} | ${perAnswer(cpu.user + cpu.system)} |`,
      );
    }
  }
  await app.close();
  await database.close();
  if (admin && schema) {
    await admin.db.schema.dropSchema(schema).cascade().execute();
    await admin.close();
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Bytes the scavenges moved to the old generation: the old space's growth across each one. */
function promotedBytes(profile: ReturnType<GCProfiler['stop']> | undefined): number {
  const old = (stats: { heapSpaceStatistics: Array<{ spaceName: string; spaceUsedSize: number }> }) =>
    stats.heapSpaceStatistics.find((s) => s.spaceName === 'old_space')?.spaceUsedSize ?? 0;
  let bytes = 0;
  for (const gc of profile?.statistics ?? []) if (gc.gcType === 'Scavenge') bytes += Math.max(0, old(gc.afterGC) - old(gc.beforeGC));
  return bytes;
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

function printSites(row: string, head: HeapNode, answers: number, out: string): void {
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${lineNumber + 1}`;
    sites.set(key, (sites.get(key) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(head);
  console.log(`| ${row} | ${answers} | (sampled) | ${(total / answers / 1024).toFixed(1)} |  profile: ${out}`);
  for (const [key, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`    ${(bytes / answers).toFixed(0).padStart(7)} B  ${key}`);
}
