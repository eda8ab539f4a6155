import type { Command } from 'commander';
import { loadConfig } from '../../config.ts';
import { startServer, startWorker, untilSignal } from '../../server.ts';
import { leaf } from '../context.ts';

/** serve and worker: the long-running processes. */
export function serverCommands(program: Command): void {
  leaf(program, 'serve', 'start the HTTP API, the scheduler and the webhook worker (what npm start runs)').action(async () => {
    const server = await startServer(loadConfig());
    await untilSignal(server, (signal) => server.app.log.info(`${signal}: shutting down`));
  });

  leaf(program, 'worker', 'run the background work (scheduler, webhook deliveries) without the HTTP API').action(async () => {
    const worker = await startWorker(loadConfig());
    await untilSignal(worker, (signal) => process.stderr.write(`mds worker: ${signal}, stopping\n`));
  });
}
