import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config, SigningKey } from './config.ts';
import type { Database } from './db/database.ts';
import { clientError, frameworkError, registerErrorHandling } from './http/error-handler.ts';
import { AppError } from './http/errors.ts';
import './http/fastify-types.ts';
import { registerOpenApi } from './http/openapi.ts';
import { protect } from './http/protected.ts';
import { validatorCompiler } from './http/validation.ts';
import type { Clock } from './lib/clock.ts';
import { systemClock } from './lib/clock.ts';
import { discoveryRoutes } from './modules/auth/discovery.ts';
import { authRoutes } from './modules/auth/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { quoteRoutes } from './modules/quotes/routes.ts';
import { transferRoutes } from './modules/transfers/routes.ts';
import { warehouseRoutes } from './modules/warehouses/routes.ts';
import { createServices } from './services.ts';

export interface AppDeps {
  config: Config;
  database: Database;
  signingKeys: SigningKey[];
  clock?: Clock;
  /** Where logs go (tests collect them); stdout by default. */
  logStream?: DestinationStream;
}

/** Never in a log line: credentials, tokens, and the headers that carry them. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'client_secret',
  'clientSecret',
  'access_token',
  '*.client_secret',
  '*.clientSecret',
  '*.access_token',
  '*.authorization',
  'err.rawPacket',
];

// A client that puts a secret in the query string (a mistake, but a likely one) must not get it logged.
const SECRET_QUERY = /([?&](?:client_secret|access_token|token|code|password)=)[^&]*/gi;

function serializeRequest(req: FastifyRequest) {
  return { method: req.method, url: req.url.replace(SECRET_QUERY, '$1[REDACTED]'), host: req.host, remoteAddress: req.ip };
}

const trustHops =
  (hops: number) =>
  (_address: string, hop: number): boolean =>
    hop < hops;

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the HTTP application (no listen): plugins, error handling, routes. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database } = deps;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: { req: serializeRequest },
      ...(deps.logStream ? { stream: deps.logStream } : {}),
    },
    bodyLimit: config.bodyLimitBytes,
    // A hop count becomes proxy-addr's "trust the n closest hops" function.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    // While shutting down, a request that still arrives on an open connection is served (its answer closes
    // the connection) instead of getting Fastify's own 503, which is not a problem+json body.
    return503OnClosing: false,
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    // Echo a sane incoming X-Request-Id (so a merchant can correlate), otherwise make one.
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
  });
  app.setValidatorCompiler(validatorCompiler);
  // Bodies are JSON only (415 otherwise); the token endpoint adds form bodies in its own scope.
  app.removeContentTypeParser('text/plain');
  app.decorate('services', createServices({ config, database, clock: deps.clock ?? systemClock, signingKeys: deps.signingKeys }));
  let warnedForwardedFor = false;
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (!warnedForwardedFor && config.trustProxy === false && request.headers['x-forwarded-for'] !== undefined) {
      // Behind a proxy, every client would share the proxy's address in the token rate limit.
      warnedForwardedFor = true;
      request.log.warn("X-Forwarded-For received while TRUST_PROXY=false: client addresses are the proxy's; set TRUST_PROXY");
    }
    if (request.method === 'POST' || request.method === 'PUT') refuseUnreadableBody(request);
  });
  registerErrorHandling(app);
  await registerOpenApi(app);

  await app.register(healthRoutes(database));
  await app.register(authRoutes);
  await app.register(discoveryRoutes(config.publicBaseUrl));
  await app.register(async (api) => {
    protect(api);
    await api.register(warehouseRoutes);
    await api.register(quoteRoutes);
    await api.register(transferRoutes);
  });
  return app;
}

/** Bodies are read as UTF-8 and uncompressed: say so (415) instead of misreading another charset or a gzip body. */
function refuseUnreadableBody(request: FastifyRequest): void {
  const charset = /;\s*charset="?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
  if (charset && charset.toLowerCase() !== 'utf-8' && charset.toLowerCase() !== 'utf8') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Send request bodies as UTF-8, not ${charset}`);
  }
  const encoding = request.headers['content-encoding'];
  if (encoding && encoding.toLowerCase() !== 'identity') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${encoding} is not supported; send the body uncompressed`);
  }
}
