import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { Database } from '../../db/database.ts';
import { AppError } from '../../http/errors.ts';
import { errorResponses, json } from '../../http/schemas.ts';

const Health = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });

/** Liveness (the process answers) and readiness (the database answers), for load balancers. */
export function healthRoutes(database: Database) {
  return async (app: FastifyInstance) => {
    app.get('/healthz', { schema: { tags: ['operations'], summary: 'Liveness', response: { 200: json(Health, 'The process is up') } } }, async () => ({
      status: 'ok' as const,
    }));
    app.get(
      '/readyz',
      {
        schema: {
          tags: ['operations'],
          summary: 'Readiness: the database answers',
          response: { 200: json(Health, 'Ready to serve'), ...errorResponses([]) },
        },
      },
      async () => {
        try {
          await sql`select 1`.execute(database.db);
        } catch {
          throw new AppError('SERVICE_UNAVAILABLE', 'The database is not reachable', { headers: { 'retry-after': '1' } });
        }
        return { status: 'ok' as const };
      },
    );
  };
}
