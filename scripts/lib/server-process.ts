// The service as a child process (`node bin/mds.js serve`): spawn it, keep its output, wait until it
// listens, stop it. Shared by `npm run demo`, `npm run bench` and the tests that need a real server
// (test/helpers/server-process.ts).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The operator CLI (`mds`). */
export const MDS_BIN = fileURLToPath(new URL('../../bin/mds.js', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerOptions {
  /**
   * The child's whole environment (nothing else is inherited). HOST and PORT say where it listens; with
   * PORT=0 the URL is read from its "ready: URL" log line, which needs LOG_LEVEL info or lower.
   */
  env: NodeJS.ProcessEnv;
  /** How long to wait for it to listen; default 20 s. */
  readyTimeoutMs?: number;
  /** How much of the combined stdout + stderr log() keeps, in characters; default 20 000. */
  logChars?: number;
  /** Every line of output, as it arrives. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** The mds command and its arguments; default ['serve']. */
  args?: string[];
  /** The log line that means ready (its first group, if any, is what `ready` resolves with); default the server's "ready: URL". */
  readyLine?: RegExp;
  /** Node options before the program's own (SERVER_NODE_FLAGS always come first), e.g. a benchmark's --import. */
  nodeFlags?: string[];
}

export interface ServerChild {
  child: ChildProcess;
  pid: number;
  /**
   * The base URL (e.g. http://127.0.0.1:41234) once the server listens. Rejects with a ServerStartError
   * if it exits or does not listen in time; the process has been killed, has exited and its output is complete by then.
   */
  ready: Promise<string>;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  /** True while the process runs. */
  alive(): boolean;
  /** The end of its combined stdout and stderr. */
  log(): string;
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM (graceful), SIGKILL after timeoutMs; resolves once it has exited. */
  stop(timeoutMs?: number): Promise<Exit>;
}

/** The server exited or did not listen in time. */
export class ServerStartError extends Error {}

const running = new Set<ChildProcess>();
// Whatever happens, no server outlives this process (it would hold a port and database connections).
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? ok(address.port) : fail(new Error('no port'))));
    });
  });
}

