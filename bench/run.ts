// `npm run bench`: load benchmarks against the real server (a child process), reported as ratios
// against GET /healthz measured in the same run. See bench/README.md.
//
//   npm run bench                      SQLite (temp file)
//   npm run bench -- --postgres        PostgreSQL, fresh schema (BENCH_DATABASE_URL, TEST_POSTGRES_URL or local default)
//   npm run bench -- --duration 3 --connections 10 --merchants 10 --no-write
import { type ChildProcess, execFile, execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, existsSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { freePort, MDS_BIN, type ServerChild, startServer, stopChild } from '../scripts/lib/server-process.ts';
import { generateSigningKey } from '../src/modules/auth/signing-keys.ts';
import { benchTokens, type MicroResult, median, tokensTable } from './tokens.ts';

const RESULTS = join(import.meta.dirname, 'results.md');
const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
const WAREHOUSES = 10;

const { values: args } = parseArgs({
  options: {
    postgres: { type: 'boolean', default: false },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
    merchants: { type: 'string', default: '1' },
    'no-write': { type: 'boolean', default: false },
  },
});
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const MERCHANTS = Number(args.merchants);
if (!(DURATION > 0 && DURATION <= 60) || !(CONNECTIONS >= 1 && CONNECTIONS <= 200) || !(Number.isInteger(MERCHANTS) && MERCHANTS >= 1 && MERCHANTS <= 50)) {
  console.error('--duration must be 1..60 seconds, --connections 1..200, --merchants 1..50');
  process.exit(2);
}
const postgresUrl =
  args.postgres || process.env.BENCH_DATABASE_URL ? process.env.BENCH_DATABASE_URL || process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL : undefined;
const store = postgresUrl ? 'postgres' : 'sqlite';

const log = (text: string) => process.stderr.write(`${text}\n`);

// ---------------------------------------------------------------- store and server

interface Store {
  env: Record<string, string>;
  describe: string;
  cleanup(): Promise<void>;
}

async function createStore(tmp: string): Promise<Store> {
  if (!postgresUrl) {
    const file = join(tmp, 'bench.sqlite');
    return { env: { DATABASE_URL: `sqlite:${file}` }, describe: 'SQLite file (WAL, synchronous=FULL), temp dir', cleanup: async () => {} };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = async (text: string) => {
    const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5000 });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  await admin(`create schema ${schema}`);
  const host = new URL(postgresUrl);
  return {
    env: { DATABASE_URL: postgresUrl, DATABASE_SCHEMA: schema },
    describe: `PostgreSQL ${host.hostname}:${host.port || 5432}${host.pathname}, fresh schema, pool of 10`,
    cleanup: () => admin(`drop schema if exists ${schema} cascade`),
  };
}

/** CLI commands still running: stopped on Ctrl-C too, so none writes into the temp dir after it is removed. */
const running = new Set<ChildProcess>();

function cli(cliArgs: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((ok, fail) => {
    const child = execFile(process.execPath, [MDS_BIN, ...cliArgs], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      running.delete(child);
      if (err) fail(new Error(`mds ${cliArgs.join(' ')}: ${stderr || err.message}`));
      else ok(stdout);
    });
    running.add(child);
  });
}

/** SIGTERM, SIGKILL after 5 s. */
const stopProcess = (child: ChildProcess | undefined) => stopChild(child, 5000);

/** Resident and peak memory of the server process, in MiB, from /proc. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system, every thread) the server process has used so far, in microseconds. */
function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK; // utime (#14), stime (#15)
}

/**
 * The write baseline: 4 KiB writes + fdatasync per second on the temp dir's file system, one at a
 * time, cycling through a preallocated file the way SQLite reuses its WAL after a checkpoint (a
 * commit in WAL mode with synchronous=FULL costs at least one such sync). Disk contention from other
 * processes moves this number as much as it moves the write scenarios, so compare against it.
 */
