import { type Command, Option } from 'commander';
import { TRANSFER_STATES, type TransferState } from '../../db/types.ts';
import { cliActor, group, leaf, limit, type Output, text, withRuntime } from '../context.ts';

export function transfersCommands(program: Command, out: Output): void {
  const transfers = group(program, 'transfers', 'transfers of every merchant (support)');
  const states = [...TRANSFER_STATES];

  leaf(transfers, 'list', "newest first, every merchant's unless --merchant")
    .option('--merchant <id>', 'one merchant only')
    .addOption(new Option('--state <state>', 'only this state').choices(states))
    .option('--limit <n>', 'at most this many (1 to 500, default 50)', limit, 50)
    .action((o: { merchant?: string; state?: TransferState; limit: number }) =>
      withRuntime(async ({ services }) => {
        if (o.merchant !== undefined) await services.merchants.get(o.merchant);
        const page = await services.transfers.list(o.merchant, { state: o.state, limit: o.limit });
        out.print(
          page.items
            .map((t) => `${t.id}  ${t.createdAt}  ${t.state.padEnd(15)} ${String(t.totalPrice).padStart(10)} ${t.currency}${t.sandbox ? '  sandbox' : ''}`)
            .join('\n') || 'No transfers',
          { transfers: page.items },
        );
      }),
    );

  leaf(transfers, 'show', 'the transfer as its merchant sees it')
    .argument('<transferId>')
    .action((id: string) =>
      withRuntime(async ({ services }) => {
        const t = await services.transfers.getAny(id);
        out.print(JSON.stringify(t, null, 2), t);
      }),
    );

  leaf(transfers, 'events', 'its timeline, oldest first')
    .argument('<transferId>')
    .action((id: string) =>
      withRuntime(async ({ services }) => {
        const events = await services.transfers.events(undefined, id);
        out.print(
          events
            .map(
              (e) =>
                `${String(e.sequence).padStart(3)}  ${e.occurredAt}  ${e.type.padEnd(26)} ${(e.state ?? '-').padEnd(15)} ${e.actor.type}  ${JSON.stringify(e.data)}`,
            )
            .join('\n'),
          { events },
        );
      }),
    );

  leaf(transfers, 'cancel', 'cancel any transfer that has not ended, with a full refund')
    .argument('<transferId>')
    .requiredOption('--reason <text>', 'why (the merchant sees it: write it for them)', text)
    .action((id: string, o: { reason: string }) =>
      withRuntime(async ({ services }) => {
        const t = await services.transfers.operatorCancel(id, o.reason, cliActor());
        out.print(`Transfer ${t.id} is now ${t.state}${t.refundedAmount ? ` (refunded ${t.refundedAmount} ${t.currency})` : ''}`, { transfer: t });
      }),
    );

  leaf(transfers, 'advance', 'move it through a transition the lifecycle allows support to make')
    .argument('<transferId>')
    .addOption(new Option('--to <state>', 'the target state').choices(states).makeOptionMandatory())
    .requiredOption('--reason <text>', 'why (the merchant sees it)', text)
    .action((id: string, o: { to: TransferState; reason: string }) =>
      withRuntime(async ({ services }) => {
        const t = await services.transfers.operatorAdvance(id, o.to, o.reason, cliActor());
        out.print(`Transfer ${t.id} is now ${t.state}${t.refundedAmount ? ` (refunded ${t.refundedAmount} ${t.currency})` : ''}`, { transfer: t });
      }),
    );

  leaf(
    transfers,
    'assign',
    'give a waiting live transfer to a named courier, or an assigned one to another (operator events, audited; open offers for it are withdrawn)',
  )
    .argument('<transferId>')
    .requiredOption('--courier <courierId>', 'the courier (mds couriers list)')
    .requiredOption('--reason <text>', 'why (recorded with the event)', text)
    .action((id: string, o: { courier: string; reason: string }) =>
      withRuntime(async ({ services }) => {
        const t = await services.dispatch.reassign(id, o.courier, o.reason, cliActor());
        out.print(`Transfer ${t.id} is now ${t.state} (courier ${t.courier?.firstName ?? o.courier})`, { transfer: t });
      }),
    );
}
