import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { json, problemResponses } from '../../lib/schemas.ts';

const AuthorizationServerMetadata = Type.Object(
  {
    issuer: Type.String({ description: 'The base URL of this service; the discovery document lives at <issuer>/.well-known/oauth-authorization-server' }),
    token_endpoint: Type.String({ description: 'Where to exchange client credentials for an access token' }),
    token_endpoint_auth_methods_supported: Type.Array(Type.String(), {
      description: 'client_secret_basic (HTTP Basic) and client_secret_post (form body); the JSON body of the interface works too',
    }),
    grant_types_supported: Type.Array(Type.String(), { description: 'Only client_credentials' }),
    response_types_supported: Type.Array(Type.String(), { description: 'Empty: there is no authorization endpoint' }),
    service_documentation: Type.String({ description: 'The human-readable API reference' }),
  },
  { additionalProperties: false },
);

/**
 * GET /.well-known/oauth-authorization-server: RFC 8414 authorization server metadata, so that standard
 * OAuth 2.0 client libraries find the token endpoint and the client authentication methods on their own.
 * Public. The issuer is PUBLIC_BASE_URL when set, otherwise the scheme and host the request came to
 * (X-Forwarded-* only with TRUST_PROXY).
 */
export function discoveryRoutes(publicBaseUrl: string | undefined) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get(
      '/.well-known/oauth-authorization-server',
      {
        schema: {
          operationId: 'getAuthorizationServerMetadata',
          tags: ['auth'],
          summary: 'OAuth 2.0 authorization server metadata (discovery)',
          description:
            'RFC 8414 metadata for OAuth 2.0 client libraries: the token endpoint, the supported client authentication methods and grant types. No authentication. The issuer is the configured public base URL of the service, or else the scheme and host of the request.',
          security: [],
          response: {
            200: json(AuthorizationServerMetadata, 'The authorization server metadata', {
              issuer: 'https://api.example.com',
              token_endpoint: 'https://api.example.com/auth/token',
              token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
              grant_types_supported: ['client_credentials'],
              response_types_supported: [],
              service_documentation: 'https://api.example.com/docs',
            }),
            ...problemResponses(['INTERNAL_ERROR']),
          },
        },
      },
      async (request, reply) => {
        const issuer = publicBaseUrl ?? requestBaseUrl(request);
        // Derived from the Host header unless PUBLIC_BASE_URL is set: never let a shared cache keep one host's answer for another.
        if (!publicBaseUrl) reply.header('cache-control', 'no-store').header('vary', 'Host');
        return {
          issuer,
          token_endpoint: `${issuer}/auth/token`,
          token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
          grant_types_supported: ['client_credentials'],
          response_types_supported: [],
          service_documentation: `${issuer}/docs`,
        };
      },
    );
  };
}

/** scheme://host[:port] of the request; a Host header that is not just a host (and port) falls back to the local address. */
function requestBaseUrl(request: FastifyRequest): string {
  const protocol = request.protocol === 'https' ? 'https' : 'http';
  try {
    const url = new URL(`${protocol}://${request.host}`);
    if (url.pathname === '/' && !url.username && !url.password && !url.search && !url.hash) return url.origin;
  } catch {
    // not a host: fall through
  }
  const address = request.socket.localAddress ?? '127.0.0.1';
  return `${protocol}://${address.includes(':') ? `[${address}]` : address}:${request.socket.localPort ?? 80}`;
}
