import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { withServices } from './cli/context.ts';
import { ConfigError, loadConfig, redactUrl } from './config.ts';
import { migrateToLatest, openDatabase } from './db/database.ts';
import { TRANSFER_STATES, type TransferState } from './db/types.ts';
import { AppError } from './lib/errors.ts';
import { formatMinor, parseMajorAmount } from './lib/money.ts';
import { generateSigningKey } from './modules/auth/signing-keys.ts';
import { startServer, startWorker } from './server.ts';

const USAGE = `mds - merchant delivery service

Usage: mds <command> [options]          (every command takes --json for machine-readable output)

  serve                                         start the HTTP API, the scheduler and the webhook worker (what npm start runs)
  worker                                        run the background work (scheduler, webhook worker) without the HTTP API
  migrate                                       apply database migrations
  merchants create --name NAME [--balance AMOUNT] [--sandbox]
                                                create a merchant and its first credential set
                                                (--sandbox: play money, a simulated courier)
  merchants list
  credentials issue --merchant ID               issue another credential set (rotation)
  credentials list --merchant ID
  credentials revoke CLIENT_ID                  disable: its tokens fail with CREDENTIALS_REVOKED
  credentials delete CLIENT_ID                  delete: its tokens fail with CREDENTIALS_NOT_FOUND
  balance top-up --merchant ID --amount AMOUNT [--note TEXT]
  balance show --merchant ID                    balance and ledger entries
  transfers list [--merchant ID] [--state STATE] [--limit N]
                                                newest first, every merchant's unless --merchant
  transfers show TRANSFER_ID                    the transfer as its merchant sees it
  transfers events TRANSFER_ID                  its timeline, oldest first
  transfers cancel TRANSFER_ID --reason TEXT    cancel any transfer that has not ended, full refund
  transfers advance TRANSFER_ID --to STATE --reason TEXT
                                                move it through an allowed transition (support)
  webhooks list [--merchant ID]                 webhook endpoints (every merchant's unless --merchant), with pending deliveries
  webhooks attempts ENDPOINT_ID [--limit N]     the latest delivery attempts to an endpoint, newest first
  webhooks replay ENDPOINT_ID --since ISO_TIME  deliver every event since ISO_TIME to the endpoint again
  tariffs show                                  the tariff in force (JSON)
  tariffs set FILE                              validate FILE and make it the tariff in force
  keys generate                                 print a new TOKEN_SIGNING_KEYS entry

Amounts are in major units with at most two decimals (1250 or 1250.50).
States: inProgress, courierAssigned, pickedUp, delivered, returning, returned, cancelled.
Operator changes are recorded as events with actor "operator" and the --reason text.
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
      sandbox: { type: 'boolean' },
      state: { type: 'string' },
      to: { type: 'string' },
      reason: { type: 'string' },
      limit: { type: 'string' },
      since: { type: 'string' },
    },
  });
}

type Values = ReturnType<typeof parse>['values'];

function need(values: Values, name: 'name' | 'merchant' | 'amount' | 'reason' | 'to'): string {
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
