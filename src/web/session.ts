import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../lib/errors.ts';
import type { PersonRow, SessionRow } from '../modules/accounts/repository.ts';
import { type Person, toPerson } from '../modules/accounts/service.ts';

/**
 * Who is on a web request. The web plugin resolves the session cookie on every page request
 * (request.webSession); a page says whom it serves with the preHandler requirePerson(kind, roles),
 * which sets request.person or answers: not logged in -> 303 to the app's login page with ?next=,
 * wrong kind or role -> the 403 page. Roles are checked here, on the server, for every action.
 */

export type PersonKind = Person['kind'];
type RoleOf<K extends PersonKind> = Extract<Person, { kind: K }> extends { role: infer R } ? R : never;

export interface WebSession {
  /** The session's public id (the hash of the cookie's value). */
  id: string;
  /** The cookie's value, to end or replace the session. */
  cookie: string;
  row: SessionRow;
  person: PersonRow;
}

/** An object with the `_csrf` property @fastify/csrf-protection reads and writes (its '@fastify/session' mode). */
export interface CsrfSecretHolder {
  _csrf: string | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The logged-in person; set by requirePerson. */
    person: Person;
    /** The live session behind the cookie, if any (set by the web plugin on page requests). */
    webSession: WebSession | null;
    /** Where @fastify/csrf-protection keeps the CSRF secret: the session row's, or a pre-login cookie's. */
    session: CsrfSecretHolder;
  }
  interface FastifyInstance {
    /** The configuration, for the web layer's cookies. */
    webConfig: import('../config.ts').Config;
  }
  interface FastifyReply {
    /** The CSP nonce of this response (scripts carry it). */
    cspNonce: string;
  }
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Each web app's login page. */
export const LOGIN_PATHS: Record<PersonKind, string> = {
  merchant: '/dashboard/login',
  operator: '/ops/login',
  courier: '/courier-app/login',
};

/** A same-app path to come back to after login, or undefined (never another site: no "//", no scheme). */
export function safeNext(kind: PersonKind, next: unknown): string | undefined {
  if (typeof next !== 'string' || next.length > 500) return undefined;
  const base = LOGIN_PATHS[kind].replace(/\/login$/, '');
  if (!next.startsWith(`${base}/`) || next.startsWith('//') || /[\\\s]/.test(next) || next.startsWith(LOGIN_PATHS[kind])) return undefined;
  return next;
}

/** preHandler: the page serves `kind` (and, when given, only these roles). */
export function requirePerson<K extends PersonKind>(kind: K, roles?: readonly RoleOf<K>[]) {
  return async function requirePersonHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const s = request.webSession;
    if (s?.row.stage !== 'full') {
      const next = request.method === 'GET' ? safeNext(kind, request.url) : undefined;
      await reply.redirect(next ? `${LOGIN_PATHS[kind]}?next=${encodeURIComponent(next)}` : LOGIN_PATHS[kind], 303);
      return;
    }
    if (s.person.kind !== kind) {
      // An operator "viewing as" a merchant reads that merchant's dashboard as its admin would, and changes nothing.
      if (kind === 'merchant' && s.person.kind === 'operator' && s.row.view_as_merchant_id) {
        if (UNSAFE_METHODS.has(request.method)) throw new AppError('FORBIDDEN', 'Viewing as a merchant is read-only');
        request.person = {
          kind: 'merchant',
          id: s.person.id,
          merchantId: s.row.view_as_merchant_id,
          role: 'admin',
          email: s.person.email ?? '',
          name: s.person.name,
          sessionId: s.id,
          viewAs: { operatorName: s.person.name },
        };
        return;
      }
      throw new AppError('FORBIDDEN', 'This page is not for your kind of account');
    }
    const person = toPerson(s.person, s.id);
    if (roles && !(roles as readonly string[]).includes((person as { role?: string }).role ?? '')) {
      throw new AppError('FORBIDDEN', 'Your role does not allow this: ask an admin');
    }
    request.person = person;
  };
}

/** The merchant person of a request that went through requirePerson('merchant'). */
export function merchantOf(request: FastifyRequest): MerchantUser {
  const p = request.person;
  if (p?.kind !== 'merchant') throw new AppError('FORBIDDEN', 'This page is for merchant users');
  return p;
}

export type MerchantUser = Extract<Person, { kind: 'merchant' }>;

/** A merchant's user as the events they cause name them (actor.id, actor.name). */
export const personOf = (me: MerchantUser): { id: string; name: string } => ({ id: me.id, name: me.name });
