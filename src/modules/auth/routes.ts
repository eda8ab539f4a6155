import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../lib/errors.ts';
import { errorResponses, json, SINGLE_LINE } from '../../lib/schemas.ts';
import { invalidClient } from './auth-service.ts';

const TokenRequest = Type.Object(
  {
    grant_type: Type.String({ description: 'Must be client_credentials', examples: ['client_credentials'] }),
    client_id: Type.Optional(Type.String({ description: 'Or send it with HTTP Basic client authentication' })),
    client_secret: Type.Optional(Type.String({ description: 'Or send it with HTTP Basic client authentication' })),
    scope: Type.Optional(Type.String({ description: 'Accepted for OAuth client compatibility and ignored' })),
  },
  {
    // RFC 6749 3.2: the server MUST ignore unrecognized parameters (clients send e.g. `resource`); nothing is stored from them.
    additionalProperties: true,
    description: 'Other parameters are ignored, as RFC 6749 asks',
    examples: [{ grant_type: 'client_credentials', client_id: 'cli_0123456789abcdef01234567', client_secret: 'sk_…' }],
  },
);

/** The same parameters as a form (RFC 6749 4.4.2); with HTTP Basic, only grant_type goes in the body. */
const TokenForm = Type.Object(TokenRequest.properties, {
  additionalProperties: true,
  description: 'RFC 6749 form parameters; with HTTP Basic client authentication, send only grant_type',
  examples: [{ grant_type: 'client_credentials' }],
});

const EXAMPLE_ACCESS_TOKEN =
  'eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiYXQrand0In0.eyJjbGllbnRfaWQiOiJjbGlfMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3IiwiaXNzIjoibWVyY2hhbnQtZGVsaXZlcnktc2VydmljZSIsImF1ZCI6Im1lcmNoYW50LWRlbGl2ZXJ5LWFwaSIsInN1YiI6IjAxYTIwMDU3LTlkMWMtN2IyZS04YTRmLTVjNmQ3ZThmOWEwYiIsImlhdCI6MTc5NTI1NTIwMCwiZXhwIjoxNzk1MjU4ODAwLCJqdGkiOiIwMWEyMDA1OS0wYjNlLTdhNGMtOWQyZS02YzdkOGU5ZmEwYjEifQ.ZXhhbXBsZS1zaWduYXR1cmUtbm90LXZhbGlkLTMyYnk';

