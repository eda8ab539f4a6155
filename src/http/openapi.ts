import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { hoistComponents } from '../lib/openapi-components.ts';

export const API_DESCRIPTION = `HTTP JSON API for merchants' servers: exchange client credentials for a token, manage pickup
warehouses, get delivery quotes and create paid transfers.

* Every endpoint except \`POST /auth/token\`, the OAuth discovery document and the health checks needs
  \`Authorization: Bearer <access_token>\`. Standard OAuth 2.0 client libraries can obtain tokens
  (client credentials grant; discovery at \`/.well-known/oauth-authorization-server\`).
* Errors are \`application/problem+json\` (RFC 9457) with a stable \`type\` such as \`ACCESS_TOKEN_EXPIRED\`.
* Every response carries \`X-Request-Id\`. POSTs accept an \`Idempotency-Key\` header.
* Clients must ignore unknown response fields: new fields can be added at any time.
* This document is generated from the route schemas and committed as \`openapi.json\`; every test
  response of the service is validated against it.`;

/**
 * Content-Security-Policy of the docs page: everything from this server only (no CDN, not even by
 * policy). Unlike the plugin's default it allows inline styles, which Swagger UI applies at run time
 * (blocked, they are a console error), and it has no upgrade-insecure-requests, which would break the
 * page on a plain-http address other than localhost.
 */
const DOCS_CSP = {
  'default-src': ["'self'"],
  'base-uri': ["'self'"],
  'connect-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'form-action': ["'self'"],
  'frame-ancestors': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'object-src': ["'none'"],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  'style-src': ["'self'", "'unsafe-inline'"],
};

/**
 * Accessibility fixes for Swagger UI (axe-core finds no serious or critical violation with them; see
 * test/docs-browser.test.ts): colours with at least 4.5:1 contrast for the method badges, version
 * stamps, the Authorize button, schema expanders, parameter locations and numbers in examples, which
 * are white or pale on bright colours by default. Served from this server as a stylesheet (the CSP allows only 'self').
 */
const DOCS_CSS = `
.swagger-ui .opblock.opblock-post .opblock-summary-method{background:#2e825c}
.swagger-ui .opblock.opblock-get .opblock-summary-method{background:#4176ac}
.swagger-ui .opblock.opblock-put .opblock-summary-method{background:#9e651e}
.swagger-ui .opblock.opblock-delete .opblock-summary-method{background:#d63535}
.swagger-ui .opblock.opblock-patch .opblock-summary-method{background:#2c7f6c}
.swagger-ui .opblock.opblock-post{border-color:#2e825c}
.swagger-ui .opblock.opblock-get{border-color:#4176ac}
.swagger-ui .opblock.opblock-put{border-color:#9e651e}
.swagger-ui .opblock.opblock-delete{border-color:#d63535}
.swagger-ui .btn.authorize{color:#2e825c;border-color:#2e825c}
.swagger-ui .btn.authorize svg{fill:#2e825c}
.swagger-ui .info .title small pre{background:#6d7480}
.swagger-ui .info .title small.version-stamp{background:#5a7e02}
.swagger-ui .info .title small.version-stamp pre{background:#5a7e02}
.swagger-ui .info .base-url,.swagger-ui .info a.link,.swagger-ui .info .url{color:#3971b2}
.swagger-ui .json-schema-2020-12-expand-deep-button{color:#595959}
.swagger-ui .parameter__in{color:#595959}
.swagger-ui .microlight span[style*="rgb(211, 99, 99)"]{color:#f4a0a0 !important}
`;

/**
 * After Swagger UI renders: a name for every select it leaves unlabelled (the servers list sits in an
 * empty <label>), and scrollable examples reachable by keyboard. Served from this server, like the bundle.
 */
