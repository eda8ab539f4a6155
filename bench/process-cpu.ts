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
  const fields = statOf(pid);
  if (!fields) throw new Error(`no process ${pid} to read the CPU time of`);
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK; // utime (#14), stime (#15)
}

/** A process's /proc stat fields from #3 (state) on (#4, its parent, is [1]), or undefined once it is gone. */
function statOf(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' '); // the name, between the brackets, may hold spaces
  } catch {
    return undefined;
  }
}

/**
 * The PostgreSQL server (its postmaster's pid) that a backend belongs to: the backend's parent, as
 * `select pg_backend_pid()` names it. Undefined when this machine does not show that process (a server
 * on another host or in another container, whose CPU cannot be read here).
 */
export function postmasterOf(backendPid: number): number | undefined {
  const fields = statOf(backendPid);
  return fields ? Number(fields[1]) : undefined;
}

/**
 * CPU time used so far by one PostgreSQL server, in microseconds: its postmaster (with the time of the
 * children it has reaped: backends that have exited) and its live children (backends, writers, WAL
 * writer, autovacuum). It counts all of that server's work, whoever asked for it, so a difference over
 * a load run is the run's database CPU only on an otherwise quiet server. Undefined once it is gone.
 * (A backend that exits while the scan runs can be missed or, rarely, counted twice.)
 */
export function postgresCpuMicros(postmaster: number): number | undefined {
  const root = statOf(postmaster);
  if (!root) return undefined;
  let ticks = Number(root[11]) + Number(root[12]) + Number(root[13]) + Number(root[14]); // utime, stime, cutime, cstime
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statOf(entry);
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1e6) / CLK_TCK;
}
