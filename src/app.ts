import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config, SigningKey } from './config.ts';
import type { Database } from './db/database.ts';
import { clientError, frameworkError, registerErrorHandling } from './http/error-handler.ts';
import './http/fastify-types.ts';
import { registerOpenApi } from './http/openapi.ts';
import { REDACT_PATHS, refuseUnreadableBody, requestId, serializeRequest, trustHops } from './http/plumbing.ts';
import { protect } from './http/protected.ts';
import { validatorCompiler } from './http/validation.ts';
import type { Clock } from './lib/clock.ts';
import { systemClock } from './lib/clock.ts';
import { discoveryRoutes } from './modules/auth/discovery.ts';
import { authRoutes } from './modules/auth/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { balanceRoutes } from './modules/merchants/routes.ts';
import { quoteRoutes } from './modules/quotes/routes.ts';
import { trackingRoutes } from './modules/tracking/routes.ts';
import { transferRoutes } from './modules/transfers/routes.ts';
import { warehouseRoutes } from './modules/warehouses/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import { createServices } from './services.ts';

export interface AppDeps {
  config: Config;
  database: Database;
  signingKeys: SigningKey[];
  clock?: Clock;
  /** Where logs go (tests collect them); stdout by default. */
  logStream?: DestinationStream;
}

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
    genReqId: requestId,
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
  await app.register(trackingRoutes);
  await app.register(async (api) => {
    protect(api);
    await api.register(warehouseRoutes);
    await api.register(quoteRoutes);
    await api.register(transferRoutes);
    await api.register(balanceRoutes);
    await api.register(webhookRoutes);
  });
  return app;
}
