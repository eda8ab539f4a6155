import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Gives back what start-up used and no longer needs, once, before the first request. Building the app
 * (schemas compiled, routes, templates) allocates far more short-lived objects than the service keeps:
 * V8 grows the young generation to its maximum on the way and keeps it committed, and nothing collects
 * the old generation while the service waits for traffic. One memory-reducing full collection (V8's
 * "last resort" one, ~60 ms) returns both: idle RSS 121 → ~100 MiB (docs/benchmarks.md). The `gc`
 * function comes from a fresh context, so the service's own global scope never gets one.
 */
export function releaseStartupMemory(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as Gc)({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
