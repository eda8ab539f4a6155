import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import type { Config, DatabaseIsolation } from '../config.ts';
import { allMigrations } from './migrations/index.ts';
import { directReads, directRowCount } from './prepared.ts';
import { reusedName } from './reused-statements.ts';
import { NodeSqliteDialect, openSqlite, openSqliteReader } from './sqlite-dialect.ts';
import type { DB, Dialect } from './types.ts';

export type { Dialect } from './types.ts';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /** Where the data lives, without secrets: a file path or host/database. */
  describe: string;
  /** PostgreSQL pool use (metrics); undefined for SQLite (one connection). */
  poolStats?(): { total: number; idle: number; waiting: number };
  /**
   * PostgreSQL only: the NOTIFY channel for `name` in this schema (deployments and test runs sharing a
   * server never hear each other), and LISTEN on it over a connection of its own (reconnecting after a
   * loss). Returns how to stop listening; close() stops every listener.
   */
  notifications?: {
    channel(name: string): string;
    listen(name: string, onMessage: (payload: string) => void): Promise<() => Promise<void>>;
  };
  close(): Promise<void>;
}

export interface DatabaseOptions {
  url: string;
  poolSize?: number;
  /** PostgreSQL schema (search_path); tests use one per run. */
  schema?: string;
  /** PostgreSQL default_transaction_isolation (every statement and transaction); SQLite is always serializable. */
  isolation?: DatabaseIsolation;
  /**
   * PostgreSQL statement_timeout / lock_timeout (ms, sent when the connection opens; unset or 0: the
   * server's own): a statement stuck behind a lock or running away is cancelled by the server (a 503),
   * and the connection stays usable, instead of the client-side query timeout discarding it.
   */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  /**
   * PostgreSQL: send the statements marked with reusedStatement() as named (server-side prepared) ones,
   * parsed and planned once per connection (default true). Off behind PgBouncer in transaction mode
   * before 1.21, which hands each transaction a different server connection.
   */
  preparedStatements?: boolean;
  onPoolError?: (err: Error) => void;
}

/** The configured statement and lock timeouts, for the long-running processes (`mds serve`, `mds worker`); CLI commands keep the server's own. */
export const databaseTimeouts = (config: Pick<Config, 'databaseStatementTimeoutMs' | 'databaseLockTimeoutMs'>) => ({
  statementTimeoutMs: config.databaseStatementTimeoutMs,
  lockTimeoutMs: config.databaseLockTimeoutMs,
});

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
  // After the writer: it has put the file in WAL mode, which a read-only connection cannot.
  const dialect = new NodeSqliteDialect(sqlite, openSqliteReader(path));
  const db = new Kysely<DB>({ dialect });
  directReads.set(db, (sql, parameters) => dialect.readNow(sql, parameters));
  return { db, dialect: 'sqlite', describe: path, close: () => db.destroy() };
}

// 64-bit integers (money, epoch ms) as JS numbers: every value we store is far below 2^53.
function parseInt8(v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new RangeError(`a 64-bit value (${v}) is beyond what a JS number holds exactly`);
  return n;
}

const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 /* int8 */) return parseInt8;
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * A client that gives up its connection when a query's answer does not come in time. The answer may
 * never come (a network partition, a firewall that dropped the connection); a client still waiting for
 * it would go back to the pool and fail every later query after the same timeout. So the connection is
 * destroyed: its queries fail with "Query read timeout" (a 503), and the pool discards it.
 *
 * The timeout is the client's own rather than pg's `query_timeout`: pg's wraps every query's callback in
 * a closure that holds the query, and with it every query's rows outlived the young generation's
 * collections (PostgreSQL reads promoted ~22 KiB an answer to the old generation, and each scavenge
 * paused the server 8-12 ms: docs/benchmarks.md, "Eleventh pass"). Here the timer's callback holds only
 * the client, and the wrapper only the timer and the caller's callback.
 *
 * pg is always given a callback, also when the caller wants a promise (Kysely, for every statement it
 * runs): with pg's own promise, what each statement's request held outlived two scavenges and was
 * promoted (0.30 MB a scavenge on a loop of quotes for a missing warehouse; 0.01 with a callback:
 * docs/benchmarks.md "Thirty-second pass").
 */
