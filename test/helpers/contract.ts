import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

/**
 * Checks one response against the OpenAPI contract (status listed, content type, body schema).
 * Placeholder until the contract check lands (issue 5); every test response already flows through here.
 */
export function checkContract(_app: FastifyInstance, _req: InjectOptions, _res: LightMyRequestResponse): void {}
