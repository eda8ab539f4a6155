import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { prng } from '../common.ts';
import { assertAnswers, assertStore, assertUnavailable, isRefusal, Load, loggedCauses, type Rig, recoveryMs, SkipFamily, startRig } from './harness.ts';
import { type FaultFigures, mergeLoad } from './postgres.ts';

/**
 * SQLite's disk full: the database on a small tmpfs, filled by another file while the service is under
 * load. Writes are refused as 503 SERVICE_UNAVAILABLE with Retry-After (SQLITE_FULL, like every other
 * "the store cannot take writes now"), every read keeps working (beside the refused writes too), nothing
 * is corrupted (integrity_check) or half written (the store checks), and writes resume by themselves once
 * the filler is deleted.
 */

const SIZE_MB = 24;

export type DiskFullFigures = FaultFigures & { readsDuringFault: number; writesRefused: number; integrity: string };

export async function diskFullFamily(seed: number): Promise<DiskFullFigures> {
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
    // Reads, beside the refused writes and after them: every one answers 200. One that arrives during a write
    // batch runs on the read-only connection, against committed data, so a batch the full disk fails takes
    // only its writers with it.
    const ids = [...load.acknowledged.transfers.keys()];
    const { client } = rig;
    const probe = async () => {
      const rs = await Promise.all([
        client.request('GET', `/transfer/${ids[reads % ids.length]}`),
        client.request('GET', '/warehouses'),
        client.request('GET', '/readyz'),
      ]);
      reads += rs.length;
      return rs.map((r) => r.status);
    };
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(await probe(), [200, 200, 200], 'reads beside refused writes keep working on a full disk');
      await sleep(100);
    }
    await load.stop({ abandonRefused: true });
    for (let i = 0; i < 10; i++) assert.deepEqual(await probe(), [200, 200, 200], 'reads keep working on a full disk');
    // Writes again, still refused, until the space returns.
    const load2 = new Load(rig.client, rig.warehouseId, { workers: 4, rand: prng(seed + 1), acknowledged: load.acknowledged });
    await sleep(1000);
    const writesRefused = [...load.answers, ...load2.answers].filter((a) => a.startedAt > started && isRefusal(a.result)).length;

    unlinkSync(filler);
    const ended = performance.now();
    await sleep(3000);
    const round = {
      fault: `${SIZE_MB} MB tmpfs filled to the last byte for ${((ended - started) / 1000).toFixed(1)} s`,
      faultMs: Math.round(ended - started),
      answers: load.answers.filter((a) => a.startedAt >= started).length + load2.answers.length,
      unavailable: [...load.answers, ...load2.answers].filter((a) => a.startedAt >= started && a.result.status === 503).length,
      recoveryMs: recoveryMs(load2.answers, ended),
      slowestMs: Math.round(Math.max(...[...load.answers, ...load2.answers].map((a) => a.result.ms))),
    };
    await load2.stop();
    assert.ok(rig.server.alive(), `the server survived\n${rig.server.stderr.slice(-20).join('\n')}`);
    assertAnswers([...load.answers, ...load2.answers], 10_000);
    const store = await assertStore(rig, load2);
    const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(rig.access.database.db);
    const integrity = rows.map((r) => r.integrity_check).join(', ');
    assert.equal(integrity, 'ok');
    return {
      family: 'disk-full',
      rounds: [round],
      load: mergeLoad(load.figures(), load2.figures()),
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
