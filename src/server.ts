import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import { logDestination } from './lib/log-output.ts';
import { releaseStartupMemory } from './lib/startup-memory.ts';
import { openRuntime } from './runtime.ts';

export interface RunningServer {
  app: FastifyInstance;
  database: Database;
  url: string;
  stop(): Promise<void>;
}

/** `mds serve`: the runtime, the HTTP app listening on it, and the background work its flags switch on. */
export async function startServer(config: Config): Promise<RunningServer> {
  const runtime = await openRuntime(config, { claim: true, keys: 'at-start', metrics: true });
  let app: FastifyInstance;
  try {
    app = await buildApp({
      config,
      database: runtime.database,
      services: runtime.services,
      metrics: runtime.metrics,
      logStream: await logDestination(config.nodeEnv),
    });
  } catch (e) {
    await runtime.close();
    throw e;
  }
  runtime.log = app.log;
  // Started first so it stops last: scrapes still answer while the API drains.
  const metricsUrl = await runtime.serveMetrics();
  // While stopping, answers close their connection: otherwise a connection busy when stop() began stays open
  // as an idle keep-alive one, and the shutdown waits out the 65 s keep-alive timeout.
  let closing = false;
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  runtime.own({ stop: () => app.close() }); // stops accepting, lets in-flight requests finish
  await app.ready();
  releaseStartupMemory();
  const url = await app.listen({ port: config.port, host: config.host });
  app.log.info({ database: runtime.database.describe, dialect: runtime.database.dialect }, `ready: ${url} (API docs at ${url}/docs)`);
  runtime.startBackground({ scheduler: config.schedulerEnabled, webhooks: config.webhookWorkerEnabled });
  if (metricsUrl) app.log.info(`metrics: ${metricsUrl}/metrics`);
  return {
    app,
    database: runtime.database,
    url,
    stop() {
      closing = true;
      return runtime.close();
    },
  };
}

/** `mds worker`: the background work (scheduler, webhook delivery) with no HTTP API, for deployments that run it apart. */
export async function startWorker(config: Config): Promise<{ stop(): Promise<void> }> {
  // The worker signs no tokens: its keys are never resolved, so no key file is needed (or created).
  const runtime = await openRuntime(config, { poolSize: 2, claim: true, metrics: true });
  const metricsUrl = await runtime.serveMetrics();
  releaseStartupMemory();
  runtime.startBackground({ scheduler: true, webhooks: true });
  runtime.log.info({ database: runtime.database.describe, ...(metricsUrl ? { metrics: `${metricsUrl}/metrics` } : {}) }, 'worker running');
  return { stop: () => runtime.close() };
}

/** Runs a started server or worker until SIGTERM or SIGINT, then stops it and exits (1 if stopping failed). */
export function untilSignal(stoppable: { stop(): Promise<void> }, announce: (signal: string) => void): Promise<never> {
  const shutdown = (signal: string) => {
    announce(signal);
    stoppable.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  return new Promise<never>(() => {});
}
