// Micro-benchmark: what verifying an access token costs on every protected request.
// `node bench/tokens.ts` runs it alone; bench/run.ts runs it after the HTTP scenarios (server stopped).
//
// Baseline: one HMAC-SHA256 over the token's signing input plus a constant-time compare, i.e. the
// least any HS256 token check can do. Against it: TokenSigner.verify (canonical base64url-decode, synchronous node:crypto
// HMAC, JSON.parse, alg/typ/iss/exp checks) and, for context, signing and the SHA-256 an opaque-token
// design would compute before its per-request database lookup.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { jwtVerify } from 'jose';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { TokenSigner } from '../src/modules/auth/tokens.ts';

export interface MicroResult {
  name: string;
  what: string;
  /** One operation at a time: what a single request waits for. */
  sequentialOpsPerSec: number;
  /** CONCURRENCY operations in flight (as under load): jose's async WebCrypto calls overlap on the libuv pool. */
  concurrentOpsPerSec: number;
  /** CPU time of the whole process (every thread) per operation, in the concurrent run. */
  cpuMicrosPerOp: number;
}

interface Case {
  name: string;
  what: string;
  run: () => unknown;
}

export const CONCURRENCY = 10;

/** Runs fn for about `ms` milliseconds, `inFlight` at a time; returns ops/s and process CPU µs per op. */
async function measure(fn: () => unknown, ms: number, inFlight: number): Promise<{ opsPerSec: number; cpuMicrosPerOp: number }> {
  let ops = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 20; i++) {
      if (inFlight === 1) {
        const r = fn();
        if (r instanceof Promise) await r;
      } else {
        const batch: unknown[] = [];
        for (let j = 0; j < inFlight; j++) batch.push(fn());
        await Promise.all(batch);
      }
    }
    ops += 20 * inFlight;
    now = performance.now();
  }
  const used = process.cpuUsage(cpu);
  return { opsPerSec: (ops * 1000) / (now - start), cpuMicrosPerOp: (used.user + used.system) / ops };
}

export async function benchTokens(opts: { msPerCase?: number; rounds?: number } = {}): Promise<MicroResult[]> {
  const msPerCase = opts.msPerCase ?? 300;
  const rounds = opts.rounds ?? 3;
  const key = { kid: 'bench', secret: randomBytes(32) };
  const signer = new TokenSigner([key], systemClock, 3600);
  const token = await signer.sign({ actor: 'merchant', subject: newId(), clientId: 'cli_0123456789abcdef01234567' });
  const check = await signer.verify(token);
  if (!check.ok) throw new Error('benchmark token does not verify');

  const dot = token.lastIndexOf('.');
  const signingInput = token.slice(0, dot);
  const signature = Buffer.from(token.slice(dot + 1), 'base64url');
  const verifyOptions = { algorithms: ['HS256'], issuer: 'merchant-delivery-service', typ: 'at+jwt' };

  const cases: Case[] = [
    {
      name: 'HMAC-SHA256 of the token bytes (baseline)',
      what: 'node:crypto createHmac over header.payload + timingSafeEqual: the floor for any HS256 check',
      run: () => timingSafeEqual(createHmac('sha256', key.secret).update(signingInput).digest(), signature),
    },
    {
      name: 'TokenSigner.verify (node:crypto HMAC, synchronous)',
      what: 'what every protected request runs: canonical base64url decode, JSON.parse, kid lookup, synchronous node:crypto HMAC + timingSafeEqual on the event loop, alg/typ/iss/aud/exp checks',
      run: () => signer.verify(token),
    },
    {
      name: 'jose jwtVerify with raw key bytes',
      what: 'the earlier design: jose imports the raw bytes into a WebCrypto key on every call',
      run: () => jwtVerify(token, key.secret, verifyOptions),
    },
    {
      name: 'TokenSigner.sign (jose SignJWT)',
      what: 'once per POST /auth/token, not per request',
      run: () => signer.sign({ actor: 'merchant', subject: 'm', clientId: 'c' }),
    },
    {
      name: 'SHA-256 of an opaque token',
      what: 'the CPU part of an opaque-token design, which then needs a database read on every request',
      run: () => createHash('sha256').update(token).digest(),
    },
  ];

  for (const c of cases) {
    await measure(c.run, 100, 1); // warm up (JIT)
    await measure(c.run, 100, CONCURRENCY);
  }
  const seq = cases.map(() => [] as number[]);
  const conc = cases.map(() => [] as number[]);
  const cpu = cases.map(() => [] as number[]);
  // Interleaved rounds, median per case: a burst of load from elsewhere hits every case alike.
  for (let r = 0; r < rounds; r++) {
    for (const [i, c] of cases.entries()) {
      seq[i].push((await measure(c.run, msPerCase / 2, 1)).opsPerSec);
      const m = await measure(c.run, msPerCase, CONCURRENCY);
      conc[i].push(m.opsPerSec);
      cpu[i].push(m.cpuMicrosPerOp);
    }
  }
  return cases.map((c, i) => ({
    name: c.name,
    what: c.what,
    sequentialOpsPerSec: median(seq[i]),
    concurrentOpsPerSec: median(conc[i]),
    cpuMicrosPerOp: median(cpu[i]),
  }));
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function tokensTable(results: MicroResult[]): string {
  const [base] = results;
  const n = (v: number) => Math.round(v).toLocaleString('en-US');
  const rows = results.map(
    (r) =>
      `| ${r.name} | ${n(r.sequentialOpsPerSec)} | ${n(r.concurrentOpsPerSec)} | ${(r.concurrentOpsPerSec / base.concurrentOpsPerSec).toFixed(2)} | ${r.cpuMicrosPerOp.toFixed(1)} | ${(r.cpuMicrosPerOp / base.cpuMicrosPerOp).toFixed(1)}× | ${r.what} |`,
  );
  return [
    `| operation | ops/s, 1 at a time | ops/s, ${CONCURRENCY} in flight | ops/s × baseline | CPU µs/op | CPU × baseline | notes |`,
    '|---|---:|---:|---:|---:|---:|---|',
    ...rows,
  ].join('\n');
}

if (import.meta.main) {
  const results = await benchTokens();
  console.log(tokensTable(results));
}
