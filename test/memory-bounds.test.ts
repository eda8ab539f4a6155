import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { SERVER_ENV, SERVER_NODE_FLAGS } from '../scripts/lib/server-process.ts';

const STARTUP_MEMORY = join(import.meta.dirname, '..', 'src', 'lib', 'startup-memory.ts');

/**
 * A child Node that keeps a set of objects live, then makes garbage the way requests in flight do:
 * objects that outlive two scavenges (they sit in a ring), are promoted, then die. It prints the
 * largest old generation V8 committed meanwhile, in MiB. `bound`: it calls boundOldGeneration() first,
 * as releaseStartupMemory() does in `mds serve` and `mds worker` before they take work. The child gets the
 * service's own V8 flags (its young generation).
 */
function largestOldGeneration(options: { bound: boolean; nodeFlags?: string[] }): number {
  const script = `
    import { getHeapSpaceStatistics } from 'node:v8';
    ${options.bound ? `(await import(${JSON.stringify(STARTUP_MEMORY)})).boundOldGeneration();` : ''}
    const live = [];
    for (let i = 0; i < 200_000; i++) live.push({ a: i, b: 'x' + i, c: [i] });
    const ring = new Array(300_000);
    let largest = 0;
    for (let i = 0; i < 3_000_000; i++) {
      ring[i % ring.length] = { v: i, s: 'y' + i, pair: [i, i] };
      if (i % 10_000 === 0) {
        const old = getHeapSpaceStatistics().find((space) => space.space_name === 'old_space').space_size;
        if (old > largest) largest = old;
      }
    }
    console.log(largest / 1048576, live.length);
  `;
  const child = spawnSync(process.execPath, [...SERVER_NODE_FLAGS, ...(options.nodeFlags ?? []), '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(child.status, 0, child.stderr);
  return Number(child.stdout.split(' ')[0]);
}

test('a bounded old generation stays near 1.5 × what is live, unless node was started with its own growing factor', (t) => {
  const unbounded = largestOldGeneration({ bound: false });
  const bounded = largestOldGeneration({ bound: true });
  const ownFactor = largestOldGeneration({ bound: true, nodeFlags: ['--heap-growing-percent=300'] });
  t.diagnostic(`largest old generation: ${unbounded.toFixed(1)} MiB unbounded, ${bounded.toFixed(1)} bounded, ${ownFactor.toFixed(1)} with its own factor`);
  // V8's own factor let the old generation reach ~300 MiB here, 1.5 × kept it near 140, and a factor
  // of 300 % given on the command line ~325.
  assert.ok(bounded < unbounded * 0.7, `bounded ${bounded.toFixed(1)} MiB against ${unbounded.toFixed(1)} MiB unbounded`);
  assert.ok(ownFactor > bounded * 1.4, `--heap-growing-percent=300 kept: ${ownFactor.toFixed(1)} MiB against ${bounded.toFixed(1)} MiB`);
});

test('npm start runs the service with the V8 flags and malloc arenas the tests and benchmarks measured', () => {
  const { scripts } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8'));
  const start = /MALLOC_ARENA_MAX=(\d+) node (.*) bin\/mds\.js serve$/.exec(scripts.start);
  assert.ok(start, scripts.start);
  assert.equal(start[1], SERVER_ENV.MALLOC_ARENA_MAX);
  assert.deepEqual(start[2].split(' '), SERVER_NODE_FLAGS);
});
