// `node bench/quote-statement.ts [rounds] [--locks]`: what PostgreSQL's CPU is for the quote's one statement,
// as the service sends it and without parts of its guard. The service quotes twice in a fresh schema and the
// statement it sent is taken (text and parameters); then 10 connections execute each variant in turn for
// 2 s, in one order and then the reverse, and the database's CPU an execution (its postmaster and
// children, /proc: whoever else uses that server is counted too) is printed as the median of the rounds.
// --locks also prints, for each variant, how many relation locks one execution holds afterwards outside
// PostgreSQL's per-backend fast path (16 slots in PostgreSQL 15). The tariffs table is empty (the built-in
// tariff is in force), as in npm run bench. BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
// The schema is dropped after, on Ctrl-C too.

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { moscowQuoteBody, warehouseBody } from '../scripts/lib/fixtures.ts';
import { buildApp } from '../src/app.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { migrateToLatest, openDatabase } from '../src/db/database.ts';
import { directRowCount } from '../src/db/prepared.ts';
import { postgresCpuMicros, postmasterOf } from './process-cpu.ts';

const args = process.argv.slice(2);
const rounds = Number(args.find((a) => /^\d+$/.test(a)) ?? 12);
if (rounds < 1) throw new Error('at least one round');
const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const KEYS = 'bench:dGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXk';
const schema = `quote_statement_${process.pid}`;

const admin = async (text: string) => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
};

/** The quote's statement as the service sends it (a merchant without webhook endpoints, no Idempotency-Key). */
async function capture(): Promise<{ sql: string; parameters: readonly unknown[] }> {
  const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'warn', TOKEN_SIGNING_KEYS: KEYS, DATABASE_URL: url });
  const database = openDatabase({ url, schema });
  let captured: { sql: string; parameters: readonly unknown[] } | undefined;
  // The quote's one statement goes straight to the pool (sendWrite in src/db/prepared.ts): taken there.
  const direct = directRowCount.get(database.db);
  if (!direct) throw new Error('no direct path to the pool: has src/db/database.ts changed?');
  directRowCount.set(database.db, (sql, parameters) => {
    if (sql.startsWith('with ok as')) captured = { sql, parameters };
    return direct(sql, parameters);
  });
  await migrateToLatest(database);
  const app = await buildApp({ config, database, signingKeys: parseSigningKeys(KEYS) });
  try {
    const { credential } = await app.services.merchants.create('Statement shop', 1e12, 'live');
    const token = await app.inject({
      method: 'POST',
      url: '/auth/token',
      payload: { grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret },
    });
    const headers = { authorization: `Bearer ${token.json().access_token}` };
    // The shared fixtures, as npm run bench's warehouses and quotes (scripts/lib/fixtures.ts).
    const warehouse = await app.inject({ method: 'POST', url: '/warehouses', headers, payload: warehouseBody() });
    const body = moscowQuoteBody(warehouse.json().id);
    // Both quotes send the statement; the first reads the context before it, the second remembers it.
    for (let i = 0; i < 2; i++) {
      const res = await app.inject({ method: 'POST', url: '/options', headers, payload: body });
      if (res.statusCode !== 201) throw new Error(`POST /options answered ${res.statusCode}: ${res.body}`);
    }
  } finally {
    await app.close();
    await database.close();
  }
  if (!captured) throw new Error('the quote statement was not seen');
  return captured;
}

