import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, fetchToken, type HttpResult, payableMinor } from '../../helpers/server-process.ts';
import type { Acknowledged } from '../kill.ts';
import { checkStore } from '../kill.ts';
import { type Rig, startRig } from './harness.ts';

/**
 * The wall clock jumping an hour forward, then an hour back, under a real `mds serve` (its clock reads an
 * offset from MDS_CLOCK_OFFSET_FILE, honoured only with NODE_ENV=test; the machine's clock is untouched).
 * What must happen is what the clock says, and nothing else: forward, tokens and quotes older than their
 * lifetime expire, the assignment timeout cancels a waiting transfer with exactly one refund, and a webhook
 * retry that became due is sent at once (no negative wait, no stall); back, nothing expires en masse
 * (quotes stay valid, transfers are not cancelled), a token minted by the clock that was ahead is answered
 * ACCESS_TOKEN_EXPIRED (clients, the SDK included, get a new one), and a webhook retry scheduled by the
 * clock that was ahead is not held back an hour. No answer is a 5xx, no money moves twice.
 */

export interface ClockFigures {
  family: 'clock';
  forward: { oldToken: string; oldQuote: string; retryDeliveredMs: number; assignmentCancelMs: number };
  back: { aheadToken: string; aheadQuote: number; retryDeliveredMs: number; transfersStillOpen: number };
  transfers: number;
  refunds: number;
}

const HOUR = 3_600_000;

