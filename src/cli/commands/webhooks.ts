import type { Command } from 'commander';
import { cliActor, group, isoTime, leaf, limit, type Output, text, withRuntime } from '../context.ts';

export function webhooksCommands(program: Command, out: Output): void {
  const webhooks = group(program, 'webhooks', "merchants' webhook endpoints and deliveries (never shows secrets)");

  leaf(webhooks, 'list', "webhook endpoints, every merchant's unless --merchant, with pending deliveries")
    .option('--merchant <id>', 'one merchant only')
    .action((o: { merchant?: string }) =>
      withRuntime(async ({ services }) => {
        if (o.merchant !== undefined) await services.merchants.get(o.merchant);
        const endpoints = await services.webhooks.listAny(o.merchant);
        out.print(
          endpoints
            .map(
              (e) =>
                `${e.id}  ${e.status.padEnd(8)} ${String(e.pending).padStart(6)} pending  merchant ${e.merchantId}  ${e.url}${e.disabledReason ? `  (${e.disabledReason})` : ''}`,
            )
            .join('\n') || 'No webhook endpoints',
          { endpoints },
        );
      }),
    );

  leaf(webhooks, 'attempts', 'the latest delivery attempts to an endpoint, newest first')
    .argument('<endpointId>')
    .option('--limit <n>', 'at most this many (1 to 500, default 50)', limit, 50)
    .action((id: string, o: { limit: number }) =>
      withRuntime(async ({ services }) => {
        const { items } = await services.webhooks.attempts(undefined, id, { limit: o.limit });
        out.print(
          items
            .map(
              (a) =>
                `${a.attemptedAt}  ${a.status.padEnd(9)} ${String(a.responseStatus ?? '-').padStart(3)}  ${String(a.durationMs).padStart(5)} ms  #${a.attempt}  ${a.eventType.padEnd(26)} ${a.webhookId}${a.error ? `  ${a.error}` : ''}${a.nextAttemptAt ? `  next ${a.nextAttemptAt}` : ''}`,
            )
            .join('\n') || 'No attempts',
          { attempts: items },
        );
      }),
    );

  leaf(webhooks, 'replay', 'deliver every event since a time to the endpoint again')
    .argument('<endpointId>')
    .requiredOption('--since <time>', 'ISO 8601 time, e.g. 2026-11-21T10:00:00Z', isoTime)
    .option('--reason <text>', 'why (the audit log keeps it)', text)
    .action((id: string, o: { since: string; reason?: string }) =>
      withRuntime(async ({ services }) => {
        const r = await services.webhooks.replay(undefined, id, { since: o.since }, cliActor(), o.reason ?? 'no reason given');
        out.print(`Queued ${r.queued} deliveries to ${id}`, r);
      }),
    );
}
