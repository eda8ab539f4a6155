// Pinning a process to one CPU, and the CPU time a process has used: what the benchmarks that report CPU
// an answer share (bench/run.ts, bench/dashboard.ts, bench/instances.ts).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

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
