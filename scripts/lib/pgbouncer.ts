// PgBouncer in transaction mode in front of the test PostgreSQL, for the suites that must also pass
// through a pooler (money races, several instances). Debian's pgbouncer; it refuses to run as root,
// so as root it drops to the postgres user.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './server-process.ts';

export interface PgBouncer {
  /** postgres://USER@127.0.0.1:PORT/ : add a database name. */
  baseUrl: string;
  port: number;
  /** Kills it with the signal (SIGKILL: a crash), leaving its files for stop() to remove. */
  kill(signal: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

export function pgbouncerBinary(): string | undefined {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {}
  }
  return undefined;
}

/** Starts PgBouncer (pool_mode = transaction) for every database of the server behind `postgresUrl`. */
export async function startPgBouncer(postgresUrl: string, opts: { port?: number } = {}): Promise<PgBouncer> {
  const binary = pgbouncerBinary();
  if (!binary) throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer)');
  const upstream = new URL(postgresUrl);
  const user = decodeURIComponent(upstream.username || 'postgres');
  const port = opts.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'mds-pgbouncer-'));
  chmodSync(dir, 0o777);
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 1000',
      'default_pool_size = 20',
      // node-postgres sends nothing else; `options` (DATABASE_SCHEMA, DATABASE_ISOLATION) is refused on purpose.
      // PgBouncer before 1.20 cannot pass statement_timeout / lock_timeout on (README, Configuration): ignored here.
      'ignore_startup_parameters = extra_float_digits,statement_timeout,lock_timeout',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      'admin_users = ',
    ].join('\n'),
  );
  for (const f of ['users.txt', 'pgbouncer.ini']) chmodSync(join(dir, f), 0o644);
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
  const log = () => {
    try {
      return readFileSync(join(dir, 'pgbouncer.log'), 'utf8').split('\n').slice(-20).join('\n');
    } catch {
      return '(no log)';
    }
  };
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start:\n${log()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/`,
    port,
    async kill(signal) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT'); // immediate shutdown
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
