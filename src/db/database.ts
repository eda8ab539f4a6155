import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { allMigrations } from './migrations/index.ts';
import { NodeSqliteDialect, openSqlite } from './sqlite-dialect.ts';
import type { DB } from './types.ts';

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /** Where the data lives, without secrets: a file path or host/database. */
  describe: string;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  url: string;
  poolSize?: number;
  /** PostgreSQL schema (search_path); tests use one per run. */
  schema?: string;
  onPoolError?: (err: Error) => void;
}

export function dialectOf(url: string): Dialect {
  return /^postgres(ql)?:\/\//.test(url) ? 'postgres' : 'sqlite';
}

export function sqlitePath(url: string): string {
  return url.replace(/^(sqlite|file):(\/\/)?/, '');
}

export function openDatabase(opts: DatabaseOptions): Database {
  if (dialectOf(opts.url) === 'postgres') return openPostgres(opts);
  const path = sqlitePath(opts.url);
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqlite = openSqlite(path);
  const db = new Kysely<DB>({ dialect: new NodeSqliteDialect(sqlite) });
  return { db, dialect: 'sqlite', describe: path, close: () => db.destroy() };
}

// 64-bit integers (money, epoch ms) as JS numbers: every value we store is far below 2^53.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 /* int8 */) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format);
  },
};

function openPostgres(opts: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    // A statement that hangs (lost lock, dead server) must not hold a request forever.
    query_timeout: 15_000,
    types,
    ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
  });
  // An idle client losing its connection emits 'error' on the pool; unhandled, that would crash the process.
  pool.on('error', (err) => opts.onPoolError?.(err));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  const u = new URL(opts.url);
  return {
    db,
    dialect: 'postgres',
    describe: `${u.hostname}:${u.port || 5432}${u.pathname}${opts.schema ? ` (schema ${opts.schema})` : ''}`,
    close: () => db.destroy(),
  };
}

export async function migrateToLatest(database: Database): Promise<string[]> {
  const migrator = new Migrator({
    db: database.db,
    provider: { getMigrations: async () => allMigrations(database.dialect) },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