class TimeoutSafeClient extends pg.Client {
  /** Whether reused statements go named (DatabaseOptions.preparedStatements, passed on by the pool). */
  readonly #prepared: boolean;
  readonly #readTimeoutMs: number | undefined;
  readonly #timedOut = () => this.connection.stream.destroy(new Error('Query read timeout'));
  constructor(config: pg.ClientConfig & { preparedStatements?: boolean; readTimeoutMs?: number } = {}) {
    super(config);
    this.#prepared = config.preparedStatements !== false;
    this.#readTimeoutMs = config.readTimeoutMs;
  }
  override query(...args: any[]): any {
    if (this.#prepared && typeof args[0] === 'string' && Array.isArray(args[1])) {
      const name = reusedName(args[0]);
      if (name) args = [{ name, text: args[0], values: args[1] }, ...args.slice(2)];
    }
    const query = super.query as (...a: unknown[]) => unknown;
    if (typeof args[0]?.submit === 'function') return query.apply(this, args); // a submittable (a cursor) keeps its own pace
    const timer = this.#readTimeoutMs ? setTimeout(this.#timedOut, this.#readTimeoutMs) : undefined;
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      args[last] = settled(timer, args[last]);
      return query.apply(this, args);
    }
    // Asked for a promise (Kysely's statements): pg still gets a callback, and the promise is this one (see above).
    return new Promise((resolve, reject) => {
      const answered = settled(timer, (err, result) => (err ? reject(err) : resolve(result)));
      try {
        query.call(this, args[0], args[1], answered);
      } catch (err) {
        clearTimeout(timer); // refused before it was sent: no answer will come to clear it
        reject(err);
      }
    });
  }
}

/** Clears a query's read timer when its answer (or error) comes, then passes it on. */
const settled =
  (timer: NodeJS.Timeout | undefined, callback?: (err: unknown, result?: unknown) => void) =>
  (err?: unknown, result?: unknown): void => {
    clearTimeout(timer);
    callback?.(err, result);
  };

