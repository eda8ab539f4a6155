import type { Command } from 'commander';
import { cliActor, group, leaf, type Output, text, withRuntime } from '../context.ts';

export function couriersCommands(program: Command, out: Output): void {
  const couriers = group(program, 'couriers', 'courier accounts');

  leaf(couriers, 'create', 'a courier account and its client credentials (the secret is shown once)')
    .requiredOption('--name <name>', 'full name (merchants see the first name)', text)
    .requiredOption('--phone <phone>', 'digits with optional +, spaces, dashes, parentheses', text)
    .action((o: { name: string; phone: string }) =>
      withRuntime(async ({ services }) => {
        const { courier, clientId, clientSecret } = await services.couriers.create(o.name, o.phone, cliActor());
        out.print(
          [
            `Courier created: ${courier.name}`,
            `  courier id:     ${courier.id}`,
            `  client id:      ${clientId}`,
            `  client secret:  ${clientSecret}`,
            '',
            "The client secret is shown only this once: put it in the courier's app settings.",
          ].join('\n'),
          { courier, clientId, clientSecret },
        );
      }),
    );

  leaf(couriers, 'list', 'every courier').action(() =>
    withRuntime(async ({ services }) => {
      const list = await services.couriers.list();
      out.print(
        list.map((c) => `${c.id}  ${c.status.padEnd(8)} ${c.online ? 'online ' : 'offline'}  ${c.clientId}  ${c.name} (${c.phone})`).join('\n') ||
          'No couriers',
        { couriers: list },
      );
    }),
  );

  for (const [name, description, status] of [
    ['disable', 'its tokens then fail with CREDENTIALS_REVOKED; its jobs stay as they are', 'DISABLED'],
    ['enable', 'undo disable', 'ACTIVE'],
  ] as const) {
    leaf(couriers, name, description)
      .argument('<courierId>')
      .option('--reason <text>', 'why (the audit log keeps it)', text)
      .action((courierId: string, o: { reason?: string }) =>
        withRuntime(async ({ services }) => {
          const c = await services.couriers.setStatus(courierId, status, cliActor(), o.reason);
          out.print(`Courier ${c.id} is ${c.status}`, { courier: c });
        }),
      );
  }

  leaf(couriers, 'unlock', 'clear a job locked after 5 wrong codes')
    .argument('<transferId>')
    .option('--reason <text>', 'why (the audit log keeps it)', text)
    .action((transferId: string, o: { reason?: string }) =>
      withRuntime(async ({ services }) => {
        await services.couriers.unlock(transferId, cliActor(), o.reason);
        out.print(`Transfer ${transferId} unlocked: the courier has 5 attempts again`, { transferId, unlocked: true });
      }),
    );
}
