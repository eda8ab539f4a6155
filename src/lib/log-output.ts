import type { DestinationStream } from 'pino';

/**
 * Where the service's logs go. On a terminal in development (stdout a TTY and NODE_ENV development or
 * unset) people read them: pino-pretty, one coloured line per entry. Anywhere else (a file, a pipe, a
 * log collector, production, tests) they are JSON lines, which machines read. Redaction happens in
 * pino before either, so pretty output hides the same fields.
 */
export function prettyLogs(stdoutIsTTY: boolean | undefined, nodeEnv: string | undefined): boolean {
  return stdoutIsTTY === true && (nodeEnv === undefined || nodeEnv === '' || nodeEnv === 'development');
}

/**
 * The destination stream for pino: a pino-pretty stream on a developer's terminal, otherwise undefined
 * (stdout, JSON lines). pino-pretty is loaded only then, so servers never pay for it.
 */
export async function logDestination(
  nodeEnv: string | undefined,
  stdoutIsTTY = process.stdout.isTTY,
  out: NodeJS.WritableStream = process.stdout,
): Promise<DestinationStream | undefined> {
  if (!prettyLogs(stdoutIsTTY, nodeEnv)) return undefined;
  const { default: pretty } = await import('pino-pretty');
  return pretty({ colorize: stdoutIsTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, destination: out });
}
