import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openDatabase } from '../src/db/database.ts';
import { ApiClient, cli, fetchToken, openStore, pool, type StoreAccess, startServerProcess } from './helpers/server-process.ts';

/** Every merchant's balance equals the sum of its ledger; every transfer was charged exactly once. */
async function consistent(file: string) {
  const database = openDatabase({ url: `sqlite:${file}` });
  try {
    const { db } = database;
    const merchants = await db.selectFrom('merchants').select(['id', 'balance']).execute();
    for (const m of merchants) {
      const ledger = await db.selectFrom('ledger_entries').select('amount').where('merchant_id', '=', m.id).execute();
      assert.equal(
        m.balance,
        ledger.reduce((s, e) => s + e.amount, 0),
        `merchant ${m.id}: balance = sum of its ledger`,
      );
    }
    const transfers = await db.selectFrom('transfers').select(['id', 'total_amount']).execute();
    const charges = await db.selectFrom('ledger_entries').select(['transfer_id', 'amount']).where('kind', '=', 'CHARGE').execute();
    assert.equal(charges.length, transfers.length, 'one charge per transfer');
    const byTransfer = new Map(charges.map((c) => [c.transfer_id, c.amount]));
    for (const t of transfers) assert.equal(byTransfer.get(t.id), -t.total_amount);
    return { transfers: transfers.length, merchants: merchants.length };
  } finally {
    await database.close();
  }
}

describe('mds backup and restore (embedded SQLite)', () => {
  let dir: string;
  let env: Record<string, string>;
  let access: StoreAccess;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mds-backup-'));
    env = { DATABASE_URL: `sqlite:${join(dir, 'live.sqlite')}` };
    access = await openStore(env);
  });
  after(async () => {
    await access?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a backup taken under transfer load restores to a database whose balances equal their ledgers; restore is refused while the service runs', async () => {
    const server = await startServerProcess({ env });
    const merchants = await Promise.all(
      [1, 2, 3].map(async (i) => {
        const { credential } = await access.services.merchants.create(`Backup shop ${i}`, 100_000_000);
        const api = new ApiClient(server.url, await fetchToken(server.url, credential.clientId, credential.clientSecret));
        return { api, warehouseId: await api.createWarehouse() };
      }),
    );
    // Transfers keep coming while the backup runs.
    let loading = true;
    let paid = 0;
    const loadDone = pool(
      6,
      Array.from({ length: 6 }, (_, worker) => async () => {
        for (let i = 0; loading && i < 10_000; i++) {
          const { api, warehouseId } = merchants[(worker + i) % merchants.length];
          const q = await api.options(warehouseId, i);
          if ((await api.transfer(q.body.id)).status === 201) paid++;
        }
      }),
    );
    try {
      await new Promise((r) => setTimeout(r, 1000));
      const backupFile = join(dir, 'copy.sqlite');
      const made = await cli(env, ['backup', backupFile]);
      assert.equal(made.code, 0, made.stderr);
      assert.equal(made.output.file, backupFile);
      assert.ok(made.output.pages > 0);
      const paidAtBackup = paid;
      await new Promise((r) => setTimeout(r, 500));
      loading = false;
      await loadDone;
      assert.ok(paid > paidAtBackup && paidAtBackup > 0, `transfers were paid before (${paidAtBackup}) and after (${paid}) the backup`);

      const inBackup = await consistent(backupFile);
      assert.ok(inBackup.transfers > 0 && inBackup.transfers <= paid);
      const again = await cli(env, ['backup', backupFile]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /already exists; choose a new file name/);

      const refused = await cli(env, ['restore', backupFile]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, new RegExp(`is in use by process ${server.pid} \\(mds serve or worker\\): stop it before restoring`));
      assert.equal((await consistent(join(dir, 'live.sqlite'))).transfers, paid, 'the live database is untouched');

      await server.stop();
      const restored = await cli(env, ['restore', backupFile]);
      assert.equal(restored.code, 0, restored.stderr);
      assert.deepEqual(await consistent(join(dir, 'live.sqlite')), inBackup);
      const restarted = await startServerProcess({ env });
      try {
        assert.equal((await fetch(`${restarted.url}/readyz`)).status, 200);
      } finally {
        await restarted.stop();
      }
    } finally {
      loading = false;
      await loadDone.catch(() => {});
      await server.stop();
    }
  });

  test('bad input: a file that is not a backup is refused and the database is untouched; PostgreSQL is pointed to pg_dump', async () => {
    const junk = join(dir, 'junk.sqlite');
    writeFileSync(junk, 'not a database');
    const r = await cli(env, ['restore', junk]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is not a readable SQLite database|is not a database of this service/);
    assert.ok(existsSync(join(dir, 'live.sqlite')));
    const missing = await cli(env, ['restore', join(dir, 'nope.sqlite')]);
    assert.match(missing.stderr, /There is no backup at/);
    const pg = await cli({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' }, ['backup', join(dir, 'x')]);
    assert.equal(pg.code, 2);
    assert.match(pg.stderr, /back up PostgreSQL with pg_dump or base backups and WAL archiving/);
  });
});
