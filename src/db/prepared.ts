import { type Compilable, CompiledQuery, type Kysely } from 'kysely';
import { reusedStatement } from './reused-statements.ts';
import type { DB, Db } from './types.ts';

/**
 * Reads that need no connection from Kysely, by database (the root Kysely instance; a transaction is
 * another object and never found here). SQLite registers its driver's readNow, which runs a plain
 * query synchronously when the connection is free, exactly where Kysely would have run it (undefined:
 * it cannot now, Kysely runs it). PostgreSQL registers one statement on any free connection of its
 * pool, given back as Kysely gives it back (src/db/database.ts). Either spares a hot read the executor's
 * promises and objects (~5.8 KiB a request, docs/benchmarks.md "Ninth pass"). A compiled write (the
 * balance update, an Idempotency-Key's claim) and a hand-written one (sendStatement) go the same way on
 * PostgreSQL, as one statement that commits by itself, as it would through Kysely. SQLite's readNow
 * refuses anything that writes.
 */
export const directReads = new WeakMap<object, (sql: string, parameters: readonly unknown[]) => unknown[] | Promise<unknown[]> | undefined>();
/** PostgreSQL's direct path again, answering the command's row count instead of its rows: see sendWrite. */
export const directRowCount = new WeakMap<object, (sql: string, parameters: readonly unknown[]) => Promise<number>>();

/**
 * Sends one statement whose text is written by hand (the PostgreSQL one-statement quote and payment, their
 * reads): outside a transaction straight to a pooled connection, as a compiled read goes (directReads), in a
 * transaction through Kysely. Its errors are the driver's, without Kysely's caller stack appended.
 * Kysely's executor (a connection checked out and back, its promises and query objects) allocated about
 * 7 of the 77 KiB a PostgreSQL quote allocates (docs/benchmarks.md "Thirty-third pass").
 */
export function sendStatement<Row>(db: Db, sql: string, parameters: readonly unknown[]): Promise<Row[]> {
  const rows = directReads.get(db)?.(sql, parameters);
  if (rows) return Promise.resolve(rows as Row[] | Promise<Row[]>);
  return db.executeQuery<Row>(CompiledQuery.raw(sql, [...parameters]) as CompiledQuery<Row>).then((r) => r.rows);
}

/**
 * sendStatement for a statement that ends with an INSERT, UPDATE or DELETE without RETURNING (CTEs before it
 * may write too): resolves how many rows that last write wrote (the command's row count; 0 for anything else
 * through Kysely). A statement that answers a row only to say whether it wrote (a `returning` read back by a
 * `select count(*)`) cost PostgreSQL about 25 µs more CPU (docs/benchmarks.md "Thirty-fifth pass").
 */
export function sendWrite(db: Db, sql: string, parameters: readonly unknown[]): Promise<number> {
  const direct = directRowCount.get(db);
  if (direct) return direct(sql, parameters);
  return db.executeQuery(CompiledQuery.raw(sql, [...parameters])).then((r) => Number(r.numAffectedRows ?? 0));
}

/** Stands for the i-th argument while the query is built once; replaced by the real value on every call. */
class Slot {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
}

/**
 * A query built and compiled by Kysely once per database (per SQL dialect), then executed with new
 * parameters on every call: no builder objects, no operation-node tree, no SQL compilation per request
 * (about 10 % of a single-row read). For the hot paths only; `build` gets a function that returns the
 * placeholder of argument i (typed as the value it stands for), and must use each one as a plain value
 * (a comparison, a value to insert or set, a limit), never in a way that changes the SQL text.
 */
