import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config, SigningKey } from './config.ts';
import type { Database } from './db/database.ts';
import { clientError, frameworkError, registerErrorHandling } from './http/error-handler.ts';
import './http/fastify-types.ts';
import { capConnections } from './http/connections.ts';
import { registerOpenApi } from './http/openapi.ts';
import { REDACT_PATHS, refuseAmbiguousHeaders, refuseUnreadableBody, requestId, serializeRequest, strictJsonParser, trustHops } from './http/plumbing.ts';
import { protect, protectCourier } from './http/protected.ts';
import { registerRouting } from './http/routing.ts';
import { validatorCompiler } from './http/validation.ts';
import type { Clock } from './lib/clock.ts';
import { systemClock } from './lib/clock.ts';
import { discoveryRoutes } from './modules/auth/discovery.ts';
import { authRoutes } from './modules/auth/routes.ts';
import { courierRoutes } from './modules/couriers/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { balanceRoutes } from './modules/merchants/routes.ts';
import type { Metrics } from './modules/metrics/metrics.ts';
import { registerMetrics } from './modules/metrics/routes.ts';
import { quoteRoutes } from './modules/quotes/routes.ts';
import { trackingRoutes } from './modules/tracking/routes.ts';
import { transferRoutes } from './modules/transfers/routes.ts';
import { warehouseRoutes } from './modules/warehouses/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import { createServices } from './services.ts';
import { dashboardPages } from './web/dashboard/index.ts';
import { webPlugin } from './web/plugin.ts';

export interface AppDeps {
  config: Config;
  database: Database;
  signingKeys: SigningKey[];
  clock?: Clock;
  /** Counts requests and serves GET /metrics (with METRICS_TOKEN); none in-process unless given. */
  metrics?: Metrics;
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
    // Timeouts as documented: 408 once a request has not fully arrived after REQUEST_TIMEOUT_SECONDS (30 s).
    // Node checks for them every connectionsCheckingInterval (30 s by default, which made it 30 to 60 s).
    requestTimeout: config.requestTimeoutSeconds * 1000,
    // Idle keep-alive connections outlive a typical load balancer's 60 s idle timeout, so it never reuses a closed one.
    keepAliveTimeout: 65_000,
    http: {
      headersTimeout: config.requestTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
      // Node answers a missing Host itself with a bare 400; refuseAmbiguousHeaders answers it with the envelope.
      requireHostHeader: false,
    },
    // A hop count becomes proxy-addr's "trust the n closest hops" function.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    // While shutting down, a request that still arrives on an open connection is served (its answer closes
    // the connection) instead of getting Fastify's own 503, which is not a problem+json body.
    return503OnClosing: false,
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    genReqId: requestId,
  });
  capConnections(app.server, config.maxConnections);
  app.setValidatorCompiler(validatorCompiler);
  // Bodies are JSON only (415 otherwise), strict UTF-8 and well-formed Unicode; the token endpoint adds form bodies in its own scope.
  app.removeContentTypeParser('text/plain');
  strictJsonParser(app);
  app.decorate('services', createServices({ config, database, clock: deps.clock ?? systemClock, signingKeys: deps.signingKeys }));
  // First: a request that matches no route really (a trailing slash) is answered as such before any other check.
  registerRouting(app);
  let warnedForwardedFor = false;
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    refuseAmbiguousHeaders(request);
    if (!warnedForwardedFor && config.trustProxy === false && request.headers['x-forwarded-for'] !== undefined) {
      // Behind a proxy, every client would share the proxy's address in the token rate limit.
      warnedForwardedFor = true;
      request.log.warn("X-Forwarded-For received while TRUST_PROXY=false: client addresses are the proxy's; set TRUST_PROXY");
    }
    if (request.method === 'POST' || request.method === 'PUT') refuseUnreadableBody(request);
  });
  registerErrorHandling(app);
  if (deps.metrics) registerMetrics(app, deps.metrics, config.metricsToken);
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
  await app.register(async (courierApi) => {
    protectCourier(courierApi);
    await courierApi.register(courierRoutes);
  });
  // Web pages for people (src/web): their own scope (sessions, CSRF, forms, HTML errors), apart from the JSON API.
  await app.register(async (web) => {
    await web.register(webPlugin, { config });
    await web.register(dashboardPages, { prefix: '/dashboard' });
  });
  return app;
}
