import type { Command } from 'commander';
import { cliActor, group, leaf, type Output, text, withRuntime } from '../context.ts';

export function credentialsCommands(program: Command, out: Output): void {
  const credentials = group(program, 'credentials', "merchants' client credentials");

  leaf(credentials, 'issue', 'issue another credential set (rotation)')
    .requiredOption('--merchant <id>', 'merchant id', text)
    .option('--reason <text>', 'why (the audit log keeps it)', text)
    .action((o: { merchant: string; reason?: string }) =>
      withRuntime(async ({ services }) => {
        const c = await services.credentials.issueFor(o.merchant, cliActor(), o.reason ?? 'no reason given');
        out.print(`client id:      ${c.clientId}\nclient secret:  ${c.clientSecret}\n\nThe client secret is shown only this once.`, c);
      }),
    );

  leaf(credentials, 'list', "a merchant's credential sets (never the secrets)")
    .requiredOption('--merchant <id>', 'merchant id', text)
    .action((o: { merchant: string }) =>
      withRuntime(async ({ services }) => {
        await services.merchants.get(o.merchant);
        const list = await services.credentials.list(o.merchant);
        out.print(
          list.map((c) => `${c.clientId}  ${c.status.padEnd(7)}  created ${c.createdAt}${c.revokedAt ? `  revoked ${c.revokedAt}` : ''}`).join('\n') ||
            'No credentials',
          { credentials: list },
        );
      }),
    );

  leaf(credentials, 'revoke', 'disable: its tokens fail with CREDENTIALS_REVOKED')
    .argument('<clientId>')
    .option('--reason <text>', 'why (the audit log keeps it)', text)
    .action((clientId: string, o: { reason?: string }) =>
      withRuntime(async ({ services }) => {
        await services.credentials.revoke(clientId, cliActor(), o.reason);
        out.print(`Revoked ${clientId}`, { clientId, status: 'REVOKED' });
      }),
    );

  leaf(credentials, 'delete', 'delete: its tokens fail with CREDENTIALS_NOT_FOUND')
    .argument('<clientId>')
    .action((clientId: string) =>
      withRuntime(async ({ services }) => {
        await services.credentials.delete(clientId, cliActor());
        out.print(`Deleted ${clientId}`, { clientId, status: 'DELETED' });
      }),
    );
}
