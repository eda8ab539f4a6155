import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Person, toPerson } from '../modules/accounts/service.ts';

/**
 * Typed rendering: every page has a view-model interface and renders through render(), which adds
 * the layout's fields. Templates escape everything (`<%= %>`); `<%~ %>` is only for the layout's body
 * and partials, never for data.
 */

export interface NavItem {
  label: string;
  href: string;
  current: boolean;
}

/** What the layout needs; render() fills it in. */
export interface LayoutFields {
  title: string;
  person: Person | null;
  nav: NavItem[];
  /** The CSRF token for this page's forms (hidden field `_csrf`, or header x-csrf-token). */
  csrf: string;
  /** The CSP nonce for this page's scripts. */
  nonce: string;
  flash: string | null;
  /** The app's home, for the header's link. */
  home: string;
  /** The app's name, in the header. */
  appName: string;
  /** The app's path prefix (its logout form posts to `${base}/logout`). */
  base: string;
}

/** A one-time message for the next page (post/redirect/get). */
export const FLASH_COOKIE = 'mds_flash';

interface NavEntry {
  label: string;
  href: string;
  /** Roles that see it; none: everyone of the app. */
  roles?: readonly string[];
}

/** Each web app's navigation, in order (the dashboard's names and order are fixed by the web contract). */
const APPS: Array<{ prefix: string; name: string; home: string; nav: NavEntry[] }> = [
  {
    prefix: '/dashboard',
    name: 'Merchant dashboard',
    home: '/dashboard/deliveries',
    nav: [
      { label: 'Deliveries', href: '/dashboard/deliveries' },
      { label: 'New delivery', href: '/dashboard/deliveries/new' },
      { label: 'Warehouses', href: '/dashboard/warehouses' },
      { label: 'Balance', href: '/dashboard/balance' },
      { label: 'Developers', href: '/dashboard/developers', roles: ['admin'] },
      { label: 'Users', href: '/dashboard/users', roles: ['admin'] },
      { label: 'Account', href: '/dashboard/account' },
    ],
  },
  {
    prefix: '/ops',
    name: 'Operator console',
    home: '/ops/transfers',
    nav: [
      { label: 'Transfers', href: '/ops/transfers' },
      { label: 'Merchants', href: '/ops/merchants' },
      { label: 'Couriers', href: '/ops/couriers' },
      { label: 'Map', href: '/ops/map' },
      { label: 'Tariffs', href: '/ops/tariffs' },
      { label: 'Webhooks', href: '/ops/webhooks', roles: ['support', 'admin'] },
      { label: 'Audit log', href: '/ops/audit' },
      { label: 'Operators', href: '/ops/operators', roles: ['admin'] },
    ],
  },
  {
    prefix: '/courier-app',
    name: 'Courier',
    home: '/courier-app/shift',
    nav: [
      { label: 'Shift', href: '/courier-app/shift' },
      { label: 'Jobs', href: '/courier-app/jobs' },
      { label: 'Today', href: '/courier-app/today' },
    ],
  },
];

function appOf(path: string) {
  return APPS.find((a) => path === a.prefix || path.startsWith(`${a.prefix}/`));
}

/** The navigation for a person on a path: the entries their role may use, the current one marked (longest matching prefix). */
export function navigation(path: string, person: Person | null): NavItem[] {
  const app = appOf(path);
  if (!app || !person) return [];
  const role = (person as { role?: string }).role;
  const visible = app.nav.filter((n) => !n.roles || (role !== undefined && n.roles.includes(role)));
  const current = visible.filter((n) => path === n.href || path.startsWith(`${n.href}/`)).sort((a, b) => b.href.length - a.href.length)[0];
  return visible.map((n) => ({ label: n.label, href: n.href, current: n === current }));
}

/** Every page's CSP: nothing from elsewhere, scripts only with this response's nonce, no inline style (the courier app's manifest and service worker come from this site too). */
export const pageCsp = (nonce: string): string =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; manifest-src 'self'; worker-src 'self'`;

/** A nonce and the security headers for an HTML answer (once per response; also for an error page rendered before the web hooks ran). */
export function securePage(reply: FastifyReply): void {
  if (reply.cspNonce) return;
  const nonce = randomBytes(16).toString('base64');
  reply.cspNonce = nonce;
  reply
    .header('content-security-policy', pageCsp(nonce))
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'same-origin')
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY');
}

function layoutFields(request: FastifyRequest, reply: FastifyReply, title: string): LayoutFields {
  securePage(reply);
  const path = request.url.split('?')[0];
  const app = appOf(path);
  const s = request.webSession;
  const person = request.person ?? (s?.row.stage === 'full' ? toPerson(s.person, s.id) : null);
  const flash = request.cookies?.[FLASH_COOKIE];
  if (flash !== undefined) reply.clearCookie(FLASH_COOKIE, { path: '/' });
  return {
    title,
    person,
    nav: navigation(path, person),
    // An error page rendered before the web hooks ran has no CSRF secret holder (and no person, so no form).
    csrf: request.session ? reply.generateCsrf() : '',
    nonce: reply.cspNonce,
    flash: flash ? flash.slice(0, 500) : null,
    home: app?.home ?? '/',
    appName: app?.name ?? 'Merchant delivery',
    base: app?.prefix ?? '',
  };
}

/** Renders `template` (a path under src/web, e.g. 'dashboard/warehouses/list.eta') inside the layout. */
export async function render<M extends object>(reply: FastifyReply, template: string, model: M & { title: string }, status = 200): Promise<FastifyReply> {
  const data = { ...model, ...layoutFields(reply.request, reply, model.title) };
  const html = await reply.viewAsync(template, data);
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

/** An error page (404, 403, 400...) in the layout. */
export async function renderError(reply: FastifyReply, status: number, title: string, message: string): Promise<FastifyReply> {
  return render(reply, 'templates/error.eta', { title, message }, status);
}

/** Post/redirect/get: 303 to `url` with a message shown once on the next page. */
export async function redirectWithFlash(reply: FastifyReply, url: string, flash?: string): Promise<FastifyReply> {
  if (flash) reply.setCookie(FLASH_COOKIE, flash, { path: '/', httpOnly: true, sameSite: 'lax', secure: reply.server.webConfig.sessionCookieSecure });
  return reply.redirect(url, 303);
}

/** The readable message of a refused action (an AppError from a service), for re-rendering its form. */
export function errorMessage(err: unknown): string | undefined {
  if (err && typeof err === 'object' && 'detail' in err && 'status' in err && typeof (err as { status: number }).status === 'number') {
    const e = err as { status: number; detail: string };
    if (e.status < 500) return e.detail;
  }
  return undefined;
}
