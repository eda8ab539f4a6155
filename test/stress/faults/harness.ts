import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../../../src/config.ts';
import { migrateToLatest, openDatabase } from '../../../src/db/database.ts';
import { systemClock } from '../../../src/lib/clock.ts';
import { createServices } from '../../../src/services.ts';
import { TEST_SIGNING_KEYS } from '../../helpers/app.ts';
import { type Receiver, startReceiver } from '../../helpers/receiver.ts';
import {
  ApiClient,
  createMerchant,
  fetchToken,
  freePort,
  type HttpResult,
  type MerchantFixture,
  payableMinor,
  type ServerProcess,
  type StoreAccess,
  startServerProcess,
} from '../../helpers/server-process.ts';
import { type Acknowledged, checkStore } from '../kill.ts';

/**
 * Shared by the fault families (test/stress/faults/*): a private PostgreSQL cluster, the service as a
 * real `mds serve` process, a load of transfers, cancels and webhook deliveries that retries what was
 * refused with 503 (same Idempotency-Key) so that every write ends acknowledged exactly once, and the
 * checks of the one bar every family meets: no answer but the expected ones or a 503 problem+json with
 * Retry-After while the fault lasts, recovery within 5 s of its end, nothing lost or counted twice.
 */

/** A family that cannot run here (no binaries, no permission): reported as skipped, with the reason. */
export class SkipFamily extends Error {}

/** The recovery bound every family asserts. */
export const RECOVERY_LIMIT_MS = 5_000;

// ---------------------------------------------------------------------------------------------
// A private PostgreSQL cluster (initdb + pg_ctl on a free port in a temp dir), never the machine's.

export interface PgCluster {
  /** postgres://postgres@127.0.0.1:PORT/mds */
  url: string;
  port: number;
  start(): Promise<void>;
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  destroy(): Promise<void>;
}

