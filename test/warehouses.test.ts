import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { migrateToLatest, openDatabase } from '../src/db/database.ts';
import { allMigrations } from '../src/db/migrations/index.ts';
import { describeEachStore, ISO_MS_RE, UUID_RE, warehouseBody } from './helpers/app.ts';
import { createStore, STORES, withSchemaLock } from './helpers/stores.ts';

describeEachStore(
  'warehouses',
  (ctx, store) => {
    test('POST /warehouses creates a warehouse with every field, 201 and Location', async () => {
      const t = ctx();
      const m = await t.merchant();
      const res = await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() });
      assert.equal(res.statusCode, 201);
      assert.match(res.headers['content-type'] as string, /^application\/json/);
      const w = res.json();
      assert.match(w.id, UUID_RE);
      assert.equal(res.headers.location, `/warehouses/${w.id}`);
      assert.match(w.createdAt, ISO_MS_RE);
      assert.equal(w.updatedAt, w.createdAt);
      assert.deepEqual(w, {
        id: w.id,
        merchantId: m.merchantId,
        commersantId: m.merchantId,
        name: 'Main warehouse',
        nameInt: 'main-warehouse',
        status: 'ACTIVE',
        address: 'Tverskaya St 1, Moscow',
        contactPhone: '+7 495 000-00-00',
        contactEmail: 'warehouse@example.com',
        locationMetadata: { display_name: 'Tverskaya St 1, Moscow', lat: 55.7575, lng: 37.6136, city: 'Moscow', country_code: 'ru' },
        location: { type: 'Point', coordinates: [37.6136, 55.7575] },
        type: 'POINT',
        createdAt: w.createdAt,
        updatedAt: w.createdAt,
      });
      const got = await t.as(m, { method: 'GET', url: `/warehouses/${w.id}` });
      assert.equal(got.statusCode, 200);
      assert.deepEqual(got.json(), w);
    });

    test('every write gives a warehouse a revision never seen before, whoever makes it (the service, or SQL by hand)', async () => {
      const t = ctx();
      const m = await t.merchant();
      const revision = async (id: string) =>
        (await t.database.db.selectFrom('warehouses').select('revision').where('id', '=', id).executeTakeFirstOrThrow()).revision;
      const a = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json();
      const b = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'Second' }) })).json();
      const seen = [await revision(a.id), await revision(b.id)];
      assert.match(seen[0] ?? '', /^\S{16,}$/, 'a written warehouse has one');
      assert.notEqual(seen[0], seen[1], 'two warehouses written the same way');
      const changed = async (what: string) => {
        const now = await revision(a.id);
        assert.ok(!seen.includes(now), `${what}: ${now} was seen before`);
        seen.push(now);
      };
      assert.equal((await t.as(m, { method: 'PUT', url: `/warehouses/${a.id}`, payload: warehouseBody({ name: 'Renamed' }) })).statusCode, 200);
      await changed('a PUT');
      assert.equal((await t.as(m, { method: 'PUT', url: `/warehouses/${a.id}`, payload: warehouseBody({ name: 'Renamed' }) })).statusCode, 200);
      await changed('a PUT that changes nothing but the time');
      await t.database.db.updateTable('warehouses').set({ status: 'DISABLED' }).where('id', '=', a.id).execute();
      await changed('an UPDATE by hand');
      await t.database.db.updateTable('warehouses').set({ name: 'By hand', revision: seen[0] }).where('id', '=', a.id).execute();
      // PostgreSQL's trigger gives every UPDATE a new one; SQLite's only one that left it as it was (SQLite's quote never reads it).
      if (store !== 'sqlite') await changed('an UPDATE by hand that sets an old revision');
      assert.equal(await revision(b.id), seen[1], 'the other warehouse kept its own');
    });

    test('a changed warehouse reads back changed at once, alone and in the list, even within the same millisecond', async () => {
      // Reads reuse a row's answer while the row is the same (src/lib/remembered-shapes.ts): a change in the same
      // millisecond keeps updatedAt, so only comparing the whole row can tell.
      const t = ctx();
      const m = await t.merchant();
      const w = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json();
      const read = async () => [
        (await t.as(m, { method: 'GET', url: `/warehouses/${w.id}` })).json(),
        (await t.as(m, { method: 'GET', url: '/warehouses' })).json(),
      ];
      assert.deepEqual(await read(), [w, [w]]);
      assert.deepEqual(await read(), [w, [w]], 'read twice: the same answer');
      const changed = { ...warehouseBody(), name: 'Renamed', contactPhone: undefined, status: 'DISABLED' };
      const put = await t.as(m, { method: 'PUT', url: `/warehouses/${w.id}`, payload: changed });
      assert.equal(put.statusCode, 200);
      const expected = { ...w, name: 'Renamed', contactPhone: null, status: 'DISABLED' };
      assert.deepEqual(put.json(), expected);
      assert.deepEqual(await read(), [expected, [expected]]);
      // A change made outside the service (an operator's SQL), same millisecond again.
      await t.database.db.updateTable('warehouses').set({ address: 'Changed in the database' }).where('id', '=', w.id).execute();
      const moved = { ...expected, address: 'Changed in the database' };
      assert.deepEqual(await read(), [moved, [moved]]);
    });

    test('only required fields: optional ones are null, status defaults to ACTIVE', async () => {
      const t = ctx();
      const m = await t.merchant();
      const res = await t.as(m, {
        method: 'POST',
        url: '/warehouses',
        payload: { name: 'Small', address: 'Somewhere 1', locationMetadata: { display_name: 'Somewhere 1', lat: -33.5, lng: 151.25 } },
      });
      assert.equal(res.statusCode, 201);
      const w = res.json();
      assert.equal(w.status, 'ACTIVE');
      assert.equal(w.nameInt, null);
      assert.equal(w.contactPhone, null);
      assert.equal(w.contactEmail, null);
      assert.deepEqual(w.locationMetadata, { display_name: 'Somewhere 1', lat: -33.5, lng: 151.25 });
      assert.deepEqual(w.location, { type: 'Point', coordinates: [151.25, -33.5] });
    });

    test('PUT replaces every editable detail, clears omitted optionals, bumps updatedAt, keeps owner and createdAt', async () => {
      const t = ctx();
      const m = await t.merchant();
      const created = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json();
      t.clock.advance(5_000);
      const res = await t.as(m, {
        method: 'PUT',
        url: `/warehouses/${created.id}`,
        payload: { name: 'Renamed', status: 'DISABLED', address: 'New St 2', locationMetadata: { display_name: 'New St 2', lat: 10, lng: 20, road: 'New St' } },
      });
      assert.equal(res.statusCode, 200);
      const w = res.json();
      assert.deepEqual(w, {
        ...created,
        name: 'Renamed',
        nameInt: null,
        status: 'DISABLED',
        address: 'New St 2',
        contactPhone: null,
        contactEmail: null,
        locationMetadata: { display_name: 'New St 2', lat: 10, lng: 20, road: 'New St' },
        location: { type: 'Point', coordinates: [20, 10] },
        updatedAt: new Date(Date.parse(created.updatedAt) + 5_000).toISOString(),
      });
      assert.deepEqual((await t.as(m, { method: 'GET', url: `/warehouses/${created.id}` })).json(), w);
    });

    test('GET /warehouses lists own warehouses, oldest first, filtered by status', async () => {
      const t = ctx();
      const m = await t.merchant();
      const a = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'A' }) })).json();
      const b = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'B', status: 'DISABLED' }) })).json();
      const c = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'C' }) })).json();
      const all = await t.as(m, { method: 'GET', url: '/warehouses' });
      assert.equal(all.statusCode, 200);
      assert.deepEqual(all.json(), [a, b, c]);
      assert.equal(all.headers.link, undefined);
      assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses?status=ACTIVE' })).json(), [a, c]);
      assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses?status=DISABLED' })).json(), [b]);
      const bad = await t.as(m, { method: 'GET', url: '/warehouses?status=GONE' });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().type, 'VALIDATION_FAILED');
      assert.deepEqual(bad.json().errors, [{ path: '/status', message: 'must be one of ACTIVE, DISABLED' }]);
    });

    test('limit and cursor paginate with a Link rel="next" header', async () => {
      const t = ctx();
      const m = await t.merchant();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: `W${i}` }) })).json().id);
      const seen: string[] = [];
      let url: string | undefined = '/warehouses?limit=2';
      let pages = 0;
      while (url) {
        const res = await t.as(m, { method: 'GET', url });
        assert.equal(res.statusCode, 200);
        seen.push(...res.json().map((w: { id: string }) => w.id));
        const link = res.headers.link as string | undefined;
        url = link ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined;
        if (link) assert.ok(url, `Link header malformed: ${link}`);
        pages++;
      }
      assert.equal(pages, 3);
      assert.deepEqual(seen, ids);
      const badCursor = await t.as(m, { method: 'GET', url: '/warehouses?limit=2&cursor=bm9wZQ' });
      assert.equal(badCursor.statusCode, 400);
      assert.deepEqual(badCursor.json().errors, [{ path: '/cursor', message: 'is not a valid cursor' }]);
      for (const limit of ['0', '1001', 'x']) {
        assert.equal((await t.as(m, { method: 'GET', url: `/warehouses?limit=${limit}` })).statusCode, 400, `limit=${limit}`);
      }
    });

    test('unknown warehouse id: 404 WAREHOUSE_NOT_FOUND; non-UUID id: 400 with the path', async () => {
      const t = ctx();
      const m = await t.merchant();
      const id = '01a20058-cb4a-7657-ba2b-fa105300957e';
      for (const method of ['GET', 'PUT'] as const) {
        const res = await t.as(m, {
          method,
          url: `/warehouses/${id}`,
          headers: { 'x-request-id': 'nf' },
          payload: method === 'PUT' ? warehouseBody() : undefined,
        });
        assert.equal(res.statusCode, 404);
        assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
        assert.deepEqual(res.json(), { type: 'WAREHOUSE_NOT_FOUND', title: 'Warehouse not found', status: 404, detail: `No warehouse ${id}`, requestId: 'nf' });
      }
      // Upper case is the same id (RFC 9562: case-insensitive on input); other spellings are refused, not a puzzling 404.
      const upper = await t.as(m, { method: 'GET', url: `/warehouses/${id.toUpperCase()}` });
      assert.equal(upper.statusCode, 404);
      assert.equal(upper.json().detail, `No warehouse ${id}`);
      for (const notCanonical of ['not-a-uuid', `urn:uuid:${id}`, `{${id}}`]) {
        const bad = await t.as(m, { method: 'GET', url: `/warehouses/${notCanonical}` });
        assert.equal(bad.statusCode, 400, notCanonical);
        assert.deepEqual(bad.json().errors, [{ path: '/id', message: 'must match format "uuid"' }]);
      }
    });

    test('control characters are refused (PostgreSQL cannot even store a NUL)', async () => {
      const t = ctx();
      const m = await t.merchant();
      const res = await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'a\u0000b', address: 'line\nbreak' }) });
      assert.equal(res.statusCode, 400);
      assert.deepEqual(res.json().errors, [
        { path: '/name', message: 'must not contain control characters' },
        { path: '/address', message: 'must not contain control characters' },
      ]);
      const phone = await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody({ contactPhone: 'call me' }) });
      assert.deepEqual(phone.json().errors, [
        { path: '/contactPhone', message: 'must be a phone number: digits with an optional leading +, spaces, dashes, parentheses' },
      ]);
      assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses' })).json(), []);
    });

    test('a body with thousands of unknown fields gets a bounded answer', async () => {
      const t = ctx();
      const m = await t.merchant();
      const junk = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`f${i}`, 1]));
      const res = await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody(junk) });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().errors.length, 20);
      assert.match(res.json().detail, /\(and 2980 more\)$/);
      assert.ok(res.body.length < 5_000, `${res.body.length} bytes`);
    });

    test('bad input: 400 with every offending path, nothing written', async () => {
      const t = ctx();
      const m = await t.merchant();
      const cases: Array<[unknown, Array<{ path: string; message: string }>]> = [
        [
          warehouseBody({ locationMetadata: { display_name: 'x', lat: 90.0001, lng: -180.5 } }),
          [
            { path: '/locationMetadata/lat', message: 'must be <= 90' },
            { path: '/locationMetadata/lng', message: 'must be >= -180' },
          ],
        ],
        [warehouseBody({ contactEmail: 'not-an-email' }), [{ path: '/contactEmail', message: 'must match format "email"' }]],
        [warehouseBody({ name: 42 }), [{ path: '/name', message: 'must be string' }]],
        [warehouseBody({ locationMetadata: { display_name: 'x', lat: '55.1', lng: 37 } }), [{ path: '/locationMetadata/lat', message: 'must be number' }]],
        [
          warehouseBody({ id: '01a20058-cb4a-7657-ba2b-fa105300957e', merchantId: 'x' }),
          [
            { path: '/id', message: 'is not a known field' },
            { path: '/merchantId', message: 'is not a known field' },
          ],
        ],
        [warehouseBody({ status: 'OPEN' }), [{ path: '/status', message: 'must be one of ACTIVE, DISABLED' }]],
        [
          { name: 'x' },
          [
            { path: '/address', message: 'is required' },
            { path: '/locationMetadata', message: 'is required' },
          ],
        ],
        [warehouseBody({ locationMetadata: { lat: 1, lng: 2 } }), [{ path: '/locationMetadata/display_name', message: 'is required' }]],
        [warehouseBody({ name: '' }), [{ path: '/name', message: 'must NOT have fewer than 1 characters' }]],
        [[], [{ path: '', message: 'must be object' }]],
      ];
      for (const [payload, errors] of cases) {
        const res = await t.as(m, { method: 'POST', url: '/warehouses', payload: payload as object });
        assert.equal(res.statusCode, 400, JSON.stringify(payload));
        const body = res.json();
        assert.equal(body.type, 'VALIDATION_FAILED');
        assert.equal(body.title, 'Request validation failed');
        assert.equal(body.status, 400);
        assert.deepEqual(body.errors, errors, JSON.stringify(payload));
      }
      const malformed = await t.as(m, {
        method: 'POST',
        url: '/warehouses',
        headers: { 'content-type': 'application/json', 'x-request-id': 'mj' },
        payload: '{"name": ',
      });
      assert.equal(malformed.statusCode, 400);
      assert.deepEqual(malformed.json(), {
        type: 'VALIDATION_FAILED',
        title: 'Request validation failed',
        status: 400,
        detail: 'The request body is not valid JSON',
        requestId: 'mj',
        errors: [{ path: '', message: 'malformed JSON' }],
      });
      // A bad PUT changes nothing either.
      const w = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json();
      const put = await t.as(m, { method: 'PUT', url: `/warehouses/${w.id}`, payload: warehouseBody({ name: 'Changed', contactEmail: 'bad' }) });
      assert.equal(put.statusCode, 400);
      assert.deepEqual((await t.as(m, { method: 'GET', url: '/warehouses' })).json(), [w]);
    });

    test('per-merchant cap on warehouses', async () => {
      const t = ctx();
      const m = await t.merchant();
      for (let i = 0; i < 5; i++) assert.equal((await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).statusCode, 201);
      const res = await t.as(m, { method: 'POST', url: '/warehouses', headers: { 'x-request-id': 'cap' }, payload: warehouseBody() });
      assert.equal(res.statusCode, 422);
      assert.deepEqual(res.json(), {
        type: 'WAREHOUSE_LIMIT_REACHED',
        title: 'Warehouse limit reached',
        status: 422,
        detail: 'A merchant can have at most 5 warehouses',
        requestId: 'cap',
      });
      assert.equal((await t.as(m, { method: 'GET', url: '/warehouses' })).json().length, 5);
    });

    test('the cap holds under concurrent creates', async () => {
      const t = ctx();
      const m = await t.merchant();
      const token = await t.token(m);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => t.http(token, 'POST', '/warehouses', warehouseBody({ name: `C${i}` }))));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [...Array(5).fill(201), ...Array(15).fill(422)]);
      const all = await t.as(m, { method: 'GET', url: '/warehouses' });
      assert.equal(all.json().length, 5);
      assert.equal(all.headers.link, undefined, 'the unpaged list is complete');
    });
  },
  { MAX_WAREHOUSES_PER_MERCHANT: '5' },
);

