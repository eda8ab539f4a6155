import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppError } from '../../../lib/errors.ts';
import { MIN_PASSWORD_LENGTH } from '../../../modules/accounts/passwords.ts';
import { field } from '../../forms.ts';
import { clearSessionCookie } from '../../plugin.ts';
import { errorMessage, redirectWithFlash, render } from '../../render.ts';
import { merchantOf, requirePerson } from '../../session.ts';

/** Account: who you are, your password, two-factor authentication (TOTP with recovery codes), your sessions. */

export interface SessionRowView {
  id: string;
  current: boolean;
  createdAt: string;
  lastSeenAt: string;
  ip: string;
  browser: string;
}

export interface AccountView {
  title: string;
  name: string;
  email: string;
  role: string;
  minLength: number;
  twoFactor: boolean;
  recoveryCodesLeft: number;
  sessions: SessionRowView[];
  passwordError?: string;
  twoFactorError?: string;
}

export interface TwoFactorSetupView {
  title: string;
  /** The key, in groups of four for typing into an app. */
  secretGroups: string;
  uri: string;
  error?: string;
}

export interface RecoveryCodesView {
  title: string;
  codes: string[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A short description of a browser from its User-Agent (for recognising one's own sessions). */
function browserOf(ua: string | null): string {
  if (!ua) return 'Unknown browser';
  const name = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrome\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const os = /Android/.test(ua)
    ? 'Android'
    : /iPhone|iPad/.test(ua)
      ? 'iOS'
      : /Windows/.test(ua)
        ? 'Windows'
        : /Mac OS X/.test(ua)
          ? 'macOS'
          : /Linux/.test(ua)
            ? 'Linux'
            : '';
  return os ? `${name} on ${os}` : name;
}

export async function accountPages(app: FastifyInstance): Promise<void> {
  const accounts = app.services.accounts;
  app.addHook('preHandler', requirePerson('merchant'));

  const page = async (request: FastifyRequest, reply: FastifyReply, extra: Partial<AccountView> = {}, status = 200) => {
    const me = merchantOf(request);
    const person = await accounts.person(me.id);
    const sessions = (await accounts.listSessions(me.id)).map((s) => ({
      id: s.id,
      current: s.id === me.sessionId,
      createdAt: iso(s.createdAt),
      lastSeenAt: iso(s.lastSeenAt),
      ip: s.ip ?? '',
      browser: browserOf(s.userAgent),
    }));
    const twoFactor = person?.totp_enabled_at != null;
    return render<AccountView>(
      reply,
      'dashboard/account/account.eta',
      {
        title: 'Account',
        name: me.name,
        email: me.email,
        role: me.role,
        minLength: MIN_PASSWORD_LENGTH,
        twoFactor,
        recoveryCodesLeft: twoFactor ? await accounts.unusedRecoveryCodes(me.id) : 0,
        sessions,
        ...extra,
      },
      status,
    );
  };

  app.get('/', async (request, reply) => page(request, reply));

  app.post('/password', async (request, reply) => {
    const me = merchantOf(request);
    const next = field(request, 'password', { trim: false, max: 1024 });
    if (next !== field(request, 'confirm', { trim: false, max: 1024 }))
      return page(request, reply, { passwordError: 'The two new passwords are not the same.' }, 422);
    try {
      await accounts.changePassword(me.id, field(request, 'current', { trim: false, max: 1024 }), next, me.sessionId);
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return page(request, reply, { passwordError: `${message}.` }, (err as AppError).status);
    }
    return redirectWithFlash(reply, '/dashboard/account', 'Your password is changed; your other sessions have ended.');
  });

  // Two-factor authentication ----------------------------------------------------------------------

  const setupPage = async (request: FastifyRequest, reply: FastifyReply, error?: string, status = 200) => {
    const me = merchantOf(request);
    const pending = await accounts.pendingTotp(me.id);
    if (!pending) return reply.redirect('/dashboard/account', 303);
    return render<TwoFactorSetupView>(
      reply,
      'dashboard/account/two-factor.eta',
      { title: 'Set up two-factor authentication', secretGroups: pending.secret.replace(/(.{4})(?=.)/g, '$1 '), uri: pending.uri, error },
      status,
    );
  };

  app.post('/two-factor/start', async (request, reply) => {
    await accounts.beginTotp(merchantOf(request).id);
    return reply.redirect('/dashboard/account/two-factor', 303);
  });

  app.get('/two-factor', async (request, reply) => setupPage(request, reply));

  app.post('/two-factor/confirm', async (request, reply) => {
    let codes: string[];
    try {
      codes = await accounts.confirmTotp(merchantOf(request).id, field(request, 'code', { max: 20 }));
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return setupPage(request, reply, `${message}.`, (err as AppError).status);
    }
    // Shown once, on the answer to this POST (never stored readable, never in a redirect).
    return render<RecoveryCodesView>(reply, 'dashboard/account/recovery-codes.eta', { title: 'Two-factor authentication is on', codes });
  });

  app.post('/two-factor/disable', async (request, reply) => {
    try {
      await accounts.disableTotp(merchantOf(request).id, field(request, 'password', { trim: false, max: 1024 }));
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return page(request, reply, { twoFactorError: `${message}.` }, (err as AppError).status);
    }
    return redirectWithFlash(reply, '/dashboard/account', 'Two-factor authentication is off.');
  });

  // Sessions ---------------------------------------------------------------------------------------

  app.post('/sessions/end', async (request, reply) => {
    const me = merchantOf(request);
    const id = field(request, 'session', { max: 64 });
    if (id === me.sessionId) return redirectWithFlash(reply, '/dashboard/account', 'To end this session, log out.');
    const ended = await accounts.endOwnSession(me.id, id);
    return redirectWithFlash(reply, '/dashboard/account', ended ? 'That session has ended.' : 'That session had already ended.');
  });

  app.post('/sessions/end-all', async (request, reply) => {
    const me = merchantOf(request);
    const n = await accounts.endAllSessions(me.id);
    clearSessionCookie(reply);
    return redirectWithFlash(reply, '/dashboard/login', `You are logged out everywhere (${n} ${n === 1 ? 'session' : 'sessions'} ended).`);
  });
}
