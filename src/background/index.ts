import type { Config } from '../config.ts';
import type { Metrics } from '../modules/metrics/metrics.ts';
import type { Services } from '../services.ts';
import { type Logger, startScheduler } from './scheduler.ts';

export interface Background {
  stop(): Promise<void>;
}

/** Everything that runs beside the HTTP API: `mds serve` embeds it (unless switched off), `mds worker` runs it alone. */
export function startBackground(services: Services, config: Config, log: Logger, metrics?: Metrics): Background {
  const scheduler = startScheduler({ ...services, intervalMs: config.schedulerIntervalMs, log, onPass: (p) => metrics?.schedulerPass(p) });
  log.info({ intervalMs: config.schedulerIntervalMs }, 'scheduler started');
  return {
    async stop() {
      await scheduler.stop();
    },
  };
}
