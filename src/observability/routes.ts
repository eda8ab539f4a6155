import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../lib/errors.ts';
// Types only: prom-client (metrics.ts) is loaded by the runtime only when metrics are on (METRICS_PORT or METRICS_TOKEN).
import type { Metrics } from './metrics.ts';

/**
 * Counts every answered request by method, route pattern (never the raw URL: ids would explode the
 * label set) and status; with a METRICS_TOKEN, serves GET /metrics on the API port for Prometheus
 * (`authorization: Bearer <token>`). Not in the OpenAPI document: it is for operators, not merchants.
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, token: string | undefined): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: request.method, route, status: reply.statusCode });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  if (token === undefined) return;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!metricsTokenMatches(request.headers.authorization, token)) {
      throw new AppError('INVALID_ACCESS_TOKEN', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', {
        headers: { 'www-authenticate': 'Bearer realm="metrics"' },
      });
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}

/** GET /metrics on the API port needs `Authorization: Bearer METRICS_TOKEN` (constant-time compare). */
export function metricsTokenMatches(header: string | undefined, token: string): boolean {
  const m = header ? /^Bearer (.+)$/.exec(header) : null;
  if (!m) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
