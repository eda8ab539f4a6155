// The floor of `npm run bench`: what Fastify plus the same single query, and nothing else, does on this
// machine and store (the issue's yardstick for a target that may be out of physical reach). A child
// process, pinned like the service, on the service's own database (same rows, same file or schema):
//   GET  /warehouses/:id   the service's single-row read (merchant_id and id)
//   GET  /warehouses       the merchant's 50 rows, ordered by id, as { items }
//   POST /options          one durable INSERT of the request body (the least a quote can write)
//   POST /transfer         one durable transaction: the merchant's balance debited (the hot row) and one row inserted
//   POST /contract/options   the rows the decisions require of a quote, in one durable transaction: the
//                            quote and its quote.created event (the outbox), in the service's own tables
//   POST /contract/transfer  the same for a payment: the quote consumed (pending and unexpired, by the
//                            body's matchmakingId), the merchant's balance debited, the CHARGE ledger
//                            entry, the transfer and its transfer.created event, all or nothing
//   POST /work/options       PostgreSQL: /contract/options plus the work the contract asks of a quote that it leaves
//                            out (bench/contract-work.mjs: validation, pricing, ids, the write's checks), for
//                            bench/quote-floors.ts; not a row of npm run bench
// The /contract rows copy the newest rows the service wrote (the bench runs them after the service's own
// rows) with new ids, codes and times: the same columns, sizes, constraints and indexes, written with
// statements prepared once (one round trip on PostgreSQL). They do the per-request guarantees the guarded
// reads do (the same guard: the token, the merchant's count and RateLimit fields, X-Request-Id), write only
// for the caller's own ACTIVE warehouse (the quote) or the caller's own pending quote from an ACTIVE
// warehouse (the payment), checked in the same statement on PostgreSQL and the same transaction on SQLite, and
// answer 201 with the body the service answers, built from what they wrote (a bare 404 or 409 otherwise: the
// bench never asks for those, so they are not the service's refusals). Left out, which only flatters them: the body's
// validation, the pricing (the products are the copied quote's), the tariff and endpoints checks, the
// Idempotency-Key, webhook deliveries (the bench's merchant has no endpoints) and the dispatcher's wake-up.
// The plain floors (/warehouses, /options, /transfer): no auth, no validation, no hooks, no logging, no
// serialisation schema; rows are sent as the driver returns them.
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
// They live in bench/guarded.mjs, which bench/inside.mjs also serves from inside the service's process.
// Plain JavaScript, so that its memory does not include Node's TypeScript stripper either.
// Env: DATABASE_URL (sqlite:FILE or postgres://), DATABASE_SCHEMA, PORT, FLOOR_MERCHANT, TOKEN_SIGNING_KEYS.
import { randomBytes, randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import Fastify from 'fastify';
import pg from 'pg';
import { guardedRoutes } from './guarded.mjs';

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
      contract: contractOnSqlite(db, begin, commit),
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
    contract: contractOnPostgres(pool),
  };
}

// ---- the contract's writes (see the top of the file)

/** The newest rows the service wrote for a quote, or for a payment: what the /contract routes copy. */
async function templates(one, what) {
  if (what === 'quote') {
    const quote = await one('select * from quotes where merchant_id = ? order by created_at desc limit 1', [merchant]);
    const quoteEvent = quote && (await one('select * from events where id = ?', [quote.event_id]));
    if (!quote || !quoteEvent) throw new Error('bench/floor.mjs: the service has written no quote to copy yet');
    delete quoteEvent.position; // the database numbers events
    return { quote, quoteEvent };
  }
  const transfer = await one("select * from transfers where merchant_id = ? and state = 'inProgress' order by created_at desc limit 1", [merchant]);
  const transferEvent = transfer && (await one("select * from events where transfer_id = ? and type = 'transfer.created'", [transfer.id]));
  const charge = transfer && (await one("select * from ledger_entries where transfer_id = ? and kind = 'CHARGE'", [transfer.id]));
  if (!transfer || !transferEvent || !charge) throw new Error('bench/floor.mjs: the service has written no payment to copy yet');
  delete transferEvent.position;
  return { transfer, transferEvent, charge };
}

