// SQLite group commit (src/db/sqlite-dialect.ts): concurrent transactions share one durable COMMIT, each
// in its own SAVEPOINT. A refusal undoes only its own part; nothing resolves before the commit that holds
// it is on disk; a failure that loses the SQL transaction fails every member of the batch.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { openDatabase } from '../src/db/database.ts';
import { prepared } from '../src/db/prepared.ts';
import { GroupCommitSqliteDriver, NodeSqliteDialect } from '../src/db/sqlite-dialect.ts';
import { inTransaction } from '../src/db/transaction.ts';
import { connectionsProvided } from './helpers/stores.ts';

const dir = mkdtempSync(join(tmpdir(), 'mds-group-commit-'));
const file = join(dir, 'gc.sqlite');
// The driver openDatabase gives its Kysely (created in Kysely's constructor), kept for its commit counts.
let driver: unknown;
const createDriver = NodeSqliteDialect.prototype.createDriver;
NodeSqliteDialect.prototype.createDriver = function (this: NodeSqliteDialect) {
  driver = createDriver.call(this);
  return driver as ReturnType<typeof createDriver>;
};
const database = openDatabase({ url: `sqlite:${file}` });
NodeSqliteDialect.prototype.createDriver = createDriver;
const db = database.db as unknown as Kysely<any>;
/** Another connection to the file: it sees committed data only. */
const committed = () => {
  const other = new DatabaseSync(file, { readOnly: true });
  try {
    return (other.prepare('select v from t order by v').all() as { v: string }[]).map((r) => r.v);
  } finally {
    other.close();
  }
};

