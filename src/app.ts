import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config, SigningKey } from './config.ts';
import type { Database } from './db/database.ts';
import { clientError, frameworkError, registerErrorHandling } from './http/error-handler.ts';
import './fastify-types.ts';
import { capConnections } from './http/connections.ts';
import { registerOpenApi } from './http/openapi.ts';
import { refuseAmbiguousHeaders, refuseUnreadableBody, requestId, strictJsonParser, trustHops } from './http/plumbing.ts';
import { protect, protectCourier } from './http/protected.ts';
import { documentRateLimit, registerRateLimits } from './http/rate-limits.ts';
import { openRedis } from './http/redis.ts';
import { createLogger, RequestLines, registerRequestLogging } from './http/request-logger.ts';
import { registerRouting } from './http/routing.ts';
import { lazySerializers } from './http/serialization.ts';
import type { Clock } from './lib/clock.ts';
import { clockFromEnv } from './lib/clock.ts';
import { validatorCompiler } from './lib/validation.ts';
import { discoveryRoutes } from './modules/auth/discovery.ts';
import { authRoutes } from './modules/auth/routes.ts';
import { courierRoutes } from './modules/couriers/routes.ts';
import { offerRoutes } from './modules/dispatch/routes.ts';
import { healthRoutes } from './modules/health/routes.ts';
import { balanceRoutes } from './modules/merchants/routes.ts';
import { quoteRoutes } from './modules/quotes/routes.ts';
import { trackingRoutes } from './modules/tracking/routes.ts';
import { transferRoutes } from './modules/transfers/routes.ts';
import { warehouseRoutes } from './modules/warehouses/routes.ts';
import { WEBHOOKS_DOCUMENT } from './modules/webhooks/openapi.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import type { Metrics } from './observability/metrics.ts';
import { registerMetrics } from './observability/routes.ts';
import { createServices, type Services } from './services.ts';
import { courierAppPages } from './web/courier-app/index.ts';
import { dashboardPages } from './web/dashboard/index.ts';
import { opsPages } from './web/ops/index.ts';
import { webPlugin } from './web/plugin.ts';

export interface AppDeps {
  config: Config;
  database: Database;
  /** The services the process already built (src/runtime.ts); otherwise built here from signingKeys and clock (tests). */
  services?: Services;
  signingKeys?: SigningKey[];
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
    // The service's own logger instead (registerRequestLogging): Fastify's costs every request CPU even when it writes nothing.
    logger: false,
    logController: new RequestLines(),
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
    // Response serializers compiled on first use, with nullable fields spelled for speed (src/http/serialization.ts); validators are lazy too (validatorCompiler).
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
  });
  capConnections(app.server, config.maxConnections);
  app.setValidatorCompiler(validatorCompiler);
  // Bodies are JSON only (415 otherwise), strict UTF-8 and well-formed Unicode; the token endpoint adds form bodies in its own scope.
  app.removeContentTypeParser('text/plain');
  strictJsonParser(app);
  app.decorate('services', deps.services ?? createServices({ config, database, clock: deps.clock ?? clockFromEnv(), signingKeys: deps.signingKeys ?? [] }));
  // First, each request's logger (and its X-Request-Id); then a request that matches no route really (a
  // trailing slash) is answered as such before any other check.
  registerRequestLogging(app, createLogger(config.logLevel, deps.logStream));
  registerRouting(app);
  let warnedForwardedFor = false;
  // Synchronous hooks (done, not async) on every request: no promise and no microtask hop each (Fastify
  // turns a throw into the error answer as it does a rejection).
  app.addHook('onRequest', (request, _reply, done) => {
    refuseAmbiguousHeaders(request);
    if (!warnedForwardedFor && config.trustProxy === false && request.headers['x-forwarded-for'] !== undefined) {
      // Behind a proxy, every client would share the proxy's address in the token rate limit.
      warnedForwardedFor = true;
      request.log.warn("X-Forwarded-For received while TRUST_PROXY=false: client addresses are the proxy's; set TRUST_PROXY");
    }
    if (request.method === 'POST' || request.method === 'PUT') refuseUnreadableBody(request);
    done();
  });
  registerErrorHandling(app);
  if (deps.metrics) registerMetrics(app, deps.metrics, config.metricsToken);
  await registerOpenApi(app, WEBHOOKS_DOCUMENT);
  const limits = await registerRateLimits(app, {
    enabled: config.rateLimitsEnabled,
    merchantPerMinute: config.merchantRateLimitPerMinute,
    courierPerMinute: config.courierRateLimitPerMinute,
    trackingPerMinute: config.trackingRateLimitPerMinute,
    tokenFailuresPerClient: config.tokenFailuresPerClient,
    tokenFailuresPerAddress: config.tokenFailuresPerAddress,
    tokenFailureWindowMs: config.tokenFailureWindowSeconds * 1000,
    redis: config.redisUrl ? await openRedis(app, config.redisUrl) : undefined,
    redisPrefix: config.rateLimitRedisPrefix,
    clock: deps.clock ?? clockFromEnv(),
    merchantLimit: (merchantId) => app.services.merchants.rateLimitOf(merchantId),
    cachedMerchantLimit: (merchantId) => app.services.merchants.cachedRateLimitOf(merchantId),
  });
  app.decorate('tokenFailures', limits.tokenFailures);

  await app.register(healthRoutes(database));
  await app.register(async (token) => {
    // Before the body is read: an address that failed too often is refused whatever it sends.
    token.addHook('onRequest', limits.tokenAddress);
    documentRateLimit(token, 'application/json');
    await token.register(authRoutes);
  });
  await app.register(discoveryRoutes(config.publicBaseUrl));
  await app.register(async (tracking) => {
    if (config.rateLimitsEnabled) documentRateLimit(tracking);
    tracking.addHook('onRequest', limits.tracking);
    await tracking.register(trackingRoutes);
  });
  await app.register(async (api) => {
    protect(api);
    // After authentication (protect's hook runs first): counted per merchant.
    if (config.rateLimitsEnabled) documentRateLimit(api);
    api.addHook('onRequest', limits.merchants);
    await api.register(warehouseRoutes);
    await api.register(quoteRoutes);
    await api.register(transferRoutes);
    await api.register(balanceRoutes);
    await api.register(webhookRoutes);
  });
  await app.register(async (courierApi) => {
    protectCourier(courierApi);
    if (config.rateLimitsEnabled) documentRateLimit(courierApi);
    courierApi.addHook('onRequest', limits.couriers);
    await courierApi.register(courierRoutes);
    await courierApi.register(offerRoutes);
  });
  // Web pages for people (src/web): their own scope (sessions, CSRF, forms, HTML errors), apart from the JSON API.
  await app.register(async (web) => {
    await web.register(webPlugin, { config });
    await web.register(dashboardPages, { prefix: '/dashboard' });
    await web.register(opsPages, { prefix: '/ops' });
    await web.register(courierAppPages, { prefix: '/courier-app' });
  });
  return app;
}
