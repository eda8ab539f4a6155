// `npm test`: the whole suite. SQLite always; PostgreSQL when TEST_POSTGRES_URL is set (CI sets it and
// must fail if the server is unreachable); with PostgreSQL, the money races and multi-instance suites
// also run through PgBouncer in transaction mode when pgbouncer is installed (REQUIRE_PGBOUNCER=1 makes
// its absence a failure). Extra arguments are passed to `node --test` (e.g. a file).
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { type PgBouncer, pgbouncerBinary, startPgBouncer } from './lib/pgbouncer.ts';

const url = process.env.TEST_POSTGRES_URL;
const banner = (text: string) => console.log(`\n=== ${text} ===\n`);
const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test' };
let bouncer: PgBouncer | undefined;

if (url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('select 1');
    banner(`PostgreSQL suite ENABLED (${url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')})`);
  } catch (err) {
    console.error(`TEST_POSTGRES_URL is set but PostgreSQL is unreachable: ${(err as Error).message}`);
    process.exit(1);
  } finally {
    await client.end().catch(() => {});
  }
  if (pgbouncerBinary()) {
    try {
      bouncer = await startPgBouncer(url);
      env.TEST_PGBOUNCER_URL = bouncer.baseUrl;
      banner(`PgBouncer suites ENABLED (transaction pooling at ${bouncer.baseUrl})`);
    } catch (err) {
      console.error(`pgbouncer is installed but did not start: ${(err as Error).message}`);
      process.exit(1);
    }
  } else if (process.env.REQUIRE_PGBOUNCER === '1') {
    console.error('REQUIRE_PGBOUNCER=1 but pgbouncer is not installed (apt-get install -y pgbouncer)');
    process.exit(1);
  } else {
    banner('PgBouncer suites SKIPPED: install pgbouncer (apt-get install -y pgbouncer) to run them');
  }
} else {
  banner('PostgreSQL suite SKIPPED: set TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it');
}

const args = process.argv.slice(2);
const files = args.filter((a) => !a.startsWith('-'));
// --test-timeout bounds every test and hook. --test-force-exit ends a file's process once its tests and
// hooks are done: without it, a handle left open (a socket, a timer) keeps the file's process alive, and
// node --test waits for it forever. A file once held CI for an hour that way with every test passed.
const result = spawnSync(
  process.execPath,
  [
    '--test',
    '--test-concurrency=2',
    '--test-timeout=180000',
    '--test-force-exit',
    ...args.filter((a) => a.startsWith('-')),
    ...(files.length ? files : ['test/**/*.test.ts']),
  ],
  { stdio: 'inherit', env },
);
await bouncer?.stop();
if (!url) banner('PostgreSQL suite SKIPPED (SQLite suite only)');
process.exit(result.status ?? 1);
