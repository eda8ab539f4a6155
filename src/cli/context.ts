import type { Config } from '../config.ts';
import { type Database, migrateToLatest, openDatabase } from '../db/database.ts';
import { systemClock } from '../lib/clock.ts';

import { createServices, type Services } from '../services.ts';

/** Opens the configured database for one CLI command; the embedded default is migrated on the way. */
export async function withServices<T>(config: Config, fn: (services: Services, database: Database) => Promise<T>): Promise<T> {
  const database = openDatabase({ url: config.databaseUrl, poolSize: 2, schema: config.databaseSchema, isolation: config.databaseIsolation });
  try {
    if (database.dialect === 'sqlite') await migrateToLatest(database);
    const services = createServices({ config, database, clock: systemClock, signingKeys: resolveSigningKeysLazily(config) });
    return await fn(services, database);
  } finally {
    await database.close();
  }
}

// Operator commands never sign tokens; don't create a key file just to run them.
function resolveSigningKeysLazily(config: Config) {
  return config.tokenSigningKeys.length > 0 ? config.tokenSigningKeys : [{ kid: 'cli-unused', secret: Buffer.alloc(32) }];
}
