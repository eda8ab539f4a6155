import { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import pino, { type Bindings, type ChildLoggerOptions, type DestinationStream, type LevelWithSilentOrString, type Logger } from 'pino';
import { REDACT_PATHS, serializeRequest } from './plumbing.ts';

/**
 * The service's logger and each request's. Fastify runs without a logger of its own (`logger: false`,
 * src/app.ts): with one, it gives every request a child logger (and validates it, the factory not being
 * its default) and adds and removes a `finish` and an `error` listener on every response, with two clock
 * reads, whether or not a line is ever written. That was about half of the application's own CPU on a
 * bare read (docs/benchmarks.md, twenty-fourth and twenty-sixth passes). Here the same lines come out:
 * every line of a request carries its `reqId`, and at `info` or below each request writes Fastify's
 * "incoming request" and "request completed" (`info` is the default). At `warn` or above (the benchmarks'
 * level, and a busy deployment's) a request costs one small object and nothing else. One difference:
 * a response whose socket failed is logged as completed at info, where Fastify wrote "request errored".
 */
export function createLogger(level: string, stream?: DestinationStream): Logger {
  const options = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    // Fastify's own serializers for the request lines, with the service's `req` (no secrets in the query).
    serializers: { req: serializeRequest, res: (reply: FastifyReply) => ({ statusCode: reply.statusCode }), err: pino.stdSerializers.err },
  };
  return stream ? pino(options, stream) : pino(options);
}

/**
 * Fastify's log controller (`logController` in src/app.ts) without its two request lines, which
 * registerRequestLogging writes: Fastify asks for "incoming request" before any hook has given the
 * request its logger, and "request completed" only once something listens for the response's end. Its
 * other lines (a stream that failed, a serializer or writeHead that threw) are Fastify's, as before.
 */
export class RequestLines extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(): void {}
}

/**
 * Gives every request its logger (request.log and reply.log, bound to its id) and, where `info` is
 * enabled, its two request lines. Registered first, so that every later hook, handler and error handler
 * logs with the request's id. `onRequest` also sends the id back as X-Request-Id.
 */
export function registerRequestLogging(app: FastifyInstance, logger: Logger): void {
  app.log = logger as unknown as FastifyBaseLogger;
  const lines = logger.isLevelEnabled('info');
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    const log = new LazyRequestLogger(logger, { reqId: request.id }) as unknown as FastifyBaseLogger;
    request.log = log;
    reply.log = log;
    if (lines) log.info({ req: request }, 'incoming request');
    done();
  });
  // Only at info or below: an onResponse hook makes Fastify listen for every response's end.
  if (lines) {
    app.addHook('onResponse', (request: FastifyRequest, reply, done) => {
      request.log.info({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
      done();
    });
  }
}

type Method = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger, made on first use: pino's child() runs the redaction stringifier over its
 * bindings, a few µs per request, for a logger that at `warn` almost never writes. A
 * call at a disabled level is a no-op, and the first enabled call (or any other use) makes the real
 * child with the same bindings, so every line it writes is the line an eager child would have written.
 */
class LazyRequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  #real(): Logger {
    this.#child ??= this.#parent.child(this.#bindings);
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