const DOCS_JS = `(function () {
  function name() {
    var selects = document.querySelectorAll('select:not([aria-label]):not([aria-labelledby])');
    for (var i = 0; i < selects.length; i++) {
      var s = selects[i];
      // A label that wraps the select and has no text of its own names nothing.
      if (s.labels && s.labels.length && s.labels[0].textContent.replace(s.textContent, '').trim()) continue;
      var label = s.id === 'servers' ? 'Server' : s.closest('.content-type-wrapper, .response-control-media-type') ? 'Media type' : s.closest('.examples-select') ? 'Example' : 'Choose a value';
      s.setAttribute('aria-label', label);
    }
  }
  function fix() {
    name();
    // Scrollable examples must be reachable by keyboard.
    var pres = document.querySelectorAll('pre.microlight:not([tabindex])');
    for (var j = 0; j < pres.length; j++) pres[j].setAttribute('tabindex', '0');
  }
  var queued = false;
  function later() {
    if (queued) return;
    queued = true;
    setTimeout(function () { queued = false; fix(); }, 50);
  }
  new MutationObserver(later).observe(document.documentElement, { childList: true, subtree: true });
  fix();
})();
`;

/** The OpenAPI 3.1 document is generated from the route schemas; GET /openapi.json serves it, /docs renders it (assets served locally, no CDN). */
/** `webhooks`: the OpenAPI 3.1 `webhooks` section (what the service POSTs to merchants), given by the app. */
export async function registerOpenApi(app: FastifyInstance, webhooks: Record<string, any>): Promise<void> {
  await app.register(swagger, {
    // Schemas marked with component() become components.schemas entries referenced by $ref.
    transformObject: (document) => ('openapiObject' in document ? hoistComponents(document.openapiObject as Record<string, unknown>) : document.swaggerObject),
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Merchant Delivery Service', version: '1.0.0', description: API_DESCRIPTION },
      // Relative: the paths are served from the host that serves this document (the interface's {base_url}).
      servers: [{ url: '/', description: 'The host serving this document ({base_url} of the interface)' }],
      tags: [
        { name: 'auth', description: 'OAuth 2.0 client credentials' },
        { name: 'warehouses', description: 'Pickup warehouses of the merchant' },
        { name: 'quotes', description: 'Delivery options (pending quotes)' },
        { name: 'transfers', description: 'Paid deliveries: lookup, listing, the event timeline, cancellation' },
        { name: 'balance', description: 'The merchant balance and its ledger' },
        { name: 'sandbox', description: 'Sandbox merchants: drive the simulated courier' },
        { name: 'couriers', description: 'The courier API: status, position, jobs (courier tokens)' },
        { name: 'webhooks', description: 'Signed webhooks (Standard Webhooks): endpoints, secrets, attempts, replays' },
        { name: 'tracking', description: 'The public tracking page for recipients (no token)' },
        { name: 'operations', description: 'Health checks for load balancers' },
      ],
      // OpenAPI 3.1 `webhooks`: the requests the service sends to merchants' endpoints.
      webhooks,
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "A merchant's access token from POST /auth/token" },
          courierAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              "A courier's access token from POST /auth/token (courier client credentials). Merchant tokens get 403 WRONG_ACTOR here, and courier tokens on merchant routes.",
          },
          clientBasic: { type: 'http', scheme: 'basic', description: 'client_id and client_secret as HTTP Basic (RFC 6749 2.3.1)' },
        },
      },
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // validatorUrl: null, or Swagger UI fetches a badge from validator.swagger.io. BaseLayout: without
    // the "explore" top bar (an unlabelled URL box and a logo without alt text, no use for one document).
    // No deep links: they put a link inside each operation's toggle button (nested interactive controls).
    uiConfig: { docExpansion: 'list', deepLinking: false, validatorUrl: null, layout: 'BaseLayout' },
    theme: { title: 'Merchant Delivery Service API', css: [{ filename: 'a11y.css', content: DOCS_CSS }], js: [{ filename: 'a11y.js', content: DOCS_JS }] },
    staticCSP: DOCS_CSP,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