export function prepared<Args extends unknown[], Row>(build: (db: Kysely<DB>, arg: <I extends keyof Args & number>(i: I) => Args[I]) => Compilable<Row>) {
  // Keyed by the executor's adapter: one per Kysely instance (a transaction shares its database's).
  const compiled = new WeakMap<object, { query: CompiledQuery<Row>; slots: Array<number | undefined> }>();
  const compile = (db: Db) => {
    const key = db.getExecutor().adapter;
    let entry = compiled.get(key);
    if (!entry) {
      const query = build(db as Kysely<DB>, ((i: number) => new Slot(i)) as never).compile();
      // Sent as a named prepared statement on PostgreSQL (parsed and planned once per connection) when
      // its columns are spelled out: a `*` would change its result type with a migration (reusedStatement).
      if (!query.sql.includes('*')) reusedStatement(query.sql);
      entry = { query, slots: query.parameters.map((p) => (p instanceof Slot ? p.index : undefined)) };
      compiled.set(key, entry);
    }
    return entry;
  };
  /** The rows at once if the database could read them now (directReads), else a promise of them. */
  const run = (db: Db, args: Args): Row[] | Promise<Row[]> => {
    try {
      const { query, slots } = compile(db);
      const parameters = query.parameters.map((p, i) => {
        const slot = slots[i];
        return slot === undefined ? p : args[slot];
      });
      const rows = directReads.get(db)?.(query.sql, parameters);
      return rows ? (rows as Row[] | Promise<Row[]>) : db.executeQuery<Row>({ ...query, parameters }).then((r) => r.rows);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return {
    // Not async functions: a read answered at once costs one settled promise, not a chain of them.
    rows(db: Db, ...args: Args): Promise<Row[]> {
      const rows = run(db, args);
      return rows instanceof Promise ? rows : Promise.resolve(rows);
    },
    first(db: Db, ...args: Args): Promise<Row | undefined> {
      const rows = run(db, args);
      return rows instanceof Promise ? rows.then((r) => r[0]) : Promise.resolve(rows[0]);
    },
  };
}

/**
 * Every column of a row type, by name, from a record of them all (the compiler checks it is complete),
 * for a hot read's select list instead of `*`: on SQLite a statement that names its columns gets its rows
 * as arrays made into objects of one shape (src/db/sqlite-dialect.ts), which a `*` does not.
 */
export function everyColumn<Row>(all: Record<keyof Row, true>): Array<keyof Row & string> {
  return Object.keys(all) as Array<keyof Row & string>;
}

type Table = keyof DB & string;

/** The columns an INSERT of this row names: its keys with a value (an absent one keeps the column's default). */
export const definedColumns = (row: object): string[] => Object.entries(row).flatMap(([k, v]) => (v === undefined ? [] : [k]));

/**
 * PostgreSQL: `$first, $first+1, …`, one per column, the select list of `insert into t (columns) select
 * <this> from c`, so the row is inserted only with another CTE's row. PostgreSQL types each parameter by
 * the column it goes into; rowValues gives the values in the same order. (A row sent as one JSON
 * parameter through json_populate_record cost the database 40–70 µs more a quote: docs/benchmarks.md
 * "Seventeenth pass".) The types are fixed when the statement is prepared: see docs/deployment.md on
 * migrations that change a column's type.
 */
export const placeholders = (columns: readonly string[], first: number): string => columns.map((_, i) => `$${first + i}`).join(', ');

/** The row's values for `columns`, in order: the parameters placeholders() names. */
export const rowValues = (row: object, columns: readonly string[]): unknown[] => columns.map((c) => (row as Record<string, unknown>)[c]);
// One compiled INSERT per database, table and set of columns present (the row's own keys, so a column
// added later is never dropped): keyed by the adapter, then by "table returning? col,col,...".
const inserts = new WeakMap<object, Map<string, { query: CompiledQuery; columns: string[] }>>();

/**
 * INSERT of one row (its defined keys are the columns), compiled once per shape and database; with
 * `returning`, those columns of the inserted row come back. For the write hot paths (a transfer, its
 * event and ledger entry, a quote), where building the statement cost more than SQLite running it.
 */
export async function insertRow<T extends Table>(db: Db, table: T, insert: object, returning?: string): Promise<Array<Record<string, unknown>>> {
  const row = insert as Record<string, unknown>;
  const columns = definedColumns(row);
  const adapter = db.getExecutor().adapter;
  let byShape = inserts.get(adapter);
  if (!byShape) {
    byShape = new Map();
    inserts.set(adapter, byShape);
  }
  const shape = `${table} ${returning ?? ''} ${columns.join(',')}`;
  let entry = byShape.get(shape);
  if (!entry) {
    const values = Object.fromEntries(columns.map((c, i) => [c, new Slot(i)]));
    const base = (db as Kysely<any>).insertInto(table).values(values);
    const query = (returning ? base.returning(returning) : base).compile();
    if (query.parameters.length !== columns.length || query.parameters.some((p, i) => !(p instanceof Slot) || p.index !== i)) {
      throw new Error(`insertRow(${table}): the compiled statement does not bind one value per column in order`);
    }
    // Names its columns and the one it returns (`returning` is a column's name): prepared once per connection on PostgreSQL.
    reusedStatement(query.sql);
    entry = { query, columns };
    byShape.set(shape, entry);
  }
  const { query } = entry;
  return (await db.executeQuery<Record<string, unknown>>({ ...query, parameters: entry.columns.map((c) => row[c]) })).rows;
}