export const TokenResponse = Type.Object(
  {
    access_token: Type.String({ description: 'Send it as Authorization: Bearer <access_token>; treat it as opaque' }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Lifetime in seconds', examples: [3600] }),
  },
  { additionalProperties: false },
);

const FIELDS = ['grant_type', 'client_id', 'client_secret', 'scope'];
// Real ids and secrets are under 64 characters; longer ones are garbage that should not reach the rate limiter's keys.
const MAX_PARAM_LENGTH = 256;
const SINGLE_LINE_RE = new RegExp(SINGLE_LINE, 'u');

/**
 * POST /auth/token: OAuth 2.0 client credentials (RFC 6749 4.4). Takes the JSON body of the interface,
 * a form-urlencoded body, or HTTP Basic client authentication. Errors carry the RFC 6749 `error` and
 * `error_description` next to the problem fields, as application/json, so standard OAuth clients understand them.
 */
export async function authRoutes(app: FastifyInstance): Promise<void> {
  // Form bodies are accepted here only: this plugin's scope is the token endpoint alone.
  await app.register(formbody);

  app.post(
    '/auth/token',
    {
      attachValidation: true, // bad input is an RFC 6749 invalid_request, not a generic VALIDATION_FAILED
      schema: {
        operationId: 'createAccessToken',
        tags: ['auth'],
        summary: 'Exchange client credentials for an access token',
        description: [
          'OAuth 2.0 client credentials grant (RFC 6749 section 4.4). Send `grant_type`, `client_id` and `client_secret` as JSON (as documented),',
          'as `application/x-www-form-urlencoded`, or the client credentials with HTTP Basic authentication (`client_secret_basic`) and only',
          '`grant_type` in the body. Standard OAuth 2.0 client libraries work unchanged; they can discover this endpoint at',
          '`/.well-known/oauth-authorization-server`.',
          '',
          'The token is valid for `expires_in` seconds (3600): cache it and reuse it, do not request one per call. A new token does not',
          'revoke earlier ones. Errors are `application/json` (RFC 6749 section 5.2): the problem fields plus `error` and `error_description`;',
          'unknown parameters are ignored. Failed attempts are rate limited',
          'per client and per address (429 with `Retry-After`).',
        ].join('\n'),
        security: [{}, { clientBasic: [] }],
        body: {
          content: {
            'application/json': { schema: TokenRequest },
            'application/x-www-form-urlencoded': { schema: TokenForm },
          },
        },
        response: {
          200: {
            ...json(TokenResponse, 'An access token; send it as Authorization: Bearer <access_token>', {
              access_token: EXAMPLE_ACCESS_TOKEN,
              token_type: 'Bearer',
              expires_in: 3600,
            }),
            headers: { 'cache-control': { type: 'string', description: 'no-store' }, pragma: { type: 'string', description: 'no-cache' } },
          },
          ...errorResponses(
            ['INVALID_REQUEST', 'UNSUPPORTED_GRANT_TYPE', 'INVALID_CLIENT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED'],
            {
              PAYLOAD_TOO_LARGE: {
                detail: 'The request body is larger than the limit',
                extra: { error: 'invalid_request', error_description: 'The request body is larger than the limit' },
              },
              UNSUPPORTED_MEDIA_TYPE: {
                detail: 'Send the token request as application/json or application/x-www-form-urlencoded',
                extra: { error: 'invalid_request', error_description: 'Send the token request as application/json or application/x-www-form-urlencoded' },
              },
            },
            'application/json',
          ),
        },
      },
    },
    async (request, reply) => {
      const { clientId, clientSecret } = readTokenRequest(request);
      // Failed attempts count per address and per client id from that address (client ids are public:
      // counting per client id alone would let anyone lock a merchant out with a few wrong secrets).
      await app.tokenFailures.checkClient(request, reply, clientId);
      let token: Awaited<ReturnType<typeof app.services.auth.issueToken>>;
      try {
        token = await app.services.auth.issueToken(clientId, clientSecret);
      } catch (err) {
        if (err instanceof AppError && err.code === 'INVALID_CLIENT') await app.tokenFailures.recordFailure(request, reply, clientId);
        throw err;
      }
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
  for (const name of FIELDS) {
    // Form bodies turn a repeated parameter into an array; RFC 6749 3.2 forbids repeating them.
    if (params[name] !== undefined && typeof params[name] !== 'string') throw invalidRequest(`Parameter ${name} must be a single string`);
    if (typeof params[name] === 'string' && (params[name] as string).length > MAX_PARAM_LENGTH) {
      throw invalidRequest(`Parameter ${name} is longer than ${MAX_PARAM_LENGTH} characters`);
    }
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
    return plausible(basic);
  }
  if (!bodyId || !bodySecret) throw invalidClient('Send client_id and client_secret (in the body or with HTTP Basic)');
  return plausible({ clientId: bodyId, clientSecret: bodySecret });
}

/**
 * Credentials no client could have been issued (over-long, control characters) are a wrong client
 * without asking the database (PostgreSQL would refuse a NUL outright: a 500, not a 401).
 */
function plausible(c: { clientId: string; clientSecret: string }): { clientId: string; clientSecret: string } {
  const ok = (v: string) => v.length <= MAX_PARAM_LENGTH && SINGLE_LINE_RE.test(v);
  if (!ok(c.clientId) || !ok(c.clientSecret)) throw invalidClient('Unknown client or wrong client secret');
  return c;
}

/** RFC 6749 2.3.1: Basic with form-urlencoded client id and secret. */
function parseBasic(header: string | undefined): { clientId: string; clientSecret: string } | undefined {
  // Only Basic is client authentication here; another scheme (a stray Bearer) is ignored.
  if (!header || !/^Basic /i.test(header)) return undefined;
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
