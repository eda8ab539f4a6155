// What the tools that measure the service against bench/floor.mjs share (bench/run.ts, bench/instances.ts,
// bench/quote-floors.ts): starting the floor, and comparing its answers with the service's.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort, SERVER_ENV, SERVER_NODE_FLAGS } from '../scripts/lib/server-process.ts';

/**
 * Starts bench/floor.mjs with the service's node flags and `env` (DATABASE_URL, DATABASE_SCHEMA,
 * TOKEN_SIGNING_KEYS...), its floor rows reading merchant `merchantId`'s rows; resolves once it listens
 * (it prints "ready"). The caller pins and stops it.
 */
export async function startFloor(env: NodeJS.ProcessEnv, merchantId: string): Promise<{ child: ChildProcess; base: string; pid: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, join(import.meta.dirname, 'floor.mjs')], {
    env: { ...SERVER_ENV, ...env, PORT: String(port), FLOOR_MERCHANT: merchantId },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`bench/floor.mjs exited (${code})`)));
    child.stdout?.once('data', () => ok());
  });
  return { child, base: `http://127.0.0.1:${port}`, pid: child.pid as number };
}

/**
 * An answer as compared with another: objects with their keys sorted, and where `varying` names the key
 * (ids, times: what differs from one write to the next), only the value's type.
 */
export function comparable(v: unknown, varying: ReadonlySet<string>, key = ''): unknown {
  if (varying.has(key)) return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
  if (Array.isArray(v)) return v.map((x) => comparable(x, varying));
  if (v === null || typeof v !== 'object') return v;
  return Object.entries(v)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, x]) => [k, comparable(x, varying, k)]);
}
