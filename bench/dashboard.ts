// The pages over 10^5 transfers of one merchant, at 10 concurrent logged-in people: the dashboard's
// deliveries list, the operator console's transfers list and the courier app's jobs page,
// against the raw node:http baseline as the other rows (bench/run.ts). Run by `npm run bench` after its
// rows (same flags: --postgres, --smoke), or alone: `node bench/dashboard.ts [--postgres] [--smoke]`.
//
// 1. A fresh store, `mds migrate`, a merchant (`mds merchants create`) with 5 warehouses (POST /warehouses).
// 2. 10^5 transfers for that merchant (10^3 with --smoke), set-based as bench/growth.ts does, spread over
//    90 days, every state, 5 warehouses, 4 recipient phones.
// 3. The server (`mds serve`, NODE_ENV=production) pinned to CPU 0; this process on CPU 1 (taskset).
// 4. 10 employees (AccountsService), each logged in through the login form (its own session cookie);
//    10 support operators and 10 couriers (2 seeded jobs each), each with a session of their own.
// 5. Rows, each with 10 connections (one person each): the first page, a filtered page, a phone search,
//    the API's JSON list of the same page size for comparison, the console's list of every merchant's
//    newest transfers and the courier's jobs page; a raw node:http probe around each.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Secret, TOTP } from 'otpauth';
import pg from 'pg';
import { freePort, MDS_BIN, type ServerChild, startServer, stopChild } from '../scripts/lib/server-process.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { systemClock } from '../src/lib/clock.ts';
import { generateSigningKey } from '../src/modules/auth/signing-keys.ts';
import { createServices } from '../src/services.ts';
import { sessionCookieName } from '../src/web/plugin.ts';
import { DETAILS } from './growth.ts';
import { cpuMicros, pinToCpu } from './process-cpu.ts';

const RESULTS = join(import.meta.dirname, 'results.md');
const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
const DAY = 86_400_000;
const USERS = 10;
const PAGE = 50;

// Unknown options are bench/run.ts's (this also runs from there with its argv).
const { values: args } = parseArgs({
  strict: false,
  options: {
    postgres: { type: 'boolean', default: false },
    smoke: { type: 'boolean', default: false },
    duration: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
  },
});
const SMOKE = args.smoke === true;
const DURATION = Number(args.duration ?? (SMOKE ? 1 : 10));
const PROBE_SECONDS = SMOKE ? 0.5 : 1;
const TRANSFERS = SMOKE ? 1_000 : 100_000;
const WRITE = args['no-write'] !== true && !SMOKE;
const postgresUrl =
  args.postgres === true || process.env.BENCH_DATABASE_URL
    ? process.env.BENCH_DATABASE_URL || process.env.TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL
    : undefined;
const store = postgresUrl ? 'postgres' : 'sqlite';
const log = (text: string) => process.stderr.write(`${text}\n`);
const CPUS = availableParallelism();

function pin(pid: number, cpu: number): boolean {
  if (args['no-pin'] === true || CPUS < 2) return false;
  return pinToCpu(pid, cpu);
}

function cli(cliArgs: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((ok, fail) => {
    execFile(process.execPath, [MDS_BIN, ...cliArgs], { env, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) fail(new Error(`mds ${cliArgs.join(' ')}: ${stderr || err.message}`));
      else ok(stdout);
    });
  });
}

async function pgQuery(text: string, values: unknown[] = [], schema?: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5000, ...(schema ? { options: `-c search_path=${schema}` } : {}) });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------- seeding (set-based, as bench/growth.ts)

const STATES = ['delivered', 'delivered', 'inProgress', 'courierAssigned', 'pickedUp', 'cancelled', 'delivered', 'returned'];
const PHONES = ['+7 900 000-00-01', '+7 900 000-00-02', '+7 900 000-00-03', '+7 900 000-00-04'];

