import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, type DatabaseConnection, type Kysely, sql } from 'kysely';
import pg from 'pg';
import { type Database, migrateToLatest } from '../../src/db/database.ts';
import { directReads } from '../../src/db/prepared.ts';
import type { DB } from '../../src/db/types.ts';

/**
 * The store matrix: every suite that uses describeEachStore runs on embedded SQLite and, when
 * TEST_POSTGRES_URL is set, on PostgreSQL too. Each test database is fresh: a temp file, or a
 * schema of its own (dropped afterwards), so runs can repeat and run in parallel.
 */
export type StoreName = 'sqlite' | 'postgres' | 'pgbouncer';

export interface TestStore {
  name: StoreName;
  url: string;
  schema?: string;
  /** The environment a server process needs to use this store. */
  env: Record<string, string>;
  /** false through PgBouncer (transaction mode): no named prepared statements (DATABASE_PREPARED_STATEMENTS). */
  preparedStatements?: boolean;
  cleanup(): Promise<void>;
}

export const POSTGRES_URL = process.env.TEST_POSTGRES_URL || undefined;
export const STORES: StoreName[] = POSTGRES_URL ? ['sqlite', 'postgres'] : ['sqlite'];
/**
 * PgBouncer (transaction pooling) in front of the same server, started by `npm test` (scripts/test.ts)
 * when PostgreSQL is enabled and pgbouncer is installed: postgres://USER@127.0.0.1:PORT/ (add a database).
 * Suites that opt in (money races, several instances) run a third time through it.
 */
export const PGBOUNCER_URL = (POSTGRES_URL && process.env.TEST_PGBOUNCER_URL) || undefined;

/** For suites that need PostgreSQL: the skip reason (printed once) when TEST_POSTGRES_URL is unset, else false. */
export function postgresOnly(what: string): string | false {
  if (POSTGRES_URL) return false;
  const reason = 'PostgreSQL only: set TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it';
  console.log(`# ${what} SKIPPED: ${reason}`);
  return reason;
}

export async function createStore(name: StoreName): Promise<TestStore> {
  if (name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'mds-test-'));
    const url = `sqlite:${join(dir, 'test.sqlite')}`;
    return { name, url, env: { DATABASE_URL: url }, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!POSTGRES_URL) throw new Error('TEST_POSTGRES_URL is not set');
  if (name === 'pgbouncer') {
    // Through a pooler in transaction mode, startup options (search_path) are refused: a database per store, not a schema.
    if (!PGBOUNCER_URL) throw new Error('TEST_PGBOUNCER_URL is not set');
    const database = `t_${randomBytes(6).toString('hex')}`;
    await adminQuery(`create database ${database}`);
    const url = `${PGBOUNCER_URL}${database}`;
    return {
      name,
      url,
      env: { DATABASE_URL: url, DATABASE_PREPARED_STATEMENTS: 'false' },
      preparedStatements: false,
      cleanup: async () => {
        await adminQuery(`drop database if exists ${database} with (force)`);
      },
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create schema ${schema}`);
  return {
    name,
    url: POSTGRES_URL,
    schema,
    env: { DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: schema },
    cleanup: async () => {
      await withSchemaLock(() => adminQuery(`drop schema if exists ${schema} cascade`));
    },
  };
}

/** One statement on the test PostgreSQL server, outside the service (set-up, fault injection). */
export async function adminQuery(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

/**
 * Kysely's migrator introspects every schema of the database (has_schema_privilege on each), which
 * fails with "schema ... does not exist" if a parallel test file drops its schema at that moment.
 * Dropping schemas and migrating therefore take turns, on a PostgreSQL advisory lock.
 */
const SCHEMA_LOCK = 72_010;

export async function withSchemaLock<T>(fn: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [SCHEMA_LOCK]);
    return await fn();
  } finally {
    await client.end(); // ending the session releases the lock
  }
}

/** migrateToLatest for tests: on PostgreSQL, under the schema lock. */
export async function migrateForTest(database: Database): Promise<void> {
  if (database.dialect === 'postgres') await withSchemaLock(() => migrateToLatest(database));
  else await migrateToLatest(database);
}

/** How many connections Kysely's executor provides to the queries `work` runs on db (direct reads take none). */
export async function connectionsProvided(db: { getExecutor(): unknown }, work: () => Promise<void>): Promise<number> {
  const executor = db.getExecutor() as { provideConnection: (consumer: (c: unknown) => Promise<unknown>) => Promise<unknown> };
  const provide = executor.provideConnection.bind(executor);
  let provided = 0;
  executor.provideConnection = (consumer) => {
    provided++;
    return provide(consumer);
  };
  try {
    await work();
  } finally {
    executor.provideConnection = provide;
  }
  return provided;
}

/**
 * Every statement `work` sends on db, its transactions' included. Direct reads are off meanwhile, so reads
 * go through a connection too. Each connection's executeQuery is wrapped in place: a copy of a connection
 * would lose its class's methods and state (SQLite's batch, for one). Everything is put back afterwards.
 */
export async function statementsSent<T>(db: Kysely<DB>, work: () => Promise<T>): Promise<{ result: T; sent: CompiledQuery[] }> {
  const direct = directReads.get(db);
  directReads.delete(db);
  const sent: CompiledQuery[] = [];
  const executor = db.getExecutor();
  const original = executor.provideConnection;
  const provide = original.bind(executor);
  const wrapped = new Set<DatabaseConnection>();
  executor.provideConnection = (consumer) =>
    provide((connection) => {
      if (!wrapped.has(connection)) {
        const run = connection.executeQuery.bind(connection);
        connection.executeQuery = (q) => {
          sent.push(q);
          return run(q);
        };
        wrapped.add(connection);
      }
      return consumer(connection);
    });
  try {
    return { result: await work(), sent };
  } finally {
    executor.provideConnection = original;
    for (const connection of wrapped) delete (connection as { executeQuery?: unknown }).executeQuery; // back to the class's own
    if (direct) directReads.set(db, direct);
  }
}

/** SQLite's plan of a statement as it was sent (EXPLAIN QUERY PLAN), its steps joined by '; '. */
export async function sqlitePlan(db: Kysely<DB>, q: CompiledQuery): Promise<string> {
  const { rows } = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${q.sql}`, [...q.parameters]));
  return rows.map((r) => r.detail).join('; ');
}

/** One step of a PostgreSQL plan (EXPLAIN's JSON node), as postgresPlanSteps lists them. */
export type PlanStep = Record<string, unknown>;

/**
 * Every step of PostgreSQL's plan of a statement as it was sent, depth first. `off` names planner
 * settings turned off for it alone (enable_seqscan, ...), in a transaction of its own.
 */
export async function postgresPlanSteps(db: Kysely<DB>, q: CompiledQuery, off: string[] = []): Promise<PlanStep[]> {
  const plan = await db.transaction().execute(async (trx) => {
    for (const setting of off) await sql`select set_config(${setting}, 'off', true)`.execute(trx);
    return (await trx.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`explain (format json) ${q.sql}`, [...q.parameters]))).rows[0]['QUERY PLAN'];
  });
  const steps: PlanStep[] = [];
  const walk = (node: PlanStep) => {
    steps.push(node);
    for (const child of (node.Plans as PlanStep[] | undefined) ?? []) walk(child);
  };
  walk((plan as Array<{ Plan: PlanStep }>)[0].Plan);
  return steps;
}
