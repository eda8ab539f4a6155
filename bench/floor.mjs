// The floor of `npm run bench`: what Fastify plus the same single query, and nothing else, does on this
// machine and store (the yardstick for a target that may be out of physical reach). A child
// process, pinned like the service, on the service's own database (same rows, same file or schema):
//   GET  /warehouses/:id   the service's single-row read (merchant_id and id)
//   GET  /warehouses       the merchant's 50 rows, ordered by id, as { items }
//   POST /options          one durable INSERT of the request body (the least a quote can write)
//   POST /transfer         one durable transaction: the merchant's balance debited (the hot row) and one row inserted
// No auth, no validation, no hooks, no logging, no serialisation schema: rows are sent as the driver returns them.
// Plain JavaScript, so that its memory does not include Node's TypeScript stripper either.
// Env: DATABASE_URL (sqlite:FILE or postgres://), DATABASE_SCHEMA, PORT, FLOOR_MERCHANT.
import { randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import Fastify from 'fastify';
import pg from 'pg';

const url = process.env.DATABASE_URL ?? '';
const merchant = process.env.FLOOR_MERCHANT ?? '';
const app = Fastify({ logger: false });

async function open() {
  if (url.startsWith('sqlite:')) {
    const db = new DatabaseSync(url.slice('sqlite:'.length));
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000');
    db.exec('create table if not exists floor_writes (id text primary key, body text not null)');
    const one = db.prepare('select * from warehouses where merchant_id = ? and id = ?');
    const all = db.prepare('select * from warehouses where merchant_id = ? order by id');
    const insert = db.prepare('insert into floor_writes (id, body) values (?, ?)');
    const debit = db.prepare('update merchants set balance = balance - 1 where id = ? and balance - 1 >= 0');
    const begin = db.prepare('begin immediate');
    const commit = db.prepare('commit');
    return {
      warehouse: async (id) => one.get(merchant, id),
      warehouses: async () => all.all(merchant),
      insert: async (body) => {
        insert.run(randomUUID(), body);
      },
      debitAndInsert: async (body) => {
        begin.run();
        try {
          debit.run(merchant);
          insert.run(randomUUID(), body);
          commit.run();
        } catch (e) {
          db.exec('rollback');
          throw e;
        }
      },
    };
  }
  const schema = process.env.DATABASE_SCHEMA;
  const pool = new pg.Pool({ connectionString: url, max: 10, ...(schema ? { options: `-c search_path=${schema}` } : {}) });
  await pool.query('create table if not exists floor_writes (id text primary key, body text not null)');
  return {
    warehouse: async (id) =>
      (await pool.query({ name: 'one', text: 'select * from warehouses where merchant_id = $1 and id = $2', values: [merchant, id] })).rows[0],
    warehouses: async () => (await pool.query({ name: 'all', text: 'select * from warehouses where merchant_id = $1 order by id', values: [merchant] })).rows,
    insert: async (body) => {
      await pool.query({ name: 'ins', text: 'insert into floor_writes (id, body) values ($1, $2)', values: [randomUUID(), body] });
    },
    // One statement, one round trip: the row lock is held for it and its commit only.
    debitAndInsert: async (body) => {
      await pool.query({
        name: 'debit',
        text: 'with d as (update merchants set balance = balance - 1 where id = $1 and balance - 1 >= 0 returning id) insert into floor_writes (id, body) select $2::text, $3::text from d',
        values: [merchant, randomUUID(), body],
      });
    },
  };
}

const store = await open();
app.get('/warehouses/:id', async (req, reply) => {
  const row = await store.warehouse(req.params.id);
  return row ? row : reply.code(404).send({ type: 'WAREHOUSE_NOT_FOUND' });
});
app.get('/warehouses', async () => ({ items: await store.warehouses() }));
app.post('/options', async (req, reply) => {
  await store.insert(JSON.stringify(req.body));
  return reply.code(201).send({ ok: true });
});
app.post('/transfer', async (req, reply) => {
  await store.debitAndInsert(JSON.stringify(req.body));
  return reply.code(201).send({ ok: true });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
console.log('ready');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
