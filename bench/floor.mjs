// The floor of `npm run bench`: what Fastify plus the same single query, and nothing else, does on this
// machine and store (the yardstick for a target that may be out of physical reach). A child
// process, pinned like the service, on the service's own database (same rows, same file or schema):
//   GET  /warehouses/:id   the service's single-row read (merchant_id and id)
//   GET  /warehouses       the merchant's 50 rows, ordered by id, as { items }
//   POST /options          one durable INSERT of the request body (the least a quote can write)
//   POST /transfer         one durable transaction: the merchant's balance debited (the hot row) and one row inserted
// No auth, no validation, no hooks, no logging, no serialisation schema: rows are sent as the driver returns them.
//
// GET /guarded/warehouses/:id and GET /guarded/warehouses: the same two reads plus, done by hand and as
// cheaply as this file knows how, the work the contract asks of every merchant request: the bearer token
// checked (HS256 with the service's keys; a verified token remembered by its whole text, its expiry
// checked each time), the merchant's request counted in a one-minute window with the RateLimit-Policy
// and RateLimit fields, an X-Request-Id, the id validated, and each row answered in the API's shape (ISO
// times, the location as GeoJSON, the stored metadata parsed), its JSON remembered while the row is
// unchanged as the service does. Left out, which only flatters it: the credential's revocation check, an
// incoming X-Request-Id, the ambiguous-header checks, logging and metrics. What these routes reach
// estimates what the guarantees themselves cost; the service is measured against the floor and them.
// Plain JavaScript, so that its memory does not include Node's TypeScript stripper either.
// Env: DATABASE_URL (sqlite:FILE or postgres://), DATABASE_SCHEMA, PORT, FLOOR_MERCHANT, TOKEN_SIGNING_KEYS.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
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
      warehouse: async (id, m = merchant) => one.get(m, id),
      warehouses: async (m = merchant) => all.all(m),
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
    warehouse: async (id, m = merchant) =>
      (await pool.query({ name: 'one', text: 'select * from warehouses where merchant_id = $1 and id = $2', values: [m, id] })).rows[0],
    warehouses: async (m = merchant) =>
      (await pool.query({ name: 'all', text: 'select * from warehouses where merchant_id = $1 order by id', values: [m] })).rows,
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
// ---- the guarded reads (see the top of the file)
const KEYS = new Map(
  (process.env.TOKEN_SIGNING_KEYS ?? '')
    .split(',')
    .filter(Boolean)
    .map((part) => [part.slice(0, part.indexOf(':')), Buffer.from(part.slice(part.indexOf(':') + 1), 'base64url')]),
);
const verified = new Map();
function merchantOf(authorization) {
  if (typeof authorization !== 'string' || !authorization.startsWith('Bearer ')) return undefined;
  const token = authorization.slice(7);
  const now = Math.floor(Date.now() / 1000);
  let claims = verified.get(token);
  if (!claims) {
    const [header, payload, signature] = token.split('.');
    const key = KEYS.get(JSON.parse(Buffer.from(header ?? '', 'base64url').toString()).kid);
    if (!key || !payload || !signature) return undefined;
    const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest();
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    if (claims.role !== 'merchant') return undefined;
    verified.set(token, claims);
  }
  return claims.exp > now ? claims.sub : undefined;
}
const windows = new Map();
const LIMIT = 1_000_000;
function guard(req, reply) {
  reply.header('x-request-id', randomUUID());
  const merchantId = merchantOf(req.headers.authorization);
  if (!merchantId) {
    reply.code(401).type('application/problem+json').send({ type: 'UNAUTHENTICATED', status: 401 });
    return undefined;
  }
  const now = Date.now();
  let w = windows.get(merchantId);
  if (!w || w.start + 60_000 <= now) {
    w = { start: now, count: 0 };
    windows.set(merchantId, w);
  }
  w.count++;
  reply
    .header('ratelimit-policy', `"merchant";q=${LIMIT};w=60`)
    .header('ratelimit', `"merchant";r=${Math.max(0, LIMIT - w.count)};t=${Math.ceil((w.start + 60_000 - now) / 1000)}`);
  return merchantId;
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const iso = (ms) => new Date(Number(ms)).toISOString();
const shaped = (row) => ({
  id: row.id,
  merchantId: row.merchant_id,
  commersantId: row.merchant_id,
  name: row.name,
  nameInt: row.name_int,
  status: row.status,
  address: row.address,
  contactPhone: row.contact_phone,
  contactEmail: row.contact_email,
  locationMetadata: JSON.parse(row.location_metadata),
  location: { type: 'Point', coordinates: [row.lng, row.lat] },
  type: 'POINT',
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
});
// A row's JSON in the API's shape, remembered while the row is unchanged (as the service does, though
// the service compares every column and this only updated_at, which flatters the floor a little): the
// first answer parses the metadata and builds the ISO times, the next ones send the same text.
const shapedJson = new Map();
function jsonOf(row) {
  const version = String(row.updated_at);
  const known = shapedJson.get(row.id);
  if (known?.version === version) return known.json;
  const json = JSON.stringify(shaped(row));
  if (shapedJson.size >= 10_000) shapedJson.clear();
  shapedJson.set(row.id, { version, json });
  return json;
}
const JSON_TYPE = 'application/json; charset=utf-8';
app.get('/guarded/warehouses/:id', async (req, reply) => {
  const merchantId = guard(req, reply);
  if (!merchantId) return reply;
  if (!UUID.test(req.params.id)) return reply.code(400).type('application/problem+json').send({ type: 'VALIDATION_FAILED', status: 400 });
  const row = await store.warehouse(req.params.id, merchantId);
  return row ? reply.type(JSON_TYPE).send(jsonOf(row)) : reply.code(404).type('application/problem+json').send({ type: 'WAREHOUSE_NOT_FOUND', status: 404 });
});
app.get('/guarded/warehouses', async (req, reply) => {
  const merchantId = guard(req, reply);
  if (!merchantId) return reply;
  const rows = await store.warehouses(merchantId);
  return reply.type(JSON_TYPE).send(`[${rows.map(jsonOf).join(',')}]`);
});

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
console.log('ready');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
