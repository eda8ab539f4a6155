import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import fastifyStatic from '@fastify/static';
import view from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import { AppError } from '../lib/errors.ts';
import { FLASH_COOKIE, pageCsp, renderError, securePage } from './render.ts';
import type { CsrfSecretHolder } from './session.ts';

/**
 * The web layer shared by every browser app (/dashboard/ now; /ops/ and /courier-app/ later):
 * Eta templates through @fastify/view (escaping by default), form bodies, the session cookie and
 * its server-side row, CSRF on every state-changing request (@fastify/csrf-protection), a strict
 * CSP with a per-response nonce, and static assets under /static/ with long-lived caching.
 * Registered (fastify-plugin) into one encapsulated scope of app.ts, so none of it touches the JSON API.
 */

export const WEB_ROOT = import.meta.dirname;
export const STATIC_DIR = join(WEB_ROOT, 'static');

export { pageCsp };

/** The session cookie: `__Host-` prefixed with Secure (production), or a plain name for plain-HTTP development (browsers drop a `__Host-` cookie without Secure). */
export const sessionCookieName = (secure: boolean): string => (secure ? '__Host-mds_session' : 'mds_session');
/** Before login, forms (login, set-password) still need a CSRF secret: it lives in this cookie until a session exists. */
export const preSessionCookieName = (secure: boolean): string => (secure ? '__Host-mds_csrf' : 'mds_csrf');
export { FLASH_COOKIE };

/** Asset URLs carry a hash of their content, so browsers may keep them for a year and still see every change. */
const ASSET_VERSIONS = new Map<string, string>(
  readdirSync(STATIC_DIR).map((name) => [
    name,
    createHash('sha256')
      .update(readFileSync(join(STATIC_DIR, name)))
      .digest('hex')
      .slice(0, 12),
  ]),
);
export function asset(name: string): string {
  const version = ASSET_VERSIONS.get(name);
  if (version === undefined) throw new Error(`No static asset ${name}`);
  return `/static/${name}?v=${version}`;
}

