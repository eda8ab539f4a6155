import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config.ts';
import { AppError } from '../lib/errors.ts';
import { balanceCommands } from './commands/balance.ts';
import { couriersCommands } from './commands/couriers.ts';
import { credentialsCommands } from './commands/credentials.ts';
import { dbCommands } from './commands/db.ts';
import { keysCommands } from './commands/keys.ts';
import { merchantsCommands } from './commands/merchants.ts';
import { operatorsCommands } from './commands/operators.ts';
import { serverCommands } from './commands/server.ts';
import { tariffsCommands } from './commands/tariffs.ts';
import { transfersCommands } from './commands/transfers.ts';
import { usersCommands } from './commands/users.ts';
import { webhooksCommands } from './commands/webhooks.ts';
import { FOOTER, type Output, output, UsageError } from './context.ts';

/**
 * The mds program: one file per command group under commands/, each action beside its declaration.
 * commander parses and checks (per-command help, "did you mean" for typos, required options, choices,
 * option parsers).
 */
export function buildProgram(out: Output): Command {
  const program = new Command('mds')
    .description('merchant delivery service: the HTTP API, its background work, and the operator commands')
    .exitOverride()
    .showSuggestionAfterError(true)
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeErr: (text) => process.stderr.write(out.json ? '' : text), outputError: (text, write) => write(text) })
    .addHelpText('after', FOOTER);
  serverCommands(program);
  dbCommands(program, out);
  merchantsCommands(program, out);
  credentialsCommands(program, out);
  balanceCommands(program, out);
  couriersCommands(program, out);
  transfersCommands(program, out);
  tariffsCommands(program, out);
  webhooksCommands(program, out);
  usersCommands(program, out);
  operatorsCommands(program, out);
  keysCommands(program, out);
  return program;
}

/**
 * Runs `mds ARGV` and returns the exit code: 0 done (help included), 1 refused or failed, 2 usage.
 * With --json an error is one {"error", "message"} object on stdout.
 */
export async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const program = buildProgram(output(json));
  if (argv.length === 0) {
    process.stdout.write(program.helpInformation());
    return 2;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return 0;
      // `mds help` asked for it (exit code 0); a group without its subcommand had its help shown instead (1): usage.
      if (e.code === 'commander.help') return e.exitCode === 0 ? 0 : 2;
      if (json) process.stdout.write(`${JSON.stringify({ error: 'USAGE', message: e.message.replace(/^error: /, '') })}\n`);
      return 2;
    }
    const [type, message] =
      e instanceof ConfigError
        ? ['CONFIG_INVALID', e.message]
        : e instanceof UsageError
          ? ['USAGE', e.message]
          : e instanceof AppError
            ? [e.code, e.detail]
            : ['ERROR', (e as Error).message];
    if (json) process.stdout.write(`${JSON.stringify({ error: type, message })}\n`);
    process.stderr.write(`mds: ${message}${e instanceof UsageError ? '\n(run with --help for usage)' : ''}\n`);
    return e instanceof UsageError ? 2 : 1;
  }
}