before(async () => {
  await sql`create table t (v text primary key)`.execute(db);
  await sql`create table poison (v text)`.execute(db);
  // Inserting into poison aborts the whole SQL transaction, not just the statement.
  await sql`create trigger poison_all after insert on poison begin select raise(rollback, 'poisoned'); end`.execute(db);
});
after(async () => {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (v: string) => (trx: Kysely<any>) => trx.insertInto('t').values({ v }).execute();

test('concurrent transactions: one refused, the others committed, in fewer commits than transactions', async () => {
  const { commits } = (driver as GroupCommitSqliteDriver).stats;
  const results = await Promise.allSettled(
    ['a1', 'a2', 'a3', 'refused', 'a4', 'a5'].map((v) =>
      inTransaction(db, async (trx) => {
        await insert(v)(trx);
        if (v === 'refused') throw new Error('refused');
        // Each resolves only once its commit is on disk: another connection sees it already.
        return v;
      }).then((v) => ({ v, seen: committed().includes(v) })),
    ),
  );
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
  );
  for (const r of results) if (r.status === 'fulfilled') assert.equal(r.value.seen, true, `${r.value.v} answered before its commit`);
  assert.deepEqual(committed(), ['a1', 'a2', 'a3', 'a4', 'a5']);
  const made = (driver as GroupCommitSqliteDriver).stats.commits - commits;
  assert.ok(made >= 1 && made < 5, `${made} commits for 5 committed transactions`);
});

test('a refusal resting on another member of the batch is answered after that member committed', async () => {
  await sql`delete from t`.execute(db);
  const first = inTransaction(db, insert('x'));
  const second = inTransaction(db, insert('x')); // unique violation: sees the first one's uncommitted row
  await first;
  await assert.rejects(second, /UNIQUE/);
  assert.deepEqual(committed(), ['x']);
});

test('an error that loses the whole SQL transaction fails every member of the batch; the next batch works', async () => {
  await sql`delete from t`.execute(db);
  const results = await Promise.allSettled([
    inTransaction(db, insert('lost1')),
    inTransaction(db, (trx) => (trx as unknown as Kysely<any>).insertInto('poison').values({ v: 'p' }).execute()),
    inTransaction(db, insert('lost2')),
  ]);
  assert.equal(results[0].status, 'rejected', 'its commit never happened: it must not succeed');
  assert.equal(results[1].status, 'rejected');
  // lost2 ran after the failure, in a new batch: whatever it answered is what is on disk.
  assert.deepEqual(committed(), results[2].status === 'fulfilled' ? ['lost2'] : []);
  await inTransaction(db, insert('after'));
  assert.ok(committed().includes('after'));
});

test('writes outside a transaction join the batch and resolve after its commit; reads still work', async () => {
  await sql`delete from t`.execute(db);
  const writes = ['w1', 'w2', 'w3'].map((v) =>
    db
      .insertInto('t')
      .values({ v })
      .execute()
      .then(() => committed().includes(v)),
  );
  const read = db.selectFrom('t').select('v').execute();
  assert.deepEqual(await Promise.all(writes), [true, true, true]);
  assert.ok((await read).length <= 3);
  assert.deepEqual(committed(), ['w1', 'w2', 'w3']);
});

test('a read outside a transaction sees committed data only, and a lost batch beside it does not fail it', async () => {
  await sql`delete from t`.execute(db);
  await db.insertInto('t').values({ v: 'base' }).execute();
  for (let round = 0; round < 5; round++) {
    // The read queues between a write and the statement that loses their batch (as a full disk would).
    const write = inTransaction(db, insert(`lost${round}`));
    const read = db.selectFrom('t').select('v').orderBy('v').execute();
    const poison = inTransaction(db, (trx) => (trx as unknown as Kysely<any>).insertInto('poison').values({ v: 'p' }).execute());
    const [w, r, p] = await Promise.allSettled([write, read, poison]);
    assert.equal(w.status, 'rejected', 'the lost batch took the write with it');
    assert.equal(p.status, 'rejected');
    assert.deepEqual(r.status === 'fulfilled' ? r.value.map((row) => row.v) : r.reason, ['base'], 'the read answered from committed data');
  }
  assert.deepEqual(committed(), ['base']);
});

// A compiled read (src/db/prepared.ts), as the hot reads are: it runs on the driver directly when the
// connection is free, and must then behave exactly as a read through Kysely would.
const readT = prepared<[string], { v: string }>(
  (d, arg) => (d as unknown as Kysely<any>).selectFrom('t').select('v').where('v', '>=', arg(0)).orderBy('v') as never,
);
const readNow = () => readT.rows(database.db, '').then((rows) => rows.map((r) => r.v));

test('a compiled read runs at once when the connection is free, without a connection from Kysely', async () => {
  await sql`delete from t`.execute(db);
  await db.insertInto('t').values({ v: 'a' }).execute();
  const provided = await connectionsProvided(db, async () => assert.deepEqual(await readNow(), ['a']));
  assert.equal(provided, 0);
});

test('a compiled read waits behind a transaction that holds the connection, and never sees its uncommitted rows', async () => {
  await sql`delete from t`.execute(db);
  await db.insertInto('t').values({ v: 'a' }).execute();
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let inserted!: () => void;
  const hasInserted = new Promise<void>((r) => {
    inserted = r;
  });
  const tx = inTransaction(db, async (trx) => {
    await (trx as unknown as Kysely<any>).insertInto('t').values({ v: 'b' }).execute();
    inserted();
    await gate;
  });
  await hasInserted;
  let answered = false;
  const read = readNow().then((v) => {
    answered = true;
    return v;
  });
  await new Promise((r) => setTimeout(r, 20));
  const waited = !answered;
  release(); // before asserting: a transaction left holding the connection would hang the file
  assert.ok(waited, 'the read waits for the transaction holding the connection');
  const seen = await read;
  assert.ok(['a', 'a,b'].includes(seen.join()), `committed data only, got ${seen}`);
  await tx;
  assert.deepEqual(await readNow(), ['a', 'b']);
});

test('a compiled read while a batch waits for its COMMIT answers from committed data', async () => {
  await sql`delete from t`.execute(db);
  await db.insertInto('t').values({ v: 'a' }).execute();
  const write = db.insertInto('t').values({ v: 'c' }).execute();
  const gc = driver as GroupCommitSqliteDriver;
  while (!gc.currentBatch) await Promise.resolve();
  assert.deepEqual(await readNow(), ['a'], 'the batch has not committed: its row is not seen');
  await write;
  assert.deepEqual(await readNow(), ['a', 'c']);
});

test("rows are objects of the statement's column names, as node:sqlite gives them: names that need quoting, duplicates, every type", async () => {
  await sql`create table kinds (id integer primary key, txt text, num real, big integer, empty text, data blob)`.execute(db);
  await sql`insert into kinds values (1, 'it''s "x"', 1.5, 9007199254740991, null, x'00ff')`.execute(db);
  const query = sql<
    Record<string, unknown>
  >`select id, txt, num, big, empty, data, txt as "a""b", count(*) over () as "count(*)", 2 as id2, num as id from kinds`;
  const [row] = (await query.execute(db)).rows;
  // What node:sqlite itself returns for the same statement, on its own connection.
  const own = new DatabaseSync(file, { readOnly: true });
  const expected = own.prepare(query.compile(db).sql).get() as Record<string, unknown>;
  own.close();
  assert.deepEqual(Object.keys(row), Object.keys(expected));
  assert.deepEqual({ ...row }, { ...expected });
  assert.deepEqual(
    { ...row },
    { id: 1.5, txt: 'it\'s "x"', num: 1.5, big: 9007199254740991, empty: null, data: new Uint8Array([0, 255]), 'a"b': 'it\'s "x"', 'count(*)': 1, id2: 2 },
  );
  // The same through a compiled read (the driver's readNow) and a stream.
  const one = prepared<[number], Record<string, unknown>>((k, arg) => (k as Kysely<any>).selectFrom('kinds').selectAll().where('id', '=', arg(0)));
  assert.deepEqual(
    { ...(await one.first(db as never, 1)) },
    { id: 1, txt: 'it\'s "x"', num: 1.5, big: 9007199254740991, empty: null, data: new Uint8Array([0, 255]) },
  );
  const streamed = [];
  for await (const r of db.selectFrom('kinds').select(['id', 'txt']).stream()) streamed.push({ ...r });
  assert.deepEqual(streamed, [{ id: 1, txt: 'it\'s "x"' }]);
});

test('after another process changes the schema, a `*` statement answers the new columns and one naming a dropped column fails', async () => {
  await sql`create table shifting (a text, b text, c text)`.execute(db);
  await sql`insert into shifting values ('A', 'B', 'C')`.execute(db);
  const star = sql<Record<string, unknown>>`select * from shifting`;
  const named = sql<Record<string, unknown>>`select a, b, c from shifting`;
  assert.deepEqual({ ...(await star.execute(db)).rows[0] }, { a: 'A', b: 'B', c: 'C' });
  assert.deepEqual({ ...(await named.execute(db)).rows[0] }, { a: 'A', b: 'B', c: 'C' });
  // A migration elsewhere drops b and adds d: as many columns, so a row built by position would say b: 'C'.
  const other = new DatabaseSync(file);
  other.exec('alter table shifting drop column b; alter table shifting add column d text');
  other.close();
  assert.deepEqual({ ...(await star.execute(db)).rows[0] }, { a: 'A', c: 'C', d: null });
  await assert.rejects(named.execute(db), /no such column: b/);
});

test('GroupCommitSqliteDriver is what the SQLite database uses', () => {
  assert.ok(driver instanceof GroupCommitSqliteDriver, 'openDatabase built its Kysely on NodeSqliteDialect');
});
