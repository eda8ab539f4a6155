import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, createMerchant, fetchToken, type HttpResult } from '../../helpers/server-process.ts';
import { prng } from '../common.ts';
import { assertAnswers, assertStore, Load, type LoadFigures, type Rig, type StoreFigures, startRig } from './harness.ts';

/**
 * A webhook receiver that accepts the connection and never answers, behind 50 endpoints of three other
 * merchants, each with a backlog of messages, while one healthy merchant's transfers and cancels produce
 * events for its own live receiver. The worker's per-try timeout and its global and per-endpoint
 * concurrency caps must keep the healthy endpoint's deliveries flowing (their latency is measured from
 * the event's commit to its arrival), and no message to the dead endpoints may be lost: each stays
 * pending for its retry.
 */

export interface WebhookHangFigures {
  family: 'webhook-hang';
  hangingEndpoints: number;
  hangingMessages: number;
  /** Connections the dead receiver accepted (and never answered). */
  connectionsHeld: number;
  timeoutSeconds: number;
  concurrency: number;
  endpointConcurrency: number;
  /** Healthy endpoint: event committed -> delivered, in ms. */
  healthy: { deliveries: number; p50: number; p95: number; max: number };
  /** Dead endpoints' messages after the run: attempted at least once (and failed) / still pending / lost. */
  hanging: { attempted: number; pending: number; lost: number };
  load: LoadFigures;
  store: StoreFigures;
}

const ENDPOINTS = 50;
const MESSAGES_PER_ENDPOINT = 4;
const TIMEOUT_SECONDS = 10;
const LOAD_MS = 12_000;

export async function webhookHangFamily(seed: number): Promise<WebhookHangFigures> {
  const sockets = new Set<Socket>();
  let connectionsHeld = 0;
  const dead = createServer((s) => {
    connectionsHeld++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
  const deadPort = (dead.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'mds-webhook-hang-'));
  let rig: Rig | undefined;
  try {
    rig = await startRig({ DATABASE_URL: `sqlite:${join(dir, 'mds.sqlite')}`, WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS) }, 'Healthy merchant');
    // Three other merchants (20 endpoints each at most), 50 endpoints on the dead receiver, a backlog on each.
    const hangingIds: string[] = [];
    for (let m = 0; hangingIds.length < ENDPOINTS; m++) {
      const fx = await createMerchant(rig.access, `Dead receiver ${m}`, '1000');
      const client: ApiClient = new ApiClient(rig.server.url, await fetchToken(rig.server.url, fx.clientId, fx.clientSecret));
      for (let i = 0; i < 20 && hangingIds.length < ENDPOINTS; i++) {
        const ep: HttpResult = await client.request('POST', '/webhook-endpoints', { body: { url: `http://127.0.0.1:${deadPort}/hang/${hangingIds.length}` } });
        assert.equal(ep.status, 201, JSON.stringify(ep.body));
        hangingIds.push(ep.body.id);
        for (let k = 0; k < MESSAGES_PER_ENDPOINT; k++) {
          const t: HttpResult = await client.request('POST', `/webhook-endpoints/${ep.body.id}/test`);
          assert.equal(t.status, 202);
        }
      }
    }
    const load = new Load(rig.client, rig.warehouseId, { workers: 3, rand: prng(seed) });
    await sleep(LOAD_MS);
    await load.stop();
    assertAnswers(load.answers, 5_000);
    const store = await assertStore(rig, load, 10_000);

    // Latency of the healthy endpoint's deliveries: first arrival of each event - its commit.
    const { db } = rig.access.database;
    const events = await db.selectFrom('events').select(['id', 'occurred_at']).where('merchant_id', '=', rig.merchant.merchantId).execute();
    const occurred = new Map(events.map((e) => [e.id, Number(e.occurred_at)]));
    const first = new Map<string, number>();
    for (const r of rig.receiver.received) {
      const id = String(r.headers['webhook-id']);
      if (occurred.has(id) && !first.has(id)) first.set(id, r.at - occurred.get(id)!);
    }
    const lat = [...first.values()].sort((a, b) => a - b);
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
    const healthy = { deliveries: lat.length, p50: pct(0.5), p95: pct(0.95), max: lat[lat.length - 1] };

    // Nothing to the dead endpoints is lost: every message is still there, pending its retry, none given up.
    const rows = await db.selectFrom('webhook_deliveries').select(['status', 'attempts']).where('endpoint_id', 'in', hangingIds).execute();
    const hanging = {
      attempted: rows.filter((r) => r.attempts > 0).length,
      pending: rows.filter((r) => r.status === 'pending').length,
      lost: ENDPOINTS * MESSAGES_PER_ENDPOINT - rows.filter((r) => r.status === 'pending').length,
    };
    const figures: WebhookHangFigures = {
      family: 'webhook-hang',
      hangingEndpoints: ENDPOINTS,
      hangingMessages: ENDPOINTS * MESSAGES_PER_ENDPOINT,
      connectionsHeld,
      timeoutSeconds: TIMEOUT_SECONDS,
      concurrency: 32,
      endpointConcurrency: 4,
      healthy,
      hanging,
      load: load.figures(),
      store,
    };
    assert.ok(connectionsHeld >= 20, `the dead receiver held connections (${connectionsHeld})`);
    assert.equal(rows.length, ENDPOINTS * MESSAGES_PER_ENDPOINT, 'every message to a dead endpoint is kept');
    assert.equal(hanging.lost, 0, 'none given up or lost');
    assert.ok(hanging.attempted >= 20, `the dead endpoints were tried and timed out (${hanging.attempted})`);
    assert.ok(healthy.deliveries >= 10, 'the healthy endpoint got deliveries');
    assert.ok(healthy.p95 < 1_000 && healthy.max < TIMEOUT_SECONDS * 1000 * 0.5, `the healthy endpoint kept flowing: ${JSON.stringify(healthy)}`);
    return figures;
  } finally {
    for (const s of sockets) s.destroy();
    dead.close();
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
