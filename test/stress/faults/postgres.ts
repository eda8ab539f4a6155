import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startPgBouncer } from '../../../scripts/lib/pgbouncer.ts';
import { http } from '../../helpers/server-process.ts';
import { prng } from '../common.ts';
import {
  assertAnswers,
  assertStore,
  Load,
  type LoadFigures,
  loggedCauses,
  openStore,
  type PgCluster,
  type Rig,
  recoveryMs,
  SkipFamily,
  type StoreFigures,
  startPrivatePostgres,
  startRig,
  timeToSuccess,
} from './harness.ts';

/**
 * The PostgreSQL fault families, each on a private cluster started for it (initdb + pg_ctl): the server
 * restarted (fast and immediate shutdown), PgBouncer killed and restarted, a lock held on the merchant's
 * row past lock_timeout and statement_timeout. The service runs as a real `mds serve` process under a
 * load of transfers, cancels and the webhook deliveries they cause.
 */

export interface FaultRound {
  /** What was done, e.g. "fast shutdown". */
  fault: string;
  /** How long the fault lasted. */
  faultMs: number;
  /** Answers during the fault and after it, and how many were 503. */
  answers: number;
  unavailable: number;
  /** From the end of the fault to the last refusal (every answer after it a success). */
  recoveryMs: number;
  /** From the end of the fault to /readyz 200 and to the first webhook delivered after it. */
  readyMs?: number;
  webhookMs?: number;
  /** The slowest answer of the round. */
  slowestMs: number;
}

export interface FaultFigures {
  family: string;
  rounds: FaultRound[];
  load: LoadFigures;
  store?: StoreFigures;
  /** What the server logged as the causes of its 503s. */
  causes: Record<string, number>;
}

const WORKERS = 6;

/** Runs one fault on the rig under `load`: returns the round's figures (recovery asserted within 5 s). */
async function round(
  rig: Rig,
  load: Load,
  fault: string,
  inject: () => Promise<void>,
  heal: () => Promise<void>,
  opts: { holdMs: number; settleMs: number },
): Promise<FaultRound> {
  const started = performance.now();
  await inject();
  await sleep(opts.holdMs);
  await heal();
  const ended = performance.now();
  const endedWall = Date.now();
  const readyMs = await timeToSuccess(() => http(rig.server.url, 'GET', '/readyz', { timeoutMs: 10_000 }), ended);
  await sleep(opts.settleMs);
  const answers = load.answers.filter((a) => a.startedAt >= started);
  const firstHook = rig.receiver.received.find((r) => r.at >= endedWall);
  return {
    fault,
    faultMs: Math.round(ended - started),
    answers: answers.length,
    unavailable: answers.filter((a) => a.result.status === 503).length,
    recoveryMs: recoveryMs(answers, ended),
    readyMs,
    webhookMs: firstHook ? firstHook.at - endedWall : undefined,
    slowestMs: Math.round(Math.max(0, ...answers.map((a) => a.result.ms))),
  };
}

/** After the rounds: the webhook recovery is within the bound too, and the store holds exactly what was acknowledged. */
async function finish(rig: Rig, load: Load, rounds: FaultRound[], family: string, maxAnswerMs: number): Promise<FaultFigures> {
  await load.stop();
  const figures: FaultFigures = { family, rounds, load: load.figures(), causes: loggedCauses(rig.server) };
  assert.ok(rig.server.alive(), `the server process survived\n${rig.server.stderr.slice(-20).join('\n')}`);
  assertAnswers(load.answers, maxAnswerMs);
  assert.ok(figures.load.unavailable > 0, 'the faults really reached requests (some 503s)');
  for (const r of rounds) if (r.webhookMs !== undefined) assert.ok(r.webhookMs < 5_000, `${r.fault}: webhooks flowed again after ${r.webhookMs} ms`);
  figures.store = await assertStore(rig, load);
  return figures;
}

export async function pgRestartFamily(seed: number): Promise<FaultFigures> {
  const cluster = await startPrivatePostgres();
  let rig: Rig | undefined;
  try {
    rig = await startRig({ DATABASE_URL: cluster.url, DATABASE_POOL_SIZE: '6' }, 'Restart merchant');
    const load = new Load(rig.client, rig.warehouseId, { workers: WORKERS, rand: prng(seed) });
    await sleep(1000);
    const rounds: FaultRound[] = [];
    for (const mode of ['fast', 'immediate'] as const) {
      rounds.push(
        await round(
          rig,
          load,
          `${mode} shutdown, restart`,
          () => cluster.stop(mode),
          () => cluster.start(),
          { holdMs: 1500, settleMs: 2500 },
        ),
      );
    }
    return await finish(rig, load, rounds, 'pg-restart', 20_000);
  } finally {
    await rig?.close();
    await cluster.destroy();
  }
}