/** What changes from one copied row to the next: ids, times, and the merchant and warehouse asked for (the rest is the template's). */
function fresh(t, now, merchantId, warehouseId) {
  const transferId = randomUUID();
  const eventId = randomUUID();
  return {
    quote: {
      ...t.quote,
      id: randomUUID(),
      merchant_id: merchantId,
      warehouse_id: warehouseId,
      transfer_id: transferId,
      event_id: eventId,
      status: 'pending',
      created_at: now,
      expires_at: now + 15 * 60_000,
      consumed_at: null,
    },
    quoteEvent: { ...t.quoteEvent, id: eventId, merchant_id: merchantId, transfer_id: transferId, occurred_at: now },
  };
}
const transferCodes = () => ({ transfer_code: randomBytes(5).toString('hex').toUpperCase(), tracking_code: randomBytes(16).toString('base64url') });

// ---- the answers: the service's bodies, built as an implementation would from what it has just written.
// What does not change from one copy to the next (the priced products, the transfer's details) is parsed once:
// an implementation has it in hand from the request and the pricing.
const isoOf = (ms) => new Date(Number(ms)).toISOString();
/** Great-circle distance in whole metres, as the service's pricing measures it. */
function metres(a, b) {
  const rad = Math.PI / 180;
  const h = Math.sin(((b.lat - a.lat) * rad) / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(((b.lng - a.lng) * rad) / 2) ** 2;
  return Math.round(2 * 6_371_008.8 * Math.asin(Math.min(1, Math.sqrt(h))));
}
/** The parts of a quote's answer that its copies share: the products as merchants see them (minor units are internal), where from and to. */
function quoteParts(quote) {
  const products = Object.fromEntries(
    Object.entries(JSON.parse(quote.products)).map(([key, { payableMinor, cancellationFeeMinor, returnFeeMinor, courierFeeMinor, ...p }]) => [key, p]),
  );
  const pickup = JSON.parse(quote.pickup);
  const { lat, lng } = JSON.parse(quote.request).destinationLocation;
  return { products, from: { lat: pickup.lat, lng: pickup.lng }, to: { lat, lng } };
}
const quoteAnswer = (parts, q) =>
  JSON.stringify({
    id: q.id,
    transfer_id: q.transfer_id,
    event_id: q.event_id,
    products: parts.products,
    currency: q.currency,
    distanceMeters: metres(parts.from, parts.to),
    expiresAt: isoOf(q.expires_at),
  });
/**
 * A new transfer's answer, as the service's toTransfer shapes it (a new transfer has no courier, times or
 * cancellation yet). The details (sender, pickup, recipient) are the copied transfer's, and the tracking URL
 * has no public base, as in the bench's service: the same fields, types and sizes, though with --merchants
 * the sender named is the first merchant. A copy of toTransfer (src/modules/transfers/service.ts) rather than
 * a call to it: this file is plain JavaScript without the service's modules, so that the floor's process
 * carries none of their code or memory.
 */
const transferAnswer = (d, t) =>
  JSON.stringify({
    id: t.id,
    state: t.state,
    transferCode: t.transfer_code,
    trackingCode: t.tracking_code,
    trackingUrl: `/track/${t.tracking_code}`,
    parcelSize: d.parcelSize,
    description: d.description,
    pickupLocation: d.pickupLocation,
    pickupAddress: d.pickupAddress,
    destinationLocation: d.destinationLocation,
    destinationAddress: d.destinationAddress,
    destinationAddressMetadata: d.destinationAddressMetadata,
    pickupAddressMetaData: d.pickupAddressMetaData,
    deliveryOptionName: d.deliveryOptionName,
    paymentTtlMinutes: Number(t.payment_ttl_minutes),
    paymentExpiresAt: isoOf(t.payment_expires_at),
    recipientInfo: d.recipientInfo,
    source: t.source,
    recipientFullName: d.recipientFullName,
    totalPrice: Number(t.total_amount) / 100,
    currency: t.currency,
    isFragile: d.isFragile,
    isPerishable: d.isPerishable,
    senderInfo: d.senderInfo,
    warehouseId: t.warehouse_id,
    matchmakingId: t.quote_id,
    productKey: t.product_key,
    createdAt: isoOf(t.created_at),
    updatedAt: isoOf(t.updated_at),
    deliveryPin: t.delivery_pin,
    sandbox: t.mode === 'sandbox',
    refundedAmount: Number(t.refunded_amount) / 100,
    estimatedPickupAt: t.estimated_pickup_at == null ? null : isoOf(t.estimated_pickup_at),
    estimatedDeliveryAt: t.estimated_delivery_at == null ? null : isoOf(t.estimated_delivery_at),
  });

/** fn's promise, made at the first call and shared by every call (the first requests arrive together). */
const once = (fn) => {
  let p;
  return () => (p ??= fn());
};

function contractOnSqlite(db, begin, commit) {
  const one = async (sql, values) => db.prepare(sql).get(...values);
  const insert = (table, row) =>
    db.prepare(
      `insert into ${table} (${Object.keys(row).join(', ')}) values (${Object.keys(row)
        .map(() => '?')
        .join(', ')})`,
    );
  const quotePlan = once(async () => {
    const t = await templates(one, 'quote');
    return {
      t,
      parts: quoteParts(t.quote),
      warehouse: db.prepare("select 1 as ok from warehouses where merchant_id = ? and id = ? and status = 'ACTIVE'"),
      quote: insert('quotes', t.quote),
      event: insert('events', t.quoteEvent),
    };
  });
  const transferPlan = once(async () => {
    const t = await templates(one, 'transfer');
    return {
      t,
      details: JSON.parse(t.transfer.details),
      ttlMs: Number(t.transfer.payment_ttl_minutes) * 60_000,
      consume: db.prepare(
        `update quotes set status = 'consumed', consumed_at = ? where merchant_id = ? and id = ? and status = 'pending' and expires_at > ?
          and exists (select 1 from warehouses w where w.merchant_id = quotes.merchant_id and w.id = quotes.warehouse_id and w.status = 'ACTIVE')
          returning merchant_id, warehouse_id, transfer_id`,
      ),
      debit: db.prepare('update merchants set balance = balance - ? where id = ? and balance >= ? returning balance'),
      transfer: insert('transfers', t.transfer),
      charge: insert('ledger_entries', t.charge),
      event: insert('events', t.transferEvent),
    };
  });
  const inTransaction = (work) => {
    begin.run();
    try {
      const result = work();
      commit.run();
      return result;
    } catch (e) {
      db.exec('rollback');
      throw e;
    }
  };
  return {
    /** The quote's answer (JSON), or undefined when the warehouse is not the merchant's ACTIVE one (nothing written). */
    options: async (merchantId, warehouseId) => {
      const plan = await quotePlan();
      const rows = fresh(plan.t, Date.now(), merchantId, warehouseId);
      const written = inTransaction(() => {
        if (typeof warehouseId !== 'string' || !plan.warehouse.get(merchantId, warehouseId)) return false;
        plan.quote.run(...Object.values(rows.quote));
        plan.event.run(...Object.values(rows.quoteEvent));
        return true;
      });
      return written ? quoteAnswer(plan.parts, rows.quote) : undefined;
    },
    /** The transfer's answer (JSON), or undefined when the quote is not the merchant's pending one (nothing written). */
    transfer: async (merchantId, quoteId) => {
      const { t, details, ttlMs, ...plan } = await transferPlan();
      const now = Date.now();
      const amount = t.transfer.total_amount;
      const transfer = inTransaction(() => {
        const q = plan.consume.get(now, merchantId, quoteId, now);
        if (!q) return undefined;
        const debited = plan.debit.get(amount, q.merchant_id, amount);
        if (!debited) throw new Error('bench/floor.mjs: balance exhausted');
        const { merchant_id, transfer_id } = q;
        const row = {
          ...t.transfer,
          id: transfer_id,
          merchant_id,
          quote_id: quoteId,
          warehouse_id: q.warehouse_id,
          ...transferCodes(),
          payment_expires_at: now + ttlMs,
          created_at: now,
          updated_at: now,
        };
        plan.transfer.run(...Object.values(row));
        plan.charge.run(...Object.values({ ...t.charge, id: randomUUID(), merchant_id, balance_after: debited.balance, transfer_id, created_at: now }));
        plan.event.run(...Object.values({ ...t.transferEvent, id: randomUUID(), merchant_id, transfer_id, occurred_at: now }));
        return row;
      });
      return transfer && transferAnswer(details, transfer);
    },
  };
}

function contractOnPostgres(pool) {
  const one = async (sql, values) => {
    let n = 0;
    return (
      await pool.query(
        sql.replace(/\?/g, () => `$${++n}`),
        values,
      )
    ).rows[0];
  };
  const types = once(
    async () =>
      new Map(
        (await pool.query('select table_name, column_name, data_type from information_schema.columns where table_schema = current_schema()')).rows.map((r) => [
          `${r.table_name}.${r.column_name}`,
          r.data_type,
        ]),
      ),
  );
  // `insert into TABLE (every column of row) select ...`: each column the expression given for it, or a
  // typed parameter taken from rows[source][column] at each call (params lists them in order).
  const insert = (typeOf, params, table, source, row, expressions = {}, from = '') => {
    const select = Object.keys(row).map((c) => {
      if (c in expressions) return expressions[c];
      params.push([source, c]);
      return `$${params.length}::${typeOf.get(`${table}.${c}`)}`;
    });
    return `insert into ${table} (${Object.keys(row).join(', ')}) select ${select.join(', ')}${from}`;
  };
  const valuesOf = (params, rows) => params.map(([source, column]) => rows[source][column]);
  const quotePlan = once(async () => {
    const [t, typeOf] = [await templates(one, 'quote'), await types()];
    // $1 the merchant, $2 the warehouse (the request's): written only for the merchant's own ACTIVE warehouse.
    const params = [
      ['quote', 'merchant_id'],
      ['quote', 'warehouse_id'],
    ];
    const scoped = { merchant_id: '$1::text', warehouse_id: '$2::text' };
    const text = `with ok as (select 1 from warehouses where merchant_id = $1::text and id = $2::text and status = 'ACTIVE'),
      q as (${insert(typeOf, params, 'quotes', 'quote', t.quote, scoped, ' from ok')})
      ${insert(typeOf, params, 'events', 'quoteEvent', t.quoteEvent, { merchant_id: '$1::text' }, ' from ok')}`;
    return { t, parts: quoteParts(t.quote), text, params };
  });
  const transferPlan = once(async () => {
    const [t, typeOf] = [await templates(one, 'transfer'), await types()];
    const ttlMs = Number(t.transfer.payment_ttl_minutes) * 60_000;
    // $1 the quote, $2 now, $3 the amount, $4 the merchant; then the copied columns.
    const params = [
      ['args', 'quoteId'],
      ['args', 'now'],
      ['args', 'amount'],
      ['args', 'merchantId'],
    ];
    const copy = (table, source, row, expressions) => insert(typeOf, params, table, source, row, expressions, ' from c, d');
    const text = `with c as (update quotes set status = 'consumed', consumed_at = $2::bigint
        where merchant_id = $4::text and id = $1::text and status = 'pending' and expires_at > $2::bigint
          and exists (select 1 from warehouses w where w.merchant_id = quotes.merchant_id and w.id = quotes.warehouse_id and w.status = 'ACTIVE')
        returning merchant_id, warehouse_id, transfer_id),
      d as (update merchants m set balance = m.balance - $3::bigint from c where m.id = c.merchant_id and m.balance >= $3::bigint returning m.balance),
      t as (${copy('transfers', 'transfer', t.transfer, {
        id: 'c.transfer_id',
        merchant_id: 'c.merchant_id',
        quote_id: '$1::text',
        warehouse_id: 'c.warehouse_id',
        payment_expires_at: `$2::bigint + ${ttlMs}`,
        created_at: '$2::bigint',
        updated_at: '$2::bigint',
      })}),
      l as (${copy('ledger_entries', 'charge', t.charge, { merchant_id: 'c.merchant_id', balance_after: 'd.balance', transfer_id: 'c.transfer_id', created_at: '$2::bigint' })}),
      e as (${copy('events', 'transferEvent', t.transferEvent, { merchant_id: 'c.merchant_id', transfer_id: 'c.transfer_id', occurred_at: '$2::bigint' })})
      select (select count(*) from d)::int as n, (select transfer_id from c) as transfer_id, (select warehouse_id from c) as warehouse_id,
        1 / (case when exists (select 1 from c) and not exists (select 1 from d) then 0 else 1 end) as balance_guard`;
    return { t, details: JSON.parse(t.transfer.details), ttlMs, text, params };
  });
  // The quote with the work the contract asks of it (bench/contract-work.mjs): validated, priced, time-ordered
  // ids, and written only if the warehouse's row version (as the service checks it), the tariff version in force
  // and the merchant's (absent) endpoints are still those it was priced from.
  const workPlan = once(async () => {
    const [t, typeOf] = [await templates(one, 'quote'), await types()];
    const params = [
      ['quote', 'merchant_id'],
      ['quote', 'warehouse_id'],
      ['args', 'tariffVersion'],
      ['args', 'version'],
    ];
    const scoped = { merchant_id: '$1::text', warehouse_id: '$2::text' };
    const text = `with ok as (select 1 from warehouses w cross join lateral (select max(version) as version from tariffs) tv
        where w.merchant_id = $1::text and w.id = $2::text and w.status = 'ACTIVE' and w.xmin::text = $4::text and tv.version is not distinct from $3::bigint
        and not exists (select 1 from webhook_endpoints e where e.merchant_id = $1::text and e.status = 'ENABLED')),
      q as (${insert(typeOf, params, 'quotes', 'quote', t.quote, scoped, ' from ok')})
      ${insert(typeOf, params, 'events', 'quoteEvent', t.quoteEvent, { merchant_id: '$1::text' }, ' from ok')}`;
    // Imported here, at the first /work request, so that the floor's idle memory (npm run bench's memory floor) stays without it.
    const { contractWork } = await import('./contract-work.mjs');
    const work = await contractWork(one);
    return { t, text, params, work };
  });
  return {
    work: async (merchantId, body, reply) => {
      const { t, text, params, work } = await workPlan();
      const request = work.validQuote(body);
      if (!request) return reply.code(400).type(PROBLEM_TYPE).send({ type: 'VALIDATION_FAILED', status: 400 });
      const w = await work.warehouse(merchantId, request.warehouseId);
      if (!w) return reply.code(404).type(PROBLEM_TYPE).send({ type: 'WAREHOUSE_NOT_FOUND', status: 404 });
      const now = Date.now();
      const { quote, row, event } = work.priced(merchantId, w, request, now, t);
      const args = { tariffVersion: work.tariffVersion, version: w.version };
      const r = await pool.query({ name: 'work-options', text, values: valuesOf(params, { quote: row, quoteEvent: event, args }) });
      if (r.rowCount !== 1) return reply.code(409).type(PROBLEM_TYPE).send({ type: 'CHANGED', status: 409 });
      return reply.code(201).type(JSON_TYPE).send(JSON.stringify(quote));
    },
    options: async (merchantId, warehouseId) => {
      const { t, parts, text, params } = await quotePlan();
      const rows = fresh(t, Date.now(), merchantId, warehouseId);
      const r = await pool.query({ name: 'contract-options', text, values: valuesOf(params, rows) });
      return r.rowCount === 1 ? quoteAnswer(parts, rows.quote) : undefined;
    },
    transfer: async (merchantId, quoteId) => {
      const { t, details, ttlMs, text, params } = await transferPlan();
      const now = Date.now();
      const rows = {
        args: { quoteId, now, amount: t.transfer.total_amount, merchantId },
        transfer: { ...t.transfer, ...transferCodes() },
        charge: { ...t.charge, id: randomUUID() },
        transferEvent: { ...t.transferEvent, id: randomUUID() },
      };
      const r = await pool.query({ name: 'contract-transfer', text, values: valuesOf(params, rows) });
      const { n, transfer_id, warehouse_id } = r.rows[0];
      if (n !== 1) return undefined;
      return transferAnswer(details, {
        ...rows.transfer,
        id: transfer_id,
        merchant_id: merchantId,
        quote_id: quoteId,
        warehouse_id,
        payment_expires_at: now + ttlMs,
        created_at: now,
        updated_at: now,
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
// ---- the guarded reads (see the top of the file), and their guard for the contract's writes
const guard = guardedRoutes(app, store);
const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json';
/** A /contract write: guarded, then write(merchantId, the body's field) answers the JSON, or undefined for the refusal. */
const contractRoute = (path, write, field, refusal) =>
  app.post(path, async (req, reply) => {
    const merchantId = guard(req, reply);
    if (!merchantId) return reply;
    const answer = await write(merchantId, req.body[field]);
    if (!answer) return reply.code(refusal.status).type(PROBLEM_TYPE).send(refusal);
    return reply.code(201).type(JSON_TYPE).send(answer);
  });
app.post('/work/options', async (req, reply) => {
  if (!store.contract.work) return reply.code(501).send({ type: 'PostgreSQL only' });
  const merchantId = guard(req, reply);
  if (!merchantId) return reply;
  return store.contract.work(merchantId, req.body, reply);
});
contractRoute('/contract/options', store.contract.options, 'warehouseId', { type: 'WAREHOUSE_NOT_FOUND', status: 404 });
contractRoute('/contract/transfer', store.contract.transfer, 'matchmakingId', { type: 'QUOTE_ALREADY_USED', status: 409 });

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
console.log('ready');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
