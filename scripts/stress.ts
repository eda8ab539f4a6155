// `npm run test:stress`: the reliability families of issue 13, on SQLite and (with TEST_POSTGRES_URL) PostgreSQL:
// fuzzing, model-based commands, kill -9, soak; then the fault families (test/stress/faults/), each once, on a
// private PostgreSQL cluster or SQLite of their own. Writes the figures to RELIABILITY.md and exits 1 if any family failed.
//   STRESS_SEED=n        replay a run (the seed is printed and recorded)
//   --only=fuzz,model    run some families only (RELIABILITY.md is then left alone)
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { POSTGRES_URL, STORES, type StoreName } from '../test/helpers/stores.ts';
import { CI } from '../test/stress/common.ts';
import { type ClockFigures, clockFamily } from '../test/stress/faults/clock.ts';
import { type DiskFullFigures, diskFullFamily } from '../test/stress/faults/disk-full.ts';
import { SkipFamily } from '../test/stress/faults/harness.ts';
import { type FaultFigures, pgbouncerFamily, pgRestartFamily, pgSlowFamily } from '../test/stress/faults/postgres.ts';
import { type WebhookHangFigures, webhookHangFamily } from '../test/stress/faults/webhook-hang.ts';
import { type FuzzFigures, fuzzFamily } from '../test/stress/fuzz.ts';
import { type KillFigures, killFamily } from '../test/stress/kill.ts';
import { type ModelFigures, modelFamily } from '../test/stress/model.ts';
import { type SoakFigures, soakFamily, WARM_UP_SECONDS } from '../test/stress/soak.ts';

const FAMILIES = ['fuzz', 'model', 'kill', 'soak', 'pg-restart', 'pgbouncer', 'pg-slow', 'disk-full', 'clock', 'webhook-hang'] as const;
type Family = (typeof FAMILIES)[number];

const { values: args } = parseArgs({ options: { only: { type: 'string' } } });
const only = new Set((args.only ?? FAMILIES.join(',')).split(',') as Family[]);
const num = (name: string, def: number) => (process.env[name] ? Number(process.env[name]) : def);

// The minimums are the defaults, in CI too: the whole run takes about 4 to 5 minutes for both stores.
const FUZZ_RUNS = num('STRESS_FUZZ_RUNS', 10_000);
const MODEL_RUNS = num('STRESS_MODEL_RUNS', 200);
const MODEL_MAX_COMMANDS = num('STRESS_MODEL_MAX_COMMANDS', 40);
const KILL_SEEDS = num('STRESS_KILL_SEEDS', 20);
const SOAK_SECONDS = num('STRESS_SOAK_SECONDS', 60);
const SOAK_STORE: StoreName = POSTGRES_URL ? 'postgres' : 'sqlite';
const SEED = num('STRESS_SEED', Math.floor(Math.random() * 2 ** 31));

interface Outcome<T> {
  family: Family;
  store: StoreName;
  ok: boolean;
  /** Why the family could not run here (no binaries, no permission to mount). */
  skipped?: string;
  figures?: T;
  error?: string;
  ms: number;
}

const outcomes: Array<Outcome<FuzzFigures | ModelFigures | KillFigures | SoakFigures | FaultFigures | ClockFigures | WebhookHangFigures>> = [];
const started = performance.now();

async function run<T>(family: Family, store: StoreName, fn: () => Promise<T>): Promise<void> {
  if (!only.has(family)) return;
  const t0 = performance.now();
  console.log(`\n=== ${family} [${store}] ===`);
  try {
    const figures = await fn();
    const ms = Math.round(performance.now() - t0);
    outcomes.push({ family, store, ok: true, figures: figures as never, ms });
    console.log(`ok in ${(ms / 1000).toFixed(1)} s: ${JSON.stringify(figures)}`);
  } catch (err) {
    const ms = Math.round(performance.now() - t0);
    if (err instanceof SkipFamily) {
      outcomes.push({ family, store, ok: true, skipped: err.message, ms });
      console.log(`SKIPPED: ${err.message}`);
      return;
    }
    const e = err as Error & { figures?: unknown };
    outcomes.push({ family, store, ok: false, figures: e.figures as never, error: (e.stack ?? String(e)).split('\n').slice(0, 30).join('\n'), ms });
    console.error(`FAILED in ${(ms / 1000).toFixed(1)} s:\n${e.stack ?? e}`);
  }
}

