// `node bench/profile.ts ROW [seconds] [out.cpuprofile]`: one endpoint in process through app.inject (no sockets),
// LOG_LEVEL=warn; a CPU profile of the load phase only (node:inspector) goes to out.cpuprofile, and the
// statements each request sent to the database are counted (a round trip each on PostgreSQL), and PostgreSQL's CPU
// each is read from /proc when its server runs here.
// SQLite in a temp dir; PROFILE_POSTGRES_URL=postgres://... profiles on PostgreSQL, in a fresh schema dropped after
// (PROFILE_PREPARED_STATEMENTS=false: every statement unnamed, as DATABASE_PREPARED_STATEMENTS=false).
// OUT ending in .heapprofile: a sampling heap profile instead (every allocation, collected or not), and the
// allocation sites that account for most bytes per request printed by function and file.
// ROW: warehouse-get | warehouse-list | options | transfer | transfer-key (with an Idempotency-Key) | transfer-get | transfer-list

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { buildApp } from '../src/app.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { migrateToLatest, openDatabase } from '../src/db/database.ts';
import { directReads } from '../src/db/prepared.ts';
import { postgresCpuMicros, postmasterOf } from './process-cpu.ts';

const [row = 'warehouse-list', secondsArg = '5', out = `/tmp/mds-${row}.cpuprofile`] = process.argv.slice(2);
const KEYS = 'bench:dGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXktdGVzdC1rZXk';
const dir = mkdtempSync(join(tmpdir(), 'mds-profile-'));
const postgresUrl = process.env.PROFILE_POSTGRES_URL;
const schema = postgresUrl ? `profile_${process.pid}` : undefined;
const config = loadConfig({
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  TOKEN_SIGNING_KEYS: KEYS,
  // As npm run bench: counted, never refused (a 429 is not the row's work).
  MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000',
  DATABASE_URL: postgresUrl ?? `sqlite:${join(dir, 'p.sqlite')}`,
});
if (schema) {
  const admin = openDatabase({ url: config.databaseUrl });
  await admin.db.schema.createSchema(schema).execute();
  await admin.close();
}
const database = openDatabase({ url: config.databaseUrl, schema, preparedStatements: process.env.PROFILE_PREPARED_STATEMENTS !== 'false' });
// Statements sent through Kysely go through a connection its executor provides: count them there.
let statements = 0;
const counted = new WeakSet<object>();
const executor = database.db.getExecutor();
const provideConnection = executor.provideConnection.bind(executor);
executor.provideConnection = (consumer) =>
  provideConnection((connection) => {
    if (!counted.has(connection)) {
      counted.add(connection);
      const executeQuery = connection.executeQuery.bind(connection);
      connection.executeQuery = (q) => {
        statements++;
        return executeQuery(q);
      };
    }
    return consumer(connection);
  });
// Statements sent outside a transaction skip the executor (directReads in src/db/prepared.ts: compiled reads on
// a free SQLite connection; on PostgreSQL compiled statements and sendStatement's): count them too.
const direct = directReads.get(database.db);
if (direct) {
  directReads.set(database.db, (sql, parameters) => {
    const rows = direct(sql, parameters);
    if (rows) statements++;
    return rows;
  });
}
await migrateToLatest(database);
const app = await buildApp({ config, database, signingKeys: parseSigningKeys(KEYS) });
await app.ready();
const { credential } = await app.services.merchants.create('Profile shop', 1e12, 'live');
const tok = await app.inject({
  method: 'POST',
  url: '/auth/token',
  payload: { grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret },
});
const headers = { authorization: `Bearer ${tok.json().access_token}`, 'content-type': 'application/json' };
const warehouses: string[] = [];
for (let i = 0; i < 50; i++) {
  const res = await app.inject({
    method: 'POST',
    url: '/warehouses',
    headers,
    payload: {
      name: `W${i}`,
      address: `Street ${i}`,
      contactPhone: '+7 495 000-00-00',
      locationMetadata: { display_name: `Street ${i}`, lat: 55.75 + i / 1000, lng: 37.61, city: 'Moscow' },
    },
  });
  warehouses.push(res.json().id);
}
const quoteBody = {
  warehouseId: warehouses[0],
  destinationLocation: { lat: 55.7339, lng: 37.5886, display_name: 'Komsomolsky Ave 24', city: 'Moscow' },
  parcelSize: 'SMALL',
  deliveryType: 'DOOR_TO_DOOR',
};
const quote = async () => (await app.inject({ method: 'POST', url: '/options', headers, payload: quoteBody })).json().id as string;
const transferBody = (id: string) => ({
  matchmakingId: id,
  productKey: 'standard',
  description: 'p',
  recipientInfo: { firstName: 'A', lastName: 'B', phone: '+7 900 000-00-00' },
});
const t0 = (await app.inject({ method: 'POST', url: '/transfer', headers, payload: transferBody(await quote()) })).json().id as string;
for (let i = 0; i < 60; i++) await app.inject({ method: 'POST', url: '/transfer', headers, payload: transferBody(await quote()) });

