import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { CompiledQuery, type DatabaseConnection, type Driver, SqliteDialect, SqliteDriver } from 'kysely';

/**
 * Kysely's SQLite dialect speaks the better-sqlite3 interface; node:sqlite needs a thin adapter
 * (no native build). Writes use BEGIN IMMEDIATE so that two processes on one file (the server and
 * the operator CLI) queue on the write lock instead of failing with SQLITE_BUSY halfway through.
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

class NodeSqliteAdapter {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, { stmt: StatementSync; reader: boolean }>();
  constructor(db: DatabaseSync) {
    this.#db = db;
  }
  close(): void {
    this.#cache.clear();
    if (this.#db.isOpen) this.#db.close();
  }
  prepare(sql: string) {
    let entry = this.#cache.get(sql);
    if (!entry) {
      const stmt = this.#db.prepare(sql);
      entry = { stmt, reader: stmt.columns().length > 0 };
      if (this.#cache.size > 500) this.#cache.clear(); // bounded: queries are built from a fixed set of shapes
      this.#cache.set(sql, entry);
    }
    const { stmt, reader } = entry;
    return {
      reader,
      all: (params: ReadonlyArray<unknown>) => stmt.all(...(params as never[])),
      run: (params: ReadonlyArray<unknown>) => stmt.run(...(params as never[])),
      iterate: (params: ReadonlyArray<unknown>) => stmt.iterate(...(params as never[])),
    };
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

export class NodeSqliteDialect extends SqliteDialect {
  readonly #adapter: NodeSqliteAdapter;
  constructor(db: DatabaseSync) {
    const adapter = new NodeSqliteAdapter(db);
    super({ database: adapter });
    this.#adapter = adapter;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver({ database: this.#adapter });
  }
}
