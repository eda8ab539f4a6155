import type { Command } from 'commander';
import { formatMinor } from '../../lib/money.ts';
import { amount, cliActor, group, leaf, type Output, signedAmount, text, withRuntime } from '../context.ts';

export function balanceCommands(program: Command, out: Output): void {
  const balance = group(program, 'balance', 'merchant balances and their ledger');

  leaf(balance, 'top-up', 'add money (a TOP_UP ledger entry)')
    .requiredOption('--merchant <id>', 'merchant id', text)
    .requiredOption('--amount <amount>', 'e.g. 1250 or 1250.50', (v: string) => amount(text(v)))
    .option('--reason <text>', 'why (shown in the ledger and the audit log)')
    .option('--note <text>', 'the same as --reason (older name)')
    .action((o: { merchant: string; amount: number; reason?: string; note?: string }) =>
      withRuntime(async ({ services }) => {
        const m = await services.merchants.topUp(o.merchant, o.amount, o.reason ?? o.note ?? 'no reason given', cliActor());
        out.print(`Topped up ${formatMinor(o.amount)} ${m.currency}; balance is now ${m.balance} ${m.currency}`, {
          merchant: m,
          amount: formatMinor(o.amount),
        });
      }),
    );

  leaf(balance, 'adjust', 'correct a balance by a signed amount (an ADJUSTMENT ledger entry; never below zero)')
    .requiredOption('--merchant <id>', 'merchant id', text)
    .requiredOption('--amount <amount>', 'signed, e.g. -12.50 to take money back or 12.50 to add', (v: string) => signedAmount(text(v)))
    .requiredOption('--reason <text>', 'why (shown in the ledger and the audit log)', text)
    .action((o: { merchant: string; amount: number; reason: string }) =>
      withRuntime(async ({ services }) => {
        const m = await services.merchants.adjust(o.merchant, o.amount, o.reason, cliActor());
        out.print(`Adjusted by ${formatMinor(o.amount)} ${m.currency}; balance is now ${m.balance} ${m.currency}`, {
          merchant: m,
          amount: formatMinor(o.amount),
        });
      }),
    );

  leaf(balance, 'show', 'balance and every ledger entry')
    .requiredOption('--merchant <id>', 'merchant id', text)
    .action((o: { merchant: string }) =>
      withRuntime(async ({ services }) => {
        const l = await services.merchants.ledger(o.merchant);
        const lines = l.entries.map(
          (e) =>
            `${e.createdAt}  ${e.kind.padEnd(10)} ${e.amount.padStart(12)}  -> ${e.balanceAfter.padStart(12)}${e.transferId ? `  transfer ${e.transferId}` : ''}${e.note ? `  (${e.note})` : ''}`,
        );
        out.print([`${l.merchant.name}: balance ${l.merchant.balance} ${l.merchant.currency}`, ...lines].join('\n'), l);
      }),
    );
}