/** `n` transfers (and their consumed quotes) for one merchant, round-robin over its warehouses, the newest now. */
async function seedTransfers(target: { file: string } | { schema: string }, merchantId: string, warehouses: string[], n: number): Promise<void> {
  const now = Date.now();
  const step = Math.floor((90 * DAY) / n);
  const w = (i: string) => `(case (${i}) % ${warehouses.length} ${warehouses.map((id, k) => `when ${k} then '${id}'`).join(' ')} end)`;
  const state = (i: string) => `(case (${i}) % ${STATES.length} ${STATES.map((s, k) => `when ${k} then '${s}'`).join(' ')} end)`;
  const phone = (i: string) => `(case (${i}) % ${PHONES.length} ${PHONES.map((p, k) => `when ${k} then '${p.replace(/\D/g, '')}'`).join(' ')} end)`;
  const details = (k: number) => {
    const d = JSON.parse(DETAILS);
    d.recipientInfo.phone = PHONES[k];
    d.senderInfo.merchantId = merchantId;
    return JSON.stringify(d).replace(/'/g, "''");
  };
  const detailsCase = (i: string) => `(case (${i}) % ${PHONES.length} ${PHONES.map((_, k) => `when ${k} then '${details(k)}'`).join(' ')} end)`;
  if ('file' in target) {
    const db = new DatabaseSync(target.file);
    try {
      const id = (tag: string, expr: string) => `printf('%08x-${tag}-0000-8000-%012x', ${expr}, ${expr})`;
      const at = `(${now} - (${n} - 1 - i) * ${step})`;
      const seq = `with recursive c(i) as (select 0 union all select i + 1 from c where i < ${n - 1})`;
      db.exec('PRAGMA busy_timeout = 5000; BEGIN IMMEDIATE');
      db.exec(`${seq} insert into quotes (id, merchant_id, warehouse_id, transfer_id, event_id, status, tariff_version, currency, request, pickup, products, expires_at, created_at, consumed_at)
        select ${id('00d3', 'i')}, '${merchantId}', ${w('i')}, ${id('00d4', 'i')}, ${id('00d5', 'i')}, 'consumed', 1, 'RUB', '{}', '{}', '{}', ${at} + 900000, ${at}, ${at} from c`);
      db.exec(`${seq} insert into transfers (id, merchant_id, quote_id, warehouse_id, product_key, state, source, mode, transfer_code, tracking_code,
          total_amount, currency, payment_ttl_minutes, payment_expires_at, details, delivery_pin, courier_id, courier_name, cancellation_fee, return_fee,
          refunded_amount, cancellation, delivery_failure, last_sequence, next_step_at, pickup_lat, pickup_lng, courier_payout, code_attempts, locked, recipient_phone, created_at, updated_at)
        select ${id('00d4', 'i')}, '${merchantId}', ${id('00d3', 'i')}, ${w('i')}, 'standard', ${state('i')}, 'API', 'live',
          printf('D%09d', i), printf('DT%020d', i), 31438, 'RUB', 30, ${at} + 1800000, ${detailsCase('i')}, '0000', null, null, 0, 0, 0, null, null, 2, null,
          55.7575, 37.6136, 25000, 0, 0, ${phone('i')}, ${at}, ${at} from c`);
      db.exec('COMMIT');
      db.exec('ANALYZE');
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
    return;
  }
  const id = (tag: string, expr: string) => `lpad(to_hex(${expr}), 8, '0') || '-${tag}-0000-8000-' || lpad(to_hex(${expr}), 12, '0')`;
  const at = `(${now}::bigint - (${n} - 1 - i)::bigint * ${step})`;
  const client = new pg.Client({ connectionString: postgresUrl, options: `-c search_path=${target.schema}` });
  await client.connect();
  try {
    await client.query('begin');
    await client.query(`insert into quotes (id, merchant_id, warehouse_id, transfer_id, event_id, status, tariff_version, currency, request, pickup, products, expires_at, created_at, consumed_at)
      select ${id('00d3', 'i')}, '${merchantId}', ${w('i')}, ${id('00d4', 'i')}, ${id('00d5', 'i')}, 'consumed', 1, 'RUB', '{}', '{}', '{}', ${at} + 900000, ${at}, ${at}
      from generate_series(0, ${n - 1}) i`);
    await client.query(`insert into transfers (id, merchant_id, quote_id, warehouse_id, product_key, state, source, mode, transfer_code, tracking_code,
        total_amount, currency, payment_ttl_minutes, payment_expires_at, details, delivery_pin, courier_id, courier_name, cancellation_fee, return_fee,
        refunded_amount, cancellation, delivery_failure, last_sequence, next_step_at, pickup_lat, pickup_lng, courier_payout, code_attempts, locked, recipient_phone, created_at, updated_at)
      select ${id('00d4', 'i')}, '${merchantId}', ${id('00d3', 'i')}, ${w('i')}, 'standard', ${state('i')}, 'API', 'live',
        'D' || lpad(i::text, 9, '0'), 'DT' || lpad(i::text, 20, '0'), 31438, 'RUB', 30, ${at} + 1800000, ${detailsCase('i')}, '0000', null, null, 0, 0, 0, null, null, 2, null,
        55.7575, 37.6136, 25000, 0, 0, ${phone('i')}, ${at}, ${at} from generate_series(0, ${n - 1}) i`);
    await client.query('commit');
    await client.query('analyze');
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------- logging in through the forms

/** A tiny cookie jar over fetch: follows nothing, keeps every Set-Cookie. */
class Browserless {
  readonly cookies = new Map<string, string>();
  readonly base: string;
  constructor(base: string) {
    this.base = base;
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  async request(method: string, path: string, form?: Record<string, string>): Promise<{ status: number; location: string | null; text: string }> {
    const res = await fetch(new URL(path, this.base), {
      method,
      redirect: 'manual',
      headers: { cookie: this.header(), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(c) || value === '') this.cookies.delete(pair.slice(0, eq));
      else this.cookies.set(pair.slice(0, eq), value);
    }
    return { status: res.status, location: res.headers.get('location'), text: await res.text() };
  }
}

const hidden = (html: string, name: string): string => {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no hidden field ${name} in the page`);
  return m[1]
    .replace(/&amp;/g, '&')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"');
};

/** Creates the employees (AccountsService, on the store directly: the server holds no state of its own). */
async function createUsers(env: NodeJS.ProcessEnv, merchantId: string, n: number): Promise<Array<{ email: string; password: string }>> {
  const config = loadConfig(env);
  const database = openDatabase({ url: config.databaseUrl, schema: config.databaseSchema, poolSize: 2 });
  try {
    const services = createServices({ config, database, clock: systemClock, signingKeys: parseSigningKeys(String(env.TOKEN_SIGNING_KEYS)) });
    const users: Array<{ email: string; password: string }> = [];
    for (let i = 0; i < n; i++) {
      const user = { email: `bench-user-${i}@example.com`, password: `bench password number ${i} ${randomBytes(4).toString('hex')}` };
      await services.accounts.createMerchantUser(merchantId, { ...user, role: 'employee', name: `Bench user ${i}` });
      users.push(user);
    }
    return users;
  } finally {
    await database.close();
  }
}

/**
 * Operators (support, TOTP set up as at a first login) and couriers (activated, each holding 2 of the
 * seeded courierAssigned transfers), with a full session each started by AccountsService as a completed
 * login does: the rows measure the pages behind the login, not the TOTP step. Returns their Cookie headers.
 */
async function createStaff(
  env: NodeJS.ProcessEnv,
  target: { file: string } | { schema: string },
  n: number,
): Promise<{ operators: string[]; couriers: string[] }> {
  const config = loadConfig(env);
  const database = openDatabase({ url: config.databaseUrl, schema: config.databaseSchema, poolSize: 2 });
  const cookie = (value: string) => `${sessionCookieName(false)}=${value}`;
  try {
    const services = createServices({ config, database, clock: systemClock, signingKeys: parseSigningKeys(String(env.TOKEN_SIGNING_KEYS)) });
    const by = { kind: 'cli' as const, machineUser: 'bench' };
    const operators: string[] = [];
    const couriers: string[] = [];
    for (let i = 0; i < n; i++) {
      const invited = await services.accounts.inviteOperator(
        { email: `bench-operator-${i}@example.com`, role: 'support', name: `Bench operator ${i}` },
        'http://127.0.0.1',
        by,
      );
      await services.accounts.setPasswordWithLink(new URL(invited.url).searchParams.get('token') as string, `bench operator password ${i}`);
      const { secret } = await services.accounts.beginTotp(invited.operator.id);
      await services.accounts.confirmTotp(invited.operator.id, new TOTP({ secret: Secret.fromBase32(secret) }).generate());
      operators.push(cookie((await services.accounts.startSession(invited.operator.id, 'full', {})).cookie));

      const { courier } = await services.couriers.create(`Bench courier ${i}`, `+7 900 100-00-${String(i).padStart(2, '0')}`, by);
      const link = await services.accounts.courierActivationLink(courier.id, 'http://127.0.0.1');
      await services.accounts.setPasswordWithLink(new URL(link.url).searchParams.get('token') as string, `bench courier password ${i}`);
      couriers.push(cookie((await services.accounts.startSession(link.personId, 'full', {})).cookie));
      const hold = `update transfers set courier_id = '${courier.id}', courier_name = 'Bench courier ${i}'
        where id in (select id from transfers where state = 'courierAssigned' and courier_id is null order by id limit 2)`;
      if ('file' in target) {
        // createServices's connection may still be committing the session just started: wait for it.
        const db = new DatabaseSync(target.file, { timeout: 5000 });
        db.exec(hold);
        db.close();
      } else await pgQuery(hold, [], target.schema);
    }
    return { operators, couriers };
  } finally {
    await database.close();
  }
}

/** Logs in through the login form; returns the Cookie header of the session. */
async function loggedInUser(base: string, { email, password }: { email: string; password: string }): Promise<string> {
  const b = new Browserless(base);
  const login = await b.request('GET', '/dashboard/login');
  const done = await b.request('POST', '/dashboard/login', { _csrf: hidden(login.text, '_csrf'), email, password });
  if (done.status !== 303) throw new Error(`login: ${done.status} ${done.text.slice(0, 300)}`);
  const check = await b.request('GET', '/dashboard/deliveries');
  if (check.status !== 200) throw new Error(`deliveries after login: ${check.status} ${check.location}`);
  return b.header();
}

// ---------------------------------------------------------------- query plans

/** The lists' statements as Kysely builds them (TransfersService.search, and searchAny for the console), with their plans on the seeded store. */
async function plans(target: { file: string } | { schema: string }, merchantId: string, warehouseId: string): Promise<string> {
  const queries: Array<[string, string, unknown[]]> = [
    ['first page', 'select * from transfers where merchant_id = ? order by created_at desc, id desc limit ?', [merchantId, PAGE + 1]],
    [
      'state + warehouse',
      'select * from transfers where merchant_id = ? and state = ? and warehouse_id = ? order by created_at desc, id desc limit ?',
      [merchantId, 'cancelled', warehouseId, PAGE + 1],
    ],
    [
      'phone search',
      'select * from transfers where merchant_id = ? and recipient_phone = ? order by created_at desc, id desc limit ?',
      [merchantId, '79000000003', PAGE + 1],
    ],
    [
      'tracking code',
      'select * from transfers where merchant_id = ? and tracking_code = ? order by created_at desc, id desc limit ?',
      [merchantId, 'x', PAGE + 1],
    ],
    ['console: every merchant, newest first', 'select * from transfers order by created_at desc, id desc limit ?', [PAGE + 1]],
  ];
  const out = ['| query | plan |', '|---|---|'];
  const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, '<br>');
  if ('file' in target) {
    const db = new DatabaseSync(target.file, { readOnly: true });
    try {
      for (const [what, text, params] of queries) {
        const rows = db.prepare(`explain query plan ${text}`).all(...(params as never[])) as { detail: string }[];
        out.push(`| ${what} | ${cell(rows.map((r) => r.detail).join('; '))} |`);
      }
    } finally {
      db.close();
    }
  } else {
    for (const [what, text, params] of queries) {
      let n = 0;
      const { rows } = await pgQuery(`explain (costs off) ${text.replace(/\?/g, () => `$${++n}`)}`, params, target.schema);
      out.push(`| ${what} | ${cell(rows.map((r) => String(r['QUERY PLAN']).trim()).join('; '))} |`);
    }
  }
  return out.join('\n');
}

// ---------------------------------------------------------------- load

interface Row {
  title: string;
  cpuMicrosPerReq: number;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  unexpected: number;
  baseRps: number;
  bytes: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function load(base: string, path: string, headersOf: (client: number) => Record<string, string>, seconds: number, connections: number, pid: number) {
  const cpuBefore = cpuMicros(pid);
  let latencies = new Float64Array(16_384);
  let n = 0;
  let first = 0;
  let last = 0;
  let unexpected = 0;
  let bytes = 0;
  let nextClient = 0;
  const instance = autocannon({
    url: base,
    connections,
    timeout: 30,
    duration: seconds + 1,
    requests: [
      {
        method: 'GET',
        path,
        setupRequest: (req: any, context: Record<string, any>) => {
          context.client ??= nextClient++;
          return { ...req, headers: headersOf(context.client) };
        },
      },
    ],
  });
  instance.on('response', (_client: unknown, statusCode: number, size: number, responseTime: number) => {
    if (n === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[n++] = responseTime;
    last = performance.now();
    if (n === 1) first = last - responseTime;
    if (statusCode !== 200) unexpected++;
    bytes = size;
  });
  const timer = setTimeout(() => instance.stop(), seconds * 1000);
  await instance;
  clearTimeout(timer);
  const sorted = latencies.subarray(0, n).sort();
  const elapsed = n > 1 ? (last - first) / 1000 : seconds;
  return {
    rps: n / elapsed,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    requests: n,
    unexpected,
    bytes,
    cpuMicrosPerReq: n ? (cpuMicros(pid) - cpuBefore) / n : Number.NaN,
  };
}

const RAW_SERVER = `
const http = require('node:http');
const body = '{"status":"ok"}';
http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('ready'));
process.on('SIGTERM', () => process.exit(0));
`;

async function startRaw(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', RAW_SERVER], { env: { PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`raw node:http server exited (${code})`)));
    child.stdout?.once('data', () => ok());
  });
  return child;
}

function writeResults(key: string, text: string): void {
  const start = `<!-- bench:${key}:start -->`;
  const end = `<!-- bench:${key}:end -->`;
  let doc = readFileSync(RESULTS, 'utf8');
  const block = `${start}\n${text.trimEnd()}\n${end}`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) doc = doc.slice(0, i) + block + doc.slice(j + end.length);
  else doc = `${doc.trimEnd()}\n\n${block}\n`;
  writeFileSync(RESULTS, doc.endsWith('\n') ? doc : `${doc}\n`);
}

// ---------------------------------------------------------------- main

export async function benchDashboard(): Promise<number> {
  const tmp = mkdtempSync(join(tmpdir(), 'mds-bench-dashboard-'));
  const schema = postgresUrl ? `bench_${randomBytes(5).toString('hex')}` : undefined;
  let server: ServerChild | undefined;
  let raw: ChildProcess | undefined;
  try {
    const pinned = pin(process.pid, 1);
    if (schema) await pgQuery(`create schema ${schema}`);
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: postgresUrl ?? `sqlite:${join(tmp, 'bench.sqlite')}`,
      ...(schema ? { DATABASE_SCHEMA: schema } : {}),
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      TOKEN_SIGNING_KEYS: generateSigningKey(),
      // The bench talks plain http to 127.0.0.1: the session cookie must come back without TLS.
      SESSION_COOKIE_SECURE: 'false',
      // One merchant answers every request of the load: its rate limit would turn the API row into 429s.
      MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000',
    };
    if (!schema) delete env.DATABASE_SCHEMA;
    log(
      `bench dashboard: ${store}${SMOKE ? ' (smoke)' : ''} · ${TRANSFERS} transfers · ${USERS} users · ${DURATION} s per row · ${pinned ? 'pinned' : 'not pinned'}`,
    );
    await cli(['migrate'], env);
    const created = JSON.parse(await cli(['merchants', 'create', '--name', 'Dashboard bench shop', '--balance', '1000000', '--json'], env));
    const merchantId: string = created.merchant.id;

    server = startServer({ env, readyTimeoutMs: 60_000, logChars: 10_000 });
    const base = await server.ready.catch((err: Error) => {
      throw new Error(`${err.message}:\n${server?.log()}`);
    });
    const token = (
      await (
        await fetch(`${base}/auth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ grant_type: 'client_credentials', client_id: created.clientId, client_secret: created.clientSecret }),
        })
      ).json()
    ).access_token as string;
    const warehouses: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${base}/warehouses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `Bench warehouse ${i + 1}`,
          address: `Tverskaya St ${i + 1}, Moscow`,
          locationMetadata: { display_name: `Tverskaya St ${i + 1}, Moscow`, lat: 55.7575 + i / 100, lng: 37.6136 },
        }),
      });
      if (res.status !== 201) throw new Error(`POST /warehouses: ${res.status} ${await res.text()}`);
      warehouses.push((await res.json()).id);
    }
    const t0 = Date.now();
    await seedTransfers(schema ? { schema } : { file: join(tmp, 'bench.sqlite') }, merchantId, warehouses, TRANSFERS);
    log(`  seeded ${TRANSFERS} transfers in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const planTable = await plans(schema ? { schema } : { file: join(tmp, 'bench.sqlite') }, merchantId, warehouses[2]);
    const cookies: string[] = [];
    for (const user of await createUsers(env, merchantId, USERS)) cookies.push(await loggedInUser(base, user));
    const staff = await createStaff(env, schema ? { schema } : { file: join(tmp, 'bench.sqlite') }, USERS);
    log(`  ${USERS} users, ${USERS} operators and ${USERS} couriers logged in`);

    const serverPid = server.pid;
    const serverPinned = pin(serverPid, 0);
    const rawPort = await freePort();
    raw = await startRaw(rawPort);
    const rawPinned = pin(raw.pid as number, 0);
    const rawBase = `http://127.0.0.1:${rawPort}`;
    const probe = async () => (await load(rawBase, '/', () => ({}), PROBE_SECONDS, USERS, raw?.pid as number)).rps;

    const page = (client: number) => ({ cookie: cookies[client % cookies.length] });
    const rows: Array<[string, string, (client: number) => Record<string, string>]> = [
      [`GET /dashboard/deliveries (first page, 50 of ${TRANSFERS.toLocaleString('en')})`, '/dashboard/deliveries', page],
      [`GET /dashboard/deliveries?state=cancelled&warehouseId=… (filtered)`, `/dashboard/deliveries?state=cancelled&warehouseId=${warehouses[2]}`, page],
      ['GET /dashboard/deliveries?q=+7 900 000-00-03 (phone search)', `/dashboard/deliveries?q=${encodeURIComponent('+7 900 000-00-03')}`, page],
      ['GET /transfer?limit=50 (the API, same page, JSON)', '/transfer?limit=50', () => ({ authorization: `Bearer ${token}` })],
      ["GET /ops/transfers (operator console: every merchant's newest 50)", '/ops/transfers', (client) => ({ cookie: staff.operators[client % USERS] })],
      ['GET /courier-app/jobs (courier app: 2 jobs held, offline)', '/courier-app/jobs', (client) => ({ cookie: staff.couriers[client % USERS] })],
    ];
    log('warm-up');
    for (const [, path, headers] of rows) await load(base, path, headers, SMOKE ? 0.5 : 2, USERS, serverPid);
    log('measuring');
    const measured: Row[] = [];
    let before = await probe();
    const rawRow = await load(rawBase, '/', () => ({}), DURATION, USERS, raw.pid as number);
    measured.push({ title: 'raw node:http hello world (baseline)', ...rawRow, baseRps: before });
    for (const [title, path, headers] of rows) {
      const m = await load(base, path, headers, DURATION, USERS, serverPid);
      const after = await probe();
      measured.push({ title, ...m, baseRps: (before + after) / 2 });
      before = after;
      log(`  ${title.padEnd(62)} ${Math.round(m.rps).toString().padStart(6)} req/s  p50 ${m.p50.toFixed(2)} ms  p99 ${m.p99.toFixed(2)} ms`);
    }

    const text = [
      `### Pages: dashboard, console, courier app, ${store === 'postgres' ? 'PostgreSQL' : 'SQLite'}`,
      '',
      `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · Node ${process.version} · one merchant with ${TRANSFERS.toLocaleString('en')} transfers (5 warehouses, 90 days) · ${USERS} connections, each a different logged-in employee (session cookie) · ${DURATION} s per row · ${pinned && serverPinned && rawPinned ? 'server pinned to CPU 0, load generator on CPU 1' : 'NOT pinned'} · ${CPUS} CPUs`,
      '',
      'Each row\'s "× raw" is its req/s over the mean of raw node:http probes right before and after it, on the same pinned CPU and with the same 10 connections.',
      '',
      '| row | req/s | **× raw** | p50 ms | **p99 ms** | server CPU µs/req | bytes/answer | requests | unexpected |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...measured.map(
        (m) =>
          `| ${m.title} | ${Math.round(m.rps)} | **${(m.rps / m.baseRps).toFixed(2)}** | ${m.p50.toFixed(2)} | **${m.p99.toFixed(2)}** | ${Math.round(m.cpuMicrosPerReq)} | ${m.bytes} | ${m.requests} | ${m.unexpected} |`,
      ),
      '',
      'Query plans on the seeded store (the statements TransfersService.search runs):',
      '',
      planTable,
      '',
    ].join('\n');
    process.stdout.write(`\n${text}\n`);
    if (WRITE && existsSync(RESULTS)) {
      writeResults(`dashboard-${store}`, text);
      log(`wrote ${RESULTS}`);
    }
    return measured.some((m) => m.unexpected > 0) ? 1 : 0;
  } finally {
    await server?.stop(5000);
    await stopChild(raw, 5000);
    if (schema) await pgQuery(`drop schema if exists ${schema} cascade`).catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await benchDashboard();
