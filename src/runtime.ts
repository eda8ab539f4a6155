import pino from 'pino';
import { type BackgroundParts, startBackground } from './background/index.ts';
import type { Config } from './config.ts';
import { claimDatabase } from './db/backup.ts';
import { type Database, databaseTimeouts, migrateToLatest, openDatabase } from './db/database.ts';
import { retryChannel } from './lib/channels.ts';
import { clockFromEnv } from './lib/clock.ts';
import { logDestination } from './lib/log-output.ts';
import { resolveSigningKeys } from './modules/auth/signing-keys.ts';
import type { Metrics } from './observability/metrics.ts';
import { createServices, type Services } from './services.ts';

/**
 * What one process opens once and closes once: `mds serve`, `mds worker` and every operator command
 * start here. Config in; database (the embedded default migrated on the way), services, optional
 * metrics and background work out.
 */
/** The logging the runtime and its background work need: pino's, or the HTTP app's (src/http/request-logger.ts). */
export interface Log {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface Runtime {
  config: Config;
  database: Database;
  services: Services;
  /** Present when opened with `metrics: true` (serve, worker) and METRICS_PORT or METRICS_TOKEN is set. */
  metrics: Metrics | undefined;
  /** Where pool errors and transaction retries are logged; `mds serve` points it at the app's logger. */
  log: Log;
  /** Starts the scheduler and/or the webhook worker; they stop with close(). Undefined when no part is on. */
  startBackground(parts: BackgroundParts): { stop(): Promise<void> } | undefined;
  /** Serves GET /metrics on METRICS_HOST:METRICS_PORT when METRICS_PORT is set; it stops with close(). */
  serveMetrics(): Promise<string | undefined>;
  /** Something else to stop on close (the HTTP app): what is added last stops first. */
  own(work: { stop(): Promise<void> }): void;
  /** Stops what was started, newest first, then closes the database; once, whoever calls. */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /** Database connections (PostgreSQL); DATABASE_POOL_SIZE by default. */
  poolSize?: number;
  /** Hold the SQLite claim that makes `mds restore` refuse while this process runs (serve, worker). */
  claim?: boolean;
  /**
   * 'at-start' resolves the signing keys now (serve: a broken key file fails the start, and the file is
   * created on first start). 'on-first-use' (default) resolves them only if a token is ever signed or
   * verified, so the worker and the operator commands need no key and create no key file.
   */
  keys?: 'at-start' | 'on-first-use';
  /** Count requests, scheduler passes and pool use (prom-client). */
  metrics?: boolean;
  /** Migrate the embedded SQLite database on open (default true; `mds migrate` does it itself to report what it applied). */
  migrateEmbedded?: boolean;
  /** The logger until someone replaces runtime.log; pino at LOG_LEVEL on stdout by default. */
  log?: Log;
}

export async function openRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  // Read through `runtime` so a logger swapped in later (serve's app.log) is the one used.
  let runtime: Runtime | undefined;
  const dest = await logDestination(config.nodeEnv);
  const log: Log = opts.log ?? (dest ? pino({ level: config.logLevel }, dest) : pino({ level: config.logLevel }));
  const database = openDatabase({
    url: config.databaseUrl,
    poolSize: opts.poolSize ?? config.databasePoolSize,
    schema: config.databaseSchema,
    isolation: config.databaseIsolation,
    preparedStatements: config.databasePreparedStatements,
    ...databaseTimeouts(config),
    onPoolError: (err) =>
      (runtime?.log ?? log).warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'database connection lost; it will reconnect'),
  });
  const work: Array<{ stop(): Promise<void> }> = [];
  let release = () => {};
  const onRetry = (message: unknown) => (runtime?.log ?? log).debug(message as object, 'transaction retried');
  try {
    if (database.dialect === 'sqlite' && opts.migrateEmbedded !== false) await migrateToLatest(database);
    if (opts.claim && database.dialect === 'sqlite') release = claimDatabase(database.describe);
  } catch (e) {
    await database.close();
    throw e;
  }
  retryChannel.subscribe(onRetry);
  const services = createServices({
    config,
    database,
    clock: clockFromEnv(),
    signingKeys: opts.keys === 'at-start' ? resolveSigningKeys(config) : () => resolveSigningKeys(config),
  });
  // Counted only when something can read them (METRICS_PORT or METRICS_TOKEN): otherwise prom-client is not
  // even loaded (about 100 modules, and a histogram update on every request for nobody).
  const observability =
    opts.metrics && (config.metricsPort !== undefined || config.metricsToken !== undefined) ? await import('./observability/metrics.ts') : undefined;
  const metrics = observability ? new observability.Metrics(database) : undefined;

  let closing: Promise<void> | undefined;
  runtime = {
    config,
    database,
    services,
    metrics,
    log,
    startBackground(parts) {
      if (!parts.scheduler && !parts.webhooks) return undefined;
      const background = startBackground(services, config, this.log, parts);
      work.push(background);
      return background;
    },
    async serveMetrics() {
      if (!metrics || !observability || config.metricsPort === undefined) return undefined;
      const server = await observability.startMetricsServer(metrics, config.metricsHost, config.metricsPort);
      work.push({ stop: () => server.close() });
      return server.url;
    },
    own(w) {
      work.push(w);
    },
    close() {
      closing ??= (async () => {
        try {
          for (const w of work.reverse()) await w.stop();
        } finally {
          metrics?.close();
          await database.close();
          release();
          retryChannel.unsubscribe(onRetry);
        }
      })();
      return closing;
    },
  };
  return runtime;
}
