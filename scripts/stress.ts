// `npm run test:stress`: the reliability families of issue 13, on SQLite and (with TEST_POSTGRES_URL) PostgreSQL:
// fuzzing, model-based commands, kill -9, soak. Writes the figures to RELIABILITY.md and exits 1 if any family failed.
//   STRESS_SEED=n        replay a run (the seed is printed and recorded)
//   --only=fuzz,model    run some families only (RELIABILITY.md is then left alone)
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { POSTGRES_URL, STORES, type StoreName } from '../test/helpers/stores.ts';
import { CI } from '../test/stress/common.ts';
import { type FuzzFigures, fuzzFamily } from '../test/stress/fuzz.ts';
import { type KillFigures, killFamily } from '../test/stress/kill.ts';
import { type ModelFigures, modelFamily } from '../test/stress/model.ts';
import { type SoakFigures, soakFamily, WARM_UP_SECONDS } from '../test/stress/soak.ts';

const FAMILIES = ['fuzz', 'model', 'kill', 'soak'] as const;
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
  figures?: T;
  error?: string;
  ms: number;
}

const outcomes: Array<Outcome<FuzzFigures | ModelFigures | KillFigures | SoakFigures>> = [];
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
  const status = (o: Outcome<unknown> | undefined) => (o === undefined ? 'not run' : o.ok ? 'PASS' : 'FAIL');
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
  w('and, when `TEST_POSTGRES_URL` is set, on PostgreSQL. CI ([`.ci/run`](.ci/run)) runs them after `npm test`');
  w('with PostgreSQL, within about 6 minutes. A failure prints the seed; `STRESS_SEED=<seed> npm run test:stress`');
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
  w('`npm start` runs it, with `--max-semi-space-size=64`: with the default young generation, RSS grew');
  w('32 % in this soak on PostgreSQL (256 → 337 MB, still climbing) although a full GC afterwards left');
  w('36 MB live, i.e. no leak but request objects promoted to the old generation before V8 first');
  w('collected it; with the flag RSS is flat after warm-up and throughput was higher.');
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
