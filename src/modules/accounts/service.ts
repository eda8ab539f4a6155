import type { Kysely } from 'kysely';
import { Secret, TOTP } from 'otpauth';
import { inTransaction, isUniqueViolation } from '../../db/transaction.ts';
import type { DB, PersonKind } from '../../db/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { type AuditService, OPERATOR_ROLES, type OperatorActor, type OperatorRole } from '../audit/service.ts';
import { couriersRepository } from '../couriers/repository.ts';
import { merchantsRepository } from '../merchants/repository.ts';
import type { Mailer } from './mail.ts';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.ts';
import { accountsRepository, type PersonRow, type SessionRow } from './repository.ts';
import { newRecoveryCode, newSecret, normaliseRecoveryCode, secretHash } from './secrets.ts';
import { LoginThrottle } from './throttle.ts';

export type MerchantRole = 'admin' | 'employee';

export interface OperatorView {
  id: string;
  email: string;
  name: string;
  role: OperatorRole;
  active: boolean;
  twoFactor: boolean;
  createdAt: number;
}

function toOperatorView(row: PersonRow): OperatorView {
  return {
    id: row.id,
    email: row.email!,
    name: row.name,
    role: row.role as OperatorRole,
    active: row.password_hash !== null,
    twoFactor: row.totp_enabled_at !== null,
    createdAt: row.created_at,
  };
}
export const MERCHANT_ROLES: readonly MerchantRole[] = ['admin', 'employee'];

/** The person on a web request (the web layer contract). `sessionId` is the session's public id (its hash), never the cookie. */
export type Person =
  | {
      kind: 'merchant';
      id: string;
      merchantId: string;
      role: MerchantRole;
      email: string;
      name: string;
      sessionId: string;
      /** An operator viewing the merchant's dashboard: every page reads, no action is allowed. */
      viewAs?: { operatorName: string; merchantName?: string };
    }
  | { kind: 'operator'; id: string; role: OperatorRole; email: string; name: string; sessionId: string }
  | { kind: 'courier'; id: string; courierId: string; phone: string; name: string; sessionId: string };

export interface MerchantUser {
  id: string;
  email: string;
  name: string;
  role: MerchantRole;
  /** false until the person has set a password through the invite link. */
  active: boolean;
  twoFactor: boolean;
  createdAt: number;
}

export interface SessionInfo {
  id: string;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  ip: string | null;
  userAgent: string | null;
}

export interface AccountsOptions {
  idleMs: number;
  absoluteMs: number;
  linkTtlMs: number;
  failuresPerAccount: number;
  failuresPerAddress: number;
  failureWindowMs: number;
  /** For the TOTP key's label in authenticator apps. */
  issuer: string;
  mailer?: Mailer;
  /** Where operator invites and role changes are audited. */
  audit?: AuditService;
}

export interface StartedSession {
  /** The cookie's value (only the browser keeps it; the database has its hash). */
  cookie: string;
  row: SessionRow;
}

// last_seen_at is written at most once a minute per session: an idle timeout of minutes does not need more.
const TOUCH_EVERY_MS = 60_000;
const RECOVERY_CODES = 10;
const TOTP_PERIOD = 30;

export const normaliseEmail = (email: string): string => email.trim().toLowerCase();
/** A phone number as its digits only: "+7 900 000-00-01" and "79000000001" are the same courier. */
export const phoneDigits = (phone: string): string => phone.replace(/\D/g, '');
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/** People, passwords, sessions, one-time links, second factor. The rules live here; web pages and the CLI call it. */
export class AccountsService {
  readonly #db: Kysely<DB>;
  readonly #clock: Clock;
  readonly #opts: AccountsOptions;
  readonly #accountThrottle: LoginThrottle;
  readonly #addressThrottle: LoginThrottle;
  readonly #audit: AuditService | undefined;

  constructor(db: Kysely<DB>, clock: Clock, opts: AccountsOptions) {
    this.#db = db;
    this.#audit = opts.audit;
    this.#clock = clock;
    this.#opts = opts;
    this.#accountThrottle = new LoginThrottle(opts.failuresPerAccount, opts.failureWindowMs, clock);
    this.#addressThrottle = new LoginThrottle(opts.failuresPerAddress, opts.failureWindowMs, clock);
  }

