import { after, before, describe } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig, parseSigningKeys } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { parseMajorAmount } from '../../src/lib/money.ts';
import { Metrics } from '../../src/observability/metrics.ts';
import type { Services } from '../../src/services.ts';
import { checkContract, checkFetchResponse } from './contract.ts';
import { createStore, migrateForTest, PGBOUNCER_URL, STORES, type StoreName, type TestStore } from './stores.ts';

/** A fixed signing key for tests (never used outside them). */
export const TEST_SIGNING_KEYS = 'test:dGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXk';

export interface Client {
  clientId: string;
  clientSecret: string;
}

export interface Merchant extends Client {
  merchantId: string;
}

export interface Courier extends Client {
  courierId: string;
}

export interface TestApp {
  store: TestStore;
  app: FastifyInstance;
  services: Services;
  database: Database;
  clock: ManualClock;
  /** The app's metrics, when asked for. */
  metrics?: Metrics;
  /** Every log line the app wrote. */
  logs: string[];
  /** app.inject, with every response checked against the OpenAPI contract. */
  request(opts: InjectOptions): Promise<LightMyRequestResponse>;
  merchant(name?: string, balance?: string, mode?: 'live' | 'sandbox'): Promise<Merchant>;
  /** A courier account (online at the given position when one is given). */
  courier(name?: string, at?: { lat: number; lng: number }): Promise<Courier>;
  token(m: Client): Promise<string>;
  /** A request with the merchant's (or courier's) bearer token. */
  as(m: Client | string, opts: InjectOptions): Promise<LightMyRequestResponse>;
  /** Listens on a random loopback port (once) and returns the base URL, for tests that need real sockets. */
  listen(): Promise<string>;
  /** A real HTTP request (fetch) against listen()'s server; body as parsed JSON (or text). */
  http(m: Client | string | undefined, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  close(): Promise<void>;
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: any;
}

/** An app on a new store, or, given `shared`, a second instance on another app's store (it leaves the store to its owner). */
export async function createTestApp(
  storeName: StoreName = 'sqlite',
  env: Record<string, string> = {},
  shared?: TestStore,
  opts: { metrics?: boolean /** The ManualClock's start (default: now). */; now?: number } = {},
): Promise<TestApp> {
  const store = shared ?? (await createStore(storeName));
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS,
    ...store.env,
    ...env,
  });
  const database = openDatabase({ url: store.url, schema: store.schema, poolSize: 10, preparedStatements: store.preparedStatements });
  await migrateForTest(database);
  const clock = new ManualClock(opts.now ?? Date.now());
  const logs: string[] = [];
  const metrics = opts.metrics ? new Metrics(database) : undefined;
  const app = await buildApp({
    metrics,
    config,
    database,
    clock,
    signingKeys: parseSigningKeys(TEST_SIGNING_KEYS),
    logStream: { write: (line: string) => void logs.push(line) },
  });
  await app.ready();
  const tokens = new Map<string, { token: string; at: number }>();
  let baseUrl: Promise<string> | undefined;

  const t: TestApp = {
    store,
    app,
    services: app.services,
    database,
    clock,
    logs,
    async request(opts) {
      const res = await app.inject(opts);
      checkContract(app, opts, res);
      return res;
    },
    async merchant(name = 'Test merchant', balance = '0', mode = 'live') {
      const { merchant, credential } = await app.services.merchants.create(name, parseMajorAmount(balance), mode);
      return { merchantId: merchant.id, clientId: credential.clientId, clientSecret: credential.clientSecret };
    },
    async courier(name = 'Ivan Petrov', at) {
      const { courier, clientId, clientSecret } = await app.services.couriers.create(name, '+7 900 111-22-33');
      const c = { courierId: courier.id, clientId, clientSecret };
      if (at) {
        const res = await t.as(c, { method: 'PUT', url: '/courier/status', payload: { online: true, ...at } });
        if (res.statusCode !== 200) throw new Error(`courier status failed: ${res.statusCode} ${res.body}`);
      }
      return c;
    },
    async token(m) {
      const cached = tokens.get(m.clientId);
      if (cached && clock.now() - cached.at < 3_000_000) return cached.token; // refresh well before expiry, like a real client
      const res = await t.request({
        method: 'POST',
        url: '/auth/token',
        payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: m.clientSecret },
      });
      if (res.statusCode !== 200) throw new Error(`token request failed: ${res.statusCode} ${res.body}`);
      const token = res.json().access_token as string;
      tokens.set(m.clientId, { token, at: clock.now() });
      return token;
    },
    async as(m, opts) {
      const token = typeof m === 'string' ? m : await t.token(m);
      return t.request({ ...opts, headers: { ...opts.headers, authorization: `Bearer ${token}` } });
    },
    async listen() {
      baseUrl ??= app.listen({ port: 0, host: '127.0.0.1' });
      return baseUrl;
    },
    async http(m, method, path, body, headers = {}) {
      const url = await t.listen();
      const auth: Record<string, string> = m === undefined ? {} : { authorization: `Bearer ${typeof m === 'string' ? m : await t.token(m)}` };
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      const parsed = /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : text;
      checkFetchResponse(method, path, res.status, res.headers, text);
      return { status: res.status, headers: res.headers, body: parsed };
    },
    metrics,
    async close() {
      metrics?.close();
      await app.close();
      await database.close();
      if (!shared) await store.cleanup();
    },
  };
  return t;
}

/**
 * Runs a suite once per store (SQLite always, PostgreSQL when TEST_POSTGRES_URL is set), with one
 * app per store shared by the suite's tests. Tests create their own merchants, so they don't interfere.
 */
export function describeEachStore(
  name: string,
  fn: (ctx: () => TestApp, store: StoreName) => void,
  env: Record<string, string> = {},
  /** pgbouncer: also run through PgBouncer in transaction mode (when npm test started one). */
  opts: { pgbouncer?: boolean } = {},
): void {
  for (const store of [...STORES, ...(opts.pgbouncer && PGBOUNCER_URL ? (['pgbouncer'] as const) : [])]) {
    describe(`${name} [${store}]`, () => {
      let t: TestApp;
      before(async () => {
        t = await createTestApp(store, env);
      });
      after(async () => {
        await t?.close();
      });
      fn(() => t, store);
    });
  }
}

export { warehouseBody } from '../../scripts/lib/fixtures.ts';

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO_MS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Runs fn while the warehouses service's list fails with an unexpected error (GET /warehouses answers 500), then restores it. */
export async function whileWarehouseListFails<T>(t: TestApp, message: string, fn: () => Promise<T>): Promise<T> {
  const original = t.services.warehouses.list;
  t.services.warehouses.list = async () => {
    throw new Error(message);
  };
  try {
    return await fn();
  } finally {
    t.services.warehouses.list = original;
  }
}
