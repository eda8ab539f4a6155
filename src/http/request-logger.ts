import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, Logger } from 'pino';

type Method = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * Request loggers made on first use. Fastify gives every request a child logger, and pino's child()
 * runs the redaction stringifier over its bindings: a few µs per request, for a logger that at the
 * default LOG_LEVEL (warn) almost never writes. Here a call at a disabled level is a no-op, and the
 * first enabled call (or any other use) makes the real child with the same bindings and options, so
 * every line it writes is the line the eager child would have written.
 */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  // A route with its own level or serializers gets its child now: its enabled levels differ from the parent's.
  // (And a logger that is not pino's, which lacks isLevelEnabled.)
  if (options.level !== undefined || options.serializers !== undefined || typeof (logger as Logger).isLevelEnabled !== 'function') {
    return logger.child(bindings, options);
  }
  return new LazyRequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}

class LazyRequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #real(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #write(method: Method, args: unknown[]): void {
    const log = this.#child ?? this.#parent;
    if (!log.isLevelEnabled(method)) return;
    (this.#real()[method] as (...a: unknown[]) => void)(...args);
  }

  get level(): LevelWithSilentOrString {
    return (this.#child ?? this.#parent).level;
  }
  set level(level: LevelWithSilentOrString) {
    this.#real().level = level;
  }
  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level);
  }
  bindings(): Bindings {
    return this.#real().bindings();
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#real().child(bindings, options);
  }
  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}
}
