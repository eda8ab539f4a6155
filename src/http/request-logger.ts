import { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import pino, { type Bindings, type ChildLoggerOptions, type DestinationStream, type LevelWithSilentOrString, type Logger } from 'pino';
import { REDACT_PATHS, serializeRequest } from './plumbing.ts';

/**
 * The service's logger and each request's. Fastify runs without a logger of its own (`logger: false`,
 * src/app.ts): with one, it gives every request a child logger (and validates it, the factory not being
 * its default) and adds and removes a `finish` and an `error` listener on every response, with two clock
 * reads, whether or not a line is ever written. That was about half of the application's own CPU on a
 * bare read (docs/benchmarks.md, twenty-fourth and twenty-sixth passes). Here Fastify's lines come out
 * as before: every line of a request carries its `reqId`, and at `info` (the default) each request writes
 * "incoming request" and "request completed". At `warn` or above (the benchmarks' level, and a busy
 * deployment's) a request costs one small object and nothing else.
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
 * Fastify's log controller (`logController` in src/app.ts) without its "incoming request" line, which
 * attachRequestLogger writes: Fastify asks for it before any hook has given the request its logger. The rest
 * is Fastify's, written through `reply.log`: "request completed" (or "request errored" with `err`, at
 * error) once something listens for the response's end, a failed stream, a serializer or writeHead that
 * threw.
 */
export class RequestLines extends LogController {
  override incomingRequest(): void {}
}

/**
 * Gives the request its logger (request.log and reply.log, a lazy child bound to its `reqId`) and, at
 * `info` or below, writes its "incoming request" line. Called by the first onRequest hook, and by the
 * answer to a request Fastify refuses before any hook runs (src/http/error-handler.ts, frameworkError).
 * A route's own `logLevel` or `logSerializers` are not applied: no route sets them.
 */
export function attachRequestLogger(request: FastifyRequest, reply: FastifyReply): void {
  const logger = request.server.log as unknown as Logger;
  attach(logger, logger.isLevelEnabled('info'), request, reply);
}

/**
 * At `info`, the line Fastify's controller writes for an answer it follows to its end, for one it does not
 * (refused before any hook ran: src/http/error-handler.ts, frameworkError): "request completed" when the
 * answer finishes, or "request errored" with `err` when the response fails first, as Fastify listens.
 */
export function logCompletion(request: FastifyRequest, reply: FastifyReply): void {
  if (!(request.server.log as unknown as Logger).isLevelEnabled('info')) return;
  const started = performance.now();
  const done = (err?: Error) => {
    reply.raw.removeListener('finish', done);
    reply.raw.removeListener('error', done);
    const responseTime = performance.now() - started;
    if (err) reply.log.error({ res: reply, err, responseTime }, 'request errored');
    else reply.log.info({ res: reply, responseTime }, 'request completed');
  };
  reply.raw.on('finish', done);
  reply.raw.on('error', done);
}

/** attachRequestLogger with the logger and whether `info` is enabled known beforehand (the hot path's hook). */
function attach(logger: Logger, lines: boolean, request: FastifyRequest, reply: FastifyReply): void {
  const log = new LazyRequestLogger(logger, { reqId: request.id }) as unknown as FastifyBaseLogger;
  request.log = log;
  reply.log = log;
  if (lines) log.info({ req: request }, 'incoming request');
}

/**
 * The service's logger becomes `app.log` (before any plugin is registered: scopes inherit the root's),
 * and every request gets its logger in the first onRequest hook, which also sends the id back as
 * X-Request-Id. At `info` or below an onResponse hook (which does nothing itself) makes Fastify listen
 * for each response's end, so that its controller writes "request completed". At `warn` or above there
 * is none, and unless metrics add theirs (src/observability/routes.ts) Fastify sets up no listeners;
 * then a response whose socket fails is not logged as "request errored".
 */
export function registerRequestLogging(app: FastifyInstance, logger: Logger): void {
  app.log = logger as unknown as FastifyBaseLogger;
  const lines = logger.isLevelEnabled('info');
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    attach(logger, lines, request, reply);
    done();
  });
  if (lines) app.addHook('onResponse', (_request, _reply, done) => done());
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
