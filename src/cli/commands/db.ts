import type { Command } from 'commander';
import { type Config, loadConfig, redactUrl } from '../../config.ts';
import { backupSqlite, restoreSqlite } from '../../db/backup.ts';
import { dialectOf, migrateToLatest, openDatabase, sqlitePath } from '../../db/database.ts';
import { leaf, type Output, UsageError } from '../context.ts';

/** migrate, backup, restore: the database itself. */
export function dbCommands(program: Command, out: Output): void {
  leaf(program, 'migrate', 'apply database migrations').action(async () => {
    // Not the runtime: it would migrate the embedded database on open, and this reports what it applies.
    const config = loadConfig();
    const database = openDatabase({ url: config.databaseUrl, schema: config.databaseSchema });
    try {
      const applied = await migrateToLatest(database);
      out.print(applied.length ? `Applied: ${applied.join(', ')}` : `Up to date (${redactUrl(database.describe)})`, { applied });
    } finally {
      await database.close();
    }
  });

  leaf(program, 'backup', 'consistent online copy of the embedded SQLite database (never overwrites FILE)')
    .argument('<file>')
    .action(async (file: string) => {
      const dbPath = embeddedPath(loadConfig(), 'backup');
      const { pages, bytes } = await backupSqlite(dbPath, file);
      out.print(`Backed up ${dbPath} to ${file} (${pages} pages, ${bytes} bytes; integrity checked)`, { database: dbPath, file, pages, bytes });
    });

  leaf(program, 'restore', 'replace the embedded SQLite database with a backup (refused while serve or worker run)')
    .argument('<file>')
    .action(async (file: string) => {
      const dbPath = embeddedPath(loadConfig(), 'restore');
      restoreSqlite(file, dbPath);
      out.print(`Restored ${dbPath} from ${file}`, { database: dbPath, file });
    });
}

function embeddedPath(config: Config, command: string): string {
  if (dialectOf(config.databaseUrl) !== 'sqlite') {
    throw new UsageError(
      `mds ${command} is for the embedded SQLite database; back up PostgreSQL with pg_dump or base backups and WAL archiving (docs/deployment.md)`,
    );
  }
  return sqlitePath(config.databaseUrl);
}
