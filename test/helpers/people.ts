import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import type { Clock } from '../../src/lib/clock.ts';
import type { MerchantRole } from '../../src/modules/accounts/service.ts';
import type { OperatorRole } from '../../src/modules/audit/service.ts';
import type { Services } from '../../src/services.ts';

/**
 * People for page tests: a merchant user with a password, a browser logged in as them, and an
 * in-process "browser" (cookies + CSRF tokens over app.inject) for server-side checks of pages.
 */

export const TEST_PASSWORD = 'correct horse battery';

export interface TestPerson {
  id: string;
  merchantId: string;
  email: string;
  password: string;
  role: MerchantRole;
}

let counter = 0;

/** A merchant user who can log in (no invite link needed). E-mail and password default to unique test values. */
export async function createMerchantUser(
  appOrServices: FastifyInstance | Services | { services: Services },
  opts: { merchantId: string; role?: MerchantRole; email?: string; password?: string; name?: string },
): Promise<TestPerson> {
  const services = 'accounts' in appOrServices ? (appOrServices as Services) : (appOrServices as { services: Services }).services;
  const email = opts.email ?? `user${++counter}-${Date.now()}@example.com`;
  const password = opts.password ?? TEST_PASSWORD;
  const role = opts.role ?? 'admin';
  const row = await services.accounts.createMerchantUser(opts.merchantId, { email, role, password, name: opts.name });
  return { id: row.id, merchantId: opts.merchantId, email, password, role };
}

export interface TestOperator {
  id: string;
  email: string;
  password: string;
  role: OperatorRole;
  name: string;
  totp: TOTP;
}

/**
 * An operator who can log in: invited (as the CLI would), password set through the link, TOTP set up
 * with the app's clock. Log in with WebClient.loginOperator (each login takes a fresh TOTP step).
 */
export async function createOperator(
  appOrServices: FastifyInstance | Services | { services: Services },
  clock: Clock,
  opts: { role: OperatorRole; name?: string; email?: string },
): Promise<TestOperator> {
  const services = 'accounts' in appOrServices ? (appOrServices as Services) : (appOrServices as { services: Services }).services;
  const email = opts.email ?? `operator${++counter}-${Date.now()}@example.com`;
  const name = opts.name ?? `Op ${opts.role}`;
  const invited = await services.accounts.inviteOperator({ email, role: opts.role, name }, 'http://127.0.0.1', { kind: 'cli', machineUser: 'test' });
  await services.accounts.setPasswordWithLink(new URL(invited.url).searchParams.get('token')!, TEST_PASSWORD);
  const { secret } = await services.accounts.beginTotp(invited.operator.id);
  const totp = new TOTP({ secret });
  await services.accounts.confirmTotp(invited.operator.id, totp.generate({ timestamp: clock.now() }));
  return { id: invited.operator.id, email, password: TEST_PASSWORD, role: opts.role, name, totp };
}

/** Logs a Playwright page in through the dashboard's login form (by label, as a person would); ends on the page after login. */
export async function loginBrowser(page: Page, baseUrl: string, email: string, password: string, next?: string): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/login${next ? `?next=${encodeURIComponent(next)}` : ''}`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await Promise.all([page.waitForURL((url) => !url.pathname.endsWith('/dashboard/login')), page.getByRole('button', { name: 'Log in' }).click()]);
}

/** The value of the first hidden `_csrf` field of an HTML page. */
export function csrfOf(html: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  assert.ok(m, 'the page has a form with a _csrf field');
  return m[1];
}

/**
 * A cookie-keeping client over app.inject: get() pages, post() forms (with the CSRF token of the
 * last page seen unless one is given). Redirects are not followed: tests assert them.
 */
export class WebClient {
  readonly cookies = new Map<string, string>();
  lastCsrf: string | undefined;
  readonly app: FastifyInstance;
  readonly headers: Record<string, string>;
  /** The client address the server sees (login throttling counts per address). */
  remoteAddress: string;
  constructor(app: FastifyInstance, headers: Record<string, string> = {}, remoteAddress = '127.0.0.1') {
    this.app = app;
    this.headers = headers;
    this.remoteAddress = remoteAddress;
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('; ');
  }

  #keep(res: LightMyRequestResponse): void {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      if (c.value === '' || c.maxAge === 0 || (c.expires && c.expires.getTime() <= Date.now())) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    if (/text\/html/.test(String(res.headers['content-type'])) && /name="_csrf"/.test(res.body)) this.lastCsrf = csrfOf(res.body);
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    const res = await this.app.inject({ method: 'GET', url, remoteAddress: this.remoteAddress, headers: { ...this.headers, cookie: this.cookieHeader() } });
    this.#keep(res);
    return res;
  }

  /** POSTs a form; `_csrf` is the last page's token unless the fields say otherwise (null: none at all). */
  async post(url: string, fields: Record<string, string | null> = {}): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    const withToken: Record<string, string | null> = { _csrf: this.lastCsrf ?? null, ...fields };
    for (const [k, v] of Object.entries(withToken)) if (v !== null) body.append(k, v);
    const res = await this.app.inject({
      method: 'POST',
      url,
      remoteAddress: this.remoteAddress,
      headers: { ...this.headers, cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: body.toString(),
    });
    this.#keep(res);
    return res;
  }

  /**
   * Logs an operator in at /ops/login: the password, then a TOTP code of a new time step (the clock is
   * advanced 30 s: a code works once). Asserts both 303s and answers the last Location.
   */
  async loginOperator(op: TestOperator, clock: { now(): number; advance(ms: number): void }): Promise<string> {
    await this.get('/ops/login');
    const res = await this.post('/ops/login', { email: op.email, password: op.password });
    assert.equal(res.statusCode, 303, `operator login answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    await this.get('/ops/login/second-factor');
    clock.advance(30_000);
    const second = await this.post('/ops/login/second-factor', { code: op.totp.generate({ timestamp: clock.now() }) });
    assert.equal(second.statusCode, 303, `second factor answered ${second.statusCode}: ${second.body.slice(0, 300)}`);
    return String(second.headers.location);
  }

  /** Logs in through the login form; asserts the 303 and answers its Location. */
  async login(email: string, password: string): Promise<string> {
    await this.get('/dashboard/login');
    const res = await this.post('/dashboard/login', { email, password });
    assert.equal(res.statusCode, 303, `login answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    return String(res.headers.location);
  }
}