describeEachStore('warehouses: tenant isolation', (ctx) => {
  test("merchant B cannot read or replace merchant A's warehouse: 404 identical to a random id", async () => {
    const t = ctx();
    const a = await t.merchant('A');
    const b = await t.merchant('B');
    const wa = (await t.as(a, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json();
    const random = '01a20058-cb4a-7657-ba2b-fa105300957e';
    for (const method of ['GET', 'PUT'] as const) {
      const payload = method === 'PUT' ? warehouseBody({ name: 'Hijacked' }) : undefined;
      const theirs = await t.as(b, { method, url: `/warehouses/${wa.id}`, headers: { 'x-request-id': 'iso' }, payload });
      const none = await t.as(b, { method, url: `/warehouses/${random}`, headers: { 'x-request-id': 'iso' }, payload });
      assert.equal(theirs.statusCode, 404);
      assert.deepEqual({ ...(theirs.json() as object), detail: '' }, { ...(none.json() as object), detail: '' });
      assert.equal(theirs.json().detail, `No warehouse ${wa.id}`, 'the detail only echoes the id the caller sent');
      assert.deepEqual(Object.keys(theirs.headers).sort(), Object.keys(none.headers).sort());
    }
    assert.deepEqual((await t.as(a, { method: 'GET', url: `/warehouses/${wa.id}` })).json(), wa, "A's warehouse is unchanged");
  });

  test("lists never show another merchant's rows", async () => {
    const t = ctx();
    const a = await t.merchant('A');
    const b = await t.merchant('B');
    const wa = (await t.as(a, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'A1' }) })).json();
    const wb = (await t.as(b, { method: 'POST', url: '/warehouses', payload: warehouseBody({ name: 'B1' }) })).json();
    assert.deepEqual((await t.as(a, { method: 'GET', url: '/warehouses' })).json(), [wa]);
    assert.deepEqual((await t.as(b, { method: 'GET', url: '/warehouses' })).json(), [wb]);
    // A cursor below every id pages through everything B may see: B's rows only.
    const cursor = Buffer.from('00000000-0000-0000-0000-000000000000').toString('base64url');
    const page = await t.as(b, { method: 'GET', url: `/warehouses?limit=10&cursor=${cursor}` });
    assert.equal(page.statusCode, 200);
    assert.deepEqual(page.json(), [wb]);
  });

  test('PUT cannot move a warehouse to another merchant', async () => {
    const t = ctx();
    const a = await t.merchant('A');
    const b = await t.merchant('B');
    const wa = (await t.as(a, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json();
    for (const field of ['merchantId', 'commersantId']) {
      const res = await t.as(a, { method: 'PUT', url: `/warehouses/${wa.id}`, payload: warehouseBody({ [field]: b.merchantId }) });
      assert.equal(res.statusCode, 400);
      assert.deepEqual(res.json().errors, [{ path: `/${field}`, message: 'is not a known field' }]);
    }
    assert.deepEqual((await t.as(b, { method: 'GET', url: '/warehouses' })).json(), []);
    assert.equal((await t.as(a, { method: 'GET', url: `/warehouses/${wa.id}` })).json().merchantId, a.merchantId);
  });
});

for (const store of STORES) {
  test(`warehouses written before revisions existed get one each, all different, when the migration runs [${store}]`, async () => {
    const s = await createStore(store);
    const database = openDatabase({ url: s.url, schema: s.schema });
    const lock = <T>(fn: () => Promise<T>) => (store === 'sqlite' ? fn() : withSchemaLock(fn));
    try {
      // Every migration before the one that adds the column, as a deployment of the previous release has.
      const before = allMigrations(database.dialect);
      const added = Object.keys(before).find((name) => name.endsWith('-warehouse-revision'));
      assert.ok(added, 'the migration that adds warehouses.revision');
      delete before[added];
      const { error } = await lock(() =>
        new Migrator({ db: database.db, provider: { getMigrations: async () => before }, migrationTableSchema: s.schema }).migrateToLatest(),
      );
      assert.ifError(error);
      const db = database.db as unknown as Kysely<any>;
      await db.insertInto('merchants').values({ id: 'm1', name: 'Shop', balance: 0, mode: 'live', created_at: 1, updated_at: 1 }).execute();
      const ids = ['w1', 'w2', 'w3'];
      for (const id of ids) {
        await db
          .insertInto('warehouses')
          .values({
            id,
            merchant_id: 'm1',
            name: id,
            status: 'ACTIVE',
            address: 'A',
            location_metadata: '{}',
            lat: 55.75,
            lng: 37.61,
            created_at: 1,
            updated_at: 1,
          })
          .execute();
      }

      await lock(() => migrateToLatest(database));
      const rows = await database.db.selectFrom('warehouses').select(['id', 'revision']).orderBy('id').execute();
      assert.deepEqual(
        rows.map((r) => r.id),
        ids,
      );
      for (const r of rows) assert.match(r.revision, /^[0-9a-f]{32}$/, `${r.id}: ${r.revision}`);
      assert.equal(new Set(rows.map((r) => r.revision)).size, ids.length, 'no two alike');
    } finally {
      await database.close();
      await s.cleanup();
    }
  });
}