export async function clockFamily(): Promise<ClockFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'mds-clock-'));
  const offsetFile = join(dir, 'clock-offset');
  writeFileSync(offsetFile, '0');
  const setOffset = async (ms: number) => {
    writeFileSync(offsetFile, String(ms));
    await sleep(100); // the server re-reads it every 20 ms
    return performance.now();
  };
  let rig: Rig | undefined;
  try {
    rig = await startRig(
      { DATABASE_URL: `sqlite:${join(dir, 'mds.sqlite')}`, MDS_CLOCK_OFFSET_FILE: offsetFile, SCHEDULER_INTERVAL_SECONDS: '1' },
      'Clock merchant',
    );
    const r = rig;
    const answers: HttpResult[] = [];
    const call = async (p: Promise<HttpResult>) => {
      const res = await p;
      answers.push(res);
      return res;
    };
    // The receiver fails (500) every delivery while `failing`: the first try of an event then schedules a retry 5 s later.
    let failing = false;
    r.receiver.respond = (_rec, res) => void res.writeHead(failing ? 500 : 204).end();
    const arrivals = (id: string) => r.receiver.received.filter((x) => x.headers['webhook-id'] === id);
    const waitFor = async (what: string, cond: () => boolean | Promise<boolean>, limitMs: number, from = performance.now()) => {
      while (!(await cond())) {
        if (performance.now() - from > limitMs) assert.fail(`${what}: not within ${limitMs} ms`);
        await sleep(25);
      }
      return Math.round(performance.now() - from);
    };
    const eventId = async (transferId: string, type: string) =>
      (await r.access.database.db.selectFrom('events').select('id').where('transfer_id', '=', transferId).where('type', '=', type).executeTakeFirstOrThrow())
        .id;
    const acknowledged: Acknowledged = { transfers: new Map(), cancelled: new Set(), warehouses: new Set([r.warehouseId]) };
    /** A quote and a transfer from it, whose transfer.created webhook fails its first try. */
    const transferWithFailedHook = async (client: ApiClient, i: number) => {
      const quote = await call(client.options(r.warehouseId, i));
      assert.equal(quote.status, 201);
      failing = true;
      const t = await call(client.transfer(quote.body.id));
      assert.equal(t.status, 201, JSON.stringify(t.body));
      acknowledged.transfers.set(t.body.id, { priceMinor: payableMinor(quote.body), body: undefined });
      const hook = await eventId(t.body.id, 'transfer.created');
      await waitFor('the first try of the webhook', () => arrivals(hook).length >= 1, 5_000);
      failing = false;
      await sleep(200); // its failure is recorded, the retry scheduled 5 s later
      return { id: t.body.id as string, hook };
    };

    // Before: a quote kept for later, a transfer whose webhook retry is pending.
    const oldQuote = await call(r.client.options(r.warehouseId, 1));
    assert.equal(oldQuote.status, 201);
    const x0 = await transferWithFailedHook(r.client, 2);
    const balance = async () =>
      (await r.access.database.db.selectFrom('merchants').select('balance').where('id', '=', r.merchant.merchantId).executeTakeFirstOrThrow()).balance;

    // An hour forward.
    const forwardAt = await setOffset(HOUR);
    const oldToken = await call(r.client.request('GET', '/warehouses'));
    assert.equal(oldToken.status, 401);
    assert.equal(oldToken.body.type, 'ACCESS_TOKEN_EXPIRED', 'a token older than its lifetime has expired');
    const c1 = new ApiClient(r.server.url, await fetchToken(r.server.url, r.merchant.clientId, r.merchant.clientSecret));
    const before = await balance();
    const expiredQuote = await call(c1.transfer(oldQuote.body.id));
    assert.equal(expiredQuote.status, 422);
    assert.equal(expiredQuote.body.type, 'QUOTE_EXPIRED');
    assert.equal(await balance(), before, 'no charge for an expired quote');
    const retryForward = await waitFor('the due webhook retry after the jump forward', () => arrivals(x0.hook).length >= 2, 3_000, forwardAt);
    const cancelForward = await waitFor(
      'the assignment timeout cancelling the hour-old transfer',
      async () => (await c1.request('GET', `/transfer/${x0.id}`)).body.state === 'cancelled',
      5_000,
      forwardAt,
    );
    acknowledged.cancelled.add(x0.id);
    // Still at +1 h: a transfer whose webhook retry is scheduled by this clock, and a quote from it.
    const x1 = await transferWithFailedHook(c1, 3);
    const aheadQuote = await call(c1.options(r.warehouseId, 4));
    assert.equal(aheadQuote.status, 201);

    // An hour back.
    const backAt = await setOffset(0);
    const aheadToken = await call(c1.request('GET', '/warehouses'));
    assert.equal(aheadToken.status, 401);
    assert.equal(aheadToken.body.type, 'ACCESS_TOKEN_EXPIRED', 'a token minted by the clock that was ahead: get a new one');
    const c2 = new ApiClient(r.server.url, await fetchToken(r.server.url, r.merchant.clientId, r.merchant.clientSecret));
    const x2 = await call(c2.transfer(aheadQuote.body.id));
    assert.equal(x2.status, 201, `a quote is not expired by a jump back: ${JSON.stringify(x2.body)}`);
    acknowledged.transfers.set(x2.body.id, { priceMinor: payableMinor(aheadQuote.body), body: x2.body });
    const retryBack = await waitFor('the webhook retry scheduled by the clock that was ahead', () => arrivals(x1.hook).length >= 2, 3_000, backAt);
    await sleep(2500); // two scheduler passes
    const states = await Promise.all([x1.id, x2.body.id].map(async (id) => (await c2.request('GET', `/transfer/${id}`)).body.state));
    assert.deepEqual(states, ['inProgress', 'inProgress'], 'no transfer cancelled by a jump back');

    const bad = answers.filter((a) => a.status === 0 || a.status >= 500);
    assert.deepEqual(
      bad.map((a) => `${a.status} ${JSON.stringify(a.body)}`),
      [],
    );
    assert.ok(!r.server.stderr.some((l) => /TimeoutNegativeWarning|TimeoutOverflowWarning/.test(l)), 'no negative or overflowing timer');
    assert.ok(r.server.alive());
    const unanswered = await checkStore(r.access, r.merchant.merchantId, r.merchant.openingMinor, acknowledged);
    assert.equal(unanswered, 0, 'no transfer but the acknowledged ones');
    const refunds = await r.access.database.db
      .selectFrom('ledger_entries')
      .select('id')
      .where('merchant_id', '=', r.merchant.merchantId)
      .where('kind', '=', 'REFUND')
      .execute();
    assert.equal(refunds.length, 1, 'one refund: the transfer the assignment timeout cancelled');
    return {
      family: 'clock',
      forward: { oldToken: oldToken.body.type, oldQuote: expiredQuote.body.type, retryDeliveredMs: retryForward, assignmentCancelMs: cancelForward },
      back: { aheadToken: aheadToken.body.type, aheadQuote: x2.status, retryDeliveredMs: retryBack, transfersStillOpen: 2 },
      transfers: acknowledged.transfers.size,
      refunds: refunds.length,
    };
  } finally {
    await rig?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