let keys = 0;
const requests: Record<string, () => Promise<{ statusCode: number }>> = {
  'warehouse-get': () => app.inject({ method: 'GET', url: `/warehouses/${warehouses[0]}`, headers }),
  'warehouse-list': () => app.inject({ method: 'GET', url: '/warehouses', headers }),
  options: () => app.inject({ method: 'POST', url: '/options', headers, payload: quoteBody }),
  transfer: async () => app.inject({ method: 'POST', url: '/transfer', headers, payload: transferBody(await quote()) }),
  'transfer-key': async () =>
    app.inject({ method: 'POST', url: '/transfer', headers: { ...headers, 'idempotency-key': `k${keys++}` }, payload: transferBody(await quote()) }),
  'transfer-get': () => app.inject({ method: 'GET', url: `/transfer/${t0}`, headers }),
  'transfer-list': () => app.inject({ method: 'GET', url: '/transfer?limit=50', headers }),
};
const withQuote = row === 'transfer' || row === 'transfer-key';
const expected = row === 'options' || withQuote ? 201 : 200;
let unexpected = 0;
const run = async () => {
  if ((await requests[row]()).statusCode !== expected) unexpected++;
};
for (let i = 0; i < 200; i++) await run(); // warm-up: lazy compilation (serializers, JIT) stays out of the profile
const heap = out.endsWith('.heapprofile');
const session = new Session();
session.connect();
if (heap) {
  // Every 512 bytes on average; objects that minor and major GCs collected stay in the profile.
  await session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
} else {
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
// PostgreSQL's CPU over the load phase, when its server runs on this machine (a quiet one: it counts all its work).
const postmaster = schema ? postmasterOf((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db)).rows[0].pid) : undefined;
const databaseCpu = postmaster === undefined ? undefined : postgresCpuMicros(postmaster);
const end = performance.now() + Number(secondsArg) * 1000;
let n = 0;
const statementsBefore = statements;
const cpu = process.cpuUsage();
while (performance.now() < end) {
  await Promise.all(Array.from({ length: 10 }, run));
  n += 10;
  // Let the event loop turn now and then, as a server's does between reads: inject finishes each response
  // in a setImmediate, and SQLite's reads never wait on I/O, so without this the responses and their
  // streams would pile up in the immediate queue for the whole run (their heap and collections measured too).
  if (n % 100 === 0) await new Promise(setImmediate);
}
const used = process.cpuUsage(cpu);
const databaseUsed = postmaster === undefined || databaseCpu === undefined ? undefined : (postgresCpuMicros(postmaster) ?? databaseCpu) - databaseCpu;
if (heap) {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  writeFileSync(out, JSON.stringify(profile));
  printAllocationSites(profile.head, n);
} else {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(out, JSON.stringify(profile));
}
console.log(
  `${row} on ${postgresUrl ? 'PostgreSQL' : 'SQLite'}: ${n} requests, ${((used.user + used.system) / n).toFixed(0)} µs CPU each (inject, in process), ` +
    `${((statements - statementsBefore) / n).toFixed(1)} statements each${withQuote ? ' (its quote included)' : ''}` +
    `${databaseUsed === undefined ? '' : `, PostgreSQL ${(databaseUsed / n).toFixed(0)} µs CPU each`}${unexpected ? `, ${unexpected} NOT ${expected}` : ''}`,
);
await app.close();
await database.close();
if (schema) {
  const admin = openDatabase({ url: config.databaseUrl });
  await admin.db.schema.dropSchema(schema).cascade().execute();
  await admin.close();
}
rmSync(dir, { recursive: true, force: true });

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}
/** Bytes allocated per request by function (self), the largest first, down to 1 % of the total. */
function printAllocationSites(head: HeapNode, requests: number): void {
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|src|bench)\//, '$1/')}:${lineNumber + 1}`;
    sites.set(key, (sites.get(key) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(head);
  console.log(`allocated: ${(total / requests / 1024).toFixed(1)} KiB per request (sampled)`);
  for (const [key, bytes] of [...sites].sort((a, b) => b[1] - a[1])) {
    if (bytes < total / 100) break;
    console.log(`${(bytes / requests).toFixed(0).padStart(7)} B  ${key}`);
  }
}
