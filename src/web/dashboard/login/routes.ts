import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { MIN_PASSWORD_LENGTH } from '../../../modules/accounts/passwords.ts';
import { field, queryParam } from '../../forms.ts';
import { clearSessionCookie, setSessionCookie } from '../../plugin.ts';
import { errorMessage, redirectWithFlash, render } from '../../render.ts';
import { safeNext } from '../../session.ts';

/** Log in (password, then the second factor when the person has one), log out, and set a password through a one-time link. */

export interface LoginView {
  title: string;
  email: string;
  next: string;
  error?: string;
}

export interface SecondFactorView {
  title: string;
  next: string;
  error?: string;
}

export interface SetPasswordView {
  title: string;
  token: string;
  email: string;
  purpose: 'invite' | 'reset';
  minLength: number;
  error?: string;
}

const HOME = '/dashboard/deliveries';

export async function loginPages(app: FastifyInstance): Promise<void> {
  const accounts = app.services.accounts;
  const meta = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'] });

  app.get('/login', async (request, reply) => {
    const next = safeNext('merchant', queryParam(request, 'next')) ?? '';
    const s = request.webSession;
    if (s?.row.stage === 'full' && s.person.kind === 'merchant') return reply.redirect(next || HOME, 303);
    return render<LoginView>(reply, 'dashboard/login/login.eta', { title: 'Log in', email: '', next });
  });

  app.post('/login', async (request, reply) => {
    const email = field(request, 'email', { max: 320 });
    const next = safeNext('merchant', field(request, 'next')) ?? '';
    let person: Awaited<ReturnType<typeof accounts.checkLogin>>;
    try {
      person = await accounts.checkLogin('merchant', email, field(request, 'password', { trim: false, max: 1024 }), request.ip);
    } catch (err) {
      if (!(err instanceof AppError) || (err.code !== 'LOGIN_FAILED' && err.code !== 'RATE_LIMITED')) throw err;
      for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
      return render<LoginView>(reply, 'dashboard/login/login.eta', { title: 'Log in', email, next, error: `${err.detail}.` }, err.status);
    }
    // A new session id at every login (no session fixation); the visitor's previous session, if any, ends.
    const stage = accounts.needsSecondFactor(person) ? 'second_factor' : 'full';
    const started = await accounts.startSession(person.id, stage, meta(request), request.webSession?.cookie);
    setSessionCookie(reply, started.cookie);
    if (stage === 'second_factor') return reply.redirect(`/dashboard/login/second-factor${next ? `?next=${encodeURIComponent(next)}` : ''}`, 303);
    return reply.redirect(next || HOME, 303);
  });

  const pendingSession = (request: FastifyRequest) => {
    const s = request.webSession;
    return s && s.row.stage === 'second_factor' && s.person.kind === 'merchant' ? s : undefined;
  };

  app.get('/login/second-factor', async (request, reply) => {
    if (!pendingSession(request)) return reply.redirect('/dashboard/login', 303);
    return render<SecondFactorView>(reply, 'dashboard/login/second-factor.eta', {
      title: 'Two-factor check',
      next: safeNext('merchant', queryParam(request, 'next')) ?? '',
    });
  });

  app.post('/login/second-factor', async (request, reply) => {
    const s = pendingSession(request);
    if (!s) return redirectWithFlash(reply, '/dashboard/login', 'Your login took too long: start again.');
    const next = safeNext('merchant', field(request, 'next')) ?? '';
    try {
      await accounts.checkSecondFactor(s.person.id, field(request, 'code', { max: 40 }), request.ip);
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      if (err instanceof AppError) for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
      return render<SecondFactorView>(
        reply,
        'dashboard/login/second-factor.eta',
        { title: 'Two-factor check', next, error: message },
        (err as AppError).status,
      );
    }
    // The session's privileges change: a new id again.
    const started = await accounts.startSession(s.person.id, 'full', meta(request), s.cookie);
    setSessionCookie(reply, started.cookie);
    return reply.redirect(next || HOME, 303);
  });

  app.post('/logout', async (request, reply) => {
    if (request.webSession) await accounts.endSession(request.webSession.cookie);
    clearSessionCookie(reply);
    return redirectWithFlash(reply, '/dashboard/login', 'You are logged out.');
  });

  const setPasswordPage = async (reply: FastifyReply, token: string, error?: string, status = 200) => {
    const { person, purpose } = await accounts.checkLink(token);
    return render<SetPasswordView>(
      reply,
      'dashboard/login/set-password.eta',
      {
        title: purpose === 'invite' ? 'Set your password' : 'Choose a new password',
        token,
        email: person.email ?? '',
        purpose,
        minLength: MIN_PASSWORD_LENGTH,
        error,
      },
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
    if (password !== field(request, 'confirm', { trim: false, max: 1024 })) return setPasswordPage(reply, token, 'The two passwords are not the same.', 422);
    try {
      await accounts.setPasswordWithLink(token, password);
    } catch (err) {
      if (err instanceof AppError && err.code === 'PASSWORD_REJECTED') return setPasswordPage(reply, token, `${err.detail}.`, 422);
      throw err;
    }
    return redirectWithFlash(reply, '/dashboard/login', 'Your password is set: log in with it now.');
  });
}