export async function pgbouncerFamily(seed: number): Promise<FaultFigures> {
  const cluster = await startPrivatePostgres();
  let rig: Rig | undefined;
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>> | undefined;
  try {
    try {
      bouncer = await startPgBouncer(cluster.url);
    } catch (err) {
      throw new SkipFamily(`PgBouncer could not start: ${(err as Error).message.split('\n')[0]}`);
    }
    const port = bouncer.port;
    // The store is migrated directly; the server goes through PgBouncer (transaction pooling).
    await (await openStore({ DATABASE_URL: cluster.url }, 1)).close();
    rig = await startRig({ DATABASE_URL: `${bouncer.baseUrl}mds`, DATABASE_POOL_SIZE: '6', DATABASE_PREPARED_STATEMENTS: 'false' }, 'PgBouncer merchant');
    const load = new Load(rig.client, rig.warehouseId, { workers: WORKERS, rand: prng(seed) });
    await sleep(1000);
    const rounds: FaultRound[] = [];
    for (const signal of ['SIGKILL', 'SIGINT'] as const) {
      rounds.push(
        await round(
          rig,
          load,
          signal === 'SIGKILL' ? 'kill -9, restart' : 'immediate shutdown (SIGINT), restart',
          async () => {
            await bouncer!.kill(signal);
            await bouncer!.stop(); // its files
          },
          async () => {
            bouncer = await startPgBouncer(cluster.url, { port });
          },
          { holdMs: 1500, settleMs: 2500 },
        ),
      );
    }
    return await finish(rig, load, rounds, 'pgbouncer', 20_000);
  } finally {
    await rig?.close();
    await bouncer?.stop();
    await cluster.destroy();
  }
}

/**
 * A lock held on the merchant's row (SELECT ... FOR UPDATE in another session, left open): transfers and
 * cancels, which debit or credit that row, wait at most DATABASE_LOCK_TIMEOUT_MS and answer 503; quotes
 * and reads, which do not lock it, go on. Then the same with lock_timeout off, so that statement_timeout
 * ends the wait. Every answer is bounded by the timeout (plus the request's own work), none hangs.
 */
export async function pgSlowFamily(seed: number): Promise<FaultFigures> {
  const cluster = await startPrivatePostgres();
  let rig: Rig | undefined;
  let holder: pg.Client | undefined;
  const LOCK_MS = 1000;
  const STATEMENT_MS = 1500;
  try {
    rig = await startRig({ DATABASE_URL: cluster.url, DATABASE_POOL_SIZE: '8', DATABASE_LOCK_TIMEOUT_MS: String(LOCK_MS) }, 'Slow merchant');
    const merchantId = rig.merchant.merchantId;
    const hold = async () => {
      holder = new pg.Client({ connectionString: cluster.url });
      await holder.connect();
      await holder.query('begin');
      await holder.query('select id from merchants where id = $1 for update', [merchantId]);
    };
    const release = async () => {
      await holder?.query('rollback');
      await holder?.end();
      holder = undefined;
    };
    const rounds: FaultRound[] = [];
    let combined: LoadFigures | undefined;
    let store: StoreFigures | undefined;
    let acknowledged: Load['acknowledged'] | undefined;
    const allCauses: Record<string, number> = {};
    const phases: Array<{ fault: string; env: Record<string, string> }> = [
      { fault: `merchant row locked 3 s, lock_timeout ${LOCK_MS} ms`, env: {} },
      {
        fault: `merchant row locked 3 s, lock_timeout off, statement_timeout ${STATEMENT_MS} ms`,
        env: { DATABASE_LOCK_TIMEOUT_MS: '0', DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_MS) },
      },
    ];
    for (const [i, phase] of phases.entries()) {
      if (i > 0) await rig.restart(phase.env);
      const load = new Load(rig.client, rig.warehouseId, { workers: WORKERS, rand: prng(seed + i), acknowledged });
      acknowledged = load.acknowledged;
      await sleep(800);
      const r = await round(rig, load, phase.fault, hold, release, { holdMs: 3000, settleMs: 2000 });
      rounds.push(r);
      const causes = loggedCauses(rig.server);
      for (const [k, v] of Object.entries(causes)) allCauses[k] = (allCauses[k] ?? 0) + v;
      const figures = await finish(rig, load, [r], 'pg-slow', (i === 0 ? LOCK_MS : STATEMENT_MS) + 2_500);
      // The refusals came from the timeout the phase set, not from something else.
      assert.ok(
        Object.keys(causes).length > 0 && Object.keys(causes).every((c) => c === (i === 0 ? '55P03' : '57014')),
        `503 causes ${JSON.stringify(causes)}`,
      );
      combined = mergeLoad(combined, figures.load);
      store = figures.store;
    }
    return { family: 'pg-slow', rounds, load: combined!, causes: allCauses, store };
  } finally {
    await holder?.end().catch(() => {});
    await rig?.close();
    await cluster.destroy();
  }
}

export function mergeLoad(a: LoadFigures | undefined, b: LoadFigures): LoadFigures {
  if (!a) return b;
  const statuses = { ...a.statuses };
  for (const [k, v] of Object.entries(b.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
  return {
    requests: a.requests + b.requests,
    statuses,
    unavailable: a.unavailable + b.unavailable,
    // The loads share one record of what was acknowledged: the later one's counts are the totals.
    transfers: b.transfers,
    cancels: b.cancels,
    retriedWrites: a.retriedWrites + b.retriedWrites,
  };
}

export type { PgCluster };
