// Pinning a process to one CPU, and the CPU time a process has used: what the benchmarks that report CPU
// an answer share (bench/run.ts, bench/dashboard.ts, bench/instances.ts), and the database's CPU time on PostgreSQL.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Pins every thread of `pid` to one CPU (taskset); false where that is not possible (no taskset, no such CPU). */
export function pinToCpu(pid: number, cpu: number): boolean {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system, every thread) a process has used so far, in microseconds. */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK; // utime (#14), stime (#15)
}

/**
 * CPU time used so far by every PostgreSQL process this machine shows (the server, its backends, and
 * through the postmaster's reaped-children counters the backends that have exited), in microseconds;
 * undefined when none is visible (PostgreSQL elsewhere). It counts all of the server's work, whoever
 * asked for it, so a difference across a load run is that run's database CPU only on a quiet server.
 */
export function postgresCpuMicros(): number | undefined {
  let ticks = 0;
  let seen = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    if (!stat.includes(' (postgres) ')) continue;
    seen = true;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]); // utime, stime, cutime, cstime
  }
  return seen ? (ticks * 1e6) / CLK_TCK : undefined;
}
