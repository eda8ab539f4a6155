import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { before, describe, test } from 'node:test';
import { inspect } from 'node:util';
import { Webhook } from 'standardwebhooks';
import {
  type CachedToken,
  type ClientOptions,
  MerchantDeliveryClient,
  MerchantDeliveryError,
  type ResponseEvent,
  signWebhook,
  type TokenCache,
  verifyWebhook,
  type WarehouseInput,
} from '../packages/sdk/src/index.ts';
import { describeEachStore, type Merchant, type TestApp, warehouseBody } from './helpers/app.ts';

import { checkFetchResponse } from './helpers/contract.ts';
import { DESTINATION, RECIPIENT, WAREHOUSE_META } from './helpers/flow.ts';

/**
 * The SDK against the real service (the app listening on a loopback port, its real stores). Requests
 * are counted on the server side, from its request logs; every response the SDK receives is also
 * held to openapi.json.
 */

const TTL = 600; // TOKEN_TTL_SECONDS of the app under test
const wh = (overrides: Record<string, unknown> = {}) => warehouseBody(overrides) as WarehouseInput;

/** Requests the server logged since `from` (an index into t.logs), as "METHOD /path" (query kept). */
function served(t: TestApp, from: number): string[] {
  return t.logs
    .slice(from)
    .map((line) => JSON.parse(line))
    .filter((l) => l.msg === 'incoming request')
    .map((l) => `${l.req.method} ${l.req.url}`);
}
const count = (list: string[], what: string) => list.filter((r) => r === what).length;

/** fetch that holds every response to the contract, and remembers the tokens the server issued. */
function contractFetch(issued: Set<string>): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const text = await res.clone().text();
    const url = new URL(String(input));
    checkFetchResponse(init?.method ?? 'GET', url.pathname, res.status, res.headers, text);
    if (url.pathname === '/auth/token' && res.ok) issued.add(JSON.parse(text).access_token);
    return res;
  };
}

