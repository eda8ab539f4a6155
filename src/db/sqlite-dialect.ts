import { DatabaseSync, type StatementSync } from 'node:sqlite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryCompiler,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  SqliteDialect,
  type TransactionSettings,
} from 'kysely';

/**
 * Kysely over node:sqlite (no native build), with group commit.
 *
 * Every commit in WAL mode with synchronous=FULL waits for an fsync, and node:sqlite waits on the event
 * loop: committing once per request caps writes at the disk's sync rate whatever the CPU could do. So
 * write work is batched into one durable commit:
 *
 * - One writer connection. The first write opens a batch (BEGIN IMMEDIATE, which also queues behind
 *   other processes on the file, the operator CLI, instead of failing halfway through).
 * - Each transaction (Kysely's `db.transaction()`, i.e. `inTransaction`) runs inside the batch in its own
 *   SAVEPOINT: its refusal (ROLLBACK TO) undoes its own part only; its success RELEASEs the savepoint.
 *   Transactions still run one at a time (a FIFO lock on the connection), so each sees the ones before
 *   it exactly as if they had committed: serial execution, as before.
 * - The batch COMMITs in a setImmediate after it opened: once this turn of the event loop has run every
 *   request that was ready, whatever joined the batch becomes durable in one fsync.
 * - Nothing is answered before the commit that contains it is on disk: releasing the connection after a
 *   transaction (committed or refused) or after any statement run while a batch is open waits for that
 *   batch's COMMIT. If the COMMIT fails, or a statement's error aborted the whole SQL transaction, every
 *   caller in the batch gets that error: none of their work happened.
 * - A read outside any transaction sees committed data only. With no batch open it runs on the writer
 *   connection. While a batch is open it runs on a second, read-only connection to the file (WAL: never
 *   blocked by the writer): it does not wait for the batch's fsync, and a batch the disk refuses
 *   (SQLITE_FULL) fails only its own writers, so reads go on working. (An in-memory database has no
 *   second connection: there, such a read joins the batch and waits for its COMMIT.)
 *
 * kill -9 at any point loses only batches whose COMMIT had not returned, and none of their answers had
 * been sent. No durability setting changes.
 */
export function openSqlite(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec('PRAGMA journal_mode = WAL');
  // Money lives here: a commit is on disk before we answer (survives kill -9 and power loss).
  db.exec('PRAGMA synchronous = FULL');
  db.exec('PRAGMA foreign_keys = ON');
  db.exec('PRAGMA busy_timeout = 5000');
  return db;
}

/** The read-only connection for reads outside transactions (committed data only); none for `:memory:`. */
export function openSqliteReader(path: string): DatabaseSync | undefined {
  if (path === ':memory:' || path === '') return undefined;
  const db = new DatabaseSync(path, { readOnly: true });
  db.exec('PRAGMA busy_timeout = 5000');
  return db;
}

