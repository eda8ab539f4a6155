import { type Command, Option } from 'commander';
import type { Config } from '../../config.ts';
import { group, leaf, type Output, text, withRuntime } from '../context.ts';

/** Where one-time links point: PUBLIC_BASE_URL, or this server's own address. */
export function linkBase(config: Config): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

/** People who log in to a merchant's dashboard (src/modules/accounts). */
export function usersCommands(program: Command, out: Output): void {
  const users = group(program, 'users', "people who log in to a merchant's dashboard");

  leaf(users, 'invite', 'a one-time link (72 h) where the person sets a password; e-mailed too when SMTP_URL is set')
    .requiredOption('--merchant <id>', 'merchant id', text)
    .requiredOption('--email <email>', "the person's e-mail (their login)", text)
    .addOption(
      new Option('--role <role>', 'admin: everything; employee: deliveries and warehouses, read-only balance')
        .choices(['admin', 'employee'])
        .makeOptionMandatory(),
    )
    .option('--name <name>', 'display name (default: the part of the e-mail before @)', text)
    .action((o: { merchant: string; email: string; role: 'admin' | 'employee'; name?: string }) =>
      withRuntime(async ({ services, config }) => {
        await services.merchants.get(o.merchant.trim());
        const r = await services.accounts.inviteMerchantUser(
          { merchantId: o.merchant.trim(), email: o.email.trim(), role: o.role, name: o.name?.trim() },
          linkBase(config),
        );
        out.print(`Invited ${r.user.email} as ${r.user.role}${r.mailed ? ' (e-mailed)' : ''}. The link works once, for 72 hours:\n${r.url}`, {
          url: r.url,
          user: r.user,
          mailed: r.mailed,
        });
      }),
    );

  leaf(users, 'reset', 'a one-time password-reset link (72 h) for an existing user')
    .requiredOption('--merchant <id>', 'merchant id', text)
    .requiredOption('--email <email>', "the person's e-mail", text)
    .action((o: { merchant: string; email: string }) =>
      withRuntime(async ({ services, config }) => {
        const user = await services.accounts.merchantUserByEmail(o.merchant.trim(), o.email.trim());
        const r = await services.accounts.resetLink(o.merchant.trim(), user.id, linkBase(config));
        out.print(`Password-reset link for ${user.email}${r.mailed ? ' (e-mailed)' : ''}; it works once, for 72 hours:\n${r.url}`, {
          url: r.url,
          mailed: r.mailed,
        });
      }),
    );

  leaf(users, 'list', "a merchant's users")
    .requiredOption('--merchant <id>', 'merchant id', text)
    .action((o: { merchant: string }) =>
      withRuntime(async ({ services }) => {
        await services.merchants.get(o.merchant.trim());
        const list = await services.accounts.listMerchantUsers(o.merchant.trim());
        out.print(
          list
            .map((u) => `${u.id}  ${u.role.padEnd(8)} ${u.active ? 'active ' : 'invited'}  ${u.twoFactor ? '2FA' : '   '}  ${u.email}  ${u.name}`)
            .join('\n') || 'No users',
          { users: list },
        );
      }),
    );

  leaf(users, 'remove', 'remove a user: their sessions end at once (a merchant keeps at least one admin)')
    .requiredOption('--merchant <id>', 'merchant id', text)
    .requiredOption('--email <email>', "the person's e-mail", text)
    .action((o: { merchant: string; email: string }) =>
      withRuntime(async ({ services }) => {
        const user = await services.accounts.merchantUserByEmail(o.merchant.trim(), o.email.trim());
        await services.accounts.removeMerchantUser(o.merchant.trim(), user.id);
        out.print(`Removed ${user.email}; their sessions have ended`, { removed: user.id });
      }),
    );
}
