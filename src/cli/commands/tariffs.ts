import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { cliActor, group, leaf, type Output, text, withRuntime } from '../context.ts';

export function tariffsCommands(program: Command, out: Output): void {
  const tariffs = group(program, 'tariffs', 'the pricing tariff');

  leaf(tariffs, 'show', 'the tariff in force (JSON)').action(() =>
    withRuntime(async ({ services }) => {
      const t = await services.tariffs.current();
      out.print(`# tariff version ${t.version}${t.version === 0 ? ' (built-in default)' : ''}\n${JSON.stringify(t.document, null, 2)}`, t);
    }),
  );

  leaf(tariffs, 'set', 'validate FILE and make it the tariff in force')
    .argument('<file>')
    .option('--reason <text>', 'why (the audit log keeps it)', text)
    .action((file: string, o: { reason?: string }) => {
      let document: unknown;
      try {
        document = JSON.parse(readFileSync(file, 'utf8'));
      } catch (e) {
        throw new Error(`cannot read ${file} as JSON: ${(e as Error).message}`);
      }
      return withRuntime(async ({ services }) => {
        const t = await services.tariffs.set(document, cliActor(), o.reason);
        out.print(`Tariff version ${t.version} is now in force (new quotes use it; existing quotes keep their prices)`, { version: t.version });
      });
    });
}
