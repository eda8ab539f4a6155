import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { MIN_PASSWORD_LENGTH } from '../../../modules/accounts/passwords.ts';
import { field, queryParam } from '../../forms.ts';
import { clearSessionCookie, setSessionCookie } from '../../plugin.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { safeNext } from '../../session.ts';

/** Log in with phone number and password, log out, and activate the account through the one-time link (set the password). */

export interface CourierLoginView {
  title: string;
  phone: string;
  next: string;
  error?: string;
}

export interface ActivateView {
  title: string;
  token: string;
  name: string;
  phone: string;
  minLength: number;
  error?: string;
}

const HOME = '/courier-app/shift';
const LINK_INVALID = 'This link is invalid, used or expired: ask your dispatcher for a new one';

export async function loginPages(app: FastifyInstance): Promise<void> {
  const accounts = app.services.accounts;

  app.get('/login', async (request, reply) => {
    const next = safeNext('courier', queryParam(request, 'next')) ?? '';
    const s = request.webSession;
    if (s?.row.stage === 'full' && s.person.kind === 'courier') return reply.redirect(next || HOME, 303);
    return render<CourierLoginView>(reply, 'courier-app/login/login.eta', { title: 'Log in', phone: '', next });
  });

  app.post('/login', async (request, reply) => {
    const phone = field(request, 'phone', { max: 40 });
    const next = safeNext('courier', field(request, 'next')) ?? '';
    let person: Awaited<ReturnType<typeof accounts.checkCourierLogin>>;
    try {
      person = await accounts.checkCourierLogin(phone, field(request, 'password', { trim: false, max: 1024 }), request.ip);
      if (!(await app.services.couriers.isActive(person.courier_id ?? '')))
        throw new AppError('FORBIDDEN', 'Your courier account is disabled: call your dispatcher');
    } catch (err) {
      if (!(err instanceof AppError) || !['LOGIN_FAILED', 'RATE_LIMITED', 'FORBIDDEN'].includes(err.code)) throw err;
      for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
      return render<CourierLoginView>(reply, 'courier-app/login/login.eta', { title: 'Log in', phone, next, error: `${err.detail}.` }, err.status);
    }
    // A new session id at every login; the visitor's previous session, if any, ends.
    const started = await accounts.startSession(person.id, 'full', { ip: request.ip, userAgent: request.headers['user-agent'] }, request.webSession?.cookie);
    setSessionCookie(reply, started.cookie);
    return reply.redirect(next || HOME, 303);
  });

  app.post('/logout', async (request, reply) => {
    if (request.webSession) await accounts.endSession(request.webSession.cookie);
    clearSessionCookie(reply);
    return redirectWithFlash(reply, '/courier-app/login', 'You are logged out.');
  });

  /** The courier's link (a link of another kind of person answers like an unknown one). */
  const courierLink = async (token: string) => {
    const { person } = await accounts.checkLink(token);
    if (person.kind !== 'courier') throw new AppError('LINK_INVALID', LINK_INVALID);
    return person;
  };

  const activatePage = async (reply: FastifyReply, token: string, error?: string, status = 200) => {
    const person = await courierLink(token);
    return render<ActivateView>(
      reply,
      'courier-app/login/activate.eta',
      { title: 'Activate your account', token, name: person.name, phone: person.phone ?? '', minLength: MIN_PASSWORD_LENGTH, error },
      status,
    );
  };

  const noReferrer = (reply: FastifyReply) => reply.header('referrer-policy', 'no-referrer'); // the token is in the URL

  app.get('/activate', async (request: FastifyRequest, reply) => {
    noReferrer(reply);
    return activatePage(reply, queryParam(request, 'token'));
  });

  app.post('/activate', async (request, reply) => {
    noReferrer(reply);
    const token = field(request, 'token', { max: 100 });
    await courierLink(token);
    const password = field(request, 'password', { trim: false, max: 1024 });
    if (password !== field(request, 'confirm', { trim: false, max: 1024 })) return activatePage(reply, token, 'The two passwords are not the same.', 422);
    try {
      await accounts.setPasswordWithLink(token, password);
    } catch (err) {
      if (err instanceof AppError && err.code === 'PASSWORD_REJECTED') return activatePage(reply, token, `${err.detail}.`, 422);
      throw err;
    }
    return redirectWithFlash(reply, '/courier-app/login', 'Your password is set: log in with your phone number and it.');
  });
}
