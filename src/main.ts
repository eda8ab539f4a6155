import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { withServices } from './cli/context.ts';
import { ConfigError, loadConfig, redactUrl } from './config.ts';
import { backupSqlite, restoreSqlite } from './db/backup.ts';
import { dialectOf, migrateToLatest, openDatabase, sqlitePath } from './db/database.ts';
import { TRANSFER_STATES, type TransferState } from './db/types.ts';
import { AppError } from './lib/errors.ts';
import { formatMinor, parseMajorAmount } from './lib/money.ts';
import { generateSigningKey } from './modules/auth/signing-keys.ts';
import { startServer, startWorker } from './server.ts';

/** What every --help ends with. */
const FOOTER = `
Every command takes --json for machine-readable output; errors then print {"error": CODE, "message"}
on stdout (USAGE, CONFIG_INVALID, or the service's error type such as MERCHANT_NOT_FOUND).
Amounts are in major units with at most two decimals (1250 or 1250.50).
States: ${TRANSFER_STATES.join(', ')}.
Operator changes are recorded as events with actor "operator" and the --reason text (the merchant sees it).
Configuration comes from the environment (README: DATABASE_URL, PORT, ...); commands that open the
database say which one on stderr.`;

export class UsageError extends Error {}

type Out = { json: boolean; print(human: string, data: unknown): void };
type Values = {
  json?: boolean;
  name?: string;
  balance?: string;
  merchant?: string;
  amount?: string;
  note?: string;
  sandbox?: boolean;
  state?: string;
  to?: string;
  reason?: string;
  limit?: string;
  phone?: string;
  since?: string;
  email?: string;
  role?: string;
};

/**
 * The operator CLI. commander parses (per-command help, "did you mean" for typos, required options,
 * choices); run() below does the work. Exit codes: 0 done, 1 refused or failed, 2 usage.
 */
