import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Config, redactUrl } from '../config.ts';
import { type Database, dialectOf, migrateToLatest, openDatabase, sqlitePath } from '../db/database.ts';
import { systemClock } from '../lib/clock.ts';

import { createServices, type Services } from '../services.ts';

/** Opens the configured database for one CLI command; the embedded default is migrated on the way. */
export async function withServices<T>(config: Config, fn: (services: Services, database: Database) => Promise<T>): Promise<T> {
  announceDatabase(config);
  const database = openDatabase({ url: config.databaseUrl, poolSize: 2, schema: config.databaseSchema, isolation: config.databaseIsolation });
  try {
    if (database.dialect === 'sqlite') await migrateToLatest(database);
    const services = createServices({ config, database, clock: systemClock, signingKeys: resolveSigningKeysLazily(config) });
    return await fn(services, database);
  } finally {
    await database.close();
  }
}

/**
 * Says on stderr which database a command opens (stdout stays the command's output, --json included),
 * and warns when the embedded one does not exist yet: run from another folder, the default relative
 * path would otherwise silently create a new, empty database.
 */
export function announceDatabase(config: Config): void {
  if (dialectOf(config.databaseUrl) === 'sqlite') {
    const path = resolve(sqlitePath(config.databaseUrl));
    if (!existsSync(path)) {
      process.stderr.write(`mds: no database at ${path} yet: creating a new, empty one (run mds from the project folder, or set DATABASE_URL)\n`);
    } else process.stderr.write(`mds: database ${path}\n`);
  } else {
    process.stderr.write(
      `mds: database ${redactUrl(config.databaseUrl.replace(/\?.*$/, ''))}${config.databaseSchema ? ` (schema ${config.databaseSchema})` : ''}\n`,
    );
  }
}

// Operator commands never sign tokens; don't create a key file just to run them.
function resolveSigningKeysLazily(config: Config) {
  return config.tokenSigningKeys.length > 0 ? config.tokenSigningKeys : [{ kid: 'cli-unused', secret: Buffer.alloc(32) }];
}