export interface WebPluginOptions {
  config: Config;
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

async function web(app: FastifyInstance, { config }: WebPluginOptions): Promise<void> {
  const secure = config.sessionCookieSecure;
  const sessionCookie = sessionCookieName(secure);
  const preCookie = preSessionCookieName(secure);
  const cookieOptions = { path: '/', httpOnly: true, secure, sameSite: 'lax' as const };

  // Pages are not part of the API's OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: 65_536 });
  await app.register(view, {
    engine: { eta: new Eta({ autoEscape: true, cache: config.nodeEnv !== 'development' }) },
    root: WEB_ROOT,
    layout: 'templates/layout.eta',
    production: config.nodeEnv !== 'development',
    defaultContext: { asset },
  });
  await app.register(fastifyStatic, {
    root: STATIC_DIR,
    prefix: '/static/',
    decorateReply: false,
    maxAge: '365d',
    immutable: true,
    index: false,
    list: false,
    // One route per file found at start: an unknown asset is the router's plain 404, not a file-system lookup.
    wildcard: false,
  });
  await app.register(csrf, {
    sessionPlugin: '@fastify/session',
    getToken: (request: FastifyRequest) =>
      (request.body as Record<string, string> | undefined)?._csrf ?? (request.headers['x-csrf-token'] as string | undefined),
    logLevel: 'info',
  });

  app.decorate('webConfig', config);
  app.decorateRequest('webSession', null);
  app.decorateRequest('person', null as never);
  app.decorateRequest('session', null as never);
  app.decorateReply('cspNonce', '');

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.url?.startsWith('/static/')) return;
    securePage(reply);
    request.webSession = null;
    const value = request.cookies[sessionCookie];
    if (value) {
      const found = await app.services.accounts.resolveSession(value);
      if (found) request.webSession = { id: found.session.id_hash, cookie: value, row: found.session, person: found.person };
      else reply.clearCookie(sessionCookie, cookieOptions);
    }
    request.session = csrfSecretHolder(request, reply, preCookie, cookieOptions);
  });

  // CSRF on every state-changing request of every web app (the token comes in the `_csrf` field or the x-csrf-token header).
  app.addHook('preHandler', (request, reply, done) => {
    if (!UNSAFE_METHODS.has(request.method) || request.routeOptions.url?.startsWith('/static/')) return done();
    app.csrfProtection(request, reply, done);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.code === 'FST_CSRF_MISSING_SECRET' || error.code === 'FST_CSRF_INVALID_TOKEN') {
      return renderError(reply, 403, 'Form expired', 'This form has expired or did not come from this site. Go back, reload the page and try again.');
    }
    const appError = error instanceof AppError ? error : undefined;
    if (appError) {
      for (const [name, value] of Object.entries(appError.options.headers ?? {})) reply.header(name, value);
      if (appError.code === 'ROUTE_NOT_FOUND') return renderError(reply, 404, 'Page not found', 'There is no such page here.');
      if (appError.code === 'METHOD_NOT_ALLOWED') return renderError(reply, 405, 'Not allowed', 'This page cannot be used that way.');
      if (appError.code === 'FORBIDDEN') return renderError(reply, 403, 'Not allowed', appError.detail);
      if (appError.status === 404) return renderError(reply, 404, 'Not found', 'There is nothing here: it may have been removed, or the link is wrong.');
      if (appError.status < 500) return renderError(reply, appError.status, 'Cannot do that', appError.detail);
    }
    if (error.statusCode === 413 || error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return renderError(reply, 413, 'Too large', 'What you sent is too large.');
    if (error.statusCode === 415 || error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return renderError(reply, 415, 'Cannot read that', 'Send forms as a web browser does.');
    if (error.validation || error.statusCode === 400) return renderError(reply, 400, 'Cannot read that', 'Something in the request is not valid.');
    if (error.statusCode !== undefined && error.statusCode > 400 && error.statusCode < 500)
      return renderError(reply, error.statusCode, 'Cannot do that', 'This request cannot be answered.');
    request.log.error({ err: error }, 'page failed');
    return renderError(
      reply,
      500,
      'Something went wrong',
      `We could not show this page. Try again in a moment; if it keeps happening, tell support the reference ${request.id}.`,
    );
  });
}

/** Where the CSRF secret of a request lives: its session row (created at login), or before login a cookie of its own. */
function csrfSecretHolder(request: FastifyRequest, reply: FastifyReply, preCookie: string, cookieOptions: object): CsrfSecretHolder {
  return {
    get _csrf() {
      return request.webSession?.row.csrf_secret ?? request.cookies[preCookie] ?? undefined;
    },
    set _csrf(secret: string | undefined) {
      if (request.webSession || secret === undefined) return; // a session's secret is made with the session
      request.cookies[preCookie] = secret;
      reply.setCookie(preCookie, secret, { ...cookieOptions, sameSite: 'strict' });
    },
  };
}

export const webPlugin = fp(web, { name: 'mds-web', fastify: '5.x' });

/** Sets the session cookie for a new session. */
export function setSessionCookie(reply: FastifyReply, value: string): void {
  const config = reply.server.webConfig;
  reply.setCookie(sessionCookieName(config.sessionCookieSecure), value, {
    path: '/',
    httpOnly: true,
    secure: config.sessionCookieSecure,
    sameSite: 'lax',
    // The cookie outlives the browser session only as long as the server-side session's absolute lifetime.
    maxAge: config.sessionAbsoluteHours * 3600,
  });
}

export function clearSessionCookie(reply: FastifyReply): void {
  const config = reply.server.webConfig;
  reply.clearCookie(sessionCookieName(config.sessionCookieSecure), { path: '/', httpOnly: true, secure: config.sessionCookieSecure, sameSite: 'lax' });
}