export async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const out: Out = {
    json,
    print(human, data) {
      process.stdout.write(this.json ? `${JSON.stringify(data, null, 2)}\n` : `${human}\n`);
    },
  };
  let code = 0;
  const dispatch = (command: string, positionals: string[], values: Values) => async () => {
    code = await run(command, positionals, values, out);
  };
  const program = buildProgram(dispatch, json);
  if (argv.length === 0) {
    process.stdout.write(program.helpInformation());
    return 2;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return 0;
      if (e.code === 'commander.help') return 2; // a group without its subcommand: its help was shown
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

function buildProgram(dispatch: (command: string, positionals: string[], values: Values) => () => Promise<void>, json: boolean): Command {
  const program = new Command('mds')
    .description('merchant delivery service: the HTTP API, its background work, and the operator commands')
    .exitOverride()
    .showSuggestionAfterError(true)
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeErr: (text) => process.stderr.write(json ? '' : text), outputError: (text, write) => write(text) })
    .addHelpText('after', FOOTER);
  const leaf = (parent: Command, name: string, description: string) =>
    parent.command(name).description(description).option('--json', 'machine-readable output');
  const group = (name: string, description: string) => program.command(name).description(description).addHelpText('after', FOOTER);
  const states = [...TRANSFER_STATES];

  leaf(program, 'serve', 'start the HTTP API, the scheduler and the webhook worker (what npm start runs)').action((o) => dispatch('serve', [], o)());
  leaf(program, 'worker', 'run the background work (scheduler, webhook deliveries) without the HTTP API').action((o) => dispatch('worker', [], o)());
  leaf(program, 'migrate', 'apply database migrations').action((o) => dispatch('migrate', [], o)());
  leaf(program, 'backup', 'consistent online copy of the embedded SQLite database (never overwrites FILE)')
    .argument('<file>')
    .action((file, o) => dispatch('backup', ['backup', file], o)());
  leaf(program, 'restore', 'replace the embedded SQLite database with a backup (refused while serve or worker run)')
    .argument('<file>')
    .action((file, o) => dispatch('restore', ['restore', file], o)());

  const merchants = group('merchants', 'merchant accounts');
  leaf(merchants, 'create', 'create a merchant and its first credential set (the secret is shown once)')
    .requiredOption('--name <name>', 'display name (1 to 200 characters, no control characters)')
    .option('--balance <amount>', 'opening balance, e.g. 5000 or 5000.50')
    .option('--sandbox', 'a sandbox merchant: play money, transfers driven by a simulated courier')
    .action((o) => dispatch('merchants create', [], o)());
  leaf(merchants, 'list', 'every merchant with its balance').action((o) => dispatch('merchants list', [], o)());

  const credentials = group('credentials', "merchants' client credentials");
  leaf(credentials, 'issue', 'issue another credential set (rotation)')
    .requiredOption('--merchant <id>', 'merchant id')
    .action((o) => dispatch('credentials issue', [], o)());
  leaf(credentials, 'list', "a merchant's credential sets (never the secrets)")
    .requiredOption('--merchant <id>', 'merchant id')
    .action((o) => dispatch('credentials list', [], o)());
  leaf(credentials, 'revoke', 'disable: its tokens fail with CREDENTIALS_REVOKED')
    .argument('<clientId>')
    .action((id, o) => dispatch('credentials revoke', ['credentials', 'revoke', id], o)());
  leaf(credentials, 'delete', 'delete: its tokens fail with CREDENTIALS_NOT_FOUND')
    .argument('<clientId>')
    .action((id, o) => dispatch('credentials delete', ['credentials', 'delete', id], o)());

  const balance = group('balance', 'merchant balances and their ledger');
  leaf(balance, 'top-up', 'add money (a TOP_UP ledger entry)')
    .requiredOption('--merchant <id>', 'merchant id')
    .requiredOption('--amount <amount>', 'e.g. 1250 or 1250.50')
    .option('--note <text>', 'shown in the ledger')
    .action((o) => dispatch('balance top-up', [], o)());
  leaf(balance, 'show', 'balance and every ledger entry')
    .requiredOption('--merchant <id>', 'merchant id')
    .action((o) => dispatch('balance show', [], o)());

  const couriers = group('couriers', 'courier accounts');
  leaf(couriers, 'create', 'a courier account and its client credentials (the secret is shown once)')
    .requiredOption('--name <name>', 'full name (merchants see the first name)')
    .requiredOption('--phone <phone>', 'digits with optional +, spaces, dashes, parentheses')
    .action((o) => dispatch('couriers create', [], o)());
  leaf(couriers, 'list', 'every courier').action((o) => dispatch('couriers list', [], o)());
  leaf(couriers, 'disable', 'its tokens then fail with CREDENTIALS_REVOKED; its jobs stay as they are')
    .argument('<courierId>')
    .action((id, o) => dispatch('couriers disable', ['couriers', 'disable', id], o)());
  leaf(couriers, 'enable', 'undo disable')
    .argument('<courierId>')
    .action((id, o) => dispatch('couriers enable', ['couriers', 'enable', id], o)());
  leaf(couriers, 'unlock', 'clear a job locked after 5 wrong codes')
    .argument('<transferId>')
    .action((id, o) => dispatch('couriers unlock', ['couriers', 'unlock', id], o)());

  const transfers = group('transfers', 'transfers of every merchant (support)');
  leaf(transfers, 'list', "newest first, every merchant's unless --merchant")
    .option('--merchant <id>', 'one merchant only')
    .addOption(new Option('--state <state>', 'only this state').choices(states))
    .option('--limit <n>', 'at most this many (1 to 500, default 50)')
    .action((o) => dispatch('transfers list', [], o)());
  leaf(transfers, 'show', 'the transfer as its merchant sees it')
    .argument('<transferId>')
    .action((id, o) => dispatch('transfers show', ['transfers', 'show', id], o)());
  leaf(transfers, 'events', 'its timeline, oldest first')
    .argument('<transferId>')
    .action((id, o) => dispatch('transfers events', ['transfers', 'events', id], o)());
  leaf(transfers, 'cancel', 'cancel any transfer that has not ended, with a full refund')
    .argument('<transferId>')
    .requiredOption('--reason <text>', 'why (the merchant sees it: write it for them)')
    .action((id, o) => dispatch('transfers cancel', ['transfers', 'cancel', id], o)());
  leaf(transfers, 'advance', 'move it through a transition the lifecycle allows support to make')
    .argument('<transferId>')
    .addOption(new Option('--to <state>', 'the target state').choices(states).makeOptionMandatory())
    .requiredOption('--reason <text>', 'why (the merchant sees it)')
    .action((id, o) => dispatch('transfers advance', ['transfers', 'advance', id], o)());

  const tariffs = group('tariffs', 'the pricing tariff');
  leaf(tariffs, 'show', 'the tariff in force (JSON)').action((o) => dispatch('tariffs show', [], o)());
  leaf(tariffs, 'set', 'validate FILE and make it the tariff in force')
    .argument('<file>')
    .action((file, o) => dispatch('tariffs set', ['tariffs', 'set', file], o)());

  const webhooks = group('webhooks', "merchants' webhook endpoints and deliveries (never shows secrets)");
  leaf(webhooks, 'list', "webhook endpoints, every merchant's unless --merchant, with pending deliveries")
    .option('--merchant <id>', 'one merchant only')
    .action((o) => dispatch('webhooks list', [], o)());
  leaf(webhooks, 'attempts', 'the latest delivery attempts to an endpoint, newest first')
    .argument('<endpointId>')
    .option('--limit <n>', 'at most this many (1 to 500, default 50)')
    .action((id, o) => dispatch('webhooks attempts', ['webhooks', 'attempts', id], o)());
  leaf(webhooks, 'replay', 'deliver every event since a time to the endpoint again')
    .argument('<endpointId>')
    .requiredOption('--since <time>', 'ISO 8601 time, e.g. 2026-11-21T10:00:00Z')
    .action((id, o) => dispatch('webhooks replay', ['webhooks', 'replay', id], o)());

  // Dashboard users (src/modules/accounts). A self-contained block: the CLI is being split into src/cli/commands/.
  const users = group('users', "people who log in to a merchant's dashboard");
  leaf(users, 'invite', 'a one-time link (72 h) where the person sets a password; e-mailed too when SMTP_URL is set')
    .requiredOption('--merchant <id>', 'merchant id')
    .requiredOption('--email <email>', "the person's e-mail (their login)")
    .addOption(
      new Option('--role <role>', 'admin: everything; employee: deliveries and warehouses, read-only balance')
        .choices(['admin', 'employee'])
        .makeOptionMandatory(),
    )
    .option('--name <name>', 'display name (default: the part of the e-mail before @)')
    .action((o) => dispatch('users invite', [], o)());
  leaf(users, 'reset', 'a one-time password-reset link (72 h) for an existing user')
    .requiredOption('--merchant <id>', 'merchant id')
    .requiredOption('--email <email>', "the person's e-mail")
    .action((o) => dispatch('users reset', [], o)());
  leaf(users, 'list', "a merchant's users")
    .requiredOption('--merchant <id>', 'merchant id')
    .action((o) => dispatch('users list', [], o)());
  leaf(users, 'remove', 'remove a user: their sessions end at once (a merchant keeps at least one admin)')
    .requiredOption('--merchant <id>', 'merchant id')
    .requiredOption('--email <email>', "the person's e-mail")
    .action((o) => dispatch('users remove', [], o)());

  const keys = group('keys', 'token signing keys');
  leaf(keys, 'generate', 'print a new TOKEN_SIGNING_KEYS entry').action((o) => dispatch('keys generate', [], o)());
  return program;
}