console.log(
  `stress: stores ${STORES.join(', ')}${POSTGRES_URL ? '' : ' (set TEST_POSTGRES_URL for PostgreSQL)'}; seed ${SEED}; ${CI ? 'CI' : 'local'} run; families ${[...only].join(', ')}`,
);
for (const store of STORES) await run('fuzz', store, () => fuzzFamily(store, FUZZ_RUNS, SEED));
for (const store of STORES) await run('model', store, () => modelFamily(store, MODEL_RUNS, SEED, MODEL_MAX_COMMANDS));
for (const store of STORES) await run('kill', store, () => killFamily(store, KILL_SEEDS, SEED % 1_000_000));
await run('soak', SOAK_STORE, () => soakFamily(SOAK_STORE, SOAK_SECONDS));
// The fault families: each starts what it breaks (a private PostgreSQL cluster, PgBouncer, a tmpfs).
await run('pg-restart', 'postgres', () => pgRestartFamily(SEED));
await run('pgbouncer', 'pgbouncer', () => pgbouncerFamily(SEED));
await run('pg-slow', 'postgres', () => pgSlowFamily(SEED));
await run('disk-full', 'sqlite', () => diskFullFamily(SEED));
await run('clock', 'sqlite', () => clockFamily());
await run('webhook-hang', 'sqlite', () => webhookHangFamily(SEED));

const totalMs = Math.round(performance.now() - started);
const failed = outcomes.filter((o) => !o.ok);
console.log(`\nstress: ${outcomes.length - failed.length}/${outcomes.length} passed in ${(totalMs / 1000).toFixed(0)} s (seed ${SEED})`);
if (only.size === FAMILIES.length) {
  writeFileSync(join(import.meta.dirname, '..', 'RELIABILITY.md'), report(totalMs));
  console.log('RELIABILITY.md written');
}
// Server children and pools are closed by now; exit explicitly in case a library keeps a timer alive.
process.exit(failed.length > 0 ? 1 : 0);

// ---------------------------------------------------------------------------------------------