describeEachStore(
  'SDK (packages/sdk) against the real service',
  (ctx) => {
    let t: TestApp;
    let base: string;
    const issued = new Set<string>();
    before(async () => {
      t = ctx();
      base = await t.listen();
    });

    const client = (m: Merchant, extra: Partial<ClientOptions> = {}) =>
      new MerchantDeliveryClient({
        baseUrl: base,
        clientId: m.clientId,
        clientSecret: m.clientSecret,
        fetch: contractFetch(issued),
        now: () => t.clock.now(),
        retryBaseDelayMs: 5,
        ...extra,
      });

    async function shop(balance = '5000') {
      const m = await t.merchant('SDK shop', balance);
      const sdk = client(m);
      const w = await sdk.warehouses.create(wh({ address: 'Null Island 1', locationMetadata: WAREHOUSE_META }));
      return { m, sdk, w };
    }

    test('50 sequential calls cause exactly one token request', async () => {
      const m = await t.merchant('Sequential');
      const sdk = client(m);
      const from = t.logs.length;
      for (let i = 0; i < 50; i++) assert.deepEqual((await sdk.warehouses.list()).data, []);
      const log = served(t, from);
      assert.equal(count(log, 'POST /auth/token'), 1);
      assert.equal(count(log, 'GET /warehouses'), 50);
    });

    test('100 parallel first calls cause exactly one token request', async () => {
      const m = await t.merchant('Parallel');
      const sdk = client(m);
      const from = t.logs.length;
      const results = await Promise.all(Array.from({ length: 100 }, () => sdk.balance.get()));
      assert.equal(results.length, 100);
      for (const r of results) assert.equal(r.currency, 'RUB');
      const log = served(t, from);
      assert.equal(count(log, 'POST /auth/token'), 1);
      assert.equal(count(log, 'GET /balance'), 100);
    });

    test('a shared token cache: another process with the same credentials reuses the token', async () => {
      const m = await t.merchant('Shared cache');
      const shared = new Map<string, CachedToken>();
      const cache: TokenCache = {
        get: async (key) => shared.get(key),
        set: async (key, token) => {
          shared.set(key, token);
        },
        delete: async (key) => {
          shared.delete(key);
        },
      };
      const from = t.logs.length;
      await client(m, { tokenCache: cache }).balance.get();
      await client(m, { tokenCache: cache }).balance.get();
      assert.equal(count(served(t, from), 'POST /auth/token'), 1);
      assert.deepEqual([...shared.keys()], [`merchant-delivery:${new URL(base).origin}:${m.clientId}`], 'keyed by origin and client id, not the secret');
    });

    test('the token is refreshed ahead of expiry (margin), not after a 401', async () => {
      const m = await t.merchant('Refresh');
      const sdk = client(m, { refreshMarginSeconds: 60 });
      const from = t.logs.length;
      await sdk.balance.get();
      t.clock.advance((TTL - 61) * 1000); // inside the lifetime, before the margin
      await sdk.balance.get();
      assert.equal(count(served(t, from), 'POST /auth/token'), 1);
      t.clock.advance(2_000); // inside the margin: still valid, but replaced first
      await sdk.balance.get();
      const log = served(t, from);
      assert.deepEqual(log, ['POST /auth/token', 'GET /balance', 'GET /balance', 'POST /auth/token', 'GET /balance']);
      assert.ok(!t.logs.slice(from).some((l) => JSON.parse(l).res?.statusCode === 401), 'no request was refused');
    });

    test('a request answered ACCESS_TOKEN_EXPIRED gets a new token and is retried once, successfully', async () => {
      const m = await t.merchant('Expired once');
      const sdk = client(m, { now: Date.now }); // the SDK's clock does not see the server's jump
      await sdk.balance.get();
      t.clock.advance((TTL + 1) * 1000);
      const from = t.logs.length;
      const balance = await sdk.balance.get();
      assert.equal(balance.balance, 0);
      assert.deepEqual(served(t, from), ['GET /balance', 'POST /auth/token', 'GET /balance']);
    });

    test('a second ACCESS_TOKEN_EXPIRED surfaces as an error, not a loop', async () => {
      const m = await t.merchant('Expired twice');
      // Every API request reaches a server whose clock has just jumped past the token's lifetime.
      const inner = contractFetch(issued);
      const sdk = client(m, {
        fetch: async (input, init) => {
          if (!String(input).endsWith('/auth/token')) t.clock.advance((TTL + 1) * 1000);
          return inner(input, init);
        },
      });
      const from = t.logs.length;
      await assert.rejects(Promise.resolve(sdk.transfers.list()), (e: unknown) => {
        assert.ok(e instanceof MerchantDeliveryError);
        assert.equal(e.type, 'ACCESS_TOKEN_EXPIRED');
        assert.equal(e.status, 401);
        assert.equal(e.retryable, false);
        assert.match(String(e.requestId), /\S/);
        return true;
      });
      assert.deepEqual(served(t, from), ['POST /auth/token', 'GET /transfer', 'POST /auth/token', 'GET /transfer']);
    });

    test('revoked credentials surface as a typed error, with no retry storm', async () => {
      const m = await t.merchant('Revoked');
      const sdk = client(m);
      await sdk.balance.get();
      await t.services.credentials.revoke(m.clientId);
      let from = t.logs.length;
      const errors = await Promise.all(
        Array.from({ length: 20 }, () =>
          sdk.balance.get().then(
            () => undefined,
            (e: unknown) => e,
          ),
        ),
      );
      for (const e of errors) {
        assert.ok(e instanceof MerchantDeliveryError);
        assert.equal(e.type, 'CREDENTIALS_REVOKED');
        assert.equal(e.status, 401);
        assert.equal(e.retryable, false);
      }
      assert.deepEqual(served(t, from), Array(20).fill('GET /balance'), 'one request per call, no token request, no retry');

      // A new process with the revoked credentials: one token request for 20 parallel calls, all refused.
      const fresh = client(m);
      from = t.logs.length;
      const refused = await Promise.all(
        Array.from({ length: 20 }, () =>
          fresh.balance.get().then(
            () => undefined,
            (e: unknown) => e,
          ),
        ),
      );
      for (const e of refused) {
        assert.ok(e instanceof MerchantDeliveryError);
        assert.equal(e.type, 'INVALID_CLIENT');
        assert.equal(e.status, 401);
        assert.equal(e.retryable, false);
      }
      assert.deepEqual(served(t, from), ['POST /auth/token']);
    });

    test('no token or secret in any thrown error: message, string, stack, inspect, JSON; nor in the client itself', async () => {
      const m = await t.merchant('Secrets');
      const sdk = client(m);
      await sdk.balance.get();
      const errors: unknown[] = [];
      const capture = (p: Promise<unknown>) =>
        p.then(
          () => assert.fail('expected an error'),
          (e) => errors.push(e),
        );
      await capture(sdk.warehouses.create({ ...warehouseBody(), name: '' } as never)); // VALIDATION_FAILED
      await capture(sdk.warehouses.get('01a20058-cb4a-7657-ba2b-fa105300957e')); // WAREHOUSE_NOT_FOUND
      await capture(new MerchantDeliveryClient({ baseUrl: base, clientId: m.clientId, clientSecret: `${m.clientSecret}x` }).balance.get()); // INVALID_CLIENT
      const closed = net.createServer();
      await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
      const port = (closed.address() as net.AddressInfo).port;
      await new Promise((ok) => closed.close(ok));
      await capture(
        new MerchantDeliveryClient({
          baseUrl: `http://127.0.0.1:${port}`,
          clientId: m.clientId,
          clientSecret: m.clientSecret,
          retryBaseDelayMs: 1,
        }).balance.get(),
      ); // NETWORK_ERROR
      await t.services.credentials.revoke(m.clientId);
      await capture(sdk.transfers.get('01a20059-0b3e-7a4c-9d2e-4a5b6c7d8e9f')); // CREDENTIALS_REVOKED
      const types = errors.map((e) => (e as MerchantDeliveryError).type);
      assert.deepEqual(
        types.filter((x) => x !== undefined).sort(),
        ['CREDENTIALS_REVOKED', 'INVALID_CLIENT', 'NETWORK_ERROR', 'VALIDATION_FAILED', 'WAREHOUSE_NOT_FOUND'].sort(),
      );
      const secrets = [m.clientSecret, ...issued];
      assert.ok(issued.size >= 2);
      const forms = (e: unknown) => [
        String(e),
        (e as Error).message,
        String((e as Error).stack),
        inspect(e, { depth: Number.POSITIVE_INFINITY, showHidden: true }),
        JSON.stringify(e),
      ];
      for (const e of errors) {
        assert.ok(e instanceof MerchantDeliveryError, String(e));
        for (const form of forms(e)) for (const s of secrets) assert.ok(!form.includes(s), `${e.type}: a secret in ${form.slice(0, 200)}`);
      }
      for (const form of [String(sdk), inspect(sdk, { depth: Number.POSITIVE_INFINITY, showHidden: true }), JSON.stringify(sdk), JSON.stringify({ sdk })])
        for (const s of secrets) assert.ok(!form.includes(s), `the client shows a secret: ${form}`);
    });

    test('debug hooks see every exchange with the token and the secret masked', async () => {
      const m = await t.merchant('Hooks');
      const seen: unknown[] = [];
      const sdk = client(m, { onRequest: (e) => seen.push(e), onResponse: (e) => seen.push(e) });
      await sdk.warehouses.list();
      const text = JSON.stringify(seen);
      for (const s of [m.clientSecret, ...issued]) assert.ok(!text.includes(s));
      assert.match(text, /"client_secret":"sk_[\w-]{3}…"/);
      assert.match(text, /"authorization":"Bearer eyJ[\w-]{3}…"/);
      assert.match(text, /"access_token":"eyJ[\w-]{3}…"/);
    });

    test('a connection cut after POST /transfer was sent: the SDK retries with the same Idempotency-Key, exactly one transfer and one charge', async () => {
      const { m, w } = await shop();
      const proxy = await cuttingProxy(new URL(base), 'POST /transfer ');
      try {
        const responses: ResponseEvent[] = [];
        const sdk = client(m, { baseUrl: proxy.url, onResponse: (e) => responses.push(e) });
        const q = await sdk.quotes.create({ destinationLocation: DESTINATION, warehouseId: w.id, parcelSize: 'SMALL', deliveryType: 'DOOR_TO_DOOR' });
        const from = t.logs.length;
        const transfer = await sdk.transfers.create({ matchmakingId: q.id, productKey: 'standard', description: 'Two books', recipientInfo: RECIPIENT });
        assert.equal(proxy.cuts(), 1, 'the first answer was cut off');
        assert.equal(count(served(t, from), 'POST /transfer'), 2, 'sent twice');
        const last = responses.at(-1)!;
        assert.equal(last.headers['idempotent-replayed'], 'true', 'the retry was answered by the replay');
        const transfers = (await sdk.transfers.list()).data.filter((x) => x.matchmakingId === q.id);
        assert.deepEqual(
          transfers.map((x) => x.id),
          [transfer.id],
        );
        const ledger = await t.services.merchants.ledger(m.merchantId);
        assert.equal(ledger.entries.filter((e: { kind: string }) => e.kind === 'CHARGE').length, 1, 'charged once');
      } finally {
        await proxy.close();
      }
    });

    test('QUOTE_ALREADY_USED is not retried; an explicit idempotencyKey replays the first answer', async () => {
      const { sdk, w } = await shop();
      const q = await sdk.quotes.create({ destinationLocation: DESTINATION, warehouseId: w.id, parcelSize: 'SMALL', deliveryType: 'DOOR_TO_DOOR' });
      const body = { matchmakingId: q.id, productKey: 'standard', description: 'Two books', recipientInfo: RECIPIENT };
      const first = await sdk.transfers.create(body, { idempotencyKey: 'order-1042' });
      const again = await sdk.transfers.create(body, { idempotencyKey: 'order-1042' });
      assert.equal(again.id, first.id);
      const from = t.logs.length;
      await assert.rejects(sdk.transfers.create(body), (e: unknown) => {
        assert.ok(e instanceof MerchantDeliveryError);
        assert.equal(e.type, 'QUOTE_ALREADY_USED');
        assert.equal(e.status, 409);
        assert.equal(e.retryable, false);
        assert.equal(e.problem?.transferId, first.id);
        assert.match(String(e.idempotencyKey), /^[0-9a-f-]{36}$/);
        return true;
      });
      assert.equal(count(served(t, from), 'POST /transfer'), 1);
    });

    test('every merchant operation through the SDK: lists page with an async iterator, events, cancel, sandbox advance', async () => {
      const { m, sdk, w } = await shop();
      for (let i = 0; i < 4; i++) await sdk.warehouses.create(wh({ name: `W${i}` }));
      const names: string[] = [];
      for await (const x of sdk.warehouses.list({ limit: 2 })) names.push(x.name);
      assert.equal(names.length, 5);
      const pages = [];
      for await (const page of sdk.warehouses.list({ limit: 2 }).pages()) pages.push(page.data.length);
      assert.deepEqual(pages, [2, 2, 1]);
      assert.equal((await sdk.warehouses.get(w.id)).id, w.id);
      assert.equal((await sdk.warehouses.replace(w.id, wh({ name: 'Renamed', address: 'Null Island 1', locationMetadata: WAREHOUSE_META }))).name, 'Renamed');

      const created = [];
      for (let i = 0; i < 3; i++) {
        const q = await sdk.quotes.create({ destinationLocation: DESTINATION, warehouseId: w.id, parcelSize: 'SMALL', deliveryType: 'DOOR_TO_DOOR' });
        created.push(await sdk.transfers.create({ matchmakingId: q.id, productKey: 'standard', description: `#${i}`, recipientInfo: RECIPIENT }));
      }
      const listed = [];
      for await (const x of sdk.transfers.list({ limit: 2 })) listed.push(x.id);
      assert.deepEqual(listed, created.map((x) => x.id).reverse());
      assert.equal((await sdk.transfers.get(created[0].id)).id, created[0].id);
      const cancelled = await sdk.transfers.cancel(created[0].id, { reason: 'CUSTOMER_REQUESTED' });
      assert.equal(cancelled.state, 'cancelled');
      const events = await sdk.transfers.events(created[0].id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['quote.created', 'transfer.created', 'transfer.cancelled'],
      );
      const entries = [];
      for await (const e of sdk.balance.entries({ limit: 2 })) entries.push(e.kind);
      assert.deepEqual(entries, ['REFUND', 'CHARGE', 'CHARGE', 'CHARGE', 'TOP_UP']);
      await assert.rejects(sdk.sandbox.advance(created[1].id, { to: 'courierAssigned' }), { type: 'ROUTE_NOT_FOUND', status: 404 });

      const play = await t.merchant('Sandbox shop', '5000', 'sandbox');
      const sandbox = client(play);
      const sw = await sandbox.warehouses.create(wh({ locationMetadata: WAREHOUSE_META }));
      const sq = await sandbox.quotes.create({ destinationLocation: DESTINATION, warehouseId: sw.id, parcelSize: 'SMALL', deliveryType: 'DOOR_TO_DOOR' });
      const st = await sandbox.transfers.create({ matchmakingId: sq.id, productKey: 'standard', description: 'play', recipientInfo: RECIPIENT });
      assert.equal((await sandbox.sandbox.advance(st.id, { to: 'courierAssigned' })).state, 'courierAssigned');
      void m;
    });

    test('429 RATE_LIMITED: retryAfterSeconds from the service; a retry waits exactly Retry-After; longer than maxRetryAfterSeconds is thrown at once', async () => {
      const m = await t.merchant('Limited');
      await t.services.merchants.setRateLimit(m.merchantId, 2);
      const sdk = client(m, { overloadRetries: 1, maxRetryAfterSeconds: 30 });
      await sdk.balance.get();
      await sdk.balance.get();
      const started = Date.now();
      // The service's window ends in 60 s (the test clock does not move): more than the 30 s allowed, so no wait.
      await assert.rejects(sdk.balance.get(), { type: 'RATE_LIMITED', status: 429, retryable: true, retryAfterSeconds: 60 });
      assert.ok(Date.now() - started < 1000, 'thrown without waiting');

      // A 429 asking for 1 s: the retry comes after 1 s, not after the 5 ms backoff.
      const other = await t.merchant('Patient');
      let limitedAt = 0;
      let retriedAt = 0;
      const patient = client(other, {
        overloadRetries: 1,
        fetch: async (input, init) => {
          if (!String(input).includes('/balance')) return fetch(input, init);
          if (limitedAt === 0) {
            limitedAt = performance.now();
            const body = { type: 'RATE_LIMITED', title: 'Too many requests', status: 429, detail: 'slow down', requestId: 'r' };
            return new Response(JSON.stringify(body), { status: 429, headers: { 'content-type': 'application/problem+json', 'retry-after': '1' } });
          }
          retriedAt = performance.now();
          return fetch(input, init);
        },
      });
      assert.equal((await patient.balance.get()).currency, 'RUB');
      // libuv's timers run on a whole-millisecond clock, so a 1000 ms timer can fire up to 1 ms short of
      // 1000 ms as measured here (a clean-clone CI run saw 999): allow that, never the 5 ms backoff.
      assert.ok(retriedAt - limitedAt >= 998, `waited ${(retriedAt - limitedAt).toFixed(1)} ms`);
    });

    test('timeouts and AbortSignal end a call; 429/503 are retried only when asked to', async () => {
      const m = await t.merchant('Timeouts');
      const silent = net.createServer(() => {}); // accepts, never answers
      await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
      const url = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
      try {
        const slow = new MerchantDeliveryClient({
          baseUrl: url,
          clientId: m.clientId,
          clientSecret: m.clientSecret,
          timeoutMs: 100,
          maxNetworkRetries: 1,
          retryBaseDelayMs: 1,
        });
        const started = Date.now();
        await assert.rejects(slow.balance.get(), { type: 'TIMEOUT', retryable: true });
        assert.ok(Date.now() - started >= 200, 'two attempts of 100 ms');
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 50);
        await assert.rejects(slow.balance.get({}, { signal: controller.signal }), { type: 'ABORTED', retryable: false });
        const aborted = slow.warehouses.get('01a20058-cb4a-7657-ba2b-fa105300957e', { signal: AbortSignal.abort() });
        await assert.rejects(aborted, { type: 'ABORTED', retryable: false });
      } finally {
        silent.close();
      }

      // 503 then success: a real answer from the service after one overloaded one.
      let overloaded = 0;
      const flaky = (retries: number) =>
        client(m, {
          overloadRetries: retries,
          fetch: async (input, init) => {
            if (String(input).includes('/balance') && overloaded++ === 0) {
              return new Response(JSON.stringify({ type: 'SERVICE_UNAVAILABLE', title: 'Service unavailable', status: 503, detail: 'busy', requestId: 'r' }), {
                status: 503,
                headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
              });
            }
            return fetch(input, init);
          },
        });
      await assert.rejects(flaky(0).balance.get(), { type: 'SERVICE_UNAVAILABLE', status: 503, retryable: true });
      overloaded = 0;
      assert.equal((await flaky(2).balance.get()).currency, 'RUB');
      assert.equal(overloaded, 2);
    });
  },
  { AUTH_CACHE_TTL_MS: '0', TOKEN_TTL_SECONDS: String(TTL) },
);

