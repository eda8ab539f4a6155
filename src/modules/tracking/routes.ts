import { randomBytes } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.ts';
import { errorResponses, problemResponses } from '../../lib/schemas.ts';
import { notFoundPage, trackingCsp, trackingPage } from './page.ts';
import { TRACKING_EXAMPLE, TrackingParams, TrackingView } from './schemas.ts';

/** JSON only when the client asks for it ahead of (or without) HTML: browsers list text/html first. */
function wantsJson(request: FastifyRequest): boolean {
  const accept = (request.headers.accept ?? '').toLowerCase();
  const j = accept.indexOf('application/json');
  if (j < 0) return false;
  const h = accept.indexOf('text/html');
  return h < 0 || j < h;
}

/** The public tracking page (no token): HTML for browsers, JSON for Accept: application/json. */
export async function trackingRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const html = {
    'text/html': {
      schema: { type: 'string', description: 'The tracking page (self-contained HTML)' },
      example: trackingPage(TRACKING_EXAMPLE, 'EXAMPLE-NONCE', 10),
    },
  };
  const notFound = problemResponses(['TRACKING_CODE_NOT_FOUND', 'ROUTE_NOT_FOUND']) as Record<number, { content: Record<string, unknown> }>;
  notFound[404].content = {
    ...notFound[404].content,
    'text/html': { schema: { type: 'string', description: 'A "not found" page' }, example: notFoundPage('EXAMPLE-NONCE') },
  };

  app.get(
    '/track/:trackingCode',
    {
      schema: {
        operationId: 'trackDelivery',
        tags: ['tracking'],
        summary: 'Public tracking page of a delivery',
        description:
          "For the recipient: no token, found by the transfer's unguessable `trackingCode` (the transfer's `trackingUrl`). Browsers get a self-contained HTML page (state timeline, merchant name, cities, courier first name, a drawing of pickup, destination and the courier's last position) that refreshes itself while the delivery is under way; `Accept: application/json` gets the same data as JSON. Never shows the recipient's phone or address, the price, the `deliveryPin` or the `transferCode`. Rate limited per client address (429 `RATE_LIMITED` with `Retry-After`).",
        security: [],
        params: TrackingParams,
        response: {
          200: {
            description: 'The tracking page, or its data as JSON',
            content: { 'application/json': { schema: TrackingView, example: TRACKING_EXAMPLE }, ...html },
          },
          ...notFound,
          // A malformed code is a 404 like an unknown one; only a URL the router cannot read is a 400.
          ...errorResponses(['VALIDATION_FAILED'], {
            VALIDATION_FAILED: {
              detail: 'The URL is not valid (bad %-escape)',
              extra: { errors: [{ path: '', message: 'The URL is not valid (bad %-escape)' }] },
            },
          }),
        },
      },
    },
    async (request, reply) => {
      // Rate limited per address by the scope it is registered in (src/app.ts): codes must not be guessable by brute force, nor the page a cheap load.
      const tracking = app.services.tracking;
      reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').header('x-content-type-options', 'nosniff').header('vary', 'accept');
      const asJson = wantsJson(request);
      let view: TrackingView;
      try {
        view = await tracking.view(request.params.trackingCode);
      } catch (err) {
        if (asJson || !(err instanceof AppError) || err.code !== 'TRACKING_CODE_NOT_FOUND') throw err;
        const nonce = randomBytes(16).toString('base64');
        return (reply as FastifyReply)
          .code(404)
          .header('content-security-policy', trackingCsp(nonce))
          .type('text/html; charset=utf-8')
          .send(notFoundPage(nonce));
      }
      if (asJson) return reply.type('application/json; charset=utf-8').send(view);
      const nonce = randomBytes(16).toString('base64');
      return reply
        .header('content-security-policy', trackingCsp(nonce))
        .type('text/html; charset=utf-8')
        .send(trackingPage(view, nonce, tracking.refreshSeconds));
    },
  );
}
