import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { MIN_PASSWORD_LENGTH } from '../../../modules/accounts/passwords.ts';
import { field, queryParam } from '../../forms.ts';
import { clearSessionCookie, setSessionCookie } from '../../plugin.ts';
import { errorMessage, redirectWithFlash, render } from '../../render.ts';
import { safeNext } from '../../session.ts';

/**
 * Operators log in with a password and always a second factor: at the first login (no TOTP yet) the
 * second step is setting TOTP up, so no operator session is ever full without it. Log out, and set a
 * password through the one-time link `mds operators invite` prints.
 */

export interface OpsLoginView {
  title: string;
  email: string;
  next: string;
  error?: string;
}

export interface OpsSecondFactorView {
  title: string;
  next: string;
  /** First login: the key to add to an authenticator app. */
  setup: { secretGroups: string; uri: string } | null;
  error?: string;
}

export interface OpsRecoveryCodesView {
  title: string;
  codes: string[];
  next: string;
}

export interface OpsSetPasswordView {
  title: string;
  token: string;
  email: string;
  minLength: number;
  error?: string;
}

const HOME = '/ops/transfers';

export async function opsLoginPages(app: FastifyInstance): Promise<void> {
  const accounts = app.services.accounts;
  const meta = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'] });

  app.get('/login', async (request, reply) => {
    const next = safeNext('operator', queryParam(request, 'next')) ?? '';
    const s = request.webSession;
    if (s?.row.stage === 'full' && s.person.kind === 'operator') return reply.redirect(next || HOME, 303);
    return render<OpsLoginView>(reply, 'ops/login/login.eta', { title: 'Operator log in', email: '', next });
  });

  app.post('/login', async (request, reply) => {
    const email = field(request, 'email', { max: 320 });
    const next = safeNext('operator', field(request, 'next')) ?? '';
    let person: Awaited<ReturnType<typeof accounts.checkLogin>>;
    try {
      person = await accounts.checkLogin('operator', email, field(request, 'password', { trim: false, max: 1024 }), request.ip);
    } catch (err) {
      if (!(err instanceof AppError) || (err.code !== 'LOGIN_FAILED' && err.code !== 'RATE_LIMITED')) throw err;
      for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
      return render<OpsLoginView>(reply, 'ops/login/login.eta', { title: 'Operator log in', email, next, error: `${err.detail}.` }, err.status);
    }
    // Always the second step for operators (a code, or setting TOTP up at the first login); a new session id.
    const started = await accounts.startSession(person.id, 'second_factor', meta(request), request.webSession?.cookie);
    setSessionCookie(reply, started.cookie);
    return reply.redirect(`/ops/login/second-factor${next ? `?next=${encodeURIComponent(next)}` : ''}`, 303);
  });

  const pendingSession = (request: FastifyRequest) => {
    const s = request.webSession;
    return s && s.row.stage === 'second_factor' && s.person.kind === 'operator' ? s : undefined;
  };

  async function secondFactorPage(request: FastifyRequest, reply: FastifyReply, next: string, error?: string, status = 200) {
    const s = pendingSession(request)!;
    let setup: OpsSecondFactorView['setup'] = null;
    if (s.person.totp_enabled_at === null) {
      const pending = (await accounts.pendingTotp(s.person.id)) ?? (await accounts.beginTotp(s.person.id));
      setup = { secretGroups: pending.secret.replace(/(.{4})(?=.)/g, '$1 '), uri: pending.uri };
    }
    return render<OpsSecondFactorView>(
      reply,
      'ops/login/second-factor.eta',
      { title: setup ? 'Set up two-factor authentication' : 'Two-factor check', next, setup, error },
      status,
    );
  }

  app.get('/login/second-factor', async (request, reply) => {
    if (!pendingSession(request)) return reply.redirect('/ops/login', 303);
    return secondFactorPage(request, reply, safeNext('operator', queryParam(request, 'next')) ?? '');
  });

  app.post('/login/second-factor', async (request, reply) => {
    const s = pendingSession(request);
    if (!s) return redirectWithFlash(reply, '/ops/login', 'Your login took too long: start again.');
    const next = safeNext('operator', field(request, 'next')) ?? '';
    const code = field(request, 'code', { max: 40 });
    let recoveryCodes: string[] | undefined;
    try {
      if (s.person.totp_enabled_at === null) recoveryCodes = await accounts.confirmTotp(s.person.id, code);
      else await accounts.checkSecondFactor(s.person.id, code, request.ip);
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      if (err instanceof AppError) for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
      return secondFactorPage(request, reply, next, message, (err as AppError).status);
    }
    // The session's privileges change: a new id again.
    const started = await accounts.startSession(s.person.id, 'full', meta(request), s.cookie);
    setSessionCookie(reply, started.cookie);
    if (recoveryCodes) {
      return render<OpsRecoveryCodesView>(reply, 'ops/login/recovery-codes.eta', { title: 'Your recovery codes', codes: recoveryCodes, next: next || HOME });
    }
    return reply.redirect(next || HOME, 303);
  });

  app.post('/logout', async (request, reply) => {
    if (request.webSession) await accounts.endSession(request.webSession.cookie);
    clearSessionCookie(reply);
    return redirectWithFlash(reply, '/ops/login', 'You are logged out.');
  });

  const setPasswordPage = async (reply: FastifyReply, token: string, error?: string, status = 200) => {
    const { person } = await accounts.checkLink(token);
    if (person.kind !== 'operator') throw new AppError('LINK_INVALID', 'This link is invalid, used or expired: ask an admin for a new one');
    return render<OpsSetPasswordView>(
      reply,
      'ops/login/set-password.eta',
      { title: 'Set your password', token, email: person.email ?? '', minLength: MIN_PASSWORD_LENGTH, error },
      status,
    );
  };

  app.get('/set-password', async (request, reply) => {
    reply.header('referrer-policy', 'no-referrer'); // the token is in this page's URL
    return setPasswordPage(reply, queryParam(request, 'token'));
  });

  app.post('/set-password', async (request, reply) => {
    reply.header('referrer-policy', 'no-referrer');
    const token = field(request, 'token', { max: 100 });
    const password = field(request, 'password', { trim: false, max: 1024 });
    const { person } = await accounts.checkLink(token);
    if (person.kind !== 'operator') throw new AppError('LINK_INVALID', 'This link is invalid, used or expired: ask an admin for a new one');
    if (password !== field(request, 'confirm', { trim: false, max: 1024 })) return setPasswordPage(reply, token, 'The two passwords are not the same.', 422);
    try {
      await accounts.setPasswordWithLink(token, password);
    } catch (err) {
      if (err instanceof AppError && err.code === 'PASSWORD_REJECTED') return setPasswordPage(reply, token, `${err.detail}.`, 422);
      throw err;
    }
    return redirectWithFlash(reply, '/ops/login', 'Your password is set: log in with it now, then set up two-factor authentication.');
  });
}