function report(totalMs: number): string {
  const get = <T>(family: Family, store: StoreName) => outcomes.find((o) => o.family === family && o.store === store) as Outcome<T> | undefined;
  const status = (o: Outcome<unknown> | undefined) => (o === undefined ? 'not run' : o.skipped ? `SKIPPED (${o.skipped})` : o.ok ? 'PASS' : 'FAIL');
  const tally = (t: Record<string, number> | undefined) =>
    t
      ? Object.entries(t)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')
      : '';
  const secs = (ms: number | undefined) => (ms === undefined ? '' : `${(ms / 1000).toFixed(1)} s`);
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    if (execFileSync('git', ['status', '--porcelain'], { encoding: 'utf8' }).trim() !== '') commit += ' + uncommitted changes';
  } catch {}
  const failures = outcomes.filter((o) => !o.ok);
  const lines: string[] = [];
  const w = (s = '') => lines.push(s);

  w('# Reliability');
  w();
  w('<!-- Written by `npm run test:stress` (scripts/stress.ts) from the run it just made: edit the script, not this file. -->');
  w();
  w('`npm run test:stress` runs four families of tests that try to break the service the way production');
  w('would: garbage input, long random histories, crashes and sustained load. They run on embedded SQLite');
  w('and, when `TEST_POSTGRES_URL` is set, on PostgreSQL. Then six fault families (sections 5 to 10) break the');
  w('world around the service: PostgreSQL restarted, PgBouncer killed, a lock held past the timeouts, a full');
  w('disk, the wall clock jumping, webhook receivers that never answer. CI ([`.ci/run`](.ci/run)) runs them all after `npm test`');
  w('with PostgreSQL. A failure prints the seed; `STRESS_SEED=<seed> npm run test:stress`');
  w('replays the same generated requests and command sequences (kill timings and load interleavings are');
  w('real time, so those replay only approximately). The families live in [`test/stress/`](test/stress/).');
  w();
  w('## Latest run');
  w();
  w(`${new Date().toISOString()}, commit ${commit}, Node ${process.version}, ${CI ? 'CI' : 'local'} run, seed ${SEED},`);
  w(`stores: ${STORES.join(', ')}; ${outcomes.length - failures.length} of ${outcomes.length} passed in ${secs(totalMs)}.`);
  w(
    `Machine: ${cpus().length} CPUs, load average at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')} (1 / 5 / 15 min).`,
  );
  w(
    `Sizes: ${FUZZ_RUNS} fuzz requests, ${MODEL_RUNS} model runs (up to ${MODEL_MAX_COMMANDS} commands each), ${KILL_SEEDS} kill -9 seeds per store; a ${SOAK_SECONDS} s soak on ${SOAK_STORE}.`,
  );
  if (SOAK_SECONDS < 60) w(`The soak was shortened to ${SOAK_SECONDS} s for this run (STRESS_SOAK_SECONDS): the issue asks for 60 s.`);
  w();
  w('| Family | Store | Result | Time |');
  w('|---|---|---|---|');
  for (const o of outcomes) w(`| ${o.family} | ${o.store} | ${status(o)} | ${secs(o.ms)} |`);
  w();

  w('## 1. Fuzzing (`test/stress/fuzz.ts`)');
  w();
  w('fast-check generates requests over every endpoint (token, warehouses, options, transfer, health,');
  w('discovery, `/`, and any other operation of `openapi.json`, from its request example), each a valid');
  w('request bent one or more ways: wrong types, extreme numbers (±1e308,');
  w('2^53 + 2, 70-digit integers, -0), long strings (up to 70 000 characters) and ill-formed ones (lone');
  w('surrogates, invalid UTF-8 bytes, NUL), `__proto__` and `constructor.prototype` keys (also escaped),');
  w('duplicate keys, nesting 3 000 to 5 000 deep, truncated and non-object JSON, missing and unknown');
  w('fields, odd media types and charsets, `Content-Encoding`, malformed, padded, foreign and lower-case');
  w('bearer tokens, bad `Idempotency-Key` and `X-Request-Id`, other methods, trailing slashes, upper-case,');
  w('foreign, unknown and malformed ids, and bad query strings. Sent through the whole pipeline (`app.inject`).');
  w();
  w('Asserted for every request: **no 5xx**; every response matches the committed OpenAPI document');
  w('(status listed, media type, body schema); every 4xx is a valid problem body (known `type`, matching');
  w('`status` and `title`, a `detail`, `requestId` = `X-Request-Id`; RFC 6749 `error` on the token');
  w('endpoint); **after a refused request the store-wide digest of business state is unchanged**');
  w('(merchants, balances, active credentials, ledger, warehouses and their updates, quotes, consumed');
  w('quotes, transfers).');
  w();
  w('| Store | Requests | Refusals checked for no change | Statuses | Time |');
  w('|---|---|---|---|---|');
  for (const store of STORES) {
    const o = get<FuzzFigures>('fuzz', store);
    if (o?.figures) w(`| ${store} | ${o.figures.requests} | ${o.figures.refusedChecked} | ${tally(o.figures.statuses)} | ${secs(o.ms)} |`);
    else w(`| ${store} | ${status(o)} | | | |`);
  }
  const anyFuzz = STORES.map((s) => get<FuzzFigures>('fuzz', s)?.figures).find(Boolean);
  if (anyFuzz) {
    w();
    w(`Requests per endpoint (${anyFuzz.store}): ${tally(anyFuzz.byEndpoint)}.`);
  }
  w();

  w('## 2. Model-based (`test/stress/model.ts`)');
  w();
  w('fast-check commands run random histories for two merchants against an in-memory model: create');
  w('warehouses, enable/disable them, quote (near, beyond express range, out of the service area; parcel');
  w('sizes and delivery types that some products refuse), transfer (own quotes, used quotes, the other');
  w("merchant's quotes, unknown products), top up (operator), revoke the credential and issue a new one,");
  w('read. Every answer must be the one the model predicts (status, error type, amounts, the transfer id');
  w('the quote announced). **After every step**, from the database: each balance equals the model and');
  w('its ledger sum and is never negative; no quote has two transfers and consumed quotes are exactly the');
  w("transferred ones; transfers are exactly the model's. Reads return only the caller's warehouses and");
  w("transfers; the other merchant's ids answer 404; a revoked token answers 401. Each run starts from new");
  w('merchants with a random opening balance. New commands (e.g. cancel) are one class each in `COMMANDS`.');
  w();
  w('| Store | Runs | Commands | Outcomes | Time |');
  w('|---|---|---|---|---|');
  for (const store of STORES) {
    const o = get<ModelFigures>('model', store);
    if (o?.figures) w(`| ${store} | ${o.figures.runs} | ${o.figures.commands} | ${tally(o.figures.outcomes)} | ${secs(o.ms)} |`);
    else w(`| ${store} | ${status(o)} | | | |`);
  }
  w();

  w('## 3. kill -9 (`test/stress/kill.ts`)');
  w();
  w('The real service (`node bin/mds.js serve`) under six workers (quote + transfer, create warehouse,');
  w('reads; chosen by a seeded generator), killed with SIGKILL at a random moment (0.1 to 0.8 s into the');
  w('load), restarted on the same database, once per seed. After every restart: every acknowledged');
  w('transfer and warehouse is stored exactly once; balance = ledger sum = opening balance − charges; one');
  w('charge per transfer; quotes consumed = transfers; SQLite passes `integrity_check`. Every answer was');
  w('complete (2xx) or absent (cut by the kill): no 5xx, no refusal. At the end every acknowledged');
  w('transfer reads back exactly as it was answered. New request kinds (e.g. cancel) are one entry of');
  w('`REQUEST_KINDS`.');
  w();
  w('| Store | Seeds (kills) | Requests | Statuses | In flight at the kills | Acknowledged transfers | Committed, answer lost | Time |');
  w('|---|---|---|---|---|---|---|---|');
  for (const store of STORES) {
    const o = get<KillFigures>('kill', store);
    if (o?.figures) {
      const f = o.figures;
      w(
        `| ${store} | ${f.seeds} | ${f.requests} | ${tally(f.statuses)} | ${f.inFlightAtKills} | ${f.acknowledgedTransfers} | ${f.committedUnanswered} | ${secs(o.ms)} |`,
      );
    } else w(`| ${store} | ${status(o)} | | | | | | |`);
  }
  w();
  w('Status 0 is a request cut by the kill (reset or refused connection).');
  w();

  w('## 4. Soak (`test/stress/soak.ts`)');
  w();
  w(
    `autocannon at 100 connections for ${SOAK_SECONDS} s (after a ${WARM_UP_SECONDS} s warm-up at the same load) against the real service (${SOAK_STORE}, LOG_LEVEL=warn): reads, quotes`,
  );
  w('(writes), a used quote (409), an invalid body (400), a bad token (401), a wrong method (405) and the');
  w("health check. Asserted: **no 5xx**, no connection errors or timeouts, and the server's resident");
  w('memory at the end less than 20 % above its level 10 s into the measured run. The service runs as');
  w(
    "`npm start` runs it, with `--max-semi-space-size=16` (and `--no-memory-reducer-favors-memory`, for speed after idling): with a small young generation (Node 20's",
  );
  w('default), RSS grew 32 % in this soak on PostgreSQL (256 → 337 MB, still climbing) although a full GC');
  w('afterwards left 36 MB live, i.e. no leak but request objects promoted to the old generation before');
  w("V8 first collected it; with 16 MiB (and with 32 and 64, Node 24's ceiling here) RSS is flat after warm-up.");
  w('The server also holds its old generation to 1.5 × what the last full collection left live');
  w('(`boundOldGeneration()`, src/lib/startup-memory.ts): promoted request objects are collected before');
  w('they pile up.');
  w();
  const soak = get<SoakFigures>('soak', SOAK_STORE);
  if (soak?.figures) {
    const f = soak.figures;
    w('| Store | Requests | Req/s | p99 | Statuses | Errors / timeouts | RSS warm → end (peak) | Growth |');
    w('|---|---|---|---|---|---|---|---|');
    w(
      `| ${f.store} | ${f.requests} | ${f.requestsPerSecond} | ${f.p99Ms} ms | ${tally(f.statuses)} | ${f.errors} / ${f.timeouts} | ${f.rssWarmMb} → ${f.rssEndMb} MB (${f.rssPeakMb}) | ${f.rssGrowthPct} % |`,
    );
    w();
    w(`RSS every 5 s (MB): ${f.rssSeries.join(', ')}.`);
  } else w(`Soak: ${status(soak)}.`);
  w();
  faultSections(w, get, status, tally, secs);
  if (failures.length > 0) {
    w('## Failures');
    w();
    for (const o of failures) {
      w(`### ${o.family} [${o.store}]`);
      w();
      w('```');
      w(o.error ?? '');
      w('```');
      w();
    }
  }
  return `${lines.join('\n')}\n`;
}