/** SIGTERM, then SIGKILL after timeoutMs; resolves once the child has exited (at once if it has). */
export async function stopChild(child: ChildProcess | undefined, timeoutMs = 10_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((ok) => child.once('exit', ok));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/**
 * The V8 flags the service runs with (`npm start` passes them too; docs/deployment.md). A young
 * generation larger than Node 20's default keeps the short-lived objects of requests that are in flight
 * across a scavenge (100 concurrent requests waiting on PostgreSQL) from being promoted: without it the
 * old generation, and RSS, grew about 30 % in a 60 s soak before the first full collection, although a
 * full GC left 36 MB live (no leak); with it RSS stays flat (RELIABILITY.md, soak: 0.3 % with 16 MiB).
 * 16 MiB rather than 32: with the old generation bounded (src/lib/startup-memory.ts) and requests
 * allocating less, the collections' pauses cost the same at either size (under 3 % of the server's CPU
 * on SQLite, `bench/allocation.ts --semi`), and RSS after the benchmark's mix ends ~35 MiB lower
 * (docs/benchmarks.md, "Eleventh pass").
 *
 * `--no-memory-reducer-favors-memory`: after about 8 s without requests, V8's memory reducer runs full
 * collections, by default in a mode that can also let go of objects the optimised code embeds, so that
 * code is thrown away ("embedded weak objects cleared": 13 and 79 deoptimisations in two 20 s pauses) and
 * the next seconds run slower while the JIT compiles it again (the first 3 s of single reads after such
 * a pause took 38 % and 107 % more CPU). With the flag the reducer still collects and shrinks the heap:
 * no such deoptimisation in two runs of the same steps, whose first 3 s after the pause took 7-8 % more;
 * idle memory unchanged. Not every pause does
 * it (`bench/after-idle.ts` saw none in either mode); docs/benchmarks.md, "Twenty-fifth pass".
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=16', '--no-memory-reducer-favors-memory'];

/**
 * The environment the service runs with beside its own settings (`npm start` sets it too). glibc gives
 * each thread that allocates its own malloc arena (up to 8 per core) and keeps what they freed: Node's
 * worker threads (V8's compiler and GC helpers, libuv's pool) held ~5 MiB of idle RSS that way. Two
 * arenas are enough where one thread does nearly all the allocating (docs/benchmarks.md, "Memory, fifth
 * pass").
 */
export const SERVER_ENV = { MALLOC_ARENA_MAX: '2' };

/** Starts `node bin/mds.js serve` (or opts.args); await `ready` for its URL. */
export function startServer(opts: ServerOptions): ServerChild {
  const env: NodeJS.ProcessEnv = { ...SERVER_ENV, ...opts.env };
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...(opts.nodeFlags ?? []), MDS_BIN, ...(opts.args ?? ['serve'])], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  const alive = () => child.exitCode === null && child.signalCode === null;

  const logChars = opts.logChars ?? 20_000;
  let output = '';
  let onReadyLine: ((line: string) => void) | undefined;
  for (const stream of ['stdout', 'stderr'] as const) {
    const emit = (line: string) => {
      opts.onLine?.(line, stream);
      if (stream === 'stdout') onReadyLine?.(line);
    };
    let partial = '';
    child[stream].setEncoding('utf8');
    child[stream].on('data', (chunk: string) => {
      output = (output + chunk).slice(-logChars);
      partial += chunk;
      let nl = partial.indexOf('\n');
      while (nl >= 0) {
        emit(partial.slice(0, nl));
        partial = partial.slice(nl + 1);
        nl = partial.indexOf('\n');
      }
    });
    child[stream].on('end', () => {
      if (partial) emit(partial);
    });
  }

  const timeoutMs = opts.readyTimeoutMs ?? 20_000;
  const level = env.LOG_LEVEL ?? (env.NODE_ENV === 'test' ? 'silent' : 'info');
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new ServerStartError(`the server did not become ready within ${timeoutMs / 1000} s`)), timeoutMs);
    const settled = () => {
      clearTimeout(timer);
      onReadyLine = undefined;
    };
    exited.then(({ code, signal }) => {
      settled();
      reject(new ServerStartError(`the server exited with ${signal ? `signal ${signal}` : `code ${code}`} before it was ready`));
    });
    const done = (url: string) => {
      settled();
      resolve(url);
    };
    if (['trace', 'debug', 'info'].includes(level)) {
      onReadyLine = (line) => {
        const m = (opts.readyLine ?? /"msg":"ready: (http:\/\/[^\s"]+)/).exec(line);
        if (m) done(m[1] ?? '');
      };
    } else if (env.PORT === '0') {
      settled();
      reject(new ServerStartError(`LOG_LEVEL=${level} hides the ready line: pass a PORT (see freePort())`));
    } else {
      const candidate = `http://${env.HOST}:${env.PORT}`;
      void (async () => {
        while (alive()) {
          try {
            if ((await fetch(`${candidate}/healthz`, { signal: AbortSignal.timeout(1000) })).ok) return done(candidate);
          } catch {
            // not listening yet
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
    }
  });
  // Once its output is complete too ('close' follows 'exit'), so the caller can show why it failed.
  const closed = new Promise((resolve) => child.once('close', resolve));
  const ready = listening.catch(async (err: unknown) => {
    child.kill('SIGKILL');
    await closed;
    throw err;
  });

  return {
    child,
    pid: child.pid!,
    ready,
    exited,
    alive,
    log: () => output,
    kill(signal = 'SIGTERM') {
      if (alive()) child.kill(signal);
    },
    async stop(stopTimeoutMs = 10_000) {
      await stopChild(child, stopTimeoutMs);
      return exited;
    },
  };
}

export interface MdsResult {
  /** The exit code; null when a signal (or the timeout) ended it. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `mds` commands still running: killed with the rest on exit (onto Ctrl-C in the demo and bench too). */
const commands = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of commands) child.kill('SIGKILL');
});

/** Runs one `mds ARGS` command to its end (env is its whole environment); never rejects on a non-zero exit. */
export function runMds(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<MdsResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [MDS_BIN, ...args], { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      commands.delete(child);
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      resolve({ code, stdout, stderr: stderr || (err && code === null ? err.message : '') });
    });
    commands.add(child);
  });
}

/** Stops every `mds` command runMds started that still runs (SIGTERM, SIGKILL after timeoutMs). */
export async function stopCommands(timeoutMs = 5000): Promise<void> {
  await Promise.all([...commands].map((child) => stopChild(child, timeoutMs)));
}
