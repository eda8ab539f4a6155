import { moscowQuoteBody, transferBody, warehouseBody } from '../../scripts/lib/fixtures.ts';
import { runMds, type ServerChild, startServer } from '../../scripts/lib/server-process.ts';
import { loadConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { parseMajorAmount } from '../../src/lib/money.ts';
import { createServices, type Services } from '../../src/services.ts';
import { TEST_SIGNING_KEYS } from './app.ts';
import { checkFetchResponse } from './contract.ts';
import { migrateForTest } from './stores.ts';

/**
 * The real service as a child process (`node bin/mds.js serve`), for tests that need what app.inject
 * cannot give: several instances on one database, kill -9, a database that goes away under a running
 * server. Plus a small fetch client and in-process fixtures (merchants, top-ups) on the same store.
 */

export { freePort, MDS_BIN as BIN } from '../../scripts/lib/server-process.ts';

export interface ServerProcess extends Omit<ServerChild, 'ready'> {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Every stdout / stderr line so far. */
  stdout: string[];
  stderr: string[];
  /** stdout lines that parse as JSON (pino log records). */
  logs(): Array<Record<string, unknown>>;
}

export interface StartOptions {
  /** The store's env (DATABASE_URL, DATABASE_SCHEMA) and anything else; wins over the defaults. */
  env: Record<string, string>;
  /** How long to wait for the server to listen. */
  readyTimeoutMs?: number;
}

/**
 * Starts `node bin/mds.js serve` and resolves once it listens. The URL comes from the "ready: URL"
 * log line (so PORT=0 works); with LOG_LEVEL above info, pass PORT and /healthz is polled instead.
 */
export async function startServerProcess(opts: StartOptions): Promise<ServerProcess> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const { ready, ...server } = startServer({
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: '0',
      TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS,
      ...opts.env,
    },
    readyTimeoutMs: opts.readyTimeoutMs,
    onLine: (line, stream) => (stream === 'stdout' ? stdout : stderr).push(line),
  });
  let url: string;
  try {
    url = await ready;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- stdout ---\n${stdout.slice(-40).join('\n')}\n--- stderr ---\n${stderr.slice(-40).join('\n')}`);
  }
  return {
    ...server,
    url,
    stdout,
    stderr,
    logs: () =>
      stdout.flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// A small HTTP client

export interface HttpResult {
  /** 0 when there was no HTTP answer at all (connection refused or reset, timeout). */
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when it is not JSON. */
  body: any;
  /** What went wrong when status is 0. */
  error?: string;
  ms: number;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** A request that takes longer counts as a hang (status 0). */
  timeoutMs?: number;
}

/**
 * One HTTP request. A network failure is status 0 with error, not an exception; an answer that breaks
 * the OpenAPI contract (status not listed, wrong media type or body) throws.
 */
export async function http(baseUrl: string, method: string, path: string, opts: RequestOptions = {}): Promise<HttpResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
  const started = performance.now();
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
    });
    text = await res.text();
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return {
      status: 0,
      headers: new Headers(),
      body: undefined,
      error: `${e.name}: ${e.cause?.code ?? e.cause?.message ?? e.message}`,
      ms: performance.now() - started,
    };
  }
  const ms = performance.now() - started;
  checkFetchResponse(method, path, res.status, res.headers, text);
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, body, ms };
}

/** A client_credentials token from a running server. */
export async function fetchToken(baseUrl: string, clientId: string, clientSecret: string): Promise<string> {
  const res = await http(baseUrl, 'POST', '/auth/token', { body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret } });
  if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${JSON.stringify(res.body) ?? res.error}`);
  return res.body.access_token as string;
}

/** The API of one server as one merchant. */
export class ApiClient {
  readonly baseUrl: string;
  readonly token: string;
  constructor(baseUrl: string, token: string) {
    this.baseUrl = baseUrl;
    this.token = token;
  }
  request(method: string, path: string, opts: Omit<RequestOptions, 'token'> = {}): Promise<HttpResult> {
    return http(this.baseUrl, method, path, { ...opts, token: this.token });
  }
  /** The same merchant on another server (tokens verify on every instance). */
  on(baseUrl: string): ApiClient {
    return new ApiClient(baseUrl, this.token);
  }
  async createWarehouse(overrides: Record<string, unknown> = {}): Promise<string> {
    const res = await this.request('POST', '/warehouses', { body: warehouseBody(overrides) });
    if (res.status !== 201) throw new Error(`POST /warehouses: ${res.status} ${JSON.stringify(res.body) ?? res.error}`);
    return res.body.id as string;
  }
  /** POST /options from the warehouse; i moves the destination so prices differ. */
  options(warehouseId: string, i = 0, opts: Omit<RequestOptions, 'token' | 'body'> = {}): Promise<HttpResult> {
    return this.request('POST', '/options', { ...opts, body: moscowQuoteBody(warehouseId, i) });
  }
  transfer(quoteId: string, productKey = 'standard', opts: Omit<RequestOptions, 'token' | 'body'> = {}): Promise<HttpResult> {
    return this.request('POST', '/transfer', { ...opts, body: transferBody(quoteId, { productKey }) });
  }
}