  get idleMs(): number {
    return this.#opts.idleMs;
  }

  // People -----------------------------------------------------------------------------------------

  /** A merchant user, with a password when given (tests, scripts) or without one (to be invited). */
  async createMerchantUser(merchantId: string, input: { email: string; role: MerchantRole; name?: string; password?: string }): Promise<PersonRow> {
    const email = checkEmail(input.email);
    if (!MERCHANT_ROLES.includes(input.role)) throw new AppError('VALIDATION_FAILED', 'The role must be admin or employee');
    let passwordHash: string | null = null;
    if (input.password !== undefined) {
      const problem = passwordProblem(input.password, { email });
      if (problem) throw new AppError('PASSWORD_REJECTED', problem);
      passwordHash = await hashPassword(input.password);
    }
    const merchant = await this.#db.selectFrom('merchants').select('id').where('id', '=', merchantId).executeTakeFirst();
    if (!merchant) throw new AppError('MERCHANT_NOT_FOUND', `No merchant ${merchantId}`);
    const now = this.#clock.now();
    const row: PersonRow = {
      id: newId(),
      kind: 'merchant',
      merchant_id: merchantId,
      courier_id: null,
      role: input.role,
      email,
      phone: null,
      name: (input.name ?? '').trim().slice(0, 200) || email.split('@')[0],
      password_hash: passwordHash,
      totp_secret: null,
      totp_enabled_at: null,
      totp_last_step: null,
      created_at: now,
      updated_at: now,
    };
    try {
      await accountsRepository.insertPerson(this.#db, row);
    } catch (err) {
      if (isUniqueViolation(err, 'email')) throw new AppError('EMAIL_TAKEN', `${email} already has an account`);
      throw err;
    }
    return row;
  }

  /**
   * Invites a person to a merchant: a new user without a password, or an existing user of the same
   * merchant who has not set one yet, gets a one-time link (72 h) to set it. The link is e-mailed too
   * when mail is configured. An e-mail with an account elsewhere is refused.
   */
  async inviteMerchantUser(
    input: { merchantId: string; email: string; role: MerchantRole; name?: string },
    baseUrl: string,
    by?: OperatorActor,
  ): Promise<{ user: MerchantUser; url: string; mailed: boolean }> {
    const email = checkEmail(input.email);
    let person = await accountsRepository.personByEmail(this.#db, 'merchant', email);
    if (person && (person.merchant_id !== input.merchantId || person.password_hash !== null)) {
      throw new AppError('EMAIL_TAKEN', `${email} already has an account`);
    }
    if (person && person.role !== input.role) {
      person = (await accountsRepository.updatePerson(this.#db, person.id, { role: input.role, updated_at: this.#clock.now() })) ?? person;
    }
    person ??= await this.createMerchantUser(input.merchantId, { email, role: input.role, name: input.name });
    const url = await this.#link(person.id, 'invite', baseUrl, '/dashboard/set-password', by && { merchantId: input.merchantId, email, role: input.role, by });
    const mailed = await this.#mail(email, 'You are invited to the merchant dashboard', [
      `You have been invited to the merchant delivery dashboard as ${person.role}.`,
      '',
      `Set your password here (the link works once, for 72 hours):`,
      url,
    ]);
    return { user: toMerchantUser(person), url, mailed };
  }

  /** A password-reset link for a merchant user (the same one-time link as an invite). */
  async resetLink(merchantId: string, personId: string, baseUrl: string): Promise<{ url: string; mailed: boolean }> {
    const person = await this.requireMerchantUser(merchantId, personId);
    const url = await this.#link(person.id, 'reset', baseUrl);
    const mailed = await this.#mail(person.email!, 'Reset your password', ['Set a new password here (the link works once, for 72 hours):', url]);
    return { url, mailed };
  }

  async #link(
    personId: string,
    purpose: 'invite' | 'reset',
    baseUrl: string,
    /** The page of the link: each app has its own (set a password, activate the courier app). */
    path = '/dashboard/set-password',
    /** An operator inviting a merchant's user: audited with the link. */
    audited?: { merchantId: string; email: string; role: string; by: OperatorActor },
  ): Promise<string> {
    const token = newSecret();
    const now = this.#clock.now();
    await inTransaction(this.#db, async (trx) => {
      await accountsRepository.expireLinksOf(trx, personId, now);
      await accountsRepository.insertLink(trx, {
        token_hash: secretHash(token),
        person_id: personId,
        purpose,
        created_at: now,
        expires_at: now + this.#opts.linkTtlMs,
        used_at: null,
      });
      if (audited) {
        await this.#audit?.record(trx, audited.by, {
          action: 'merchant.user_invite',
          subjectType: 'merchant',
          subjectId: audited.merchantId,
          merchantId: audited.merchantId,
          after: { email: audited.email, role: audited.role, personId },
        });
      }
    });
    return `${baseUrl.replace(/\/+$/, '')}${path}?token=${token}`;
  }

  async #mail(to: string, subject: string, lines: string[]): Promise<boolean> {
    if (!this.#opts.mailer) return false;
    await this.#opts.mailer.send({ to, subject, text: lines.join('\n') });
    return true;
  }

  /** A merchant's user by e-mail (the CLI's handle); PERSON_NOT_FOUND otherwise, also for another merchant's user. */
  async merchantUserByEmail(merchantId: string, email: string): Promise<MerchantUser> {
    const person = await accountsRepository.personByEmail(this.#db, 'merchant', normaliseEmail(email));
    if (!person || person.merchant_id !== merchantId) throw new AppError('PERSON_NOT_FOUND', `No user ${normaliseEmail(email)} at merchant ${merchantId}`);
    return toMerchantUser(person);
  }

  async listMerchantUsers(merchantId: string): Promise<MerchantUser[]> {
    return (await accountsRepository.merchantUsers(this.#db, merchantId)).map(toMerchantUser);
  }

  async requireMerchantUser(merchantId: string, personId: string): Promise<PersonRow> {
    const person = UUID_RE.test(personId) ? await accountsRepository.merchantUser(this.#db, merchantId, personId) : undefined;
    if (!person) throw new AppError('PERSON_NOT_FOUND', `No user ${personId}`);
    return person;
  }

  /** Changes a user's role; the merchant keeps at least one admin. The user's sessions end (they log in again with the new role). */
  async changeRole(merchantId: string, personId: string, role: MerchantRole): Promise<MerchantUser> {
    if (!MERCHANT_ROLES.includes(role)) throw new AppError('VALIDATION_FAILED', 'The role must be admin or employee');
    return inTransaction(this.#db, async (trx) => {
      await merchantsRepository.lock(trx, merchantId); // serializes the last-admin rule
      const person = await accountsRepository.merchantUser(trx, merchantId, personId);
      if (!person) throw new AppError('PERSON_NOT_FOUND', `No user ${personId}`);
      if (person.role === role) return toMerchantUser(person);
      if (person.role === 'admin' && (await accountsRepository.countMerchantAdmins(trx, merchantId)) <= 1) {
        throw new AppError('LAST_ADMIN', 'A merchant needs at least one admin: make someone else admin first');
      }
      const updated = await accountsRepository.updatePerson(trx, person.id, { role, updated_at: this.#clock.now() });
      await accountsRepository.deleteSessionsOf(trx, person.id);
      return toMerchantUser(updated!);
    });
  }

  /** Removes a user: their sessions, links and recovery codes go with them. The merchant keeps at least one admin. */
  async removeMerchantUser(merchantId: string, personId: string): Promise<void> {
    await inTransaction(this.#db, async (trx) => {
      await merchantsRepository.lock(trx, merchantId); // serializes the last-admin rule
      const person = await accountsRepository.merchantUser(trx, merchantId, personId);
      if (!person) throw new AppError('PERSON_NOT_FOUND', `No user ${personId}`);
      if (person.role === 'admin' && (await accountsRepository.countMerchantAdmins(trx, merchantId)) <= 1) {
        throw new AppError('LAST_ADMIN', 'A merchant needs at least one admin: make someone else admin first');
      }
      await accountsRepository.deletePerson(trx, person.id);
    });
  }

  // Operators --------------------------------------------------------------------------------------

  /**
   * Invites an operator (support, finance, admin): a new person without a password, or one who has not
   * set it yet, gets a one-time link (72 h) to /ops/set-password. TOTP is set up at their first login.
   * `by` is the admin (or the CLI) who invites; the invite is audited in the same transaction.
   */
  async inviteOperator(
    input: { email: string; role: OperatorRole; name?: string },
    baseUrl: string,
    by: OperatorActor,
  ): Promise<{ operator: OperatorView; url: string; mailed: boolean }> {
    const email = checkEmail(input.email);
    if (!OPERATOR_ROLES.includes(input.role)) throw new AppError('VALIDATION_FAILED', 'The role must be support, finance or admin');
    let person = await accountsRepository.personByEmail(this.#db, 'operator', email);
    if (person && person.password_hash !== null) throw new AppError('EMAIL_TAKEN', `${email} already has an operator account`);
    const now = this.#clock.now();
    await inTransaction(this.#db, async (trx) => {
      if (person) {
        person = (await accountsRepository.updatePerson(trx, person.id, { role: input.role, updated_at: now })) ?? person;
      } else {
        person = {
          id: newId(),
          kind: 'operator',
          merchant_id: null,
          courier_id: null,
          role: input.role,
          email,
          phone: null,
          name: (input.name ?? '').trim().slice(0, 200) || email.split('@')[0],
          password_hash: null,
          totp_secret: null,
          totp_enabled_at: null,
          totp_last_step: null,
          created_at: now,
          updated_at: now,
        };
        await accountsRepository.insertPerson(trx, person);
      }
      await this.#audit?.record(trx, by, { action: 'operator.invite', subjectType: 'operator', subjectId: person.id, after: { email, role: input.role } });
    });
    const invited = person!;
    const url = await this.#link(invited.id, 'invite', baseUrl, '/ops/set-password');
    const mailed = await this.#mail(email, 'You are invited to the operator console', [
      `You have been invited to the merchant delivery operator console as ${input.role}.`,
      '',
      'Set your password here (the link works once, for 72 hours); you will set up two-factor authentication at your first login:',
      url,
    ]);
    return { operator: toOperatorView(invited), url, mailed };
  }

  async listOperators(): Promise<OperatorView[]> {
    return (await accountsRepository.operators(this.#db)).map(toOperatorView);
  }

  /** Changes an operator's role (their sessions end) or removes them; audited. An admin cannot demote or remove themselves. */
  async changeOperatorRole(personId: string, role: OperatorRole, by: OperatorActor): Promise<OperatorView> {
    if (!OPERATOR_ROLES.includes(role)) throw new AppError('VALIDATION_FAILED', 'The role must be support, finance or admin');
    if (by.kind === 'operator' && by.id === personId) throw new AppError('FORBIDDEN', 'You cannot change your own role: ask another admin');
    return inTransaction(this.#db, async (trx) => {
      const person = await accountsRepository.personById(trx, personId);
      if (person?.kind !== 'operator') throw new AppError('PERSON_NOT_FOUND', `No operator ${personId}`);
      const updated = await accountsRepository.updatePerson(trx, personId, { role, updated_at: this.#clock.now() });
      await accountsRepository.deleteSessionsOf(trx, personId);
      await this.#audit?.record(trx, by, {
        action: 'operator.role',
        subjectType: 'operator',
        subjectId: personId,
        before: { role: person.role },
        after: { role },
      });
      return toOperatorView(updated!);
    });
  }

  // Couriers -----------------------------------------------------------------------------------------

  /**
   * The one-time activation link of a courier account (72 h): on it the courier sets a password and
   * from then on logs in to the courier app with the phone number and that password. The first link
   * creates the courier's person (kind courier, linked to the courier record); a later one replaces
   * any unused link and, once a password is set, works as a reset. PHONE_TAKEN when another courier
   * person already has the phone number.
   */
  async courierActivationLink(courierId: string, baseUrl: string): Promise<{ url: string; personId: string; purpose: 'invite' | 'reset' }> {
    const courier = await couriersRepository.find(this.#db, courierId);
    if (!courier) throw new AppError('COURIER_NOT_FOUND', `No courier ${courierId}`);
    let person = await accountsRepository.personByCourier(this.#db, courierId);
    if (!person) {
      const now = this.#clock.now();
      const row: PersonRow = {
        id: newId(),
        kind: 'courier',
        merchant_id: null,
        courier_id: courierId,
        role: null,
        email: null,
        phone: phoneDigits(courier.phone),
        name: courier.name,
        password_hash: null,
        totp_secret: null,
        totp_enabled_at: null,
        totp_last_step: null,
        created_at: now,
        updated_at: now,
      };
      try {
        await accountsRepository.insertPerson(this.#db, row);
      } catch (err) {
        if (isUniqueViolation(err, 'phone')) throw new AppError('PHONE_TAKEN', `Another courier already logs in with ${courier.phone}`);
        throw err;
      }
      person = row;
    }
    const purpose = person.password_hash === null ? 'invite' : 'reset';
    return { url: await this.#link(person.id, purpose, baseUrl, '/courier-app/activate'), personId: person.id, purpose };
  }

  /** Whether no courier person logs in with this phone number yet (checked before creating a courier). */
  async courierPhoneFree(phone: string): Promise<boolean> {
    return (await accountsRepository.personByPhone(this.#db, 'courier', phoneDigits(phone))) === undefined;
  }

  /** Login for the courier app: phone number (any spelling of its digits) and password; same rules and answers as checkLogin. */
  async checkCourierLogin(phoneInput: string, password: string, address: string): Promise<PersonRow> {
    const phone = phoneDigits(String(phoneInput ?? '')).slice(0, 32);
    return this.#checkPassword(
      `courier:${phone}`,
      () => (phone === '' ? Promise.resolve(undefined) : accountsRepository.personByPhone(this.#db, 'courier', phone)),
      password,
      address,
      'Wrong phone number or password',
    );
  }

  // One-time links ---------------------------------------------------------------------------------

  /** The person a usable link is for; LINK_INVALID for an unknown, used or expired token (one answer for all three). */
  async checkLink(token: string): Promise<{ person: PersonRow; purpose: 'invite' | 'reset' }> {
    const link = typeof token === 'string' && token.length <= 100 ? await accountsRepository.link(this.#db, secretHash(token)) : undefined;
    const person =
      link && link.used_at === null && link.expires_at > this.#clock.now() ? await accountsRepository.personById(this.#db, link.person_id) : undefined;
    if (!link || !person) throw new AppError('LINK_INVALID', 'This link is invalid, used or expired: ask an admin for a new one');
    return { person, purpose: link.purpose };
  }

  /** Sets the password through a one-time link (single use even under races); every existing session of the person ends. */
  async setPasswordWithLink(token: string, password: string): Promise<PersonRow> {
    const { person } = await this.checkLink(token);
    const problem = passwordProblem(password, { email: person.email });
    if (problem) throw new AppError('PASSWORD_REJECTED', problem);
    const hash = await hashPassword(password);
    return inTransaction(this.#db, async (trx) => {
      const now = this.#clock.now();
      if (!(await accountsRepository.useLink(trx, secretHash(token), now))) {
        throw new AppError('LINK_INVALID', 'This link is invalid, used or expired: ask an admin for a new one');
      }
      await accountsRepository.deleteSessionsOf(trx, person.id);
      return (await accountsRepository.updatePerson(trx, person.id, { password_hash: hash, updated_at: now }))!;
    });
  }

  // Login ------------------------------------------------------------------------------------------

  /**
   * Checks an e-mail and password. Every failure is the same LOGIN_FAILED (unknown e-mail, no password
   * yet, wrong password) after the same argon2 work; too many failures per e-mail or per address
   * answer RATE_LIMITED without checking anything.
   */
  async checkLogin(kind: PersonKind, emailInput: string, password: string, address: string): Promise<PersonRow> {
    const email = normaliseEmail(String(emailInput ?? '')).slice(0, 320);
    return this.#checkPassword(
      `${kind}:${email}`,
      () => (email === '' ? Promise.resolve(undefined) : accountsRepository.personByEmail(this.#db, kind, email)),
      password,
      address,
      'Wrong e-mail or password',
    );
  }

  async #checkPassword(accountKey: string, find: () => Promise<PersonRow | undefined>, password: string, address: string, failure: string): Promise<PersonRow> {
    const wait = Math.max(this.#accountThrottle.retryAfter(accountKey), this.#addressThrottle.retryAfter(address));
    if (wait > 0) {
      throw new AppError('RATE_LIMITED', `Too many failed attempts: try again in ${formatWait(wait)}`, { headers: { 'retry-after': String(wait) } });
    }
    const person = await find();
    const ok = await verifyPassword(person?.password_hash ?? null, String(password ?? ''));
    if (!person || !ok) {
      this.#accountThrottle.fail(accountKey);
      this.#addressThrottle.fail(address);
      throw new AppError('LOGIN_FAILED', failure);
    }
    this.#accountThrottle.clear(accountKey);
    return person;
  }

  /** Whether the person must give a TOTP code (or a recovery code) after the password; operators always (they set it up first). */
  needsSecondFactor(person: PersonRow): boolean {
    return person.totp_enabled_at !== null || person.kind === 'operator';
  }

  /** Checks a TOTP code (each code works once) or a recovery code (single use). Failures count toward the login throttle. */
  async checkSecondFactor(personId: string, code: string, address: string): Promise<void> {
    const person = await accountsRepository.personById(this.#db, personId);
    const key = `2fa:${personId}`;
    const wait = Math.max(this.#accountThrottle.retryAfter(key), this.#addressThrottle.retryAfter(address));
    if (wait > 0)
      throw new AppError('RATE_LIMITED', `Too many failed attempts: try again in ${formatWait(wait)}`, { headers: { 'retry-after': String(wait) } });
    if (person?.totp_secret && person.totp_enabled_at !== null && (await this.#useCode(person, String(code ?? '')))) {
      this.#accountThrottle.clear(key);
      return;
    }
    this.#accountThrottle.fail(key);
    this.#addressThrottle.fail(address);
    throw new AppError('SECOND_FACTOR_FAILED', 'That code is not right: use the current code of your authenticator app, or a recovery code');
  }

  async #useCode(person: PersonRow, code: string): Promise<boolean> {
    const digits = code.replace(/\s/g, '');
    if (/^\d{6}$/.test(digits)) {
      const step = this.#totpStep(person.totp_secret!, digits);
      if (step === undefined || (person.totp_last_step !== null && step <= person.totp_last_step)) return false;
      // Conditional write: two requests with the same code cannot both pass.
      const r = await this.#db
        .updateTable('people')
        .set({ totp_last_step: step })
        .where('id', '=', person.id)
        .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
        .executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    }
    const normal = normaliseRecoveryCode(code);
    if (!/^[0-9A-Z]{10}$/.test(normal)) return false;
    return accountsRepository.useRecoveryCode(this.#db, person.id, secretHash(normal), this.#clock.now());
  }

  /** The time step a 6-digit code belongs to (one step of clock drift either way), or undefined. */
  #totpStep(secretBase32: string, code: string): number | undefined {
    const now = this.#clock.now();
    const delta = TOTP.validate({ token: code, secret: Secret.fromBase32(secretBase32), period: TOTP_PERIOD, timestamp: now, window: 1 });
    return delta === null ? undefined : Math.floor(now / 1000 / TOTP_PERIOD) + delta;
  }

  // Sessions ---------------------------------------------------------------------------------------

  /** A new session (always a new id: at login, and when the second factor completes). */
  async startSession(
    personId: string,
    stage: 'full' | 'second_factor',
    meta: { ip?: string; userAgent?: string },
    replacing?: string,
  ): Promise<StartedSession> {
    const cookie = newSecret();
    const now = this.#clock.now();
    const row: SessionRow = {
      id_hash: secretHash(cookie),
      person_id: personId,
      stage,
      csrf_secret: newSecret(),
      created_at: now,
      last_seen_at: now,
      // A second-factor step is short-lived: the idle timeout, at most 10 minutes.
      expires_at: now + (stage === 'full' ? this.#opts.absoluteMs : Math.min(this.#opts.idleMs, 600_000)),
      ip: meta.ip?.slice(0, 64) ?? null,
      user_agent: meta.userAgent?.slice(0, 300) ?? null,
    };
    await inTransaction(this.#db, async (trx) => {
      if (replacing !== undefined) await accountsRepository.deleteSession(trx, secretHash(replacing));
      await accountsRepository.insertSession(trx, row);
    });
    return { cookie, row };
  }

  /** The live session behind a cookie and its person; an idle or expired session is deleted and yields undefined. */
  async resolveSession(cookie: string): Promise<{ session: SessionRow; person: PersonRow } | undefined> {
    if (cookie.length !== 43) return undefined;
    const idHash = secretHash(cookie);
    const found = await accountsRepository.sessionWithPerson(this.#db, idHash);
    if (!found) return undefined;
    const now = this.#clock.now();
    if (now >= found.session.expires_at || now - found.session.last_seen_at >= this.#opts.idleMs) {
      await accountsRepository.deleteSession(this.#db, idHash);
      return undefined;
    }
    if (now - found.session.last_seen_at >= TOUCH_EVERY_MS) {
      await accountsRepository.touchSession(this.#db, idHash, now);
      found.session.last_seen_at = now;
    }
    return found;
  }

  /**
   * "View as merchant": an operator's session opens that merchant's dashboard read-only (null stops).
   * Who looked at which merchant goes into the audit log.
   */
  async setViewAs(sessionId: string, by: OperatorActor, merchantId: string | null): Promise<void> {
    await inTransaction(this.#db, async (trx) => {
      if (merchantId !== null && !(await merchantsRepository.find(trx, merchantId))) throw new AppError('MERCHANT_NOT_FOUND', `No merchant ${merchantId}`);
      await accountsRepository.setViewAs(trx, sessionId, merchantId);
      if (merchantId !== null) {
        await this.#audit?.record(trx, by, { action: 'merchant.view_as', subjectType: 'merchant', subjectId: merchantId, merchantId });
      }
    });
  }

  async endSession(cookie: string): Promise<void> {
    await accountsRepository.deleteSession(this.#db, secretHash(cookie));
  }

  /** Ends one of the person's own sessions by its public id (the sessions list). */
  async endOwnSession(personId: string, sessionId: string): Promise<boolean> {
    return accountsRepository.deletePersonSession(this.#db, personId, sessionId);
  }

  /** "Log out everywhere": every session of the person, this one included. */
  async endAllSessions(personId: string): Promise<number> {
    return accountsRepository.deleteSessionsOf(this.#db, personId);
  }

  async listSessions(personId: string): Promise<SessionInfo[]> {
    return (await accountsRepository.sessionsOf(this.#db, personId))
      .filter((s) => s.stage === 'full')
      .map((s) => ({ id: s.id_hash, createdAt: s.created_at, lastSeenAt: s.last_seen_at, expiresAt: s.expires_at, ip: s.ip, userAgent: s.user_agent }));
  }

  /** Deletes expired and idle sessions (they are refused anyway; this keeps the table small). */
  async purgeSessions(): Promise<number> {
    const now = this.#clock.now();
    return accountsRepository.deleteExpiredSessions(this.#db, now, now - this.#opts.idleMs);
  }

  // Password and second factor ---------------------------------------------------------------------

  /** Changes the password (the current one is required); every other session of the person ends. */
  async changePassword(personId: string, current: string, next: string, keepSessionId: string): Promise<void> {
    const person = await accountsRepository.personById(this.#db, personId);
    if (!person || !(await verifyPassword(person.password_hash, current))) throw new AppError('WRONG_PASSWORD', 'The current password is not right');
    const problem = passwordProblem(next, { email: person.email });
    if (problem) throw new AppError('PASSWORD_REJECTED', problem);
    const hash = await hashPassword(next);
    await inTransaction(this.#db, async (trx) => {
      await accountsRepository.updatePerson(trx, personId, { password_hash: hash, updated_at: this.#clock.now() });
      await accountsRepository.deleteSessionsOf(trx, personId, keepSessionId);
    });
  }

  /** Starts TOTP enrolment: a new key (kept but not enforced until confirmed), shown as text and as an otpauth:// URI. */
  async beginTotp(personId: string): Promise<{ secret: string; uri: string }> {
    const person = await accountsRepository.personById(this.#db, personId);
    if (!person) throw new AppError('PERSON_NOT_FOUND', 'No such person');
    if (person.totp_enabled_at !== null) throw new AppError('VALIDATION_FAILED', 'Two-factor authentication is already on');
    const secret = person.totp_secret ?? new Secret({ size: 20 }).base32;
    if (person.totp_secret === null) await accountsRepository.updatePerson(this.#db, personId, { totp_secret: secret, updated_at: this.#clock.now() });
    return { secret, uri: this.#totpUri(person, secret) };
  }

  #totpUri(person: PersonRow, secret: string): string {
    return new TOTP({
      issuer: this.#opts.issuer,
      label: person.email ?? person.phone ?? person.name,
      secret: Secret.fromBase32(secret),
      period: TOTP_PERIOD,
    }).toString();
  }

  /** The key of an enrolment that was started and not confirmed yet, if any. */
  async pendingTotp(personId: string): Promise<{ secret: string; uri: string } | undefined> {
    const person = await accountsRepository.personById(this.#db, personId);
    if (!person?.totp_secret || person.totp_enabled_at !== null) return undefined;
    return { secret: person.totp_secret, uri: this.#totpUri(person, person.totp_secret) };
  }

  /** Confirms enrolment with a current code; answers the recovery codes (shown once, stored hashed). */
  async confirmTotp(personId: string, code: string): Promise<string[]> {
    const person = await accountsRepository.personById(this.#db, personId);
    if (!person?.totp_secret || person.totp_enabled_at !== null) throw new AppError('VALIDATION_FAILED', 'Start setting up two-factor authentication first');
    const step = /^\d{6}$/.test(String(code ?? '').replace(/\s/g, '')) ? this.#totpStep(person.totp_secret, String(code).replace(/\s/g, '')) : undefined;
    if (step === undefined) throw new AppError('SECOND_FACTOR_FAILED', 'That code is not right: enter the 6-digit code your app shows now');
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
    const now = this.#clock.now();
    await inTransaction(this.#db, async (trx) => {
      await accountsRepository.updatePerson(trx, personId, { totp_enabled_at: now, totp_last_step: step, updated_at: now });
      await accountsRepository.replaceRecoveryCodes(
        trx,
        personId,
        codes.map((c) => ({ code_hash: secretHash(normaliseRecoveryCode(c)), person_id: personId, created_at: now, used_at: null })),
      );
    });
    return codes;
  }

  /** Turns TOTP off (the password is required) and drops the recovery codes. */
  async disableTotp(personId: string, password: string): Promise<void> {
    const person = await accountsRepository.personById(this.#db, personId);
    if (!person || !(await verifyPassword(person.password_hash, password))) throw new AppError('WRONG_PASSWORD', 'The password is not right');
    if (person.kind === 'operator') throw new AppError('FORBIDDEN', 'Operators must keep two-factor authentication on');
    await inTransaction(this.#db, async (trx) => {
      await accountsRepository.updatePerson(trx, personId, { totp_secret: null, totp_enabled_at: null, totp_last_step: null, updated_at: this.#clock.now() });
      await accountsRepository.replaceRecoveryCodes(trx, personId, []);
    });
  }

  async unusedRecoveryCodes(personId: string): Promise<number> {
    return accountsRepository.unusedRecoveryCodes(this.#db, personId);
  }

  async person(personId: string): Promise<PersonRow | undefined> {
    return accountsRepository.personById(this.#db, personId);
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function checkEmail(input: string): string {
  const email = normaliseEmail(String(input ?? ''));
  if (!EMAIL_RE.test(email) || email.length > 320) throw new AppError('VALIDATION_FAILED', `"${String(input).slice(0, 80)}" is not an e-mail address`);
  return email;
}

/** The person of a session as the web layer sees it. */
export function toPerson(row: PersonRow, sessionId: string): Person {
  if (row.kind === 'merchant') {
    return { kind: 'merchant', id: row.id, merchantId: row.merchant_id!, role: row.role as MerchantRole, email: row.email!, name: row.name, sessionId };
  }
  if (row.kind === 'operator') {
    return { kind: 'operator', id: row.id, role: row.role as 'support' | 'finance' | 'admin', email: row.email!, name: row.name, sessionId };
  }
  return { kind: 'courier', id: row.id, courierId: row.courier_id!, phone: row.phone!, name: row.name, sessionId };
}

function toMerchantUser(row: PersonRow): MerchantUser {
  return {
    id: row.id,
    email: row.email!,
    name: row.name,
    role: row.role as MerchantRole,
    active: row.password_hash !== null,
    twoFactor: row.totp_enabled_at !== null,
    createdAt: row.created_at,
  };
}

const formatWait = (seconds: number): string => (seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`);
