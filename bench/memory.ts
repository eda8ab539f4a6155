// `node bench/memory.ts [--runs 3]`: the server's idle RSS, as `npm run bench` starts it (`node
// bin/mds.js serve` with the server flags, NODE_ENV=production, LOG_LEVEL=warn), on a fresh SQLite store: VmRSS 3 s
// after it listens, the median of --runs starts. What the "idle RSS ≤ 100 MiB" is measured against.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, runMds, startServer } from '../scripts/lib/server-process.ts';
import { generateSigningKey } from '../src/modules/auth/signing-keys.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
}

const tmp = mkdtempSync(join(tmpdir(), 'mds-memory-'));
try {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    ...(process.env.MDS_SOURCES ? { MDS_SOURCES: process.env.MDS_SOURCES } : {}),
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    TOKEN_SIGNING_KEYS: generateSigningKey(),
    DATABASE_URL: `sqlite:${join(tmp, 'm.sqlite')}`,
  };
  const migrated = await runMds(['migrate'], env, 120_000);
  if (migrated.code !== 0) throw new Error(migrated.stderr);
  const samples: number[] = [];
  for (let i = 0; i < Number(args.runs); i++) {
    const server = startServer({ env: { ...env, PORT: String(await freePort()) }, readyTimeoutMs: 60_000 });
    try {
      await server.ready;
      await new Promise((r) => setTimeout(r, 3000));
      samples.push(rssMiB(server.pid));
    } finally {
      await server.stop(5000);
    }
  }
  samples.sort((a, b) => a - b);
  console.log(`idle RSS: median ${samples[samples.length >> 1].toFixed(1)} MiB (${samples.map((s) => s.toFixed(1)).join(', ')})`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