/** A FIFO lock: the batch's COMMIT takes its turn after the transactions that queued before it. */
class FifoLock {
  #held = false;
  readonly #waiters: Array<() => void> = [];
  acquire(): Promise<void> | undefined {
    if (!this.#held) {
      this.#held = true;
      return undefined;
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#held = false;
  }
  /** Held, or promised to a waiter. */
  get busy(): boolean {
    return this.#held;
  }
}

interface Batch {
  /** Resolves once COMMIT has returned (the batch is on disk); rejects if it did not commit. */
  done: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
  failed?: unknown;
  jobs: number;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const done = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  done.catch(() => {}); // every waiter gets the error through its own await; never unhandled
  return { done, resolve, reject, jobs: 0 };
}

const JOB_SAVEPOINT = 'mds_job';
/** Statements that change nothing: outside a transaction they never open a batch. */
const READ_ONLY = /^\s*(select|explain|pragma|values)\b/i;
/** What may run on the reader connection: queries only (a pragma may set connection state). */
const QUERY = /^\s*(select|values)\b/i;

type Prepared = {
  stmt: StatementSync;
  reader: boolean;
  writes: boolean;
  query: boolean;
  /** The statement's rows, as objects (reader statements only). */
  all(parameters: readonly unknown[]): unknown[];
  /** One array of values to its row object (undefined: the statement returns node:sqlite's objects). */
  row: ((values: unknown[]) => unknown) | undefined;
};

/** A result list that expands `*` (`select *`, `t.*`): its columns follow the schema, not the statement's text. */
const STAR = /(^|[\s,(])select\s+(distinct\s+)?(\*|("[^"]+"|\w+)\.\*)|,\s*(\*|("[^"]+"|\w+)\.\*)\s*(,|from\b)/i;

/**
 * Rows as plain objects of one shape per statement. node:sqlite's own row objects are dictionary-mode
 * objects whose keys it internalises on every row: a 50-row read cost 63 µs in the driver and 37 more
 * in the remembered shapes' check of it (src/lib/remembered-shapes.ts); as arrays turned into objects by
 * one object literal made per statement, 46 and 9 (docs/benchmarks.md, "Fifteenth pass"). The keys are
 * the statement's own column names, as JSON string literals; the same object as node:sqlite's except
 * for its prototype (a later duplicate name wins in both). Only for statements that name their columns:
 * SQLite prepares a statement again after another process changes the schema, and a `*` would then
 * expand to other columns than the literal's (a dropped column moves the ones after it), where a named
 * column that is gone fails the statement. Those, and a `__proto__` column, keep node:sqlite's objects.
 */
function rowMaker(sql: string, columns: string[]): ((values: unknown[]) => unknown) | undefined {
  if (columns.length === 0 || columns.includes('__proto__') || STAR.test(sql)) return undefined;
  return new Function('v', `return { ${columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(', ')} };`) as (values: unknown[]) => unknown;
}

/** Prepared statements of one connection, by SQL text. */
class StatementCache {
  readonly #db: DatabaseSync;
  readonly #map = new Map<string, Prepared>();
  constructor(db: DatabaseSync) {
    this.#db = db;
  }
  get(sql: string): Prepared {
    let entry = this.#map.get(sql);
    if (!entry) {
      const stmt = this.#db.prepare(sql);
      const writes = !READ_ONLY.test(sql);
      const columns = stmt.columns().map((c) => c.name);
      const row = rowMaker(sql, columns);
      if (row) stmt.setReturnArrays(true);
      const all = row
        ? (parameters: readonly unknown[]) => {
            const values = stmt.all(...(parameters as never[])) as unknown as unknown[][];
            const rows = new Array<unknown>(values.length);
            for (let i = 0; i < values.length; i++) rows[i] = row(values[i]);
            return rows;
          }
        : (parameters: readonly unknown[]) => stmt.all(...(parameters as never[]));
      entry = { stmt, reader: columns.length > 0, writes, query: !writes && QUERY.test(sql), all, row };
      if (this.#map.size > 500) this.#map.clear(); // bounded: queries are built from a fixed set of shapes
      this.#map.set(sql, entry);
    }
    return entry;
  }
  clear(): void {
    this.#map.clear();
  }
}

class GroupCommitConnection implements DatabaseConnection {
  readonly db: DatabaseSync;
  readonly #cache: StatementCache;
  /** The read-only connection's statements, if there is one. */
  readonly #reads: StatementCache | undefined;
  readonly #driver: GroupCommitSqliteDriver;
  /** Inside a transaction (between begin and commit/rollback). */
  inJob = false;
  /** The batch the current holder's work belongs to: released only after it commits. */
  waitFor: Batch | undefined;
  constructor(db: DatabaseSync, reader: DatabaseSync | undefined, driver: GroupCommitSqliteDriver) {
    this.db = db;
    this.#cache = new StatementCache(db);
    this.#reads = reader && new StatementCache(reader);
    this.#driver = driver;
  }

  /** Runs one statement as is (no batching decisions): the driver's own BEGIN/SAVEPOINT/COMMIT. */
  exec(sql: string): void {
    this.#cache.get(sql).stmt.run();
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const { sql, parameters } = compiledQuery;
    let prepared = this.#cache.get(sql);
    if (prepared.query && this.#reads && !this.inJob && !this.waitFor && this.#driver.currentBatch) {
      // A query outside a transaction while a batch is open, by a holder that has not written (it must see
      // its own write): on the reader, against committed data, so it neither waits for the batch nor fails with it.
      prepared = this.#reads.get(sql);
    } else if (!this.inJob) {
      // Outside a transaction: a write joins (or opens) the batch; a read joins an open batch (in memory: it
      // could see its uncommitted work), else runs on the writer, whose cache is warm, against committed data.
      const batch = prepared.writes ? this.#driver.openBatch(this) : this.#driver.currentBatch;
      if (batch) {
        batch.jobs++;
        this.waitFor = batch;
      }
    }
    const { stmt, reader } = prepared;
    try {
      if (reader) return { rows: prepared.all(parameters) as R[] };
      const { changes, lastInsertRowid } = stmt.run(...(parameters as never[]));
      return { insertId: BigInt(lastInsertRowid), numAffectedRows: BigInt(changes), rows: [] };
    } catch (err) {
      this.#driver.checkBatchAlive(this, err);
      throw err;
    }
  }

  /**
   * A query run at once, where executeQuery would run it the same way right after taking a free lock:
   * outside any transaction, on the writer with no batch open, else on the reader (committed data).
   * undefined when it cannot (not a plain query, or a batch open and no reader): go through Kysely.
   */
  readNow(sql: string, parameters: readonly unknown[]): unknown[] | undefined {
    let prepared = this.#cache.get(sql);
    if (!prepared.query || !prepared.reader) return undefined;
    if (this.#driver.currentBatch) {
      if (!this.#reads) return undefined;
      prepared = this.#reads.get(sql);
    }
    return prepared.all(parameters);
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('Sqlite driver only supports streaming of select queries');
    const batch = this.inJob ? undefined : this.#driver.currentBatch;
    if (batch) this.waitFor = batch;
    const { stmt, row } = this.#cache.get(compiledQuery.sql);
    for (const values of stmt.iterate(...(compiledQuery.parameters as never[]))) yield { rows: [(row ? row(values as unknown as unknown[]) : values) as R] };
  }

  clearCache(): void {
    this.#cache.clear();
    this.#reads?.clear();
  }
}

export class GroupCommitSqliteDriver implements Driver {
  readonly #db: DatabaseSync;
  readonly #reader: DatabaseSync | undefined;
  readonly #lock = new FifoLock();
  readonly #connection: GroupCommitConnection;
  #batch: Batch | undefined;
  /** Commits made and requests they carried (for tests and diagnostics). */
  readonly stats = { commits: 0, jobs: 0 };

  constructor(db: DatabaseSync, reader?: DatabaseSync) {
    this.#db = db;
    this.#reader = reader;
    this.#connection = new GroupCommitConnection(db, reader, this);
  }

  get currentBatch(): Batch | undefined {
    return this.#batch;
  }

  /** A read outside any transaction, synchronously, if nobody holds or awaits the connection; else undefined. */
  readNow(sql: string, parameters: readonly unknown[]): unknown[] | undefined {
    return this.#lock.busy ? undefined : this.#connection.readNow(sql, parameters);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#lock.acquire();
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    const conn = this.#connection;
    const batch = conn.waitFor;
    conn.waitFor = undefined;
    conn.inJob = false;
    this.#lock.release();
    if (batch) await batch.done; // the answer waits for the commit that contains its work
  }

  /** The open batch, opening one (BEGIN IMMEDIATE, COMMIT scheduled) if none is. Called with the lock held. */
  openBatch(conn: GroupCommitConnection): Batch {
    if (this.#batch) return this.#batch;
    conn.exec('BEGIN IMMEDIATE'); // throws SQLITE_BUSY after busy_timeout: nothing opened, the caller retries
    const batch = newBatch();
    this.#batch = batch;
    setImmediate(() => void this.#commit(batch));
    return batch;
  }

  /** After a failed statement inside a batch: if SQLite rolled the whole transaction back, the batch is lost. */
  checkBatchAlive(_conn: GroupCommitConnection, err: unknown): void {
    const batch = this.#batch;
    if (batch && !this.#db.isTransaction) this.#fail(batch, err);
  }

  #fail(batch: Batch, err: unknown): void {
    if (this.#batch === batch) this.#batch = undefined;
    if (batch.failed === undefined) batch.failed = err ?? new Error('the batch was rolled back');
    batch.reject(batch.failed);
  }

  async #commit(batch: Batch): Promise<void> {
    await this.#lock.acquire();
    try {
      if (this.#batch !== batch) return; // already failed
      this.#batch = undefined;
      try {
        this.#connection.exec('COMMIT');
        this.stats.commits++;
        this.stats.jobs += batch.jobs;
        batch.resolve();
      } catch (err) {
        try {
          if (this.#db.isTransaction) this.#connection.exec('ROLLBACK');
        } catch {}
        this.#fail(batch, err);
      }
    } finally {
      this.#lock.release();
    }
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    const conn = connection as GroupCommitConnection;
    const batch = this.openBatch(conn);
    conn.exec(`SAVEPOINT ${JOB_SAVEPOINT}`);
    batch.jobs++;
    conn.inJob = true;
    conn.waitFor = batch;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const conn = connection as GroupCommitConnection;
    try {
      conn.exec(`RELEASE ${JOB_SAVEPOINT}`);
    } catch (err) {
      this.checkBatchAlive(conn, err);
      throw err;
    } finally {
      conn.inJob = false;
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const conn = connection as GroupCommitConnection;
    conn.inJob = false;
    const batch = conn.waitFor;
    if (!this.#db.isTransaction) {
      // A statement's error already rolled the whole SQL transaction back: the batch is lost with it.
      if (batch) this.#fail(batch, batch.failed ?? new Error('the SQLite transaction was rolled back'));
      return;
    }
    // Only this transaction's part; the others in the batch stay. Its refusal is still answered after the
    // COMMIT (conn.waitFor): it may rest on their uncommitted work (a quote they consumed).
    conn.exec(`ROLLBACK TO ${JOB_SAVEPOINT}`);
    conn.exec(`RELEASE ${JOB_SAVEPOINT}`);
  }

  async savepoint(connection: DatabaseConnection, name: string, compileQuery: QueryCompiler['compileQuery']): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteName(name)}`));
    void compileQuery;
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoteName(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoteName(name)}`));
  }

  async destroy(): Promise<void> {
    // Let an open batch commit (its callers are waiting for it), then close.
    const pending = this.#batch;
    if (pending) await this.#commit(pending);
    await this.#lock.acquire();
    try {
      this.#connection.clearCache();
      if (this.#reader?.isOpen) this.#reader.close();
      if (this.#db.isOpen) this.#db.close();
    } finally {
      this.#lock.release();
    }
  }
}

const quoteName = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** SQLite's adapter, minus Kysely's own connection mutex: the driver locks (and waits for commits) itself. */
class GroupCommitSqliteAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

export class NodeSqliteDialect extends SqliteDialect {
  readonly #db: DatabaseSync;
  readonly #reader: DatabaseSync | undefined;
  #driver: GroupCommitSqliteDriver | undefined;
  constructor(db: DatabaseSync, reader?: DatabaseSync) {
    super({ database: {} as never });
    this.#db = db;
    this.#reader = reader;
  }
  override createDriver(): Driver {
    this.#driver = new GroupCommitSqliteDriver(this.#db, this.#reader);
    return this.#driver;
  }
  /** See GroupCommitSqliteDriver.readNow; undefined before Kysely has made the driver. */
  readNow(sql: string, parameters: readonly unknown[]): unknown[] | undefined {
    return this.#driver?.readNow(sql, parameters);
  }
  override createAdapter(): SqliteAdapter {
    return new GroupCommitSqliteAdapter();
  }
}
