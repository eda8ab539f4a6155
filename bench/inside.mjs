// `node --import ./bench/inside.mjs bin/mds.js serve`: bench/floor.mjs's guarded reads (bench/guarded.mjs)
// served from inside the service's own process, so that bench/instances.ts --inside can tell what the
// service's process and application cost the same work (docs/benchmarks.md, "Twentieth pass"):
//   INSIDE=root     as routes of the service's own Fastify application, at its root: its root lifecycle
//                   hooks, options and router apply (the request id, the logger, the routing checks...),
//                   none of the merchant scope's (authentication, the rate limit, schemas);
//   INSIDE=beside   in a bare Fastify instance of its own (no logger, no hooks) listening on INSIDE_PORT,
//                   in the same process: what is left is only being a larger program (its heap, its code,
//                   its background work).
// SQLite only: the reads go through a connection of their own on the service's DATABASE_URL, as the floor's.
// It hooks in through Fastify's `fastify.initialization` diagnostics channel (the first instance made is
// the service's application), so the service's code is not changed for it.
import { subscribe } from 'node:diagnostics_channel';
import { DatabaseSync } from 'node:sqlite';
import Fastify from 'fastify';
import { guardedRoutes } from './guarded.mjs';

const mode = process.env.INSIDE;
if (mode !== 'root' && mode !== 'beside') throw new Error('bench/inside.mjs: set INSIDE=root or INSIDE=beside');
const url = process.env.DATABASE_URL ?? '';
if (!url.startsWith('sqlite:')) throw new Error('bench/inside.mjs: SQLite only (DATABASE_URL=sqlite:FILE)');

// Opened at the first request: when the preload runs, the service may not have migrated its file yet.
let reads;
const open = () => {
  if (reads) return reads;
  const db = new DatabaseSync(url.slice('sqlite:'.length));
  db.exec('PRAGMA busy_timeout = 5000');
  reads = {
    one: db.prepare('select * from warehouses where merchant_id = ? and id = ?'),
    all: db.prepare('select * from warehouses where merchant_id = ? order by id'),
  };
  return reads;
};
const store = {
  warehouse: async (id, merchantId) => open().one.get(merchantId, id),
  warehouses: async (merchantId) => open().all.all(merchantId),
};

let seen = false;
subscribe('fastify.initialization', ({ fastify }) => {
  if (seen) return; // the service's application is the first instance made; others (none today) are left alone
  seen = true;
  if (mode === 'root') {
    // Added before src/app.ts runs: the root's lifecycle hooks still apply (Fastify binds them when it gets
    // ready), but not what is fixed as a route is added (the routing table's onRoute, its uuid normalisation).
    // The request id is made twice here: the service's, then the guarded route's own.
    guardedRoutes(fastify, store);
    return;
  }
  const beside = Fastify({ logger: false });
  guardedRoutes(beside, store);
  // Listening at once (before the service is, being smaller; a failure ends the process), closed with the service.
  fastify.addHook('onClose', () => beside.close());
  beside.listen({ port: Number(process.env.INSIDE_PORT), host: '127.0.0.1' }).catch((err) => {
    console.error(`bench/inside.mjs: ${err.message}`);
    process.exit(1);
  });
});
