import { type Command, InvalidArgumentError } from 'commander';
import { amount, cliActor, group, leaf, type Output, text, UsageError, withRuntime } from '../context.ts';

function perMinute(value: string): number {
  const n = Number(value);
  if (!/^\d{1,7}$/.test(value) || n < 1 || n > 1_000_000) throw new InvalidArgumentError('--per-minute must be a whole number from 1 to 1000000');
  return n;
}

export function merchantsCommands(program: Command, out: Output): void {
  const merchants = group(program, 'merchants', 'merchant accounts');

  leaf(merchants, 'create', 'create a merchant and its first credential set (the secret is shown once)')
    .requiredOption('--name <name>', 'display name (1 to 200 characters, no control characters)', text)
    .option('--balance <amount>', 'opening balance, e.g. 5000 or 5000.50', amount)
    .option('--sandbox', 'a sandbox merchant: play money, transfers driven by a simulated courier')
    .action((o: { name: string; balance?: number; sandbox?: boolean }) =>
      withRuntime(async ({ services }) => {
        const { merchant, credential } = await services.merchants.create(o.name, o.balance ?? 0, o.sandbox ? 'sandbox' : 'live', cliActor());
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

  leaf(merchants, 'set-limit', "set a merchant's own API rate limit, or return it to the default (MERCHANT_RATE_LIMIT_PER_MINUTE)")
    .argument('<merchantId>')
    .option('--per-minute <n>', 'requests a minute, 1 to 1000000', perMinute)
    .option('--default', 'use the configured default again')
    .action((merchantId: string, o: { perMinute?: number; default?: boolean }) => {
      if ((o.perMinute === undefined) === (o.default !== true)) throw new UsageError('give exactly one of --per-minute N or --default');
      return withRuntime(async ({ services, config }) => {
        const result = await services.merchants.setRateLimit(merchantId, o.perMinute ?? null, cliActor());
        const effective = result.rateLimitPerMinute ?? config.merchantRateLimitPerMinute;
        out.print(
          `Merchant ${merchantId}: ${effective} requests a minute${result.rateLimitPerMinute === null ? ' (the default, MERCHANT_RATE_LIMIT_PER_MINUTE)' : ''}; every instance applies it within a second`,
          { ...result, effectivePerMinute: effective },
        );
      });
    });
}
