import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { type Database, migrateToLatest, openDatabase } from './db/database.ts';
import { retryChannel } from './db/transaction.ts';
import { resolveSigningKeys } from './modules/auth/signing-keys.ts';

export interface RunningServer {
  app: FastifyInstance;
  database: Database;
  url: string;
  stop(): Promise<void>;
}

/** Opens the database (migrating the embedded default), builds the app and listens. */
export async function startServer(config: Config): Promise<RunningServer> {
  let app: FastifyInstance | undefined;
  const database = openDatabase({
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    schema: config.databaseSchema,
    isolation: config.databaseIsolation,
    onPoolError: (err) =>
      app?.log.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'database connection lost; it will reconnect'),
  });
  if (database.dialect === 'sqlite') await migrateToLatest(database);
  const onRetry = (message: unknown) => app?.log.debug(message as object, 'transaction retried');
  retryChannel.subscribe(onRetry);
  app = await buildApp({ config, database, signingKeys: resolveSigningKeys(config) });
  // While stopping, answers close their connection: otherwise a connection busy when stop() began stays open
  // as an idle keep-alive one, and the shutdown waits out the 65 s keep-alive timeout.
  let closing = false;
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    return payload;
  });
  const url = await app.listen({ port: config.port, host: config.host });
  app.log.info({ database: database.describe, dialect: database.dialect }, `ready: ${url} (API docs at ${url}/docs)`);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      closing = true;
      await app.close(); // stops accepting, lets in-flight requests finish
      await database.close();
      retryChannel.unsubscribe(onRetry);
    })();
    return stopping;
  };
  return { app, database, url, stop };
}