function openPostgres(opts: DatabaseOptions): Database {
  // Session settings sent in the startup packet, so every pooled connection has them from its first statement.
  const startupOptions: string[] = [];
  if (opts.schema) startupOptions.push(`-c search_path=${opts.schema}`);
  if (opts.isolation) startupOptions.push(`-c default_transaction_isolation=${opts.isolation.replace(' ', '\\ ')}`);
  // The pool hands its whole config to each client it makes: preparedStatements travels with it.
  const config: pg.PoolConfig & { preparedStatements: boolean; readTimeoutMs: number } = {
    Client: TimeoutSafeClient,
    preparedStatements: opts.preparedStatements ?? true,
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    // A statement that hangs (dead server, network partition) must not hold a request forever: the server's
    // statement_timeout (when set) fires first, this one only when the server itself cannot answer.
    readTimeoutMs: (opts.statementTimeoutMs || 10_000) + 5_000,
    ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
    ...(opts.lockTimeoutMs ? { lock_timeout: opts.lockTimeoutMs } : {}),
    types,
    ...(startupOptions.length ? { options: startupOptions.join(' ') } : {}),
  };
  const pool = new pg.Pool(config);
  // A client losing its connection emits 'error'; unhandled, that crashes the process. The pool listens
  // only while a client is idle, so one killed between two statements of a transaction would: every
  // client gets a listener of its own. Its next statement fails (a 503) and the pool discards it on release.
  pool.on('error', () => {}); // idle clients: already reported by their own listener
  pool.on('connect', (client) => client.on('error', (err) => opts.onPoolError?.(err)));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  // One statement outside a transaction (a compiled read, a hand-written write: src/db/prepared.ts), straight to
  // a free connection, as Kysely would take it. The connection goes back as Kysely gives it back, also after the
  // statement failed: a refusal the statement raises on purpose (the payment's unaffordable debit), a retried
  // serialization failure or a lock timeout leave it usable, and pool.query would have closed it and made the
  // next request connect and prepare again. One whose connection broke is dropped by the pool itself.
  const direct =
    <T>(pick: (result: pg.QueryResult) => T) =>
    (text: string, values: readonly unknown[]) =>
      new Promise<T>((resolve, reject) => {
        pool.connect((connectError, client, release) => {
          if (connectError || !client) return reject(connectError);
          try {
            client.query(text, values as unknown[], (error: Error | undefined, result: pg.QueryResult) => {
              release();
              if (error) reject(error);
              else resolve(pick(result));
            });
          } catch (error) {
            release(error as Error); // refused before it was sent (as pool.query does): the pool drops that client
            reject(error);
          }
        });
      });
  directReads.set(
    db,
    direct((result) => result.rows),
  );
  directRowCount.set(
    db,
    direct((result) => result.rowCount ?? 0),
  );
  const u = new URL(opts.url);
  const listeners = new Set<() => Promise<void>>();
  const channel = (name: string) =>
    `mds_${name}_${opts.schema ?? 'public'}`
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, '_')
      .slice(0, 63);
  return {
    db,
    dialect: 'postgres',
    describe: `${u.hostname}:${u.port || 5432}${u.pathname}${opts.schema ? ` (schema ${opts.schema})` : ''}`,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    notifications: {
      channel,
      async listen(name, onMessage) {
        const stop = await listenFor(opts, channel(name), onMessage);
        const remove = async () => {
          listeners.delete(remove);
          await stop();
        };
        listeners.add(remove);
        return remove;
      },
    },
    close: async () => {
      await Promise.all([...listeners].map((stop) => stop()));
      await db.destroy();
    },
  };
}

/**
 * LISTEN on one channel over a dedicated connection (a pooled one would be handed to other queries).
 * A lost connection is replaced after a second; notifications sent meanwhile are lost, so listeners
 * must also poll (the dispatcher does, and the offer stream lists open offers when it connects).
 */
async function listenFor(opts: DatabaseOptions, channelName: string, onMessage: (payload: string) => void): Promise<() => Promise<void>> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const reconnect = () => {
    clearTimeout(retry);
    if (!stopped) retry = setTimeout(() => void connect().catch(reconnect), 1000);
  };
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: opts.url, connectionTimeoutMillis: 5_000 });
    c.on('notification', (n) => {
      if (n.channel === channelName) onMessage(n.payload ?? '');
    });
    c.on('error', (err) => {
      opts.onPoolError?.(err);
      c.end().catch(() => {});
      if (client === c) reconnect();
    });
    client = c;
    try {
      await c.connect();
      await c.query(`listen "${channelName}"`);
    } catch (err) {
      c.end().catch(() => {});
      throw err;
    }
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}

export async function migrateToLatest(database: Database): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema unless told which one: a database holding
  // another schema with them (another deployment, a parallel test run) would make it skip creating ours.
  const migrationTableSchema =
    database.dialect === 'postgres'
      ? ((await sql<{ schema: string | null }>`select current_schema() as schema`.execute(database.db)).rows[0]?.schema ?? undefined)
      : undefined;
  const migrator = new Migrator({
    db: database.db,
    provider: { getMigrations: async () => allMigrations(database.dialect) },
    migrationTableSchema,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** True when the newest migration this code knows has been applied (false on an empty or older schema). */
export async function schemaIsCurrent(database: Database): Promise<boolean> {
  const names = Object.keys(allMigrations(database.dialect));
  const latest = names[names.length - 1];
  try {
    const row = await sql<{ name: string }>`select name from kysely_migration where name = ${latest}`.execute(database.db);
    return row.rows.length === 1;
  } catch (err) {
    if (/kysely_migration/.test((err as Error).message ?? '')) return false; // no migration table: never migrated
    throw err;
  }
}