export { moscowQuoteBody as quoteBody, transferBody } from '../../scripts/lib/fixtures.ts';

/** The payable amount of a quote's product, in minor units. */
export function payableMinor(quote: any, productKey = 'standard'): number {
  return parseMajorAmount(quote.products[productKey].common.price.payable_amount);
}

// ---------------------------------------------------------------------------------------------
// In-process access to the same store (fixtures and checks), the way the CLI does it

export interface StoreAccess {
  database: Database;
  services: Services;
  close(): Promise<void>;
}

/**
 * Opens the store in this process (migrating it) with the services the CLI uses. env: the store's env
 * plus options such as DATABASE_ISOLATION.
 */
export async function openStore(env: Record<string, string>, poolSize = 4): Promise<StoreAccess> {
  const config = loadConfig({ NODE_ENV: 'test', TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS, ...env });
  const database = openDatabase({
    url: config.databaseUrl,
    schema: config.databaseSchema,
    poolSize,
    isolation: config.databaseIsolation,
    preparedStatements: config.databasePreparedStatements,
  });
  await migrateForTest(database);
  const services = createServices({ config, database, clock: systemClock, signingKeys: config.tokenSigningKeys });
  return { database, services, close: () => database.close() };
}

/** Runs `node bin/mds.js ARGS --json` against the env's store; resolves with its parsed output. */
export async function cli(env: Record<string, string>, args: string[]): Promise<{ code: number | null; output: any; stderr: string }> {
  const { code, stdout, stderr } = await runMds(
    [...args, '--json'],
    { PATH: process.env.PATH ?? '', NODE_ENV: 'production', TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS, ...env },
    0,
  );
  let output: unknown = stdout;
  try {
    output = JSON.parse(stdout);
  } catch {}
  return { code, output, stderr };
}

/** Runs tasks with at most `limit` in flight; results in task order. */
export async function pool<T>(limit: number, tasks: Array<() => Promise<T>>): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/** Counts of each value, e.g. statuses: {201: 20, 409: 180}. */
export function tally<T extends string | number>(values: T[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[String(v)] = (out[String(v)] ?? 0) + 1;
  return out;
}

export interface MerchantFixture {
  merchantId: string;
  clientId: string;
  clientSecret: string;
  openingMinor: number;
}

/** A merchant with an opening balance (major units, e.g. '100000'), created in-process on the store. */
export async function createMerchant(access: StoreAccess, name: string, opening: string): Promise<MerchantFixture> {
  const { merchant, credential } = await access.services.merchants.create(name, parseMajorAmount(opening));
  return { merchantId: merchant.id, clientId: credential.clientId, clientSecret: credential.clientSecret, openingMinor: merchant.balanceMinor };
}

/** What the database holds for one merchant: the numbers every money test checks. */
export async function merchantTotals(access: StoreAccess, merchantId: string) {
  const { db } = access.database;
  const merchant = await db.selectFrom('merchants').select('balance').where('id', '=', merchantId).executeTakeFirstOrThrow();
  const ledger = await db.selectFrom('ledger_entries').selectAll().where('merchant_id', '=', merchantId).execute();
  const transfers = await db.selectFrom('transfers').select(['id', 'quote_id', 'total_amount']).where('merchant_id', '=', merchantId).execute();
  const consumed = await db.selectFrom('quotes').select('id').where('merchant_id', '=', merchantId).where('status', '=', 'consumed').execute();
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  return {
    balance: merchant.balance,
    ledgerSum: sum(ledger.map((e) => e.amount)),
    topUps: sum(ledger.filter((e) => e.kind === 'TOP_UP').map((e) => e.amount)),
    charges: ledger.filter((e) => e.kind === 'CHARGE'),
    chargedSum: sum(ledger.filter((e) => e.kind === 'CHARGE').map((e) => -e.amount)), // not -sum(): no charges must be 0, not -0
    refunds: ledger.filter((e) => e.kind === 'REFUND'),
    refundedSum: sum(ledger.filter((e) => e.kind === 'REFUND').map((e) => e.amount)),
    transfers,
    transferredSum: sum(transfers.map((t) => t.total_amount)),
    consumedQuotes: consumed.length,
  };
}
