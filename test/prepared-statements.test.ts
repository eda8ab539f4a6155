import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { moscowQuoteBody, transferBody, warehouseBody } from '../scripts/lib/fixtures.ts';
import { openDatabase } from '../src/db/database.ts';
import { insertRow, prepared, sendStatement } from '../src/db/prepared.ts';
import type { Db } from '../src/db/types.ts';
import { createMerchant, openStore } from './helpers/server-process.ts';
import { connectionsProvided, createStore, postgresOnly } from './helpers/stores.ts';

// The quote's and the transfer's statements, and the compiled statements that spell out their columns
// (the hot reads), go as named prepared statements on PostgreSQL (parsed and planned once per
// connection), unless DATABASE_PREPARED_STATEMENTS=false (PgBouncer in transaction mode). One connection
// in the pool, so the session that ran them is the one asked.
describe('hot PostgreSQL statements are prepared once per connection', { skip: postgresOnly('prepared statements') }, () => {
  for (const setting of ['true', 'false'] as const) {
    test(`DATABASE_PREPARED_STATEMENTS=${setting}`, async (t) => {
      const store = await createStore('postgres');
      const access = await openStore({ ...store.env, DATABASE_PREPARED_STATEMENTS: setting }, 1);
      t.after(async () => {
        await access.close();
        await store.cleanup();
      });
      const m = await createMerchant(access, 'Prepared shop', '1000');
      const warehouse = await access.services.warehouses.create(m.merchantId, warehouseBody() as never);
      let last = '';
      for (let i = 0; i < 3; i++) {
        const quote = await access.services.quotes.create(m.merchantId, moscowQuoteBody(warehouse.id, i) as never);
        last = (await access.services.transfers.create(m.merchantId, transferBody(quote.id) as never)).id;
      }
      // The hot reads: one warehouse, every warehouse, one transfer, the newest transfers.
      assert.equal((await access.services.warehouses.get(m.merchantId, warehouse.id)).id, warehouse.id);
      assert.equal((await access.services.warehouses.list(m.merchantId, {})).items.length, 1);
      assert.equal((await access.services.transfers.get(m.merchantId, last)).id, last);
      assert.equal((await access.services.transfers.list(m.merchantId, {})).items.length, 3);
      // An Idempotency-Key's claim, then the same key again (claimed already).
      assert.deepEqual(await access.services.idempotency.begin(m.merchantId, 'prepared-key', 'hash'), { kind: 'proceed' });
      await assert.rejects(access.services.idempotency.begin(m.merchantId, 'prepared-key', 'hash'), { code: 'IDEMPOTENCY_KEY_IN_USE' });
      // A cancellation writes its event and its refund's ledger entry with compiled inserts (insertRow).
      assert.equal((await access.services.transfers.cancel(m.merchantId, last, { reason: 'CUSTOMER_REQUESTED' })).state, 'cancelled');
      const { rows } = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements order by name`.execute(
        access.database.db,
      );
      const ours = rows.filter((r) => r.name.startsWith('mds_'));
      if (setting === 'false') {
        assert.deepEqual(ours, []);
        return;
      }
      const starts = ours.map((r) => r.statement.replace(/\s+/g, ' ').slice(0, 60));
      for (const [start, what] of [
        ['select "id", "merchant_id", "name"', 'the warehouse reads (one, and the list)'],
        ['update "merchants" set "balance"', 'the top-up and the refund'],
        ['insert into "events" ("id"', "the cancellation's event"],
        ['insert into "idempotency_keys" (', "an Idempotency-Key's claim"],
        ['insert into "ledger_entries" ("id"', "the refund's ledger entry"],
      ] as const) {
        assert.ok(
          starts.some((s) => s.startsWith(start)),
          `${what}: ${JSON.stringify(starts)}`,
        );
      }
      const reads = ours.filter((r) => /^select "id", /.test(r.statement));
      assert.deepEqual(
        reads.map((r) => /from "(\w+)"/.exec(r.statement)?.[1]).sort(),
        ['transfers', 'transfers', 'warehouses', 'warehouses', 'webhook_endpoints'],
        "one warehouse, every warehouse, one transfer, the newest transfers; the cancellation's event's endpoints",
      );
      assert.ok(
        ours.every((r) => !/(select|returning) \*|\.\*/i.test(r.statement.replace(/"/g, ''))),
        'no statement that selects `*` is prepared: a migration would change its result type',
      );
      assert.ok(
        ours.some((r) => r.statement.startsWith('with ok as (')),
        'the quote',
      );
      assert.ok(
        ours.some((r) => r.statement.startsWith('select q.id, q.merchant_id')),
        "the transfer's read of its quote",
      );
      assert.ok(
        ours.some((r) => r.statement.startsWith('with c as (')),
        'the transfer',
      );
      const balance = await access.database.db.selectFrom('merchants').select('balance').where('id', '=', m.merchantId).executeTakeFirstOrThrow();
      const transfers = await access.database.db
        .selectFrom('transfers')
        .select(['total_amount', 'refunded_amount'])
        .where('merchant_id', '=', m.merchantId)
        .execute();
      assert.equal(transfers.length, 3);
      assert.equal(balance.balance, m.openingMinor - transfers.reduce((s, x) => s + x.total_amount - x.refunded_amount, 0));
    });
  }
});

// Compiled reads (src/db/prepared.ts) outside a transaction go to the pool itself, not through Kysely's
// executor; inside one they must run on the transaction's connection, as any statement of it.
test('a compiled read on PostgreSQL: from the pool outside a transaction, on its connection inside one', { skip: postgresOnly('the pool') }, async (t) => {
  const store = await createStore('postgres');
  const database = openDatabase({ url: store.url, schema: store.schema });
  t.after(async () => {
    await database.close();
    await store.cleanup();
  });
  const db = database.db as unknown as Kysely<any>;
  await db.schema.createTable('t').addColumn('v', 'text').execute();
  await db.insertInto('t').values({ v: 'a' }).execute();
  const read = prepared<[string], { v: string }>(
    (d, arg) => (d as unknown as Kysely<any>).selectFrom('t').select('v').where('v', '>=', arg(0)).orderBy('v') as never,
  );
  const values = (from: Db) => read.rows(from, '').then((rows) => rows.map((r) => r.v));

  const provided = await connectionsProvided(database.db, async () => assert.deepEqual(await values(database.db), ['a']));
  assert.equal(provided, 0, 'no connection from Kysely');
  await database.db.transaction().execute(async (trx) => {
    await (trx as unknown as Kysely<any>).insertInto('t').values({ v: 'b' }).execute();
    assert.deepEqual(await values(trx), ['a', 'b'], "the transaction's own row");
    assert.deepEqual(await values(database.db), ['a'], 'outside it: committed rows only');
  });
  assert.deepEqual(await values(database.db), ['a', 'b']);
  await db.schema.dropTable('t').execute();
  await assert.rejects(values(database.db), { code: '42P01' }, "the database's error, as through Kysely");
});

// A statement sent straight to the pool that fails gives its connection back as Kysely would: a payment the
// balance cannot cover is refused by its one statement failing on purpose, and a merchant retrying it must
// not cost the service a new connection (and its statements prepared again) each time. One connection in the
// pool, so the session asked before and after is the one that ran them.
test('a statement that fails outside a transaction keeps its PostgreSQL connection (an unaffordable payment)', {
  skip: postgresOnly('the pool'),
}, async (t) => {
  const store = await createStore('postgres');
  const access = await openStore(store.env, 1);
  t.after(async () => {
    await access.close();
    await store.cleanup();
  });
  const session = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(access.database.db)).rows[0]?.pid;
  const m = await createMerchant(access, 'Short shop', '1');
  const warehouse = await access.services.warehouses.create(m.merchantId, warehouseBody() as never);
  const before = await session();
  for (let i = 0; i < 3; i++) {
    const quote = await access.services.quotes.create(m.merchantId, moscowQuoteBody(warehouse.id, i) as never);
    await assert.rejects(access.services.transfers.create(m.merchantId, transferBody(quote.id) as never), { code: 'INSUFFICIENT_BALANCE' });
  }
  await assert.rejects(sendStatement(access.database.db, 'select 1 / 0', []), { code: '22012' }, "the database's error, as through Kysely");
  assert.equal(await session(), before, 'the same connection throughout');
  const balance = await access.database.db.selectFrom('merchants').select('balance').where('id', '=', m.merchantId).executeTakeFirstOrThrow();
  assert.equal(balance.balance, 100, 'nothing charged');
});

// A compiled statement goes named only when it spells out its columns: a `*` would change its result
// type when a migration adds a column, and PostgreSQL would then refuse the prepared statement.
test('a compiled statement on PostgreSQL is prepared once per connection only when it names its columns', {
  skip: postgresOnly('prepared statements'),
}, async (t) => {
  const store = await createStore('postgres');
  const database = openDatabase({ url: store.url, schema: store.schema, poolSize: 1 });
  t.after(async () => {
    await database.close();
    await store.cleanup();
  });
  const db = database.db as unknown as Kysely<any>;
  await db.schema.createTable('t').addColumn('v', 'text').execute();
  const named = prepared<[string], { v: string }>((d, arg) => (d as unknown as Kysely<any>).selectFrom('t').select('v').where('v', '>=', arg(0)) as never);
  const star = prepared<[string], { v: string }>((d, arg) => (d as unknown as Kysely<any>).selectFrom('t').selectAll().where('v', '<=', arg(0)) as never);
  await insertRow(database.db, 't' as never, { v: 'a' });
  await insertRow(database.db, 't' as never, { v: 'b' }, 'v');
  assert.deepEqual(
    (await named.rows(database.db, 'a')).map((r) => r.v),
    ['a', 'b'],
  );
  assert.deepEqual(
    (await star.rows(database.db, 'b')).map((r) => r.v),
    ['a', 'b'],
  );
  const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'mds\_%' order by statement`.execute(
    database.db,
  );
  assert.deepEqual(
    rows.map((r) => r.statement),
    ['insert into "t" ("v") values ($1)', 'insert into "t" ("v") values ($1) returning "v"', 'select "v" from "t" where "v" >= $1'],
  );
});