describe('verifyWebhook is compatible with the official standardwebhooks library', () => {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const event = {
    type: 'transfer.delivered',
    timestamp: '2026-11-21T10:30:00.000Z',
    data: {
      id: '01a2005b-2d5a-7c6e-9f4a-7d8e9fa0b1c2',
      type: 'transfer.delivered',
      transferId: '01a20059-0b3e-7a4c-9d2e-4a5b6c7d8e9f',
      sequence: 5,
      position: 60,
      state: 'delivered',
      occurredAt: '2026-11-21T10:30:00.000Z',
      actor: { type: 'courier' },
      data: { previousState: 'pickedUp' },
    },
  };
  const body = JSON.stringify(event);
  const id = event.data.id;

  test('standardwebhooks signs, the SDK verifies (string and bytes, Headers and plain objects)', async () => {
    const now = new Date();
    const signature = new Webhook(secret).sign(id, now, body);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': signature };
    assert.deepEqual(await verifyWebhook(headers, body, secret), event);
    assert.deepEqual(await verifyWebhook(new Headers(headers), Buffer.from(body), secret), event);
    // several signatures (a secret being rotated): one match is enough
    const other = new Webhook(`whsec_${randomBytes(24).toString('base64')}`).sign(id, now, body);
    assert.deepEqual(await verifyWebhook({ ...headers, 'webhook-signature': `${other} ${signature}` }, body, secret), event);
  });

  test('the SDK signs, standardwebhooks verifies', async () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': await signWebhook(secret, id, timestamp, body) };
    assert.deepEqual(new Webhook(secret).verify(body, headers), event);
  });

  test('refuses a changed body, another secret, an old or future timestamp, missing headers', async () => {
    const now = new Date();
    const ts = String(Math.floor(now.getTime() / 1000));
    const headers = { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': new Webhook(secret).sign(id, now, body) };
    const refused = async (h: Record<string, string>, b: string, s = secret) =>
      assert.rejects(
        verifyWebhook(h, b, s),
        (e: unknown) => e instanceof MerchantDeliveryError && e.type === 'WEBHOOK_VERIFICATION_FAILED' && !String(e).includes(s),
      );
    await refused(headers, body.replace('delivered', 'returned'));
    await refused(headers, body, `whsec_${randomBytes(24).toString('base64')}`);
    await refused({ ...headers, 'webhook-id': 'another' }, body);
    const old = new Date(now.getTime() - 6 * 60_000);
    await refused(
      { ...headers, 'webhook-timestamp': String(Math.floor(old.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, old, body) },
      body,
    );
    const future = new Date(now.getTime() + 6 * 60_000);
    await refused(
      { ...headers, 'webhook-timestamp': String(Math.floor(future.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, future, body) },
      body,
    );
    await refused({ 'webhook-id': id, 'webhook-timestamp': ts }, body);
    await refused({ ...headers, 'webhook-signature': 'v2,abc' }, body);
  });
});

/** A TCP proxy that forwards everything but, once, drops the connection as the answer to `requestLine` starts to come back. */
async function cuttingProxy(target: URL, requestLine: string) {
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let cutNext = false;
    client.on('data', (chunk) => {
      if (cuts === 0 && chunk.toString('latin1').startsWith(requestLine)) cutNext = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (cutNext) {
        cutNext = false;
        cuts++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cuts: () => cuts,
    close: () =>
      new Promise<void>((ok) => {
        for (const s of sockets) s.destroy();
        server.close(() => ok());
      }),
  };
}
