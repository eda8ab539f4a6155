import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/database.ts';
import {
  type DispatchOutcome,
  dispatchOutcome,
  type EventCommitted,
  eventCommitted,
  retryChannel,
  type SchedulerPass,
  schedulerPassed,
  type TransactionRetry,
  type WebhookAttempted,
  webhookAttempted,
} from '../lib/channels.ts';
import { http } from '../lib/node-http.ts';

const DB_SNAPSHOT_MS = 10_000;

/**
 * A cross-cutting layer: it only subscribes to the channels of src/lib/channels.ts (and reads the
 * database for gauges); no module imports it, src/app.ts and the server wire it.
 *
 * Prometheus metrics of one process (API, worker, or both): HTTP requests by route and status with
 * latency, database pool use and transaction retries, transfers by state and quotes by status (read
 * from the database, at most every 10 s), events written by type (counted after commit), scheduler
 * passes and what they did, webhook deliveries by outcome and the outbox lag. A registry per
 * instance (tests build many apps in one process).
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #database: Database;
  readonly #cleanup: Array<() => void> = [];

  readonly httpRequests = new Counter({
    name: 'mds_http_requests_total',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'mds_http_request_duration_seconds',
    help: 'HTTP request latency (until the answer is written) by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  readonly transactionRetries = new Counter({
    name: 'mds_db_transaction_retries_total',
    help: 'Transactions retried after a serialization failure, deadlock or busy database, by error code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly eventsWritten = new Counter({
    name: 'mds_events_written_total',
    help: 'Events committed, by type (quote.created counts quotes; transfer.* the lifecycle)',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly schedulerPasses = new Counter({ name: 'mds_scheduler_passes_total', help: 'Scheduler passes run by this process', registers: [this.registry] });
  readonly schedulerActions = new Counter({
    name: 'mds_scheduler_actions_total',
    help: 'What scheduler passes did: cancelled (no courier in time), sandbox_step, purged_idempotency_keys, purged_quotes',
    labelNames: ['action'] as const,
    registers: [this.registry],
  });
  readonly webhookDeliveries = new Counter({
    name: 'mds_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: succeeded, retry (failed, retried later), exhausted (failed for good), disabled (the attempt that disabled its endpoint)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly offers = new Counter({
    name: 'mds_offers_total',
    help: 'Dispatch offers by outcome: made, accepted, declined, expired',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly assignmentWait = new Histogram({
    name: 'mds_assignment_wait_seconds',
    help: "Time from payment (or a scheduled pickup's dispatch start) to a courier assigned, by offer, job list or operator",
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });

  constructor(database: Database) {
    this.#database = database;
    collectDefaultMetrics({ register: this.registry, prefix: 'mds_' });
    // prom-client's totals of active handles, requests and resources are gauges named `_total`, which
    // the Prometheus naming rules (and `promtool check metrics`) keep for counters. The same numbers
    // are the sum of the per-type gauges (`sum(mds_nodejs_active_handles)`), so the totals are dropped.
    for (const kind of ['handles', 'requests', 'resources']) this.registry.removeSingleMetric(`mds_nodejs_active_${kind}_total`);
    const pool = database.poolStats;
    new Gauge({
      name: 'mds_db_pool_connections',
      help: 'PostgreSQL pool connections by state (total, idle, waiting requests); absent on SQLite',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        if (!pool) return;
        const s = pool();
        this.set({ state: 'total' }, s.total);
        this.set({ state: 'idle' }, s.idle);
        this.set({ state: 'waiting' }, s.waiting);
      },
    });
    const snapshot = () => this.#snapshot();
    new Gauge({
      name: 'mds_transfers',
      help: 'Transfers by state (from the database, refreshed at most every 10 s)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        for (const [state, n] of Object.entries((await snapshot()).transfers)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'mds_quotes',
      help: 'Quotes by status: pending (includes expired, until purged) and consumed (from the database, refreshed at most every 10 s)',
      labelNames: ['status'] as const,
      registers: [this.registry],
      async collect() {
        for (const [status, n] of Object.entries((await snapshot()).quotes)) this.set({ status }, n);
      },
    });
    this.#listen(retryChannel.name as string, (m) => this.transactionRetries.inc({ code: String((m as TransactionRetry).code ?? 'unknown') }));
    this.#listen(eventCommitted.name as string, (m) => this.eventsWritten.inc({ type: (m as EventCommitted).type }));
    this.#listen(webhookAttempted.name as string, (m) => this.webhookDeliveries.inc({ outcome: (m as WebhookAttempted).outcome }));
    this.#listen(dispatchOutcome.name as string, (m) => {
      const o = m as DispatchOutcome;
      if (o.outcome === 'assigned') this.assignmentWait.observe((o.waitedMs ?? 0) / 1000);
      else this.offers.inc({ outcome: o.outcome });
    });
    this.#listen(schedulerPassed.name as string, (m) => this.#schedulerPass(m as SchedulerPass));
    new Gauge({
      name: 'mds_webhook_outbox_lag_seconds',
      help: 'Age of the oldest webhook delivery that is due and not yet sent (0 when none), refreshed at most every 10 s',
      registers: [this.registry],
      async collect() {
        this.set((await snapshot()).outboxLagSeconds);
      },
    });
  }

  #schedulerPass(p: SchedulerPass): void {
    this.schedulerPasses.inc();
    const actions = { cancelled: p.cancelled, sandbox_step: p.sandboxSteps, purged_idempotency_keys: p.purgedIdempotencyKeys, purged_quotes: p.purgedQuotes };
    for (const [action, n] of Object.entries(actions)) if (n > 0) this.schedulerActions.inc({ action }, n);
  }

  /** Stops listening to the process-wide channels (a closed app must not keep counting). */
  close(): void {
    for (const undo of this.#cleanup.splice(0)) undo();
  }

  #listen(name: string, fn: (message: unknown) => void): void {
    subscribe(name, fn);
    this.#cleanup.push(() => unsubscribe(name, fn));
  }

  #cached: { at: number; value: Promise<DbSnapshot> } | undefined;
  #snapshot(): Promise<DbSnapshot> {
    const now = Date.now();
    if (!this.#cached || now - this.#cached.at > DB_SNAPSHOT_MS) {
      this.#cached = { at: now, value: readSnapshot(this.#database).catch(() => ({ transfers: {}, quotes: {}, outboxLagSeconds: 0 })) };
    }
    return this.#cached.value;
  }
}

