// The CPU cost of the rate limits per request, in one process: GET /warehouses/{id} through app.inject
// on two apps over the same database, one with the limits on (the default) and one with
// RATE_LIMITS_ENABLED=false, in alternating rounds, measured as process CPU time per request (less
// disturbed by other work on a shared machine than wall time). `npm run bench` compares over HTTP with a
// second instance that also has its background work off; this one isolates the limiter from the network
// and the load generator.
//
//   node bench/rate-limit-cost.ts [--rounds 20] [--requests 2000]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { migrateToLatest, openDatabase } from '../src/db/database.ts';

const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '20' }, requests: { type: 'string', default: '2000' } } });
const ROUNDS = Number(args.rounds);
const REQUESTS = Number(args.requests);

const dir = mkdtempSync(join(tmpdir(), 'mds-rl-cost-'));
const url = `sqlite:${join(dir, 'cost.sqlite')}`;
const keys = parseSigningKeys(`bench:${randomBytes(32).toString('base64url')}`);
const database = openDatabase({ url });
await migrateToLatest(database);
const build = (env: Record<string, string>) =>
  buildApp({
    config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: url, MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000', ...env }),
    database,
    signingKeys: keys,
  });
const on = await build({});
const off = await build({ RATE_LIMITS_ENABLED: 'false' });
try {
  const { credential } = await on.services.merchants.create('Cost', 0);
  const token = (
    await on.inject({
      method: 'POST',
      url: '/auth/token',
      payload: { grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret },
    })
  ).json().access_token as string;
  const headers = { authorization: `Bearer ${token}` };
  const body = { name: 'W', address: 'A', locationMetadata: { display_name: 'A', lat: 0, lng: 0 } };
  const id = (await on.inject({ method: 'POST', url: '/warehouses', headers, payload: body })).json().id as string;
  const request = { method: 'GET' as const, url: `/warehouses/${id}`, headers };

  const perRequest = async (app: typeof on): Promise<number> => {
    const before = process.cpuUsage();
    for (let i = 0; i < REQUESTS; i++) {
      const res = await app.inject(request);
      if (res.statusCode !== 200) throw new Error(`unexpected ${res.statusCode}: ${res.body}`);
      // Let the event loop turn now and then, as a server's does: inject finishes each response in a
      // setImmediate that SQLite's synchronous reads would otherwise never let run (bench/profile.ts).
      if (i % 100 === 99) await new Promise(setImmediate);
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / REQUESTS;
  };
  for (const app of [on, off, on, off]) await perRequest(app); // warm-up (JIT, caches)
  const samples = { on: [] as number[], off: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which goes first, so drift in the machine's load falls on both.
    const order = r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
    for (const which of order) samples[which].push(await perRequest(which === 'on' ? on : off));
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  const diffs = samples.on.map((v, i) => v - samples.off[i]);
  const [mOn, mOff, mDiff] = [median(samples.on), median(samples.off), median(diffs)];
  console.log(
    `GET /warehouses/{id} via app.inject, ${ROUNDS} rounds × ${REQUESTS} requests, CPU µs per request (median): ` +
      `limits on ${mOn.toFixed(1)}, off ${mOff.toFixed(1)}, difference ${mDiff.toFixed(1)} µs (${((mDiff / mOff) * 100).toFixed(1)} %)`,
  );
} finally {
  await on.close();
  await off.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
}