/** Where one-time links point: PUBLIC_BASE_URL, or this server's own address. */
function linkBase(config: ReturnType<typeof loadConfig>): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

function need(values: Values, name: 'name' | 'merchant' | 'amount' | 'reason' | 'to' | 'phone' | 'email'): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v.trim();
}

function amount(text: string): number {
  try {
    return parseMajorAmount(text);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

function state(text: string | undefined, flag: string): TransferState | undefined {
  if (text === undefined) return undefined;
  if (!(TRANSFER_STATES as readonly string[]).includes(text)) throw new UsageError(`--${flag} must be one of ${TRANSFER_STATES.join(', ')}`);
  return text as TransferState;
}

function onePositional(positionals: string[], what: string): string {
  if (positionals.length !== 3) throw new UsageError(`expected exactly one ${what}`);
  return positionals[2];
}

async function run(command: string, positionals: string[], values: Values, out: Out): Promise<number> {
  const [group, action] = command.split(' ');

  if (command === 'keys generate') {
    const key = generateSigningKey();
    out.print(`${key}\n\nAdd it in front of TOKEN_SIGNING_KEYS (comma-separated) to rotate; keep the old key until its tokens expire.`, { key });
    return 0;
  }

  const config = loadConfig();

  switch (command) {
    case 'serve': {
      const server = await startServer(config);
      const shutdown = (signal: string) => {
        server.app.log.info(`${signal}: shutting down`);
        server.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
      await new Promise(() => {}); // run until a signal
      return 0;
    }
    case 'worker': {
      const worker = await startWorker(config);
      const shutdown = (signal: string) => {
        process.stderr.write(`mds worker: ${signal}, stopping\n`);
        worker.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
      await new Promise(() => {});
      return 0;
    }
    case 'backup':
    case 'restore': {
      const file = positionals[1];
      if (!file || positionals.length !== 2) throw new UsageError(`expected exactly one FILE: mds ${group} FILE`);
      if (dialectOf(config.databaseUrl) !== 'sqlite') {
        throw new UsageError(
          `mds ${group} is for the embedded SQLite database; back up PostgreSQL with pg_dump or base backups and WAL archiving (docs/deployment.md)`,
        );
      }
      const dbPath = sqlitePath(config.databaseUrl);
      if (group === 'backup') {
        const { pages, bytes } = await backupSqlite(dbPath, file);
        out.print(`Backed up ${dbPath} to ${file} (${pages} pages, ${bytes} bytes; integrity checked)`, { database: dbPath, file, pages, bytes });
      } else {
        restoreSqlite(file, dbPath);
        out.print(`Restored ${dbPath} from ${file}`, { database: dbPath, file });
      }
      return 0;
    }
    case 'migrate': {
      const database = openDatabase({ url: config.databaseUrl, schema: config.databaseSchema });
      try {
        const applied = await migrateToLatest(database);
        out.print(applied.length ? `Applied: ${applied.join(', ')}` : `Up to date (${redactUrl(database.describe)})`, { applied });
      } finally {
        await database.close();
      }
      return 0;
    }
    case 'merchants create': {
      const name = need(values, 'name');
      const opening = values.balance === undefined ? 0 : amount(values.balance);
      return withServices(config, async (s) => {
        const { merchant, credential } = await s.merchants.create(name, opening, values.sandbox ? 'sandbox' : 'live');
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
        return 0;
      });
    }
    case 'merchants list':
      return withServices(config, async (s) => {
        const merchants = await s.merchants.list();
        out.print(merchants.length ? merchants.map((m) => `${m.id}  ${m.balance.padStart(12)} ${m.currency}  ${m.name}`).join('\n') : 'No merchants', {
          merchants,
        });
        return 0;
      });
    case 'credentials issue': {
      const merchantId = need(values, 'merchant');
      return withServices(config, async (s) => {
        const c = await s.credentials.issue(merchantId);
        out.print(`client id:      ${c.clientId}\nclient secret:  ${c.clientSecret}\n\nThe client secret is shown only this once.`, c);
        return 0;
      });
    }
    case 'credentials list': {
      const merchantId = need(values, 'merchant');
      return withServices(config, async (s) => {
        await s.merchants.get(merchantId);
        const credentials = await s.credentials.list(merchantId);
        out.print(
          credentials.map((c) => `${c.clientId}  ${c.status.padEnd(7)}  created ${c.createdAt}${c.revokedAt ? `  revoked ${c.revokedAt}` : ''}`).join('\n') ||
            'No credentials',
          { credentials },
        );
        return 0;
      });
    }
    case 'credentials revoke':
    case 'credentials delete': {
      const clientId = onePositional(positionals, 'CLIENT_ID');
      return withServices(config, async (s) => {
        if (action === 'revoke') await s.credentials.revoke(clientId);
        else await s.credentials.delete(clientId);
        out.print(`${action === 'revoke' ? 'Revoked' : 'Deleted'} ${clientId}`, { clientId, status: action === 'revoke' ? 'REVOKED' : 'DELETED' });
        return 0;
      });
    }
    case 'balance top-up': {
      const merchantId = need(values, 'merchant');
      const minor = amount(need(values, 'amount'));
      return withServices(config, async (s) => {
        const m = await s.merchants.topUp(merchantId, minor, values.note);
        out.print(`Topped up ${formatMinor(minor)} ${m.currency}; balance is now ${m.balance} ${m.currency}`, { merchant: m, amount: formatMinor(minor) });
        return 0;
      });
    }
    case 'balance show': {
      const merchantId = need(values, 'merchant');
      return withServices(config, async (s) => {
        const l = await s.merchants.ledger(merchantId);
        const lines = l.entries.map(
          (e) =>
            `${e.createdAt}  ${e.kind.padEnd(7)} ${e.amount.padStart(12)}  -> ${e.balanceAfter.padStart(12)}${e.transferId ? `  transfer ${e.transferId}` : ''}${e.note ? `  (${e.note})` : ''}`,
        );
        out.print([`${l.merchant.name}: balance ${l.merchant.balance} ${l.merchant.currency}`, ...lines].join('\n'), l);
        return 0;
      });
    }
    case 'couriers create': {
      const name = need(values, 'name');
      const phone = need(values, 'phone');
      return withServices(config, async (s) => {
        const { courier, clientId, clientSecret } = await s.couriers.create(name, phone);
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
        return 0;
      });
    }
    case 'couriers list':
      return withServices(config, async (s) => {
        const couriers = await s.couriers.list();
        out.print(
          couriers.map((c) => `${c.id}  ${c.status.padEnd(8)} ${c.online ? 'online ' : 'offline'}  ${c.clientId}  ${c.name} (${c.phone})`).join('\n') ||
            'No couriers',
          { couriers },
        );
        return 0;
      });
    case 'couriers disable':
    case 'couriers enable': {
      const id = onePositional(positionals, 'COURIER_ID');
      return withServices(config, async (s) => {
        const c = await s.couriers.setStatus(id, action === 'disable' ? 'DISABLED' : 'ACTIVE');
        out.print(`Courier ${c.id} is ${c.status}`, { courier: c });
        return 0;
      });
    }
    case 'couriers unlock': {
      const id = onePositional(positionals, 'TRANSFER_ID');
      return withServices(config, async (s) => {
        await s.couriers.unlock(id);
        out.print(`Transfer ${id} unlocked: the courier has 5 attempts again`, { transferId: id, unlocked: true });
        return 0;
      });
    }
    case 'transfers list': {
      const limit = values.limit === undefined ? 50 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new UsageError('--limit must be a whole number from 1 to 500');
      return withServices(config, async (s) => {
        if (values.merchant !== undefined) await s.merchants.get(values.merchant);
        const page = await s.transfers.list(values.merchant, { state: state(values.state, 'state'), limit });
        out.print(
          page.items
            .map((t) => `${t.id}  ${t.createdAt}  ${t.state.padEnd(15)} ${String(t.totalPrice).padStart(10)} ${t.currency}${t.sandbox ? '  sandbox' : ''}`)
            .join('\n') || 'No transfers',
          { transfers: page.items },
        );
        return 0;
      });
    }
    case 'transfers show': {
      const id = onePositional(positionals, 'TRANSFER_ID');
      return withServices(config, async (s) => {
        const t = await s.transfers.getAny(id);
        out.print(JSON.stringify(t, null, 2), t);
        return 0;
      });
    }
    case 'transfers events': {
      const id = onePositional(positionals, 'TRANSFER_ID');
      return withServices(config, async (s) => {
        const events = await s.transfers.events(undefined, id);
        out.print(
          events
            .map(
              (e) =>
                `${String(e.sequence).padStart(3)}  ${e.occurredAt}  ${e.type.padEnd(26)} ${(e.state ?? '-').padEnd(15)} ${e.actor.type}  ${JSON.stringify(e.data)}`,
            )
            .join('\n'),
          { events },
        );
        return 0;
      });
    }
    case 'transfers cancel':
    case 'transfers advance': {
      const id = onePositional(positionals, 'TRANSFER_ID');
      const reason = need(values, 'reason');
      const to = action === 'cancel' ? 'cancelled' : (state(need(values, 'to'), 'to') as TransferState);
      return withServices(config, async (s) => {
        const t = action === 'cancel' ? await s.transfers.operatorCancel(id, reason) : await s.transfers.operatorAdvance(id, to, reason);
        out.print(`Transfer ${t.id} is now ${t.state}${t.refundedAmount ? ` (refunded ${t.refundedAmount} ${t.currency})` : ''}`, { transfer: t });
        return 0;
      });
    }
    case 'webhooks list':
      return withServices(config, async (s) => {
        if (values.merchant !== undefined) await s.merchants.get(values.merchant);
        const endpoints = await s.webhooks.listAny(values.merchant);
        out.print(
          endpoints
            .map(
              (e) =>
                `${e.id}  ${e.status.padEnd(8)} ${String(e.pending).padStart(6)} pending  merchant ${e.merchantId}  ${e.url}${e.disabledReason ? `  (${e.disabledReason})` : ''}`,
            )
            .join('\n') || 'No webhook endpoints',
          { endpoints },
        );
        return 0;
      });
    case 'webhooks attempts': {
      const id = onePositional(positionals, 'ENDPOINT_ID');
      const limit = values.limit === undefined ? 50 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new UsageError('--limit must be a whole number from 1 to 500');
      return withServices(config, async (s) => {
        const { items } = await s.webhooks.attempts(undefined, id, { limit });
        out.print(
          items
            .map(
              (a) =>
                `${a.attemptedAt}  ${a.status.padEnd(9)} ${String(a.responseStatus ?? '-').padStart(3)}  ${String(a.durationMs).padStart(5)} ms  #${a.attempt}  ${a.eventType.padEnd(26)} ${a.webhookId}${a.error ? `  ${a.error}` : ''}${a.nextAttemptAt ? `  next ${a.nextAttemptAt}` : ''}`,
            )
            .join('\n') || 'No attempts',
          { attempts: items },
        );
        return 0;
      });
    }
    case 'webhooks replay': {
      const id = onePositional(positionals, 'ENDPOINT_ID');
      const since = values.since;
      if (since === undefined || Number.isNaN(Date.parse(since)) || !/^\d{4}-\d{2}-\d{2}T/.test(since)) {
        throw new UsageError('--since must be an ISO 8601 time such as 2026-11-21T10:00:00Z');
      }
      return withServices(config, async (s) => {
        const r = await s.webhooks.replay(undefined, id, { since: new Date(since).toISOString() });
        out.print(`Queued ${r.queued} deliveries to ${id}`, r);
        return 0;
      });
    }
    case 'users invite': {
      const merchantId = need(values, 'merchant');
      const email = need(values, 'email');
      const role = values.role === 'admin' || values.role === 'employee' ? values.role : undefined;
      if (!role) throw new UsageError('--role must be admin or employee');
      return withServices(config, async (s) => {
        await s.merchants.get(merchantId);
        const r = await s.accounts.inviteMerchantUser({ merchantId, email, role, name: values.name }, linkBase(config));
        out.print(`Invited ${r.user.email} as ${r.user.role}${r.mailed ? ' (e-mailed)' : ''}. The link works once, for 72 hours:\n${r.url}`, {
          url: r.url,
          user: r.user,
          mailed: r.mailed,
        });
        return 0;
      });
    }
    case 'users reset': {
      const merchantId = need(values, 'merchant');
      const email = need(values, 'email');
      return withServices(config, async (s) => {
        const user = await s.accounts.merchantUserByEmail(merchantId, email);
        const r = await s.accounts.resetLink(merchantId, user.id, linkBase(config));
        out.print(`Password-reset link for ${user.email}${r.mailed ? ' (e-mailed)' : ''}; it works once, for 72 hours:\n${r.url}`, {
          url: r.url,
          mailed: r.mailed,
        });
        return 0;
      });
    }
    case 'users list': {
      const merchantId = need(values, 'merchant');
      return withServices(config, async (s) => {
        await s.merchants.get(merchantId);
        const list = await s.accounts.listMerchantUsers(merchantId);
        out.print(
          list
            .map((u) => `${u.id}  ${u.role.padEnd(8)} ${u.active ? 'active ' : 'invited'}  ${u.twoFactor ? '2FA' : '   '}  ${u.email}  ${u.name}`)
            .join('\n') || 'No users',
          { users: list },
        );
        return 0;
      });
    }
    case 'users remove': {
      const merchantId = need(values, 'merchant');
      const email = need(values, 'email');
      return withServices(config, async (s) => {
        const user = await s.accounts.merchantUserByEmail(merchantId, email);
        await s.accounts.removeMerchantUser(merchantId, user.id);
        out.print(`Removed ${user.email}; their sessions have ended`, { removed: user.id });
        return 0;
      });
    }
    case 'tariffs show':
      return withServices(config, async (s) => {
        const t = await s.tariffs.current();
        out.print(`# tariff version ${t.version}${t.version === 0 ? ' (built-in default)' : ''}\n${JSON.stringify(t.document, null, 2)}`, t);
        return 0;
      });
    case 'tariffs set': {
      const file = onePositional(positionals, 'FILE');
      let document: unknown;
      try {
        document = JSON.parse(readFileSync(file, 'utf8'));
      } catch (e) {
        throw new Error(`cannot read ${file} as JSON: ${(e as Error).message}`);
      }
      return withServices(config, async (s) => {
        const t = await s.tariffs.set(document);
        out.print(`Tariff version ${t.version} is now in force (new quotes use it; existing quotes keep their prices)`, { version: t.version });
        return 0;
      });
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}
