import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../http/errors.ts';
import { errorResponses, json } from '../../http/schemas.ts';
import { invalidClient } from './auth-service.ts';

const TokenRequest = Type.Object(
  {
    grant_type: Type.String({ description: 'Must be client_credentials', examples: ['client_credentials'] }),
    client_id: Type.Optional(Type.String({ description: 'Or send it with HTTP Basic client authentication' })),
    client_secret: Type.Optional(Type.String({ description: 'Or send it with HTTP Basic client authentication' })),
    scope: Type.Optional(Type.String({ description: 'Accepted for OAuth client compatibility and ignored' })),
  },
  {
    additionalProperties: false,
    examples: [{ grant_type: 'client_credentials', client_id: 'cli_0123456789abcdef01234567', client_secret: 'sk_…' }],
  },
);

export const TokenResponse = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Lifetime in seconds', examples: [3600] }),
  },
  { additionalProperties: false },
);

const FIELDS = new Set(['grant_type', 'client_id', 'client_secret', 'scope']);

/**
 * POST /auth/token: OAuth 2.0 client credentials (RFC 6749 4.4). Takes the JSON body of the interface,
 * a form-urlencoded body, or HTTP Basic client authentication. Errors carry the RFC 6749 `error` and
 * `error_description` next to the problem+json fields, so standard OAuth clients understand them.
 */
export async function authRoutes(app: FastifyInstance): Promise<void> {
  // Form bodies are accepted here only: this plugin's scope is the token endpoint alone.
  await app.register(formbody);

  app.post(
    '/auth/token',
    {
      attachValidation: true, // bad input is an RFC 6749 invalid_request, not a generic VALIDATION_FAILED
      schema: {
        tags: ['auth'],
        summary: 'Exchange client credentials for an access token',
        description:
          'OAuth 2.0 client credentials grant. Send `grant_type`, `client_id` and `client_secret` as JSON (as documented), as `application/x-www-form-urlencoded`, or the client credentials with HTTP Basic authentication. Failed attempts are rate limited per client and per address.',
        security: [{}, { clientBasic: [] }],
        body: TokenRequest,
        response: {
          200: json(TokenResponse, 'An access token; send it as Authorization: Bearer <access_token>'),
          ...errorResponses(['INVALID_REQUEST', 'UNSUPPORTED_GRANT_TYPE', 'INVALID_CLIENT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED']),
        },
      },
    },
    async (request, reply) => {
      const { clientId, clientSecret } = readTokenRequest(request);
      const token = await app.services.auth.issueToken(clientId, clientSecret, request.ip);
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      return token;
    },
  );
}

function invalidRequest(detail: string): AppError {
  return new AppError('INVALID_REQUEST', detail, { extra: { error: 'invalid_request', error_description: detail } });
}

function readTokenRequest(request: FastifyRequest): { clientId: string; clientSecret: string } {
  const body = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('The request body must be an object');
  const params = body as Record<string, unknown>;
  for (const [name, value] of Object.entries(params)) {
    if (!FIELDS.has(name)) throw invalidRequest(`Unknown parameter ${name}`);
    // Form bodies turn a repeated parameter into an array; RFC 6749 3.2 forbids repeating them.
    if (typeof value !== 'string') throw invalidRequest(`Parameter ${name} must be a single string`);
  }
  const grantType = params.grant_type as string | undefined;
  if (!grantType) throw invalidRequest('grant_type is required');
  if (grantType !== 'client_credentials') {
    const detail = 'Only grant_type=client_credentials is supported';
    throw new AppError('UNSUPPORTED_GRANT_TYPE', detail, { extra: { error: 'unsupported_grant_type', error_description: detail } });
  }

  const basic = parseBasic(request.headers.authorization);
  const bodyId = params.client_id as string | undefined;
  const bodySecret = params.client_secret as string | undefined;
  if (basic) {
    if (bodySecret !== undefined) throw invalidRequest('Use one client authentication method: HTTP Basic or client_secret in the body');
    if (bodyId !== undefined && bodyId !== basic.clientId) throw invalidRequest('client_id in the body differs from HTTP Basic');
    return basic;
  }
  if (!bodyId || !bodySecret) throw invalidClient('Send client_id and client_secret (in the body or with HTTP Basic)');
  return { clientId: bodyId, clientSecret: bodySecret };
}

/** RFC 6749 2.3.1: Basic with form-urlencoded client id and secret. */
function parseBasic(header: string | undefined): { clientId: string; clientSecret: string } | undefined {
  if (!header) return undefined;
  const m = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
  if (!m) throw invalidClient('Malformed Authorization header');
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidClient('Malformed HTTP Basic credentials');
  try {
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    return { clientId: decode(decoded.slice(0, colon)), clientSecret: decode(decoded.slice(colon + 1)) };
  } catch {
    throw invalidClient('Malformed HTTP Basic credentials');
  }
}
