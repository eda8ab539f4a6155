import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { startScheduler } from '../src/background/scheduler.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { paidTransfer, setup } from './helpers/flow.ts';
import { openStore, startServerProcess } from './helpers/server-process.ts';
import { createStore, STORES } from './helpers/stores.ts';

const TOKEN = 'metrics-token-0123456789abcdef';

/** Prometheus' own linter (Debian's `prometheus` package); CI installs it, REQUIRE_PROMTOOL=1 makes its absence a failure. */
const PROMTOOL = spawnSync('promtool', ['--version']).status === 0;
const promtoolSkip =
  !PROMTOOL && process.env.REQUIRE_PROMTOOL !== '1'
    ? 'promtool not installed (apt-get install -y prometheus) to lint /metrics; REQUIRE_PROMTOOL=1 makes this a failure'
    : false;

/** The value of one sample line of the Prometheus text format, e.g. mds_http_requests_total{method="GET",...}. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^[^{\s]+(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const have = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[2]);
  }
  return undefined;
}

for (const store of STORES) {
  describe(`GET /metrics [${store}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp(store, { METRICS_TOKEN: TOKEN }, undefined, { metrics: true });
    });
    after(async () => {
      await t?.close();
    });

    test('needs the METRICS_TOKEN; counts requests by route and status, events by type, transfers and quotes from the database, scheduler passes', async () => {
      const missing = await t.request({ method: 'GET', url: '/metrics', headers: { 'x-request-id': 'met' } });
      assert.equal(missing.statusCode, 401);
      assert.equal(missing.headers['www-authenticate'], 'Bearer realm="metrics"');
      assert.equal(missing.json().type, 'INVALID_ACCESS_TOKEN');
      const wrong = await t.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}x` } });
      assert.equal(wrong.statusCode, 401);

      const { m, w } = await setup(t, '2000');
      const tr = await paidTransfer(t, m, w.id);
      await t.as(m, { method: 'POST', url: `/transfer/${tr.id}/cancel`, payload: { reason: 'OTHER' } });
      await t.as(m, { method: 'GET', url: '/warehouses/01a20058-cb4a-7657-ba2b-000000000000' });
      const scheduler = startScheduler({ ...t.services, intervalMs: 3_600_000, log: { info() {}, error() {} } });
      await scheduler.runOnce();
      await scheduler.stop();

      const res = await t.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.statusCode, 200);
      assert.match(res.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/);
      const text = res.body;
      assert.equal(sample(text, 'mds_http_requests_total', { method: 'POST', route: '/transfer', status: '201' }), 1);
      assert.equal(sample(text, 'mds_http_requests_total', { method: 'POST', route: '/transfer/:transferId/cancel', status: '200' }), 1);
      assert.equal(sample(text, 'mds_http_requests_total', { method: 'GET', route: '/warehouses/:id', status: '404' }), 1, 'ids never become labels');
      assert.equal(sample(text, 'mds_http_requests_total', { method: 'GET', route: '/metrics', status: '401' }), 2);
      assert.equal(sample(text, 'mds_http_request_duration_seconds_count', { method: 'POST', route: '/transfer' }), 1);
      assert.equal(sample(text, 'mds_events_written_total', { type: 'quote.created' }), 1);
      assert.equal(sample(text, 'mds_events_written_total', { type: 'transfer.created' }), 1);
      assert.equal(sample(text, 'mds_events_written_total', { type: 'transfer.cancelled' }), 1);
      assert.equal(sample(text, 'mds_transfers', { state: 'cancelled' }), 1);
      assert.equal(sample(text, 'mds_quotes', { status: 'consumed' }), 1);
      assert.equal(sample(text, 'mds_scheduler_passes_total'), 1);
      assert.ok((sample(text, 'mds_process_resident_memory_bytes') ?? 0) > 0, 'process metrics');
      // The 4-digit pin as a whole label value: its digits alone can end another quoted value by chance (CI saw it once).
      assert.equal(text.includes(m.clientSecret) || text.includes(`="${tr.deliveryPin}"`), false);
      if (store === 'postgres') assert.ok((sample(text, 'mds_db_pool_connections', { state: 'total' }) ?? 0) >= 1);
    });

    test('promtool check metrics finds nothing wrong (no gauge named _total); the active handle/request/resource counts are per type', {
      skip: promtoolSkip,
    }, async () => {
      assert.ok(PROMTOOL, 'REQUIRE_PROMTOOL=1 but promtool is not on PATH: apt-get install -y prometheus');
      const res = await t.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.statusCode, 200);
      const lint = spawnSync('promtool', ['check', 'metrics'], { input: res.body, encoding: 'utf8' });
      assert.equal(`${lint.stdout}${lint.stderr}`.trim(), '', 'promtool reports nothing');
      assert.equal(lint.status, 0);
      assert.doesNotMatch(res.body, /^# TYPE mds_nodejs_active_\w+_total /m);
      assert.match(res.body, /^# TYPE mds_nodejs_active_handles gauge$/m);
      assert.match(res.body, /^# TYPE mds_nodejs_active_resources gauge$/m);
    });
  });
}

describe('METRICS_PORT: /metrics on a port of its own, for the API and the worker', () => {
  test('mds serve answers /metrics on METRICS_PORT without a token, and not on the API port without METRICS_TOKEN', async () => {
    const store = await createStore('sqlite');
    const access = await openStore(store.env);
    const { freePort } = await import('./helpers/server-process.ts');
    const port = await freePort();
    const server = await startServerProcess({ env: { ...store.env, METRICS_PORT: String(port) } });
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /^# HELP mds_http_requests_total/m);
      assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
      const onApi = await fetch(`${server.url}/metrics`);
      assert.equal(onApi.status, 404, 'no token configured: not served on the API port');
    } finally {
      await server.stop();
      await access.close();
      await store.cleanup();
    }
  });
});
