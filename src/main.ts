import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { withServices } from './cli/context.ts';
import { ConfigError, loadConfig, redactUrl } from './config.ts';
import { migrateToLatest, openDatabase } from './db/database.ts';
import { AppError } from './lib/errors.ts';
import { formatMinor, parseMajorAmount } from './lib/money.ts';
import { generateSigningKey } from './modules/auth/signing-keys.ts';
import { startServer } from './server.ts';

const USAGE = `mds - merchant delivery service

Usage: mds <command> [options]          (every command takes --json for machine-readable output)

  serve                                         start the HTTP API (what npm start runs)
  migrate                                       apply database migrations
  merchants create --name NAME [--balance AMOUNT]
                                                create a merchant and its first credential set
  merchants list
  credentials issue --merchant ID               issue another credential set (rotation)
  credentials list --merchant ID
  credentials revoke CLIENT_ID                  disable: its tokens fail with CREDENTIALS_REVOKED
  credentials delete CLIENT_ID                  delete: its tokens fail with CREDENTIALS_NOT_FOUND
  balance top-up --merchant ID --amount AMOUNT [--note TEXT]
  balance show --merchant ID                    balance and ledger entries
  tariffs show                                  the tariff in force (JSON)
  tariffs set FILE                              validate FILE and make it the tariff in force
  keys generate                                 print a new TOKEN_SIGNING_KEYS entry

Amounts are in major units with at most two decimals (1250 or 1250.50).
Configuration comes from the environment (see README: DATABASE_URL, PORT, ...).`;

export class UsageError extends Error {}

type Out = { json: boolean; print(human: string, data: unknown): void };

export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (e) {
    process.stderr.write(`mds: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { positionals, values } = parsed;
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  const out: Out = {
    json: values.json === true,
    print(human, data) {
      process.stdout.write(this.json ? `${JSON.stringify(data, null, 2)}\n` : `${human}\n`);
    },
  };
  try {
    return await run(positionals, values, out);
  } catch (e) {
    const message =
      e instanceof ConfigError
        ? e.message
        : e instanceof UsageError
          ? `${e.message}\n\n${USAGE}`
          : e instanceof AppError
            ? e.detail
            : `${(e as Error).message}`;
    if (out.json) process.stdout.write(`${JSON.stringify({ error: e instanceof AppError ? e.code : 'ERROR', message })}\n`);
    process.stderr.write(`mds: ${message}\n`);
    return e instanceof UsageError ? 2 : 1;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      name: { type: 'string' },
      balance: { type: 'string' },
      merchant: { type: 'string' },
      amount: { type: 'string' },
      note: { type: 'string' },
    },
  });
}

type Values = ReturnType<typeof parse>['values'];

function need(values: Values, name: 'name' | 'merchant' | 'amount'): string {
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

function onePositional(positionals: string[], what: string): string {
  if (positionals.length !== 3) throw new UsageError(`expected exactly one ${what}`);
  return positionals[2];
}

async function run(positionals: string[], values: Values, out: Out): Promise<number> {
  const [group, action] = positionals;
  const command = action ? `${group} ${action}` : group;

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
        const { merchant, credential } = await s.merchants.create(name, opening);
        out.print(
          [
            `Merchant created: ${merchant.name}`,
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
      throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
}
