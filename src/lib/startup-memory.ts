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
  boundOldGeneration(); // first, so this collection already sets the next limit with it
  keepAllocationsYoung();
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as Gc)({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** The old generation's headroom over what the last full collection left live, as V8's `--heap-growing-percent`. */
export const HEAP_GROWING_PERCENT = 50;

/**
 * Lets the old generation grow to 1.5 × what the last full collection left live before the next one.
 * V8 otherwise derives the factor from its collection and allocation speeds, up to 4 ×. Under load,
 * the objects of requests in flight outlive two scavenges and are promoted; the old generation then
 * grew past 70 MiB, most of it garbage, over ~30 MiB live. RSS kept that size after the load, because
 * V8 pools the pages it frees until its memory reducer runs, seconds later. A full collection of ~30 MiB
 * live costs little next to the requests between two of them (docs/benchmarks.md, "Eighth pass").
 * V8 reads the flag whenever it sets a limit, so setting it at start holds for the process's life. Node
 * refuses this flag in NODE_OPTIONS, which is why the service sets it itself. A process started with
 * its own `--heap-growing-percent` keeps that value.
 */
export function boundOldGeneration(): void {
  setUnlessGiven('heap-growing-percent', `--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

/** Sets a V8 flag for this process unless node was started with its own choice for it (`--name`, `--no-name`, `--name=…`; V8 reads `_` as `-`). */
function setUnlessGiven(name: string, flag: string): void {
  const own = new RegExp(`^--(no-)?${name}(=|$)`);
  if (process.execArgv.some((arg) => own.test(arg.replaceAll('_', '-')))) return;
  setFlagsFromString(flag);
}

/**
 * Keeps V8 from allocating a site's objects straight in the old generation once many of them survived
 * (`--no-allocation-site-pretenuring`). Those old objects hold the young ones they point to through
 * every scavenge until a full collection: a few seconds into a PostgreSQL load, each scavenge promoted
 * ~5 MB of rows again and paused the server 8-12 ms. Without it the pauses stay under 1 ms, and the
 * 50-transfer list costs ~30 % less CPU on PostgreSQL, SQLite unchanged (docs/benchmarks.md, "Eleventh
 * pass"). Set here for the reason `boundOldGeneration` is: Node refuses the flag in NODE_OPTIONS. A
 * process started with its own `--[no-]allocation-site-pretenuring` keeps its choice.
 */
export function keepAllocationsYoung(): void {
  setUnlessGiven('allocation-site-pretenuring', '--no-allocation-site-pretenuring');
}
