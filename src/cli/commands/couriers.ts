import type { Command } from 'commander';
import { AppError } from '../../lib/errors.ts';
import { cliActor, group, leaf, type Output, text, withRuntime } from '../context.ts';
import { linkBase } from './users.ts';

export function couriersCommands(program: Command, out: Output): void {
  const couriers = group(program, 'couriers', 'courier accounts');

  leaf(couriers, 'create', 'a courier account: its client credentials (the secret is shown once) and a one-time activation link for the courier app')
    .requiredOption('--name <name>', 'full name (merchants see the first name)', text)
    .requiredOption('--phone <phone>', 'digits with optional +, spaces, dashes, parentheses (the courier logs in with it)', text)
    .action((o: { name: string; phone: string }) =>
      withRuntime(async ({ services, config }) => {
        // Checked first, so a refused phone leaves no courier behind.
        if (!(await services.accounts.courierPhoneFree(o.phone))) throw new AppError('PHONE_TAKEN', `Another courier already logs in with ${o.phone.trim()}`);
        const { courier, clientId, clientSecret } = await services.couriers.create(o.name, o.phone, cliActor());
        const activation = await services.accounts.courierActivationLink(courier.id, linkBase(config));
        out.print(
          [
            `Courier created: ${courier.name}`,
            `  courier id:     ${courier.id}`,
            `  client id:      ${clientId}`,
            `  client secret:  ${clientSecret}`,
            '',
            'The client secret is shown only this once (for an integration using the courier API).',
            'Send the courier this activation link: it works once, for 72 hours, and sets the password of the courier app',
            `(${courier.phone} + that password at /courier-app/login):`,
            activation.url,
          ].join('\n'),
          { courier, clientId, clientSecret, activationUrl: activation.url },
        );
      }),
    );

  leaf(couriers, 'activation-link', "a new one-time link (72 h) where the courier sets the courier app's password (also a reset)")
    .argument('<courierId>')
    .action((courierId: string) =>
      withRuntime(async ({ services, config }) => {
        const r = await services.accounts.courierActivationLink(courierId.trim(), linkBase(config));
        out.print(`The link works once, for 72 hours:\n${r.url}`, { courierId: courierId.trim(), activationUrl: r.url, purpose: r.purpose });
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
