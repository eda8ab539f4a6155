import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { type Database, schemaIsCurrent } from '../../db/database.ts';
import { AppError } from '../../lib/errors.ts';
import { errorResponses, json, problemResponses } from '../../lib/schemas.ts';

const Health = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });

/** Liveness (the process answers) and readiness (the database answers), for load balancers. */
export function healthRoutes(database: Database) {
  return async (app: FastifyInstance) => {
    app.get(
      '/healthz',
      {
        schema: {
          operationId: 'getLiveness',
          tags: ['operations'],
          summary: 'Liveness',
          description: 'Answers 200 while the process runs; it does not touch the database. For load balancers and orchestrators; no authentication.',
          security: [],
          response: { 200: json(Health, 'The process is up', { status: 'ok' }), ...problemResponses(['INTERNAL_ERROR']) },
        },
      },
      async () => ({ status: 'ok' as const }),
    );
    app.get(
      '/readyz',
      {
        schema: {
          operationId: 'getReadiness',
          tags: ['operations'],
          summary: 'Readiness: the database answers and is migrated',
          description:
            'Answers 200 when the database answers and its schema has every migration this version needs; 503 `SERVICE_UNAVAILABLE` (with `Retry-After`) otherwise, e.g. before `mds migrate` ran. For load balancers; no authentication.',
          security: [],
          response: {
            200: json(Health, 'Ready to serve', { status: 'ok' }),
            ...errorResponses([], { SERVICE_UNAVAILABLE: { detail: 'The database is not reachable' } }),
          },
        },
      },
      async () => {
        let current: boolean;
        try {
          current = await schemaIsCurrent(database);
        } catch {
          throw new AppError('SERVICE_UNAVAILABLE', 'The database is not reachable', { headers: { 'retry-after': '1' } });
        }
        // Serving from an unmigrated database would fail every request: stay out of the load balancer instead.
        if (!current) throw new AppError('SERVICE_UNAVAILABLE', 'The database schema is not migrated; run mds migrate', { headers: { 'retry-after': '1' } });
        return { status: 'ok' as const };
      },
    );
  };
}