export function pgBinDir(): string | undefined {
  for (const v of ['15', '16', '17', '14', '13']) {
    const dir = `/usr/lib/postgresql/${v}/bin`;
    if (existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  return undefined;
}

export async function startPrivatePostgres(): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin) throw new SkipFamily('PostgreSQL server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql-15');
  const asRoot = process.getuid?.() === 0;
  let uid: number | undefined;
  if (asRoot) {
    try {
      uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    } catch {
      throw new SkipFamily('running as root but there is no postgres OS user to run initdb and pg_ctl as');
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'mds-pgcluster-'));
  if (uid !== undefined) chownSync(dir, uid, uid);
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  const port = await freePort();
  // As root, initdb and postgres refuse to run: they run as the postgres OS user.
  const run = (cmd: string, args: string[], timeoutMs = 60_000) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]] : [join(bin, cmd), args];
    const r = spawnSync(file, argv, { encoding: 'utf8', timeout: timeoutMs, cwd: dir });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}\n${tail()}`);
  };
  const tail = () => {
    try {
      return readFileSync(join(dir, 'postgres.log'), 'utf8').split('\n').slice(-15).join('\n');
    } catch {
      return '';
    }
  };
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=60 -c shared_buffers=32MB`;
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/mds`,
    port,
    async start() {
      run('pg_ctl', ['-D', data, '-l', join(dir, 'postgres.log'), '-o', opts, '-w', '-t', '60', 'start']);
    },
    async stop(mode) {
      run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    },
    async destroy() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {} // already stopped
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await cluster.start();
    const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    await admin.connect();
    await admin.query('create database mds');
    await admin.end();
  } catch (err) {
    await cluster.destroy();
    throw err;
  }
  return cluster;
}

/** One statement on a cluster, in a connection of its own. */
export async function query(url: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------
// The service, a merchant, a webhook receiver

/** The store in this process, migrated (as test/helpers' openStore, without its lock on the machine's PostgreSQL). */
export async function openStore(env: Record<string, string>, poolSize = 2): Promise<StoreAccess> {
  const config = loadConfig({ NODE_ENV: 'test', TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS, ...env });
  const database = openDatabase({ url: config.databaseUrl, poolSize, preparedStatements: config.databasePreparedStatements });
  await migrateToLatest(database);
  const services = createServices({ config, database, clock: systemClock, signingKeys: config.tokenSigningKeys });
  return { database, services, close: () => database.close() };
}

/** The environment every family's server runs with (NODE_ENV=test: webhooks may go to the loopback receiver). */
export function serverEnv(extra: Record<string, string>): Record<string, string> {
  return {
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_POLL_INTERVAL_MS: '50',
    WEBHOOK_TIMEOUT_SECONDS: '2',
    SANDBOX_STEP_SECONDS: '0',
    // The load is one merchant flooding on purpose; the rate limits have their own tests (test/rate-limits.test.ts).
    MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000',
    ...extra,
  };
}

export interface Rig {
  server: ServerProcess;
  access: StoreAccess;
  merchant: MerchantFixture;
  client: ApiClient;
  warehouseId: string;
  receiver: Receiver;
  endpointId: string;
  /** Restarts the server process on the same store with more environment (rig.server and rig.client follow). */
  restart(extra: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

/** Opens the store in-process, starts `mds serve`, creates a merchant with a warehouse and a webhook endpoint on a live receiver. */
export async function startRig(env: Record<string, string>, name: string): Promise<Rig> {
  const access = await openStore(env, 2);
  const receiver = await startReceiver();
  let server: ServerProcess | undefined;
  try {
    const merchant = await createMerchant(access, name, '10000000');
    server = await startServerProcess({ env: serverEnv(env) });
    const client = new ApiClient(server.url, await fetchToken(server.url, merchant.clientId, merchant.clientSecret));
    const warehouseId = await client.createWarehouse();
    const ep = await client.request('POST', '/webhook-endpoints', {
      body: { url: `${receiver.url}/hooks`, eventTypes: ['transfer.created', 'transfer.cancelled'] },
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const rig: Rig = {
      server,
      access,
      merchant,
      client,
      warehouseId,
      receiver,
      endpointId: ep.body.id,
      async restart(extra) {
        await rig.server.stop();
        rig.server = await startServerProcess({ env: serverEnv({ ...env, ...extra }) });
        rig.client = rig.client.on(rig.server.url);
      },
      async close() {
        await rig.server.stop();
        await receiver.close();
        await access.close();
      },
    };
    return rig;
  } catch (err) {
    await server?.stop();
    await receiver.close();
    await access.close();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// The load: transfers, cancels (and the webhook deliveries they cause), retried through 503s

export interface Answer {
  what: 'options' | 'transfer' | 'cancel' | 'read' | 'probe';
  startedAt: number;
  endedAt: number;
  result: HttpResult;
}

export interface LoadFigures {
  requests: number;
  statuses: Record<string, number>;
  unavailable: number;
  transfers: number;
  cancels: number;
  /** Logical writes whose first try was refused (503) and a retry with the same key then acknowledged. */
  retriedWrites: number;
}

/**
 * Workers loop: a quote, a transfer with an Idempotency-Key (retried with the same key after each 503,
 * honouring Retry-After, until it is answered), sometimes a cancel of an acknowledged transfer (retried
 * likewise) or a read. Every answer is recorded with its time.
 */
export class Load {
  readonly answers: Answer[] = [];
  retriedWrites = 0;
  #stopped = false;
  #abandon = false;
  #running: Promise<void>[] = [];
  readonly #client: ApiClient;
  readonly #warehouseId: string;
  readonly #timeoutMs: number;
  readonly acknowledged: Acknowledged;
  constructor(client: ApiClient, warehouseId: string, opts: { workers: number; timeoutMs?: number; rand: () => number; acknowledged?: Acknowledged }) {
    this.acknowledged = opts.acknowledged ?? { transfers: new Map(), cancelled: new Set(), warehouses: new Set() };
    this.#client = client;
    this.#warehouseId = warehouseId;
    this.#timeoutMs = opts.timeoutMs ?? 20_000;
    this.acknowledged.warehouses.add(warehouseId);
    this.#running = Array.from({ length: opts.workers }, (_, w) => this.#worker(w, opts.rand));
  }

  async #call(what: Answer['what'], run: () => Promise<HttpResult>): Promise<HttpResult> {
    const startedAt = performance.now();
    const result = await run();
    this.answers.push({ what, startedAt, endedAt: performance.now(), result });
    return result;
  }

  /** Repeats the request while it is answered 503, waiting as Retry-After says; gives up after 60 tries. */
  async #untilAnswered(what: Answer['what'], run: () => Promise<HttpResult>): Promise<HttpResult> {
    for (let attempt = 1; ; attempt++) {
      const res = await this.#call(what, run);
      if (!isRefusal(res) || attempt >= 60 || this.#abandon) {
        if (attempt > 1 && res.status >= 200 && res.status < 300) this.retriedWrites++;
        return res;
      }
      await sleep(Math.min(1000, Number(res.headers.get('retry-after') ?? 1) * 1000) * (0.5 + Math.random() / 2));
    }
  }

  async #worker(w: number, rand: () => number): Promise<void> {
    let i = w * 1000;
    while (!this.#stopped) {
      i++;
      const x = rand();
      const open = [...this.acknowledged.transfers.keys()].filter((id) => !this.acknowledged.cancelled.has(id));
      if (x < 0.2 && open.length > 0) {
        await this.#cancel(open[Math.floor(rand() * open.length)]);
      } else if (x < 0.3 && open.length > 0) {
        await this.#call('read', () => this.#client.request('GET', `/transfer/${open[Math.floor(rand() * open.length)]}`, { timeoutMs: this.#timeoutMs }));
      } else {
        const quote = await this.#call('options', () => this.#client.options(this.#warehouseId, i, { timeoutMs: this.#timeoutMs }));
        if (quote.status !== 201) {
          await sleep(50);
          continue;
        }
        const key = randomUUID();
        const res = await this.#untilAnswered('transfer', () =>
          this.#client.transfer(quote.body.id, 'standard', { headers: { 'idempotency-key': key }, timeoutMs: this.#timeoutMs }),
        );
        if (res.status === 201) {
          assert.ok(!this.acknowledged.transfers.has(res.body.id), 'a transfer is acknowledged once');
          this.acknowledged.transfers.set(res.body.id, { priceMinor: payableMinor(quote.body), body: res.body });
        }
      }
    }
  }

  async #cancel(id: string): Promise<void> {
    const key = randomUUID();
    const entry = this.acknowledged.transfers.get(id)!;
    const res = await this.#untilAnswered('cancel', () =>
      this.#client.request('POST', `/transfer/${id}/cancel`, { body: { reason: 'OTHER' }, headers: { 'idempotency-key': key }, timeoutMs: this.#timeoutMs }),
    );
    if (res.status === 200) {
      entry.body = res.body;
      this.acknowledged.cancelled.add(id);
    } else if (res.status === 409 && res.body?.type === 'TRANSFER_NOT_CANCELLABLE' && res.body.state === 'cancelled') {
      // Another worker's cancel of the same transfer won (they pick from the same list).
      entry.body = undefined;
      this.acknowledged.cancelled.add(id);
    }
  }

  /**
   * Stops the workers once their current request is answered. With abandonRefused, a write still being
   * refused is given up instead of retried until it gets through (only where a refusal is known to have
   * rolled back: SQLite, whose refused batch never committed).
   */
  async stop(opts: { abandonRefused?: boolean } = {}): Promise<void> {
    this.#abandon = opts.abandonRefused ?? false;
    this.#stopped = true;
    await Promise.all(this.#running);
  }

  figures(): LoadFigures {
    const statuses: Record<string, number> = {};
    for (const a of this.answers) statuses[a.result.status] = (statuses[a.result.status] ?? 0) + 1;
    return {
      requests: this.answers.length,
      statuses,
      unavailable: statuses['503'] ?? 0,
      transfers: this.acknowledged.transfers.size,
      cancels: this.acknowledged.cancelled.size,
      retriedWrites: this.retriedWrites,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// The bar

/** Answers that say "not now, retry": a 503, or the 409 of a key whose first try is still taken to be running. */
export const isRefusal = (r: HttpResult) => r.status === 503 || (r.status === 409 && r.body?.type === 'IDEMPOTENCY_KEY_IN_USE');

/** A 503 as the service promises it: problem+json SERVICE_UNAVAILABLE with Retry-After and the request id. */
export function assertUnavailable(r: HttpResult, what = ''): void {
  assert.equal(r.status, 503, what);
  assert.match(r.headers.get('content-type') ?? '', /^application\/problem\+json/, `${what} media type`);
  assert.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `${what} Retry-After`);
  assert.equal(r.body?.type, 'SERVICE_UNAVAILABLE', what);
  assert.equal(r.body.status, 503);
  assert.equal(r.body.title, 'Service unavailable');
  assert.equal(typeof r.body.detail, 'string');
  assert.equal(r.body.requestId, r.headers.get('x-request-id'));
}

const EXPECTED: Record<Answer['what'], number[]> = {
  options: [201],
  transfer: [201],
  cancel: [200, 409], // 409 TRANSFER_NOT_CANCELLABLE: another worker's cancel of it won
  read: [200],
  probe: [200, 201],
};

/**
 * Every answer is the one expected or a proper 503: never a 500, never a dropped connection or a hang
 * (status 0 after the client's timeout), and no answer slower than `maxMs`.
 */
export function assertAnswers(answers: Answer[], maxMs: number): void {
  const bad = answers.filter((a) => !EXPECTED[a.what].includes(a.result.status) && !isRefusal(a.result));
  assert.deepEqual(
    bad.slice(0, 10).map((a) => `${a.what} ${a.result.status} ${a.result.error ?? JSON.stringify(a.result.body)}`),
    [],
    `${bad.length} answers neither expected nor 503`,
  );
  for (const a of answers) if (a.result.status === 503) assertUnavailable(a.result, a.what);
  const slowest = Math.max(0, ...answers.map((a) => a.result.ms));
  assert.ok(slowest < maxMs, `every answer within ${maxMs} ms (slowest ${slowest.toFixed(0)} ms): bounded, no hang`);
}

/**
 * Recovery: from the end of the fault to the end of the last 503 answered after it (0 if none was), with
 * every later answer a success. Asserted below 5 s, and that the load really went on after it.
 */
export function recoveryMs(answers: Answer[], faultEndedAt: number): number {
  const after = answers.filter((a) => a.startedAt >= faultEndedAt);
  const lastRefusal = Math.max(faultEndedAt, ...after.filter((a) => isRefusal(a.result)).map((a) => a.endedAt));
  const ms = lastRefusal - faultEndedAt;
  const later = after.filter((a) => a.startedAt > lastRefusal);
  const shape = (xs: Answer[]) =>
    xs
      .map(
        (a) =>
          `${a.what}:${a.result.status}${a.result.status >= 300 ? `(${a.result.body?.type})` : ''}@${Math.round(a.startedAt - faultEndedAt)}+${Math.round(a.result.ms)}`,
      )
      .join(' ');
  assert.ok(later.length >= 5, `the load went on after the recovery (${later.length} answers; after the fault: ${shape(after.slice(-30))})`);
  assert.equal(later.filter((a) => isRefusal(a.result)).length, 0, 'no refusal after the recovery');
  assert.ok(ms < RECOVERY_LIMIT_MS, `recovered ${ms.toFixed(0)} ms after the fault ended (limit ${RECOVERY_LIMIT_MS} ms)`);
  return Math.round(ms);
}

/** Polls `probe` until it answers 2xx; returns the ms it took (asserted below 5 s). */
export async function timeToSuccess(probe: () => Promise<HttpResult>, from = performance.now()): Promise<number> {
  for (;;) {
    const r = await probe();
    if (r.status >= 200 && r.status < 300) return Math.round(performance.now() - from);
    if (r.status !== 503 && r.status !== 0) assert.fail(`probe answered ${r.status} ${JSON.stringify(r.body)}`);
    if (performance.now() - from > RECOVERY_LIMIT_MS) assert.fail(`still ${r.status} ${RECOVERY_LIMIT_MS} ms after the fault ended`);
    await sleep(25);
  }
}

export interface StoreFigures {
  storedTransfers: number;
  acknowledgedTransfers: number;
  cancelled: number;
  ledgerEntries: number;
  webhookEvents: number;
  webhookDuplicates: number;
}

/**
 * After the load: every acknowledged transfer and cancel is stored exactly once with its money (the kill
 * family's checks), no transfer exists that was never acknowledged (each write was retried with its key
 * until answered), every read-back equals its answer, and every transfer.created / transfer.cancelled
 * event was delivered to the receiver and recorded as delivered exactly once.
 */
export async function assertStore(rig: Rig, load: Load, webhookWaitMs = 15_000): Promise<StoreFigures> {
  const unanswered = await checkStore(rig.access, rig.merchant.merchantId, rig.merchant.openingMinor, load.acknowledged);
  assert.equal(unanswered, 0, 'every stored transfer was acknowledged: none half-done, none created twice');
  for (const [id, { body }] of load.acknowledged.transfers) {
    const res = await rig.client.request('GET', `/transfer/${id}`);
    assert.equal(res.status, 200);
    if (body === undefined) assert.equal(res.body.state, 'cancelled');
    else assert.deepEqual(res.body, body, 'the read-back equals the acknowledged answer');
  }
  const { db } = rig.access.database;
  const events = await db
    .selectFrom('events')
    .select(['id', 'type'])
    .where('merchant_id', '=', rig.merchant.merchantId)
    .where('type', 'in', ['transfer.created', 'transfer.cancelled'])
    .execute();
  assert.equal(events.filter((e) => e.type === 'transfer.created').length, load.acknowledged.transfers.size, 'one transfer.created per transfer');
  assert.equal(events.filter((e) => e.type === 'transfer.cancelled').length, load.acknowledged.cancelled.size, 'one transfer.cancelled per cancel');
  // Webhooks: at least once to the receiver; recorded as delivered exactly once.
  const ids = new Set(events.map((e) => e.id));
  const deadline = performance.now() + webhookWaitMs;
  const seen = () => new Set(rig.receiver.received.map((r) => String(r.headers['webhook-id'])));
  while ([...ids].some((id) => !seen().has(id))) {
    if (performance.now() > deadline) {
      const missing = [...ids].filter((id) => !seen().has(id));
      assert.fail(`${missing.length} of ${ids.size} events not delivered within ${webhookWaitMs} ms`);
    }
    await sleep(100);
  }
  await sleep(300); // the last deliveries' outcomes are recorded
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['message_id', 'status'])
    .where('endpoint_id', '=', rig.endpointId)
    .where('event_position', 'is not', null)
    .execute();
  assert.equal(deliveries.length, ids.size, 'one delivery per event');
  const notDone = deliveries.filter((d) => d.status !== 'succeeded');
  if (notDone.length > 0) {
    await sleep(3000);
    const again = await db
      .selectFrom('webhook_deliveries')
      .select('status')
      .where('endpoint_id', '=', rig.endpointId)
      .where('status', '!=', 'succeeded')
      .execute();
    assert.equal(again.length, 0, 'every delivery recorded as succeeded');
  }
  const succeeded = await db
    .selectFrom('webhook_attempts')
    .select(['delivery_id'])
    .where('endpoint_id', '=', rig.endpointId)
    .where('status', '=', 'succeeded')
    .execute();
  assert.equal(new Set(succeeded.map((s) => s.delivery_id)).size, succeeded.length, 'one succeeded attempt per delivery');
  const ledger = await db.selectFrom('ledger_entries').select('id').where('merchant_id', '=', rig.merchant.merchantId).execute();
  const received = rig.receiver.received.filter((r) => ids.has(String(r.headers['webhook-id']))).length;
  return {
    storedTransfers: load.acknowledged.transfers.size + unanswered,
    acknowledgedTransfers: load.acknowledged.transfers.size,
    cancelled: load.acknowledged.cancelled.size,
    ledgerEntries: ledger.length,
    webhookEvents: ids.size,
    webhookDuplicates: received - ids.size,
  };
}

/** What the server logged as the causes of its 503s, counted (the RELIABILITY.md tables show them). */
export function loggedCauses(server: ServerProcess): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of server.logs()) {
    if (l.msg !== 'request failed') continue;
    const err = l.err as { code?: string; message?: string } | undefined;
    const k = err?.code ?? err?.message?.slice(0, 40) ?? '?';
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}
