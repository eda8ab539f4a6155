import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { prng } from '../common.ts';
import { assertAnswers, assertStore, assertUnavailable, isRefusal, Load, loggedCauses, type Rig, recoveryMs, SkipFamily, startRig } from './harness.ts';
import type { FaultFigures } from './postgres.ts';

/**
 * SQLite's disk full: the database on a small tmpfs, filled by another file while the service is under
 * load. Writes are refused as 503 SERVICE_UNAVAILABLE with Retry-After (SQLITE_FULL, like every other
 * "the store cannot take writes now"), reads keep working, nothing is corrupted (integrity_check) or half
 * written (the store checks), and writes resume by themselves once the filler is deleted.
 */

const SIZE_MB = 24;

export async function diskFullFamily(seed: number): Promise<FaultFigures & { readsDuringFault: number; writesRefused: number; integrity: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'mds-diskfull-'));
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${SIZE_MB}m`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mount.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new SkipFamily(`cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): ${(mount.stderr || mount.error?.message || '').trim()}`);
  }
  const filler = join(dir, 'filler');
  let rig: Rig | undefined;
  try {
    rig = await startRig({ DATABASE_URL: `sqlite:${join(dir, 'mds.sqlite')}` }, 'Disk full merchant');
    const load = new Load(rig.client, rig.warehouseId, { workers: 4, rand: prng(seed) });
    await sleep(1500);

    // Fill the file system to the last byte.
    const started = performance.now();
    const fd = openSync(filler, 'w');
    const chunk = Buffer.alloc(256 * 1024);
    try {
      for (;;) writeSync(fd, chunk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      try {
        for (;;) writeSync(fd, chunk, 0, 512);
      } catch {}
    } finally {
      closeSync(fd);
    }
    assert.ok(statfsSync(dir).bavail < 4, 'the file system is full');
    // Writes must now be refused; wait (bounded) for the load to meet the full disk, then probe reads.
    let reads = 0;
    const deadline = performance.now() + 15_000;
    while (performance.now() < deadline && !load.answers.some((a) => a.startedAt > started && a.result.status === 503)) await sleep(100);
    const refusedWrite = load.answers.find((a) => a.startedAt > started && a.result.status === 503);
    assert.ok(refusedWrite, 'a write was refused once the disk was full');
    assertUnavailable(refusedWrite.result, refusedWrite.what);
    await sleep(2000); // the disk stays full a while: writes keep being refused, reads keep working
    const ids = [...load.acknowledged.transfers.keys()];
    const { client } = rig;
    for (let i = 0; i < 10; i++) {
      const [one, list, ready] = await Promise.all([
        client.request('GET', `/transfer/${ids[i % ids.length]}`),
        client.request('GET', '/warehouses'),
        client.request('GET', '/readyz'),
      ]);
      assert.deepEqual([one.status, list.status, ready.status], [200, 200, 200], 'reads keep working on a full disk');
      reads += 3;
      await sleep(100);
    }
    const writesRefused = load.answers.filter((a) => a.startedAt > started && isRefusal(a.result)).length;

    unlinkSync(filler);
    const ended = performance.now();
    await sleep(3000);
    const round = {
      fault: `${SIZE_MB} MB tmpfs filled to the last byte for ${((ended - started) / 1000).toFixed(1)} s`,
      faultMs: Math.round(ended - started),
      answers: load.answers.filter((a) => a.startedAt >= started).length,
      unavailable: load.answers.filter((a) => a.startedAt >= started && a.result.status === 503).length,
      recoveryMs: recoveryMs(
        load.answers.filter((a) => a.startedAt >= started),
        ended,
      ),
      slowestMs: Math.round(Math.max(...load.answers.map((a) => a.result.ms))),
    };
    await load.stop();
    assert.ok(rig.server.alive(), `the server survived\n${rig.server.stderr.slice(-20).join('\n')}`);
    assertAnswers(load.answers, 10_000);
    const store = await assertStore(rig, load);
    const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(rig.access.database.db);
    const integrity = rows.map((r) => r.integrity_check).join(', ');
    assert.equal(integrity, 'ok');
    return {
      family: 'disk-full',
      rounds: [round],
      load: load.figures(),
      store,
      causes: loggedCauses(rig.server),
      readsDuringFault: reads,
      writesRefused,
      integrity,
    };
  } finally {
    await rig?.close();
    spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
}
