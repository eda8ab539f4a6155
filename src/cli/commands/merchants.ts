import type { Command } from 'commander';
import { amount, group, leaf, type Output, text, withRuntime } from '../context.ts';

export function merchantsCommands(program: Command, out: Output): void {
  const merchants = group(program, 'merchants', 'merchant accounts');

  leaf(merchants, 'create', 'create a merchant and its first credential set (the secret is shown once)')
    .requiredOption('--name <name>', 'display name (1 to 200 characters, no control characters)', text)
    .option('--balance <amount>', 'opening balance, e.g. 5000 or 5000.50', amount)
    .option('--sandbox', 'a sandbox merchant: play money, transfers driven by a simulated courier')
    .action((o: { name: string; balance?: number; sandbox?: boolean }) =>
      withRuntime(async ({ services }) => {
        const { merchant, credential } = await services.merchants.create(o.name, o.balance ?? 0, o.sandbox ? 'sandbox' : 'live');
        out.print(
          [
            `Merchant created: ${merchant.name}${merchant.mode === 'sandbox' ? ' (SANDBOX: play money, simulated courier)' : ''}`,
            `  merchant id:    ${merchant.id}`,
            `  balance:        ${merchant.balance} ${merchant.currency}`,
            `  client id:      ${credential.clientId}`,
            `  client secret:  ${credential.clientSecret}`,
            '',
            "The client secret is shown only this once: store it in the merchant server's secret store.",
          ].join('\n'),
          { merchant, clientId: credential.clientId, clientSecret: credential.clientSecret },
        );
      }),
    );

  leaf(merchants, 'list', 'every merchant with its balance').action(() =>
    withRuntime(async ({ services }) => {
      const merchants = await services.merchants.list();
      out.print(merchants.length ? merchants.map((m) => `${m.id}  ${m.balance.padStart(12)} ${m.currency}  ${m.name}`).join('\n') : 'No merchants', {
        merchants,
      });
    }),
  );
}
