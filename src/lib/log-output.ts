import type { DestinationStream } from 'pino';
import pretty from 'pino-pretty';

/**
 * Where the service's logs go. On a terminal in development (stdout a TTY and NODE_ENV development or
 * unset) people read them: pino-pretty, one coloured line per entry. Anywhere else (a file, a pipe, a
 * log collector, production, tests) they are JSON lines, which machines read. Redaction happens in
 * pino before either, so pretty output hides the same fields.
 */
export function prettyLogs(stdoutIsTTY: boolean | undefined, nodeEnv: string | undefined): boolean {
  return stdoutIsTTY === true && (nodeEnv === undefined || nodeEnv === '' || nodeEnv === 'development');
}

/** The destination stream for pino: a pino-pretty stream on a developer's terminal, otherwise undefined (stdout, JSON lines). */
export function logDestination(
  nodeEnv: string | undefined,
  stdoutIsTTY = process.stdout.isTTY,
  out: NodeJS.WritableStream = process.stdout,
): DestinationStream | undefined {
  if (!prettyLogs(stdoutIsTTY, nodeEnv)) return undefined;
  return pretty({ colorize: stdoutIsTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, destination: out });
}