await admin(`create schema ${schema}`);
process.once('SIGINT', () => {
  admin(`drop schema if exists ${schema} cascade`).finally(() => process.exit(130));
});
try {
  const { sql, parameters } = await capture();
  // The guard's parts, as src/modules/quotes/repository.ts writes them (insertWithEvent, no endpoints).
  const parts = {
    endpoints: /\n\s*and not exists \(select 1 from webhook_endpoints[^)]*\)/,
    tariff: '\n  cross join lateral (select max(version) as version from tariffs) t',
    tariffCheck: 't.version is not distinct from $4::bigint',
  };
  for (const [name, part] of Object.entries(parts)) {
    const found = typeof part === 'string' ? sql.split(part).length - 1 : (sql.match(new RegExp(part, 'g')) ?? []).length;
    if (found !== 1) throw new Error(`the guard's ${name} part is in the statement ${found} times, not once: has the guard changed?`);
  }
  const withoutEndpoints = (q: string) => q.replace(parts.endpoints, '');
  const withoutTariff = (q: string) => q.replace(parts.tariff, '').replace(parts.tariffCheck, '($4::bigint is null or true)');
  const okEnd = sql.indexOf('),\nq as');
  if (okEnd < 0) throw new Error('the guard (the ok CTE) is not where it was: has the statement changed?');
  const variants: Record<string, string> = {
    'as the service sends it': sql,
    'without the endpoints check': withoutEndpoints(sql),
    'without the tariff check': withoutTariff(sql),
    'the warehouse check only': withoutEndpoints(withoutTariff(sql)),
    // The parameters stay typed as the service's statement types them.
    'no guard (the two inserts)': `with ok as (select 1 where $1::text is not null and $2::text is not null and $3::text is not null and ($4::bigint is null or true))${sql.slice(okEnd + 1)}`,
  };
  for (const [name, text] of Object.entries(variants)) {
    if (name !== 'as the service sends it' && text === sql) throw new Error(`"${name}" did not change the statement: has the guard changed?`);
  }
  // Fresh ids for each execution: the quote's, and the transfer and event ids that the quote and its event share.
  // Indices into the parameters: $5 the quote's id, $8 its transfer_id, $9 its event_id, $19 the event's id,
  // $21 the event's transfer_id (QUOTE_COLUMNS and EVENT_COLUMNS in src/modules/quotes/repository.ts).
  const [QUOTE_ID, TRANSFER_ID, EVENT_ID, EVENT_ROW_ID, EVENT_TRANSFER_ID] = [4, 7, 8, 18, 20];
  if (parameters[TRANSFER_ID] !== parameters[EVENT_TRANSFER_ID] || parameters[EVENT_ID] !== parameters[EVENT_ROW_ID]) {
    throw new Error('the ids are not at QUOTE_ID, TRANSFER_ID, EVENT_ID, EVENT_ROW_ID, EVENT_TRANSFER_ID: have the columns changed?');
  }
  const valuesFor = () => {
    const transfer = randomUUID();
    const event = randomUUID();
    const values = [...parameters];
    values[QUOTE_ID] = randomUUID();
    values[TRANSFER_ID] = values[EVENT_TRANSFER_ID] = transfer;
    values[EVENT_ID] = values[EVENT_ROW_ID] = event;
    return values;
  };
  const pool = new pg.Pool({ connectionString: url, max: 10, options: `-c search_path=${schema}` });
  try {
    const postmaster = postmasterOf((await pool.query('select pg_backend_pid() as pid')).rows[0].pid);
    if (postmaster === undefined) throw new Error('the database server is not visible from here (/proc): its CPU cannot be read');
    const execute = async (client: pg.PoolClient | pg.Pool, name: string) => {
      const r = await client.query({ name: `v${Object.keys(variants).indexOf(name)}`, text: variants[name], values: valuesFor() });
      // The event's insert is the statement (its row count says), unless a variant answers a count.
      const written = r.rows[0]?.written ?? r.rowCount;
      if (Number(written) !== 1) throw new Error(`"${name}" wrote ${written} quotes, not 1`);
    };
    if (args.includes('--locks')) {
      const client = await pool.connect();
      try {
        for (const name of Object.keys(variants)) {
          for (let i = 0; i < 10; i++) await execute(client, name); // prepared and planned, as in the load
          await client.query('begin');
          await execute(client, name);
          const { rows } = await client.query(`select count(*) filter (where not fastpath)::int as shared,
              coalesce(string_agg(relation::regclass::text, ' ') filter (where not fastpath), '') as relations
            from pg_locks where pid = pg_backend_pid() and locktype = 'relation' and relation <> 'pg_locks'::regclass`);
          await client.query('rollback');
          console.log(`${name.padEnd(28)} relation locks outside the fast path: ${rows[0].shared} ${rows[0].relations}`);
        }
      } finally {
        client.release();
      }
    }
    const databaseCpu = () => {
      const micros = postgresCpuMicros(postmaster);
      if (micros === undefined) throw new Error('the database server is no longer visible (/proc)');
      return micros;
    };
    const round = async (name: string, ms: number) => {
      const cpu = databaseCpu();
      const end = Date.now() + ms;
      let n = 0;
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          while (Date.now() < end) {
            await execute(pool, name);
            n++;
          }
        }),
      );
      return { perExecution: (databaseCpu() - cpu) / n, perSecond: n / (ms / 1000) };
    };
    const names = Object.keys(variants);
    for (const name of names) await round(name, 500); // warm-up
    const cpu = new Map(names.map((n) => [n, [] as number[]]));
    const rate = new Map(names.map((n) => [n, [] as number[]]));
    for (let r = 0; r < rounds; r++) {
      for (const name of r % 2 ? [...names].reverse() : names) {
        const { perExecution, perSecond } = await round(name, 2000);
        cpu.get(name)?.push(perExecution);
        rate.get(name)?.push(perSecond);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    console.log(`\n${rounds} rounds of 2 s each, 10 connections; PostgreSQL CPU µs an execution (median, then each round) and executions a second`);
    for (const name of names) {
      const c = cpu.get(name) ?? [];
      console.log(
        `${name.padEnd(28)} ${median(c).toFixed(0).padStart(5)} µs  (${c.map((x) => x.toFixed(0)).join(' ')})  ${median(rate.get(name) ?? []).toFixed(0)}/s`,
      );
    }
  } finally {
    await pool.end();
  }
} finally {
  await admin(`drop schema if exists ${schema} cascade`);
}
