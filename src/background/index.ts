import type { Config } from '../config.ts';
import type { Services } from '../services.ts';
import { startDispatcher } from './dispatcher.ts';
import { type Logger, startScheduler } from './scheduler.ts';
import { startWebhookWorker } from './webhook-worker.ts';

export interface Background {
  stop(): Promise<void>;
}

/** Which parts run; `mds worker` runs all of them, `mds serve` what its flags say. */
export interface BackgroundParts {
  scheduler: boolean;
  webhooks: boolean;
}

/** Everything that runs beside the HTTP API: `mds serve` embeds it (unless switched off), `mds worker` runs it alone. */
export function startBackground(services: Services, config: Config, log: Logger, parts: BackgroundParts = { scheduler: true, webhooks: true }): Background {
  const scheduler = parts.scheduler
    ? startScheduler({ ...services, intervalMs: config.schedulerIntervalMs, sandboxStepMs: config.sandboxStepSeconds * 1000, log })
    : undefined;
  if (scheduler) log.info({ intervalMs: config.schedulerIntervalMs, sandboxStepSeconds: config.sandboxStepSeconds }, 'scheduler started');
  // The dispatcher runs with the scheduler (SCHEDULER_ENABLED, `mds worker`): both are lifecycle work safe on every instance.
  const dispatcher = parts.scheduler ? startDispatcher({ dispatch: services.dispatch, intervalMs: config.dispatchIntervalMs, log }) : undefined;
  if (dispatcher) log.info({ intervalMs: config.dispatchIntervalMs, offerTtlSeconds: config.offerTtlSeconds }, 'dispatcher started');
  const webhooks = parts.webhooks ? startWebhookWorker({ delivery: services.webhookDelivery, pollIntervalMs: config.webhookPollIntervalMs, log }) : undefined;
  if (webhooks) log.info({ pollIntervalMs: config.webhookPollIntervalMs, concurrency: config.webhookConcurrency }, 'webhook worker started');
  return {
    async stop() {
      await Promise.all([scheduler?.stop(), dispatcher?.stop(), webhooks?.stop()]);
    },
  };
}
