// What the tools that start `mds serve` instances on one SQLite file share (bench/instances.ts,
// bench/after-idle.ts): the environment npm run bench gives its service, the CLI, and a seeded merchant.
import { join } from 'node:path';
import { warehouseBody } from '../scripts/lib/fixtures.ts';
import { runMds, SERVER_ENV } from '../scripts/lib/server-process.ts';
import { generateSigningKey } from '../src/modules/auth/signing-keys.ts';

/** The service's environment on `dir`/bench.sqlite, as npm run bench runs it; `extra` on top. */
export function sqliteBenchEnv(dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    ...SERVER_ENV,
    DATABASE_URL: `sqlite:${join(dir, 'bench.sqlite')}`,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    TOKEN_SIGNING_KEYS: generateSigningKey(),
    MERCHANT_RATE_LIMIT_PER_MINUTE: '1000000', // counted, never refused, as in npm run bench
    ...extra,
  };
}

/** Runs `mds ARGS` with env and returns its stdout; throws on a non-zero exit. */
export function mdsWith(env: NodeJS.ProcessEnv) {
  return async (cliArgs: string[]): Promise<string> => {
    const r = await runMds(cliArgs, env);
    if (r.code !== 0) throw new Error(`mds ${cliArgs.join(' ')}: ${r.stderr || `exit ${r.code}`}`);
    return r.stdout;
  };
}

/** A token for the merchant `created` (from `mds merchants create --json`) and its 50 warehouses, made through the server at base. */
export async function seedWarehouses(base: string, created: { clientId: string; clientSecret: string }) {
  const tokenAnswer = await fetch(`${base}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: created.clientId, client_secret: created.clientSecret }),
  });
  if (tokenAnswer.status !== 200) throw new Error(`token: ${tokenAnswer.status} ${await tokenAnswer.text()}`);
  const headers = { authorization: `Bearer ${(await tokenAnswer.json()).access_token}` };
  const warehouses: Array<{ id: string; merchantId: string }> = [];
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${base}/warehouses`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(warehouseBody({ name: `Warehouse ${i + 1}` })),
    });
    if (res.status !== 201) throw new Error(`seeding: ${res.status} ${await res.text()}`);
    warehouses.push(await res.json());
  }
  return { headers, warehouses };
}