interface DbSnapshot {
  transfers: Record<string, number>;
  quotes: Record<string, number>;
  outboxLagSeconds: number;
}

async function readSnapshot(database: Database): Promise<DbSnapshot> {
  const { db } = database;
  const transfers = await db
    .selectFrom('transfers')
    .select(['state', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('state')
    .execute();
  const quotes = await db
    .selectFrom('quotes')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .groupBy('status')
    .execute();
  return {
    transfers: Object.fromEntries(transfers.map((r) => [r.state, Number(r.n)])),
    quotes: Object.fromEntries(quotes.map((r) => [r.status, Number(r.n)])),
    outboxLagSeconds: await outboxLag(database),
  };
}

/** How long the oldest due, unsent webhook delivery has been waiting. */
async function outboxLag(database: Database): Promise<number> {
  const now = Date.now();
  const row = await database.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min('next_attempt_at').as('oldest'))
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  return row?.oldest === null || row?.oldest === undefined ? 0 : Math.max(0, (now - Number(row.oldest)) / 1000);
}

/** METRICS_PORT: /metrics alone on its own port (no token: keep that port on the private network). */
export async function startMetricsServer(metrics: Metrics, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = http.createServer(async (req, res) => {
    if (req.method === 'GET' && req.url?.split('?')[0] === '/metrics') {
      res.setHeader('content-type', metrics.registry.contentType);
      res.end(await metrics.registry.metrics());
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address();
  const url = `http://${host}:${typeof address === 'object' && address ? address.port : port}`;
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
