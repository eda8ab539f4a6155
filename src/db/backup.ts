import { existsSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { backup, DatabaseSync } from 'node:sqlite';
import { AppError } from '../lib/errors.ts';

/**
 * Online backups of the embedded SQLite database. SQLite's backup API copies a consistent snapshot
 * while the service keeps serving (WAL mode: readers and the copy do not block its writes). A restore
 * replaces the database file, so it refuses while a service or worker has the database open: they
 * announce themselves in a `<database>.pid` file (a stale one, of a dead process, is ignored).
 */

export const pidFile = (dbPath: string) => `${dbPath}.pid`;

/** Marks the database as in use by this process until the returned release() runs. */
export function claimDatabase(dbPath: string): () => void {
  const file = pidFile(dbPath);
  writeFileSync(file, `${process.pid}\n`);
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
    } catch {
      // already gone
    }
  };
}

/** The pid of a live process that has the database open, if any. */
export function databaseUser(dbPath: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile(dbPath), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined; // EPERM: alive, another user's
  }
}

/** Copies the live database to `target` (which must not exist) and checks the copy. */
export async function backupSqlite(dbPath: string, target: string): Promise<{ pages: number; bytes: number }> {
  if (!existsSync(dbPath)) throw new AppError('VALIDATION_FAILED', `There is no database at ${dbPath}`);
  if (existsSync(target)) throw new AppError('VALIDATION_FAILED', `${target} already exists; choose a new file name (a backup never overwrites)`);
  const source = new DatabaseSync(dbPath, { readOnly: true });
  try {
    source.exec('PRAGMA busy_timeout = 5000');
    // All pages in one step: one read transaction, so the copy is one consistent snapshot even under
    // a steady stream of writes (in smaller steps, each write by another connection restarts it).
    const pages = await backup(source, target, { rate: 1_000_000_000 });
    verify(target);
    return { pages, bytes: readFileSync(target).byteLength };
  } catch (err) {
    rmSync(target, { force: true });
    throw err;
  } finally {
    source.close();
  }
}

/** Replaces the database with a backup; refuses while a service or worker uses it. */
export function restoreSqlite(backupFile: string, dbPath: string): void {
  if (!existsSync(backupFile)) throw new AppError('VALIDATION_FAILED', `There is no backup at ${backupFile}`);
  const user = databaseUser(dbPath);
  if (user !== undefined) {
    throw new AppError('VALIDATION_FAILED', `The database ${dbPath} is in use by process ${user} (mds serve or worker): stop it before restoring`);
  }
  verify(backupFile);
  const staging = `${dbPath}.restoring`;
  writeFileSync(staging, readFileSync(backupFile));
  // The old database's WAL and index belong to the old file: left in place they would be replayed onto the restored one.
  for (const suffix of ['-wal', '-shm']) rmSync(`${dbPath}${suffix}`, { force: true });
  renameSync(staging, dbPath);
}

function verify(file: string): void {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const integrity = db.prepare('PRAGMA integrity_check').get() as { integrity_check: string };
    if (integrity.integrity_check !== 'ok') throw new AppError('VALIDATION_FAILED', `${file} is damaged: ${integrity.integrity_check}`);
    const migrated = db.prepare("select count(*) as n from sqlite_master where type = 'table' and name = 'kysely_migration'").get() as { n: number };
    if (Number(migrated.n) !== 1) throw new AppError('VALIDATION_FAILED', `${file} is not a database of this service`);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('VALIDATION_FAILED', `${file} is not a readable SQLite database: ${(err as Error).message}`);
  } finally {
    db.close();
  }
}