function fsyncsPerSecond(dir: string, ms = 1000): number {
  const file = join(dir, 'fsync-probe');
  const fd = openSync(file, 'w');
  const page = Buffer.alloc(4096, 1);
  const pages = 256;
  for (let i = 0; i < pages; i++) writeSync(fd, page);
  fdatasyncSync(fd);
  let n = 0;
  const start = performance.now();
  try {
    while (performance.now() - start < ms) {
      writeSync(fd, page, 0, page.length, (n % pages) * page.length);
      fdatasyncSync(fd);
      n++;
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return (n * 1000) / (performance.now() - start);
}

// ---------------------------------------------------------------- HTTP helpers

async function http(base: string, method: string, path: string, body?: unknown, token?: string): Promise<any> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const warehouseBody = (i: number) => ({
  name: `Bench warehouse ${i}`,
  nameInt: `bench-warehouse-${i}`,
  address: `Tverskaya St ${i + 1}, Moscow`,
  contactPhone: '+7 495 000-00-00',
  contactEmail: 'warehouse@example.com',
  locationMetadata: { display_name: `Tverskaya St ${i + 1}, Moscow`, lat: 55.7575 + i / 1000, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
});

const quoteBody = (warehouseId: string) =>
  JSON.stringify({
    warehouseId,
    destinationLocation: { lat: 55.7339, lng: 37.5886, display_name: 'Komsomolsky Ave 24, Moscow', city: 'Moscow' },
    parcelSize: 'SMALL',
    isFragile: false,
    isPerishable: false,
    deliveryType: 'DOOR_TO_DOOR',
  });

const transferBody = (quoteId: string) =>
  JSON.stringify({
    matchmakingId: quoteId,
    productKey: 'standard',
    description: 'Benchmark parcel',
    recipientInfo: { firstName: 'Anna', lastName: 'Ivanova', phone: '+7 900 000-00-00' },
  });

// ---------------------------------------------------------------- load runs

interface Scenario {
  key: string;
  title: string;
  what: string;
  expect: number;
  request: {
    method: 'GET' | 'POST';
    path: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (req: any, context: Record<string, any>) => any;
    onResponse?: (status: number, body: string, context: Record<string, any>) => void;
  };
  /** Stop after this many requests (scenarios that consume pre-created quotes). */
  amount?: number;
}

interface Measured {
  scenario: Scenario;
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  unexpected: Record<string, number>;
  errors: number;
  cpuMicrosPerReq: number;
  rssAfter: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function load(base: string, pid: number, s: Scenario, seconds = DURATION): Promise<Measured> {
  let latencies = new Float64Array(16_384);
  let n = 0;
  let first = 0;
  let last = 0;
  const statuses: Record<string, number> = {};
  const cpuBefore = cpuMicros(pid);
  const instance = autocannon({
    url: base,
    connections: CONNECTIONS,
    timeout: 30,
    ...(s.amount !== undefined ? { amount: Math.max(s.amount, CONNECTIONS) } : { duration: seconds }),
    requests: [s.request],
  });
  // autocannon's own histogram has 1 ms resolution: too coarse for sub-millisecond requests.
  instance.on('response', (_client, statusCode: number, _bytes: number, responseTime: number) => {
    if (n === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[n++] = responseTime;
    last = performance.now();
    if (n === 1) first = last - responseTime;
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
  });
  const stopTimer = setTimeout(() => instance.stop(), seconds * 1000);
  const result = await instance;
  clearTimeout(stopTimer);
  const cpu = cpuMicros(pid) - cpuBefore;
  const sorted = latencies.subarray(0, n).sort();
  // From the first request sent to the last answer: autocannon's own start/finish also count connecting and
  // waiting for its next 1 s tick to stop, which would distort the short runs.
  const elapsed = n > 1 ? (last - first) / 1000 : (result.finish.getTime() - result.start.getTime()) / 1000;
  const unexpected = Object.fromEntries(Object.entries(statuses).filter(([code]) => Number(code) !== s.expect));
  return {
    scenario: s,
    requests: n,
    seconds: elapsed,
    rps: n / elapsed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    unexpected,
    errors: result.errors,
    cpuMicrosPerReq: n ? cpu / n : Number.NaN,
    rssAfter: memory(pid).rss,
  };
}

// ---------------------------------------------------------------- report

interface Report {
  date: string;
  store: string;
  storeDescribe: string;
  node: string;
  cpus: number;
  loadBefore: string;
  rows: Measured[];
  /** 1 s GET /healthz runs: probes[i] just before rows[i], probes[i + 1] just after it. */
  probes: Measured[];
  memBefore: { rss: number; peak: number };
  memAfter: { rss: number; peak: number };
  micro: MicroResult[];
  /** fdatasync/s on the temp dir's file system, before and after the write scenarios. */
  fsyncs: number[];
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const f1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '–');
const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : '–');
/** A ratio with two significant digits below 0.1 (0.0063), two decimals above. */
const ratio = (v: number) => (!Number.isFinite(v) ? '–' : v >= 0.1 ? v.toFixed(2) : v.toPrecision(2));

function render(r: Report): string {
  const healthz = [...r.probes, ...r.rows.filter((m) => m.scenario.key === 'healthz')];
  const baseCpu = median(healthz.map((b) => b.cpuMicrosPerReq));
  const fsync = median(r.fsyncs);
  const rows = r.rows.map((m, i) => {
    // The baseline for this row: the probes right before and after it, i.e. the machine as it was then.
    const around = [r.probes[i], r.probes[i + 1]].filter(Boolean);
    const base = { rps: mean(around.map((p) => p.rps)), p50: mean(around.map((p) => p.p50)), cpu: baseCpu };
    const bad = Object.entries(m.unexpected)
      .map(([code, count]) => `${count}×${code}`)
      .concat(m.errors ? [`${m.errors} errors`] : []);
    const busy = `${Math.round((m.cpuMicrosPerReq * m.rps) / 1e4)}%`;
    return `| ${m.scenario.title} | ${Math.round(m.rps)} | **${ratio(m.rps / base.rps)}** | ${f2(m.p50)} | ${f2(m.p99)} | **${f1(m.p50 / base.p50)}×** | ${Math.round(m.cpuMicrosPerReq)} | **${f1(m.cpuMicrosPerReq / base.cpu)}×** | ${busy} | ${m.requests} | ${bad.join(', ') || '0'} |`;
  });
  const cpuOf = (key: string) => r.rows.find((m) => m.scenario.key === key)?.cpuMicrosPerReq ?? Number.NaN;
  const verify = r.micro.find((m) => m.name.startsWith('TokenSigner.verify'));
  const authHttp = cpuOf('auth-only') - cpuOf('no-token');
  const authShare = verify
    ? `Where the auth time goes: the token check adds ${Math.round(authHttp)} µs of server CPU per request over HTTP (400 with a valid token minus 401 without one; both build the same kind of error answer); verification alone is ${verify.cpuMicrosPerOp.toFixed(0)} µs in the micro-benchmark, about ${Math.round((verify.cpuMicrosPerOp / cpuOf('warehouse-get')) * 100)}% of the ${Math.round(cpuOf('warehouse-get'))} µs a whole GET /warehouses/{id} costs.`
    : '';
  const probeRps = r.probes.map((p) => p.rps);
  const drift = `${Math.round(Math.min(...probeRps))} to ${Math.round(Math.max(...probeRps))}`;
  return [
    `### ${r.store === 'postgres' ? 'PostgreSQL' : 'SQLite (embedded default)'}`,
    '',
    `${r.date} · Node ${r.node} · ${r.storeDescribe} · ${CONNECTIONS} connections · ${DURATION} s per scenario · ${MERCHANTS === 1 ? 'one merchant' : `writes spread over ${MERCHANTS} merchants`} · ${r.cpus} CPUs, load average ${r.loadBefore} at start`,
    '',
    `Absolute numbers are noise on this shared 2-core machine (other test suites run at the same time, and the load generator shares the CPUs with the server); only the ratios to the baselines, measured in the same run, mean something. Baseline = GET /healthz: a 1 s probe runs right before and right after every scenario, and each row is compared with the mean of its two probes, i.e. with the machine as it was at that moment (the probes ranged from ${drift} req/s during this run; CPU per request is compared with the median over every GET /healthz run). Server CPU busy = CPU µs/req × req/s, in % of one core: near 100% the single event loop is the limit; well below it the server waits (fsync, PostgreSQL round trips, locks) or the load generator is the limit. Disk: ${Math.round(fsync)} fdatasync/s (4 KiB, one at a time, on the temp dir's file system; ${r.fsyncs.map((v) => Math.round(v)).join(' and ')} before and after the write scenarios); a SQLite commit (WAL, synchronous=FULL) waits for at least one, on the event loop.`,
    '',
    '| scenario | req/s | req/s × baseline | p50 ms | p99 ms | p50 × baseline | server CPU µs/req | CPU × baseline | server CPU busy | requests | unexpected |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Server memory (VmRSS): ${f1(r.memBefore.rss)} MiB after start-up and seeding, ${f1(r.memAfter.rss)} MiB after the run (peak VmHWM ${f1(r.memAfter.peak)} MiB).`,
    '',
    'Access-token verification (micro-benchmark in the benchmark process, server stopped):',
    '',
    tokensTable(r.micro),
    '',
    authShare,
    '',
  ].join('\n');
}

const HEADER = `# Benchmark results

Written by \`npm run bench\` (SQLite) and \`npm run bench -- --postgres\` (PostgreSQL); each run replaces
its own section. What the scenarios measure and how to read them: [README.md](README.md).

**Absolute numbers are noise** on the shared 2-core machine these were taken on: other engineers'
test suites ran at the same time and the load generator runs on the same CPUs as the server. Only
the **ratios** against the baseline measured in the same run carry information.
`;

function writeResults(store: string, section: string): void {
  const start = `<!-- bench:${store}:start -->`;
  const end = `<!-- bench:${store}:end -->`;
  let text = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : HEADER;
  const block = `${start}\n${section.trimEnd()}\n${end}`;
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  if (i >= 0 && j > i) text = text.slice(0, i) + block + text.slice(j + end.length);
  else if (store === 'sqlite' && text.includes('<!-- bench:postgres:start -->'))
    text = text.replace('<!-- bench:postgres:start -->', `${block}\n\n<!-- bench:postgres:start -->`);
  else text = `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(RESULTS, text.endsWith('\n') ? text : `${text}\n`);
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const startedAt = Date.now();
  const tmp = mkdtempSync(join(tmpdir(), 'mds-bench-'));
  let server: ServerChild | undefined;
  let storeHandle: Store | undefined;
  const onSignal = () => {
    Promise.all([server?.stop(5000), ...[...running].map(stopProcess)])
      .then(() => storeHandle?.cleanup())
      .finally(() => {
        rmSync(tmp, { recursive: true, force: true });
        process.exit(130);
      });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    storeHandle = await createStore(tmp);
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...storeHandle.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn', // per-request logging off: measure the service, not pino writing to a pipe
      HOST: '127.0.0.1',
      PORT: String(port),
      TOKEN_SIGNING_KEYS: generateSigningKey(),
    };
    if (!postgresUrl) delete env.DATABASE_SCHEMA;
    const loadBefore = loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ');

    log(`bench: ${store} · ${CONNECTIONS} connections · ${DURATION} s per scenario`);
    if (postgresUrl) await cli(['migrate'], env); // the server migrates SQLite itself, PostgreSQL is the operator's job
    server = startServer({ env, readyTimeoutMs: 30_000, logChars: 10_000 });
    const base = await server.ready.catch((err: Error) => {
      throw new Error(`${err.message}:\n${server?.log()}`);
    });
    const pid = server.pid;

    // Seed: merchants with enough money for every transfer, their tokens, warehouses (the first
    // merchant, whose token the read scenarios use, has WAREHOUSES of them).
    interface Seeded {
      auth: Record<string, string>;
      json: Record<string, string>;
      warehouseId: string;
    }
    const merchants: Seeded[] = [];
    for (let m = 0; m < MERCHANTS; m++) {
      const created = JSON.parse(await cli(['merchants', 'create', '--name', `Bench shop ${m + 1}`, '--balance', '1000000000', '--json'], env));
      const { access_token: token } = await http(base, 'POST', '/auth/token', {
        grant_type: 'client_credentials',
        client_id: created.clientId,
        client_secret: created.clientSecret,
      });
      const warehouseIds: string[] = [];
      for (let i = 0; i < (m === 0 ? WAREHOUSES : 1); i++) warehouseIds.push((await http(base, 'POST', '/warehouses', warehouseBody(i), token)).id);
      const auth = { authorization: `Bearer ${token}` };
      merchants.push({ auth, json: { ...auth, 'content-type': 'application/json' }, warehouseId: warehouseIds[0] });
    }
    const [{ auth, warehouseId }] = merchants;

    // Pending quotes for the transfer scenarios, with the merchant each belongs to.
    const quotes: { id: string; merchant: Seeded }[] = [];
    let nextMerchant = 0;
    const options: Scenario = {
      key: 'options',
      title: 'POST /options',
      what: 'auth + warehouse read + tariff + pricing + insert of the quote',
      expect: 201,
      request: {
        method: 'POST',
        path: '/options',
        setupRequest: (req, context) => {
          const merchant = merchants[nextMerchant++ % merchants.length];
          context.merchant = merchant;
          return { ...req, headers: merchant.json, body: quoteBody(merchant.warehouseId) };
        },
        onResponse: (status, body, context) => {
          if (status === 201) quotes.push({ id: JSON.parse(body).id, merchant: context.merchant });
        },
      },
    };
    const transfer = (idempotent: boolean): Scenario => ({
      key: idempotent ? 'transfer-idempotent' : 'transfer',
      title: idempotent ? 'POST /transfer + Idempotency-Key' : 'POST /transfer',
      what: 'the money transaction: consume the quote, debit, ledger entry, insert the transfer',
      expect: 201,
      request: {
        method: 'POST',
        path: '/transfer',
        setupRequest: (req) => {
          const quote = quotes.pop() ?? { id: randomUUID(), merchant: merchants[0] }; // none left: a 404, counted as unexpected
          const headers = quote.merchant.json;
          return { ...req, body: transferBody(quote.id), headers: idempotent ? { ...headers, 'idempotency-key': randomUUID() } : headers };
        },
      },
    });
    const healthz: Scenario = {
      key: 'healthz',
      title: 'GET /healthz (baseline)',
      what: 'no auth, no database',
      expect: 200,
      request: { method: 'GET', path: '/healthz' },
    };
    const scenarios: Scenario[] = [
      {
        key: 'no-token',
        title: 'GET /warehouses/not-a-uuid, no token (401)',
        what: 'the auth hook finds no bearer token: an error answer (problem+json), no token check, no database',
        expect: 401,
        request: { method: 'GET', path: '/warehouses/not-a-uuid' },
      },
      {
        key: 'auth-only',
        title: 'GET /warehouses/not-a-uuid, valid token (400)',
        what: 'token verified, then the path parameter is refused: 400, no database',
        expect: 400,
        request: { method: 'GET', path: '/warehouses/not-a-uuid', headers: auth },
      },
      {
        key: 'warehouse-get',
        title: 'GET /warehouses/{id}',
        what: 'auth + one indexed read',
        expect: 200,
        request: { method: 'GET', path: `/warehouses/${warehouseId}`, headers: auth },
      },
      {
        key: 'warehouse-list',
        title: `GET /warehouses (${WAREHOUSES} warehouses)`,
        what: 'auth + one range read + serialising the array',
        expect: 200,
        request: { method: 'GET', path: '/warehouses', headers: auth },
      },
      options,
    ];

    // Warm up (JIT, connection pool, SQLite page cache); its quotes join the pool.
    log('warm-up');
    for (const s of [healthz, ...scenarios]) await load(base, pid, s, 1);

    const memBefore = memory(pid);
    const rows: Measured[] = [];
    const probes: Measured[] = [];
    const probe = async () => {
      probes.push(await load(base, pid, healthz, 1));
    };
    const run = async (s: Scenario) => {
      await probe();
      const m = await load(base, pid, s);
      log(`  ${s.title.padEnd(42)} ${Math.round(m.rps).toString().padStart(6)} req/s  p50 ${f2(m.p50)} ms  p99 ${f2(m.p99)} ms`);
      rows.push(m);
      return m;
    };
    log('measuring');
    await run(healthz);
    const fsyncs: number[] = [];
    for (const s of scenarios) {
      if (s === options) fsyncs.push(fsyncsPerSecond(tmp));
      await run(s);
    }

    // Every transfer needs its own pending quote. Top the pool up to enough for one full run at the
    // POST /options rate (a transfer does more work than a quote), then let the run consume them.
    const optionsRps = rows.find((m) => m.scenario.key === 'options')?.rps ?? 100;
    const need = Math.ceil(optionsRps * DURATION * 1.3);
    for (const idempotent of [false, true]) {
      if (quotes.length < need) {
        log(`  (pre-creating ${need - quotes.length} quotes)`);
        await load(base, pid, { ...options, key: 'seed', amount: need - quotes.length }, DURATION * 3);
      }
      await run({ ...transfer(idempotent), amount: quotes.length });
    }
    fsyncs.push(fsyncsPerSecond(tmp));
    const last = await run(healthz);
    last.scenario = { ...healthz, title: 'GET /healthz (again at the end)' };
    await probe();
    const memAfter = memory(pid);

    await server.stop(5000);
    server = undefined;
    log('token micro-benchmark');
    const micro = await benchTokens();

    const report: Report = {
      date: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      store,
      storeDescribe: storeHandle.describe,
      node: process.version,
      cpus: availableParallelism(),
      loadBefore,
      rows,
      probes,
      memBefore,
      memAfter,
      micro,
      fsyncs,
    };
    const section = render(report);
    process.stdout.write(`\n${section}\n`);
    if (!args['no-write']) {
      writeResults(store, section);
      log(`wrote ${RESULTS}`);
    }
    log(`done in ${Math.round((Date.now() - startedAt) / 1000)} s`);
    const broken = rows.filter((m) => Object.keys(m.unexpected).length > 0 || m.errors > 0);
    if (broken.length) {
      log(`WARNING: unexpected answers in ${broken.map((m) => m.scenario.title).join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    await server?.stop(5000);
    await storeHandle?.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