type Get = <T>(family: Family, store: StoreName) => Outcome<T> | undefined;
type Writer = (s?: string) => void;

/** Sections 5 to 10: the fault families, with the measured recovery times. */
function faultSections(
  w: Writer,
  get: Get,
  status: (o: Outcome<unknown> | undefined) => string,
  tally: (t: Record<string, number> | undefined) => string,
  secs: (ms: number | undefined) => string,
): void {
  w('## Faults: the bar (sections 5 to 8)');
  w();
  w('Each fault family runs the real service (`mds serve`, a child process) under a load of quotes, transfers');
  w('(each with an `Idempotency-Key`, retried with the same key after a 503 as `Retry-After` says), cancels and');
  w('reads, with a webhook endpoint on a live receiver for `transfer.created` and `transfer.cancelled`. Asserted,');
  w('every time: every answer is the expected one or **503 `SERVICE_UNAVAILABLE` problem+json with `Retry-After`**');
  w('(never a 500, a dropped connection or a hang; every answer within a bound); the service **recovers by');
  w('itself within 5 s** of the fault ending (measured: from the end of the fault to the end of the last refusal,');
  w('every later answer a success; also `/readyz` 200 and the first webhook delivered after the fault); and');
  w('afterwards **every acknowledged transfer and cancel is stored exactly once** (no transfer that was not');
  w('acknowledged: every write was retried until answered), balance = ledger sum = opening − charges + refunds,');
  w('one charge per transfer, one refund per cancel, quotes consumed = transfers, each read-back equal to its');
  w('answer, and **every event delivered** to the receiver and recorded as delivered exactly once (one');
  w('succeeded attempt per delivery; duplicates at the receiver, allowed by at-least-once, are counted).');
  w('PostgreSQL families use a private cluster each (`initdb` + `pg_ctl` from `/usr/lib/postgresql/15/bin` on a');
  w("free port in a temp dir, run as the `postgres` OS user when root), never the machine's server.");
  w();
  const faultTable = (family: Family, store: StoreName, title: string, what: string[]) => {
    w(`## ${title}`);
    w();
    for (const line of what) w(line);
    w();
    const o = get<FaultFigures>(family, store);
    if (!o?.figures) {
      w(`Result: ${status(o)}.`);
      w();
      return;
    }
    const f = o.figures;
    w('| Fault | Lasted | Answers | 503s | Recovered after | /readyz 200 after | First webhook after | Slowest answer |');
    w('|---|---|---|---|---|---|---|---|');
    for (const r of f.rounds) {
      w(
        `| ${r.fault} | ${secs(r.faultMs)} | ${r.answers} | ${r.unavailable} | ${r.recoveryMs} ms | ${r.readyMs ?? '-'} ms | ${r.webhookMs ?? '-'} ms | ${r.slowestMs} ms |`,
      );
    }
    w();
    const s = f.store;
    w(
      `Load: ${f.load.requests} requests (${tally(f.load.statuses)}); ${f.load.transfers} transfers and ${f.load.cancels} cancels acknowledged, ${f.load.retriedWrites} of them after a 503 (same key).` +
        (s
          ? ` Stored: ${s.storedTransfers} transfers, ${s.ledgerEntries} ledger entries; ${s.webhookEvents} events delivered (${s.webhookDuplicates} duplicate sends).`
          : ''),
    );
    w(`Causes of the 503s (server log): ${tally(f.causes) || 'none logged'}. Time: ${secs(o.ms)}.`);
    w();
  };
  faultTable('pg-restart', 'postgres', '5. PostgreSQL restarted (`test/stress/faults/postgres.ts`)', [
    '`pg_ctl stop -m fast`, then `-m immediate` (a crash: recovery from the WAL), each held down 1.5 s, then',
    '`pg_ctl start`, under six workers.',
  ]);
  faultTable('pgbouncer', 'pgbouncer', '6. PgBouncer killed and restarted (`test/stress/faults/postgres.ts`)', [
    "The service reaches the private cluster through PgBouncer (transaction pooling, Debian's `/usr/sbin/pgbouncer`);",
    'PgBouncer is killed with SIGKILL, then with SIGINT (immediate shutdown), held down 1.5 s and restarted on the same port.',
  ]);
  faultTable('pg-slow', 'postgres', '7. PostgreSQL slow: a lock held on the merchant row (`test/stress/faults/postgres.ts`)', [
    'Another session holds `SELECT ... FOR UPDATE` on the merchant row for 3 s. Transfers and cancels (which debit',
    'or credit it) wait at most `DATABASE_LOCK_TIMEOUT_MS` (1 s here) and answer 503; quotes and reads go on. Then',
    'the same with the lock timeout off and `DATABASE_STATEMENT_TIMEOUT_MS` at 1.5 s. Every answer was asserted',
    "within the timeout + 2.5 s, and the 503s' logged causes to be exactly `55P03` (lock_timeout), then `57014`",
    '(statement_timeout).',
  ]);
  faultTable('disk-full', 'sqlite', '8. SQLite disk full (`test/stress/faults/disk-full.ts`)', [
    'The database on a 24 MB tmpfs, filled to the last byte by another file for about 2 s, then the file deleted.',
    'Writes that need space are refused with 503 `SERVICE_UNAVAILABLE` + `Retry-After` (SQLITE_FULL, like any',
    'other "the store cannot take writes now"; not 507, which clients do not retry); SQLite rolls the',
    'transaction back, so nothing half-written remains. Reads (a transfer, the warehouse list, `/readyz`) answer',
    '200 on the full disk, beside the refused writes and after them: a read that arrives while a write batch is',
    'open runs on a read-only connection against committed data, so a batch the full disk fails takes only its',
    'writers with it.',
    '`PRAGMA integrity_check` is `ok` afterwards; writes resume on their own. Some writes still succeed on a full',
    'disk: the WAL reuses the space it had.',
  ]);
  const d = get<DiskFullFigures>('disk-full', 'sqlite');
  if (d?.figures) {
    w(
      `Reads during the fault: ${d.figures.readsDuringFault}, all answered 200 (beside refused writes and after them); writes refused: ${d.figures.writesRefused}; integrity_check: ${d.figures.integrity}.`,
    );
    w();
  }
  w('## 9. The wall clock jumping an hour forward and back (`test/stress/faults/clock.ts`)');
  w();
  w('The real service reads its clock with an offset from `MDS_CLOCK_OFFSET_FILE` (honoured only with');
  w("`NODE_ENV=test`; the machine's clock is untouched), moved +1 h, then back by an hour. Forward, what the");
  w('clock says happens: a token older than its lifetime is `ACCESS_TOKEN_EXPIRED` (a new one works), a');
  w('quote older than 15 min is `QUOTE_EXPIRED` with no charge, the assignment timeout cancels the waiting');
  w('transfer with exactly one refund, and a webhook retry that became due is sent at once. Back, nothing');
  w('expires en masse: a quote from the clock that was ahead is still accepted, no transfer is cancelled; a');
  w('token minted by the clock that was ahead is answered `ACCESS_TOKEN_EXPIRED` (not `INVALID_ACCESS_TOKEN`,');
  w('so clients, the SDK included, fetch a new one instead of failing), and a webhook retry scheduled by it');
  w('is taken as due instead of being held back an hour. No 5xx, no negative or overflowing timer, one');
  w('charge per transfer.');
  w();
  const c = get<ClockFigures>('clock', 'sqlite');
  if (c?.figures) {
    const f = c.figures;
    w('| Jump | Old token | Old quote | Webhook retry sent after | Assignment timeout cancelled after | Transfers cancelled |');
    w('|---|---|---|---|---|---|');
    w(`| +1 h | ${f.forward.oldToken} | ${f.forward.oldQuote} | ${f.forward.retryDeliveredMs} ms | ${f.forward.assignmentCancelMs} ms | 1 (one refund) |`);
    w(
      `| −1 h | ${f.back.aheadToken} (minted at +1 h) | ${f.back.aheadQuote} (quoted at +1 h) | ${f.back.retryDeliveredMs} ms | — | 0 of ${f.back.transfersStillOpen} |`,
    );
  } else w(`Result: ${status(c)}.`);
  w();
  w('## 10. Webhook receivers that never answer (`test/stress/faults/webhook-hang.ts`)');
  w();
  w('50 endpoints (of three other merchants) on a receiver that accepts the connection and never answers,');
  w("each with a backlog, while a healthy merchant's transfers and cancels produce events for its own live");
  w('receiver. The worker counts a send unanswered after 1 s as slow: it stops holding one of the');
  w('`WEBHOOK_CONCURRENCY` slots (slow sends have a bound of their own, 8 × the concurrency), and its endpoint');
  w("gets one send at a time until it answers in time again. Asserted: the healthy endpoint's deliveries");
  w('flow (p95 under 1 s, the slowest under half the timeout), every message to the dead endpoints is kept,');
  w('pending its retry, and all of them were tried. Before this, the 50 dead endpoints held all 32 slots and');
  w('the healthy endpoint got nothing for the whole run.');
  w();
  const h = get<WebhookHangFigures>('webhook-hang', 'sqlite');
  if (h?.figures) {
    const f = h.figures;
    w(
      '| Dead endpoints | Messages to them | Connections held | Timeout | Healthy deliveries | p50 | p95 | Slowest | Dead messages tried / pending / lost | Time |',
    );
    w('|---|---|---|---|---|---|---|---|---|---|');
    w(
      `| ${f.hangingEndpoints} | ${f.hangingMessages} | ${f.connectionsHeld} | ${f.timeoutSeconds} s | ${f.healthy.deliveries} | ${f.healthy.p50} ms | ${f.healthy.p95} ms | ${f.healthy.max} ms | ${f.hanging.attempted} / ${f.hanging.pending} / ${f.hanging.lost} | ${secs(h.ms)} |`,
    );
  } else w(`Result: ${status(h)}.`);
  w();
}
