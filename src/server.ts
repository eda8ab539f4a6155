import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp } from './app.ts';
import { type Background, startBackground } from './background/index.ts';
import type { Config } from './config.ts';
import { claimDatabase } from './db/backup.ts';
import { type Database, migrateToLatest, openDatabase } from './db/database.ts';
import { retryChannel } from './db/transaction.ts';
import { systemClock } from './lib/clock.ts';
import { logDestination } from './lib/log-output.ts';
import { resolveSigningKeys } from './modules/auth/signing-keys.ts';
import { Metrics, startMetricsServer } from './modules/metrics/metrics.ts';
import { createServices } from './services.ts';

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
  // `mds restore` refuses while this runs.
  const releaseDatabase = database.dialect === 'sqlite' ? claimDatabase(database.describe) : () => {};
  const onRetry = (message: unknown) => app?.log.debug(message as object, 'transaction retried');
  retryChannel.subscribe(onRetry);
  const metrics = new Metrics(database);
  app = await buildApp({ config, database, signingKeys: resolveSigningKeys(config), metrics, logStream: await logDestination(config.nodeEnv) });
  // While stopping, answers close their connection: otherwise a connection busy when stop() began stays open
  // as an idle keep-alive one, and the shutdown waits out the 65 s keep-alive timeout.
  let closing = false;
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    return payload;
  });
  const url = await app.listen({ port: config.port, host: config.host });
  app.log.info({ database: database.describe, dialect: database.dialect }, `ready: ${url} (API docs at ${url}/docs)`);
  const parts = { scheduler: config.schedulerEnabled, webhooks: config.webhookWorkerEnabled };
  const background: Background | undefined = parts.scheduler || parts.webhooks ? startBackground(app.services, config, app.log, parts, metrics) : undefined;
  const metricsServer = config.metricsPort === undefined ? undefined : await startMetricsServer(metrics, config.metricsHost, config.metricsPort);
  if (metricsServer) app.log.info(`metrics: ${metricsServer.url}/metrics`);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      closing = true;
      await background?.stop();
      await app.close(); // stops accepting, lets in-flight requests finish
      await metricsServer?.close();
      metrics.close();
      await database.close();
      releaseDatabase();
      retryChannel.unsubscribe(onRetry);
    })();
    return stopping;
  };
  return { app, database, url, stop };
}

/** `mds worker`: the background work (scheduler, webhook delivery) with no HTTP API, for deployments that run it apart. */
export async function startWorker(config: Config): Promise<{ stop(): Promise<void> }> {
  const database = openDatabase({ url: config.databaseUrl, poolSize: 2, schema: config.databaseSchema, isolation: config.databaseIsolation });
  if (database.dialect === 'sqlite') await migrateToLatest(database);
  const releaseDatabase = database.dialect === 'sqlite' ? claimDatabase(database.describe) : () => {};
  const dest = await logDestination(config.nodeEnv);
  const log = dest ? pino({ level: config.logLevel }, dest) : pino({ level: config.logLevel });
  // The worker signs no tokens: no key file is needed (or created) to run it.
  const services = createServices({ config, database, clock: systemClock, signingKeys: [{ kid: 'worker-unused', secret: Buffer.alloc(32) }] });
  const metrics = new Metrics(database);
  const background = startBackground(services, config, log, { scheduler: true, webhooks: true }, metrics);
  const metricsServer = config.metricsPort === undefined ? undefined : await startMetricsServer(metrics, config.metricsHost, config.metricsPort);
  log.info({ database: database.describe, ...(metricsServer ? { metrics: `${metricsServer.url}/metrics` } : {}) }, 'worker running');
  return {
    async stop() {
      await background.stop();
      await metricsServer?.close();
      metrics.close();
      await database.close();
      releaseDatabase();
    },
  };
}
