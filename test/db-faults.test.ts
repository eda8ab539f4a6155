import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { isDatabaseUnavailable } from '../src/db/transaction.ts';
import { registerErrorHandling } from '../src/http/error-handler.ts';
import {
  ApiClient,
  createMerchant,
  fetchToken,
  type HttpResult,
  http,
  type MerchantFixture,
  merchantTotals,
  openStore,
  type ServerProcess,
  type StoreAccess,
  startServerProcess,
  tally,
} from './helpers/server-process.ts';
import { adminQuery, createStore, POSTGRES_URL, postgresOnly, type TestStore } from './helpers/stores.ts';

/**
 * The database failing under a running server: its connections killed (pg_terminate_backend), and the
 * database unreachable (a TCP proxy between the service and PostgreSQL is closed, then restored).
 * Requests must answer 503 problem+json meanwhile (never 500, never hang), the process must survive
 * and recover by itself, and no transfer answered 201 may be lost.
 */

const SKIP_PG = postgresOnly('database fault tests');
// The faults are under test here, not the per-merchant limit: a load loop on a fast store would pass it.
const UNLIMITED = { MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000' };

interface Outcome {
  what: 'options' | 'transfer';
  startedAt: number;
  result: HttpResult;
}

/**
 * Workers that each loop POST /options then POST /transfer (every other one with an Idempotency-Key)
 * until stop(); every answer is recorded with its start time.
 */
function load(client: ApiClient, warehouseId: string, workers: number, timeoutMs = 20_000) {
  const outcomes: Outcome[] = [];
  const transfers: Array<{ id: string; totalPrice: number }> = [];
  let stopped = false;
  let n = 0;
  const call = async (what: Outcome['what'], run: () => Promise<HttpResult>) => {
    const startedAt = performance.now();
    const result = await run();
    outcomes.push({ what, startedAt, result });
    return result;
  };
  const worker = async () => {
    while (!stopped) {
      const i = n++;
      const quote = await call('options', () => client.options(warehouseId, i, { timeoutMs }));
      if (quote.status !== 201) {
        await sleep(20);
        continue;
      }
      const headers: Record<string, string> = i % 2 ? { 'idempotency-key': randomUUID() } : {};
      const transfer = await call('transfer', () => client.transfer(quote.body.id, 'standard', { headers, timeoutMs }));
      if (transfer.status === 201) transfers.push({ id: transfer.body.id, totalPrice: transfer.body.totalPrice });
    }
  };
  const running = Array.from({ length: workers }, worker);
  return {
    outcomes,
    transfers,
    async stop() {
      stopped = true;
      await Promise.all(running);
    },
  };
}

function assertOnly201or503(outcomes: Outcome[]): void {
  const bad = outcomes.filter((o) => o.result.status !== 201 && o.result.status !== 503);
  assert.deepEqual(
    bad.map((o) => `${o.what} ${o.result.status} ${o.result.error ?? JSON.stringify(o.result.body)}`),
    [],
    'every answer is 201 or 503: never a 500, a hang or a dropped connection',
  );
  for (const o of outcomes.filter((x) => x.result.status === 503)) assertUnavailable(o.result);
}

/** What the server logged as the cause of its 503s: error code or message, counted. */
function failureCauses(server: ServerProcess): Record<string, number> {
  const causes = server
    .logs()
    .filter((l) => l.msg === 'request failed')
    .map((l) => {
      const err = l.err as { code?: string; message?: string } | undefined;
      return err?.code ?? err?.message?.slice(0, 60) ?? '?';
    });
  return tally(causes);
}

function assertUnavailable(r: HttpResult): void {
  assert.equal(r.status, 503);
  assert.match(r.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(r.headers.get('retry-after'), '1');
  assert.equal(r.body.type, 'SERVICE_UNAVAILABLE');
  assert.equal(r.body.status, 503);
  assert.equal(typeof r.body.requestId, 'string');
}

/** Every transfer answered 201 is in the database exactly once; money and quotes add up. */
async function assertNothingLost(access: StoreAccess, m: MerchantFixture, acknowledged: Array<{ id: string; totalPrice: number }>) {
  const totals = await merchantTotals(access, m.merchantId);
  const stored = new Map(totals.transfers.map((t) => [t.id, t]));
  for (const t of acknowledged) {
    assert.ok(stored.has(t.id), `acknowledged transfer ${t.id} is stored`);
    assert.equal(stored.get(t.id)!.total_amount, Math.round(t.totalPrice * 100));
  }
  assert.equal(new Set(acknowledged.map((t) => t.id)).size, acknowledged.length, 'no transfer acknowledged twice');
  assert.equal(totals.ledgerSum, totals.balance, 'balance equals the sum of the ledger');
  assert.equal(totals.balance, m.openingMinor - totals.transferredSum, 'balance = opening balance - every stored transfer');
  assert.equal(totals.chargedSum, totals.transferredSum, 'one charge per transfer');
  assert.equal(totals.consumedQuotes, totals.transfers.length, 'quotes consumed == transfers');
  return totals;
}

/**
 * A TCP proxy to PostgreSQL that can take the database away in two ways and bring it back on the same port:
 * down() cuts every connection and refuses new ones (the server stopped); blackhole() answers nothing any
 * more, on open connections and new ones, as when a network partition or a firewall drops them silently.
 */
class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  readonly #silencers = new Set<() => void>();
  #server: Server | undefined;
  #blackhole = false;
  port = 0;
  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }
  async up(): Promise<void> {
    this.#blackhole = false;
    if (this.#server) return;
    const server = createServer((client) => this.#accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }
  #accept(client: Socket): void {
    const track = (s: Socket) => {
      this.#sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => this.#sockets.delete(s));
    };
    track(client);
    if (this.#blackhole) return; // accepted, never answered
    const upstream = netConnect(this.#target.port, this.#target.host);
    track(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // Forwarded by hand so that a connection can be silenced for good: its bytes are dropped from then on.
    let silent = false;
    this.#silencers.add(() => {
      silent = true;
    });
    client.on('data', (d) => silent || upstream.write(d));
    upstream.on('data', (d) => silent || client.write(d));
  }
  /** The database "goes away": open connections are reset, new ones refused. */
  async down(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    const closed = new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    for (const s of this.#sockets) s.resetAndDestroy();
    await closed;
  }
  /** Nothing answers any more; open connections stay silent even after up(). */
  blackhole(): void {
    this.#blackhole = true;
    for (const silence of this.#silencers) silence();
    this.#silencers.clear();
  }
}

describe('what counts as "database unavailable" (503, not 500)', () => {
  const app = Fastify({ logger: false });
  registerErrorHandling(app);
  const withCode = (code: string, message = `simulated ${code}`) => Object.assign(new Error(message), { code });
  const unavailable: Array<[string, Error]> = [
    ['pg_terminate_backend', withCode('57P01', 'terminating connection due to administrator command')],
    ['server restarting', withCode('57P03', 'the database system is starting up')],
    ['connection failure', withCode('08006')],
    ['too many connections', withCode('53300')],
    ['disk full', withCode('53100')],
    ['statement_timeout', withCode('57014', 'canceling statement due to statement timeout')],
    ['lock_timeout', withCode('55P03')],
    ['standby after a failover', withCode('25006', 'cannot execute UPDATE in a read-only transaction')],
    ['serialization failure after every retry', withCode('40001')],
    ['refused', withCode('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:5432')],
    ['reset', withCode('ECONNRESET')],
    ['DNS', withCode('EAI_AGAIN')],
    ['socket closed', new Error('Connection terminated unexpectedly')],
    ['connect timeout', new Error('Connection terminated due to connection timeout')],
    ['pool exhausted', new Error('timeout exceeded when trying to connect')],
    ['dead pooled client', new Error('Client has encountered a connection error and is not queryable')],
    ['query_timeout', new Error('Query read timeout')],
    ['SQLite disk full', Object.assign(new Error('database or disk is full'), { code: 'ERR_SQLITE_ERROR', errcode: 13 })],
    ['SQLite I/O error', Object.assign(new Error('disk I/O error'), { code: 'ERR_SQLITE_ERROR', errcode: 778 })],
  ];
  const notUnavailable: Array<[string, Error]> = [
    ['unique violation', withCode('23505')],
    ['missing table (not migrated)', withCode('42P01', 'relation "quotes" does not exist')],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
  ];
  let i = 0;
  const routes = new Map<Error, string>();
  for (const [, err] of [...unavailable, ...notUnavailable]) {
    const url = `/fail/${i++}`;
    routes.set(err, url);
    app.get(url, async () => {
      throw err;
    });
  }
  after(() => app.close());

  test('connection loss, restarts, timeouts and exhausted resources are 503 SERVICE_UNAVAILABLE with Retry-After, nothing internal in the body', async () => {
    for (const [name, err] of unavailable) {
      assert.equal(isDatabaseUnavailable(err), true, name);
      const res = await app.inject({ method: 'GET', url: routes.get(err)! });
      assert.equal(res.statusCode, 503, name);
      assert.equal(res.headers['retry-after'], '1');
      assert.equal(res.json().type, 'SERVICE_UNAVAILABLE');
      assert.doesNotMatch(res.body, /10\.0\.0\.5|ECONN|terminat|timeout|read-only|disk/i, name);
    }
  });

  test('other database errors and bugs stay 500 INTERNAL_ERROR', async () => {
    for (const [name, err] of notUnavailable) {
      assert.equal(isDatabaseUnavailable(err), false, name);
      const res = await app.inject({ method: 'GET', url: routes.get(err)! });
      assert.equal(res.statusCode, 500, name);
      assert.equal(res.json().type, 'INTERNAL_ERROR');
    }
  });
});

describe('database faults under load (PostgreSQL)', { skip: SKIP_PG }, () => {
  let store: TestStore;
  let access: StoreAccess;
  before(async () => {
    store = await createStore('postgres');
    access = await openStore(store.env);
  });
  after(async () => {
    await access?.close();
    await store?.cleanup();
  });

  async function setUp(server: ServerProcess, name: string) {
    const m = await createMerchant(access, name, '1000000');
    const client = new ApiClient(server.url, await fetchToken(server.url, m.clientId, m.clientSecret));
    return { m, client, warehouseId: await client.createWarehouse() };
  }

  /** A TcpProxy to the test PostgreSQL server, up, and the DATABASE_URL that goes through it. */
  async function proxiedPostgres(): Promise<{ proxy: TcpProxy; viaProxy: string }> {
    const url = new URL(POSTGRES_URL!);
    const proxy = new TcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.up();
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    return { proxy, viaProxy: url.toString() };
  }

  test('connections killed with pg_terminate_backend during load: 503s, no crash, recovery, no acknowledged transfer lost', async (t) => {
    // Our own application_name (pg reads PGAPPNAME), so we kill this server's connections and nobody else's.
    const appName = `mds_faults_${randomBytes(4).toString('hex')}`;
    const server = await startServerProcess({ env: { ...store.env, ...UNLIMITED, PGAPPNAME: appName, DATABASE_POOL_SIZE: '5' } });
    try {
      const { m, client, warehouseId } = await setUp(server, 'Terminated connections');
      const traffic = load(client, warehouseId, 12);
      await sleep(500);
      let killed = 0;
      const killUntil = performance.now() + 2500;
      let lastKill = 0;
      while (performance.now() < killUntil) {
        const r = await adminQuery('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [appName]);
        killed += r.rowCount ?? 0;
        lastKill = performance.now();
        await sleep(50 + Math.random() * 100);
      }
      await sleep(1500); // recovery phase: no more faults
      await traffic.stop();

      const { outcomes } = traffic;
      const afterFaults = outcomes.filter((o) => o.startedAt > lastKill);
      const firstOk = afterFaults.filter((o) => o.result.status === 201).sort((x, y) => x.startedAt - y.startedAt)[0];
      const unavailable = outcomes.filter((o) => o.result.status === 503);
      t.diagnostic(
        `${killed} backends terminated; ${outcomes.length} requests: ${JSON.stringify(tally(outcomes.map((o) => o.result.status)))}; ` +
          `slowest ${Math.max(...outcomes.map((o) => o.result.ms)).toFixed(0)} ms; ` +
          `first success ${firstOk ? (firstOk.startedAt + firstOk.result.ms - lastKill).toFixed(0) : '-'} ms after the last kill; ${traffic.transfers.length} transfers acknowledged; ` +
          `causes logged ${JSON.stringify(failureCauses(server))}`,
      );
      assert.ok(server.alive(), `the process survived\n${server.stderr.slice(-30).join('\n')}`);
      assert.ok(killed > 0 && unavailable.length > 0, 'the faults really hit requests');
      assertOnly201or503(outcomes);
      assert.ok(Math.max(...outcomes.map((o) => o.result.ms)) < 10_000, 'no request hung');
      const settled = afterFaults.filter((o) => o.startedAt > lastKill + 300);
      assert.ok(settled.length > 20, 'load continued after the faults');
      assert.deepEqual(tally(settled.map((o) => o.result.status)), { 201: settled.length }, 'recovered by itself');
      assert.equal((await http(server.url, 'GET', '/readyz')).status, 200);
      await assertNothingLost(access, m, traffic.transfers);
    } finally {
      await server.stop();
    }
  });

  test('PostgreSQL unreachable, then back: 503 meanwhile, /readyz 503 then 200, /healthz 200 throughout, recovery without restart', async (t) => {
    const { proxy, viaProxy } = await proxiedPostgres();
    const server = await startServerProcess({ env: { ...store.env, ...UNLIMITED, DATABASE_URL: viaProxy } });
    try {
      const { m, client, warehouseId } = await setUp(server, 'Database down');
      const traffic = load(client, warehouseId, 6);
      await sleep(700);

      await proxy.down();
      const downAt = performance.now();
      await sleep(300);
      const probes: Array<{ healthz: HttpResult; readyz: HttpResult; api: HttpResult }> = [];
      while (performance.now() - downAt < 2000) {
        const [healthz, readyz, api] = await Promise.all([
          http(server.url, 'GET', '/healthz'),
          http(server.url, 'GET', '/readyz'),
          client.request('GET', '/warehouses', { timeoutMs: 10_000 }),
        ]);
        probes.push({ healthz, readyz, api });
        await sleep(200);
      }
      const during = traffic.outcomes.filter((o) => o.startedAt > downAt + 300 && o.startedAt < downAt + 2000);

      await proxy.up();
      const upAt = performance.now();
      let readyAfterMs = -1;
      while (performance.now() - upAt < 10_000) {
        if ((await http(server.url, 'GET', '/readyz')).status === 200) {
          readyAfterMs = performance.now() - upAt;
          break;
        }
        await sleep(20);
      }
      await sleep(1500);
      await traffic.stop();

      const { outcomes } = traffic;
      const settled = outcomes.filter((o) => o.startedAt > upAt + readyAfterMs + 100);
      t.diagnostic(
        `down 2.0 s: ${during.length} requests meanwhile ${JSON.stringify(tally(during.map((o) => o.result.status)))} ` +
          `(slowest ${Math.max(...during.map((o) => o.result.ms)).toFixed(0)} ms); /readyz 200 again ${readyAfterMs.toFixed(0)} ms after the database came back; ` +
          `all requests ${JSON.stringify(tally(outcomes.map((o) => o.result.status)))}; ${traffic.transfers.length} transfers acknowledged; ` +
          `causes logged ${JSON.stringify(failureCauses(server))}`,
      );
      assert.ok(server.alive(), `the process survived\n${server.stderr.slice(-30).join('\n')}`);
      assert.ok(probes.length >= 3);
      for (const p of probes) {
        assert.equal(p.healthz.status, 200, 'liveness does not depend on the database');
        assertUnavailable(p.readyz);
        assertUnavailable(p.api);
        assert.ok(p.readyz.ms < 2000 && p.api.ms < 2000, 'answered at once, not after a timeout');
      }
      assert.ok(during.length > 0, 'requests arrived while the database was down');
      assert.deepEqual(tally(during.map((o) => o.result.status)), { 503: during.length });
      assertOnly201or503(outcomes);
      assert.ok(readyAfterMs >= 0, '/readyz answered 200 again');
      assert.ok(readyAfterMs < 1000, `ready again within a second of the database (${readyAfterMs.toFixed(0)} ms)`);
      assert.ok(settled.length > 10, 'load continued after recovery');
      assert.deepEqual(tally(settled.map((o) => o.result.status)), { 201: settled.length }, 'recovered without a restart');
      await assertNothingLost(access, m, traffic.transfers);
    } finally {
      await server.stop();
      await proxy.down();
    }
  });

  test('PostgreSQL silent (a partition drops the connections): 503 within the connect and query timeouts, never a hang; recovery', async (t) => {
    const { proxy, viaProxy } = await proxiedPostgres();
    const server = await startServerProcess({ env: { ...store.env, ...UNLIMITED, DATABASE_URL: viaProxy, DATABASE_POOL_SIZE: '4' } });
    try {
      const { m, client, warehouseId } = await setUp(server, 'Silent database');
      const traffic = load(client, warehouseId, 4, 60_000);
      await sleep(700);

      proxy.blackhole();
      const holeAt = performance.now();
      const [healthz, readyz] = await Promise.all([http(server.url, 'GET', '/healthz'), http(server.url, 'GET', '/readyz', { timeoutMs: 30_000 })]);
      // In-flight queries give up after the 15 s query timeout, new connections after the 5 s connect timeout.
      await sleep(Math.max(0, 16_500 - (performance.now() - holeAt)));

      await proxy.up();
      const upAt = performance.now();
      await sleep(7000);
      await traffic.stop();

      const { outcomes } = traffic;
      const during = outcomes.filter((o) => o.startedAt > holeAt && o.startedAt < upAt);
      const slowest = Math.max(...outcomes.map((o) => o.result.ms));
      const firstOk = outcomes.filter((o) => o.startedAt > upAt && o.result.status === 201).sort((x, y) => x.startedAt - y.startedAt)[0];
      const settled = outcomes.filter((o) => o.startedAt > upAt + 5500);
      t.diagnostic(
        `silent 16.5 s: ${during.length} requests meanwhile ${JSON.stringify(tally(during.map((o) => o.result.status)))}, slowest ${slowest.toFixed(0)} ms; ` +
          `/readyz meanwhile ${readyz.status} after ${readyz.ms.toFixed(0)} ms; first success ${firstOk ? (firstOk.startedAt + firstOk.result.ms - upAt).toFixed(0) : '-'} ms after the network came back; ` +
          `all requests ${JSON.stringify(tally(outcomes.map((o) => o.result.status)))}; causes logged ${JSON.stringify(failureCauses(server))}`,
      );
      assert.ok(server.alive(), `the process survived\n${server.stderr.slice(-30).join('\n')}`);
      assert.equal(healthz.status, 200);
      assert.ok(healthz.ms < 1000);
      assertUnavailable(readyz);
      assertOnly201or503(outcomes);
      // Caught by the partition: in flight at any moment of it, not only sent during it (with 4 clients, all
      // four may be stuck from its first second, and the few sent later may wait into the recovery and succeed).
      const caught = outcomes.filter((o) => o.startedAt < upAt && o.startedAt + o.result.ms > holeAt);
      assert.ok(
        caught.some((o) => o.result.status === 503),
        'requests failed meanwhile',
      );
      // Worst case: a transaction's statement times out (15 s), then releasing its Idempotency-Key waits for a
      // connection (5 s) or times out too (15 s). Bounded, if long; load balancers usually allow 60 s.
      assert.ok(slowest < 35_000, `bounded by the pool wait, connect and query timeouts (${slowest.toFixed(0)} ms)`);
      assert.ok(settled.length > 10, 'load continued after recovery');
      // Connections that never answered were discarded, not handed out again to fail after another 15 s.
      assert.deepEqual(tally(settled.map((o) => o.result.status)), { 201: settled.length }, 'recovered without a restart');
      await assertNothingLost(access, m, traffic.transfers);
    } finally {
      await server.stop();
      await proxy.down();
    }
  });
});
