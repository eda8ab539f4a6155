// The guarded reads of bench/floor.mjs: the floor's two reads plus, done by hand and as cheaply as this
// file knows how, the work the contract asks of every merchant request (see the top of bench/floor.mjs).
// Shared by the floor's own process and by bench/inside.mjs, which serves them from inside the service's.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/**
 * GET /guarded/warehouses/:id and GET /guarded/warehouses on app, reading through store
 * ({ warehouse(id, merchantId), warehouses(merchantId) }, each a promise of the rows as the driver returns them).
 * Returns the per-request guard itself, guard(req, reply): the merchant's id, or undefined once it has
 * answered 401. bench/floor.mjs's /contract writes run it too. With GUARDED_FROM_MEMORY=1 (bench/instances.ts
 * --memory) each answer, a missing row included, is read once and then given from memory: the store's cost
 * is left out of the comparison.
 */
export function guardedRoutes(app, given) {
  const store = process.env.GUARDED_FROM_MEMORY === '1' ? fromMemory(given) : given;
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
  return guard;
}

/** The store with each answer (a missing row included) read once and remembered (GUARDED_FROM_MEMORY=1): only for measuring, rows never change then. */
function fromMemory(store) {
  const known = new Map();
  const remembered = async (key, read) => {
    if (!known.has(key)) known.set(key, await read());
    return known.get(key);
  };
  return {
    warehouse: (id, merchantId) => remembered(`one ${merchantId} ${id}`, () => store.warehouse(id, merchantId)),
    warehouses: (merchantId) => remembered(`all ${merchantId}`, () => store.warehouses(merchantId)),
  };
}
