import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import pino from 'pino';
import { type Config, loadConfig, redactUrl } from '../config.ts';
import { dialectOf, sqlitePath } from '../db/database.ts';
import { TRANSFER_STATES } from '../db/types.ts';
import { parseMajorAmount, parseSignedMajorAmount } from '../lib/money.ts';
import type { OperatorActor } from '../modules/audit/service.ts';
import { openRuntime, type Runtime } from '../runtime.ts';

/** A usage problem found after parsing (exit 2, like commander's own). */
export class UsageError extends Error {}

/** What every command writes with: human text, or with --json the data as JSON (stdout either way). */
export interface Output {
  json: boolean;
  print(human: string, data: unknown): void;
}

export function output(json: boolean): Output {
  return {
    json,
    print(human, data) {
      process.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${human}\n`);
    },
  };
}

/** What every --help ends with. */
export const FOOTER = `
Every command takes --json for machine-readable output; errors then print {"error": CODE, "message"}
on stdout (USAGE, CONFIG_INVALID, or the service's error type such as MERCHANT_NOT_FOUND).
Amounts are in major units with at most two decimals (1250 or 1250.50).
States: ${TRANSFER_STATES.join(', ')}.
Operator changes are recorded as events with actor "operator" and the --reason text (the merchant sees it),
and in the audit log as the operator "cli" with the machine user running the command.
Configuration comes from the environment (README: DATABASE_URL, PORT, ...); commands that open the
database say which one on stderr.`;

/** Who the CLI's changes are audited as: the operator "cli", with the machine user running it. */
export function cliActor(): OperatorActor {
  let machineUser = process.env.USER || process.env.USERNAME || 'unknown';
  try {
    machineUser = userInfo().username || machineUser;
  } catch {
    // no passwd entry (some containers): the environment's name
  }
  return { kind: 'cli', machineUser: machineUser.slice(0, 100) };
}

/** A command that takes --json (every leaf command does). */
export function leaf(parent: Command, name: string, description: string): Command {
  return parent.command(name).description(description).option('--json', 'machine-readable output');
}

/** A command group (merchants, balance, ...): its help ends with the footer too. */
export function group(program: Command, name: string, description: string): Command {
  return program.command(name).description(description).addHelpText('after', FOOTER);
}

/**
 * Opens the runtime for one operator command (the embedded database migrated on the way, two
 * connections, signing keys never resolved), runs fn and closes it.
 */
export async function withRuntime<T>(fn: (runtime: Runtime) => Promise<T>): Promise<T> {
  const config = loadConfig();
  announceDatabase(config);
  // stdout is the command's output (--json included): logs go to stderr.
  const runtime = await openRuntime(config, { poolSize: 2, log: pino({ level: config.logLevel }, process.stderr) });
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

/**
 * Says on stderr which database a command opens (stdout stays the command's output, --json included),
 * and warns when the embedded one does not exist yet: run from another folder, the default relative
 * path would otherwise silently create a new, empty database.
 */
export function announceDatabase(config: Config): void {
  if (dialectOf(config.databaseUrl) === 'sqlite') {
    const path = resolve(sqlitePath(config.databaseUrl));
    if (!existsSync(path)) {
      process.stderr.write(`mds: no database at ${path} yet: creating a new, empty one (run mds from the project folder, or set DATABASE_URL)\n`);
    } else process.stderr.write(`mds: database ${path}\n`);
  } else {
    process.stderr.write(
      `mds: database ${redactUrl(config.databaseUrl.replace(/\?.*$/, ''))}${config.databaseSchema ? ` (schema ${config.databaseSchema})` : ''}\n`,
    );
  }
}

// ---- option parsers: commander calls them and reports what they throw as a usage error (exit 2) ----

/** Trimmed text that is not blank. */
export function text(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('it must not be blank');
  return value.trim();
}

/** A signed amount in major units ("-12.50" or "12.50") as minor units: a correction. */
export function signedAmount(value: string): number {
  try {
    return parseSignedMajorAmount(value);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

/** An amount in major units ("1250" or "1250.50") as minor units. */
export function amount(value: string): number {
  try {
    return parseMajorAmount(value);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

/** --limit: a whole number from 1 to 500. */
export function limit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500) throw new InvalidArgumentError('--limit must be a whole number from 1 to 500');
  return n;
}

/** An ISO 8601 time, normalised to UTC. */
export function isoTime(value: string): string {
  if (Number.isNaN(Date.parse(value)) || !/^\d{4}-\d{2}-\d{2}T/.test(value)) {
    throw new InvalidArgumentError('--since must be an ISO 8601 time such as 2026-11-21T10:00:00Z');
  }
  return new Date(value).toISOString();
}
