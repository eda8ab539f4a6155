import { type Command, Option } from 'commander';
import type { OperatorRole } from '../../modules/audit/service.ts';
import { cliActor, group, leaf, type Output, text, withRuntime } from '../context.ts';
import { linkBase } from './users.ts';

/** People who log in to the operator console (/ops/). */
export function operatorsCommands(program: Command, out: Output): void {
  const operators = group(program, 'operators', 'people who log in to the operator console (/ops/)');

  leaf(operators, 'invite', 'a one-time link (72 h) where the operator sets a password; TOTP is set up at the first login')
    .requiredOption('--email <email>', "the operator's e-mail (their login)", text)
    .addOption(
      new Option('--role <role>', 'support: transfers, couriers, merchants read-only; finance: balances, top-ups, tariffs; admin: everything')
        .choices(['support', 'finance', 'admin'])
        .makeOptionMandatory(),
    )
    .option('--name <name>', 'display name (default: the part of the e-mail before @)', text)
    .action((o: { email: string; role: OperatorRole; name?: string }) =>
      withRuntime(async ({ services, config }) => {
        const r = await services.accounts.inviteOperator({ email: o.email, role: o.role, name: o.name }, linkBase(config), cliActor());
        out.print(`Invited operator ${r.operator.email} as ${r.operator.role}${r.mailed ? ' (e-mailed)' : ''}. The link works once, for 72 hours:\n${r.url}`, {
          url: r.url,
          operator: r.operator,
          mailed: r.mailed,
        });
      }),
    );

  leaf(operators, 'list', 'every operator').action(() =>
    withRuntime(async ({ services }) => {
      const list = await services.accounts.listOperators();
      out.print(
        list.map((p) => `${p.id}  ${p.role.padEnd(8)} ${p.active ? 'active ' : 'invited'}  ${p.twoFactor ? '2FA' : '   '}  ${p.email}  ${p.name}`).join('\n') ||
          'No operators',
        { operators: list },
      );
    }),
  );
}
