import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { createTestApp, describeEachStore, type TestApp } from './helpers/app.ts';
import { mds } from './helpers/cli.ts';
import { createMerchantUser, WebClient } from './helpers/people.ts';

/**
 * Getting people in: `mds users invite` prints a one-time link, the person sets a password there and
 * logs in; links are single-use, expire after 72 h and are stored hashed; password rules; login
 * throttling per account and per address; the link is e-mailed when SMTP_URL is set.
 */

const formError = (html: string) => /<div class="form-error" role="alert" id="form-error">\s*<p>([^<]*)<\/p>/.exec(html)?.[1];
const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;
const pathOf = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

describeEachStore('invites, one-time links and passwords', (ctx) => {
  test('mds users invite --json prints {url}; the person sets a password there and logs in; mds users list shows them active', async () => {
    const t = ctx();
    const m = await t.merchant('Invite shop');
    const res = await mds(t, 'users', 'invite', '--merchant', m.merchantId, '--email', 'Boss@Example.com', '--role', 'admin', '--json');
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.match(out.url, /^http:\/\/127\.0\.0\.1:3000\/dashboard\/set-password\?token=[A-Za-z0-9_-]{43}$/);
    assert.equal(out.user.email, 'boss@example.com');
    assert.equal(out.user.role, 'admin');
    assert.equal(out.user.active, false);
    // The token is stored only as its hash.
    const rows = await t.database.db.selectFrom('one_time_links').selectAll().execute();
    assert.ok(rows.every((r) => r.token_hash !== tokenOf(out.url) && /^[0-9a-f]{64}$/.test(r.token_hash)));

    const web = new WebClient(t.app);
    const page = await web.get(pathOf(out.url));
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    assert.match(page.body, /<h1>Set your password<\/h1>/);
    const set = await web.post('/dashboard/set-password', {
      token: tokenOf(out.url),
      password: 'a long enough passphrase',
      confirm: 'a long enough passphrase',
    });
    assert.equal(set.statusCode, 303);
    assert.equal(set.headers.location, '/dashboard/login');
    assert.match((await web.get('/dashboard/login')).body, /Your password is set: log in with it now\./);
    assert.equal(await web.login('boss@example.com', 'a long enough passphrase'), '/dashboard/deliveries');

    const list = await mds(t, 'users', 'list', '--merchant', m.merchantId, '--json');
    assert.equal(list.code, 0, list.stderr);
    const users = JSON.parse(list.stdout).users;
    assert.equal(users.length, 1);
    assert.deepEqual(
      { ...users[0], id: undefined, createdAt: undefined },
      {
        id: undefined,
        createdAt: undefined,
        email: 'boss@example.com',
        name: 'boss',
        role: 'admin',
        active: true,
        twoFactor: false,
      },
    );
    // Human output too.
    const human = await mds(t, 'users', 'invite', '--merchant', m.merchantId, '--email', 'clerk@example.com', '--role', 'employee');
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /^Invited clerk@example\.com as employee\. The link works once, for 72 hours:\nhttp:\/\/127\.0\.0\.1:3000\/dashboard\/set-password\?token=/,
    );
  });

  test('a link works once: the second use, and a request racing the first, get the "invalid, used or expired" page', async () => {
    const t = ctx();
    const m = await t.merchant();
    const { url } = await t.services.accounts.inviteMerchantUser(
      { merchantId: m.merchantId, email: `once-${Date.now()}@example.com`, role: 'employee' },
      'http://x',
    );
    const token = tokenOf(url);
    const results = await Promise.allSettled([
      t.services.accounts.setPasswordWithLink(token, 'first racer password'),
      t.services.accounts.setPasswordWithLink(token, 'second racer password'),
    ]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    assert.equal((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason.code, 'LINK_INVALID');
    const web = new WebClient(t.app);
    const page = await web.get(`/dashboard/set-password?token=${token}`);
    assert.equal(page.statusCode, 410);
    assert.match(page.body, /This link is invalid, used or expired: ask an admin for a new one/);
    const unknown = await web.get('/dashboard/set-password?token=nope');
    assert.equal(unknown.statusCode, 410);
    assert.equal(formError(unknown.body), undefined);
  });

  test('a link expires after 72 hours; a newer link replaces an older one', async () => {
    const t = ctx();
    const m = await t.merchant();
    const email = `late-${Date.now()}@example.com`;
    const first = await t.services.accounts.inviteMerchantUser({ merchantId: m.merchantId, email, role: 'employee' }, 'http://x');
    const second = await t.services.accounts.inviteMerchantUser({ merchantId: m.merchantId, email, role: 'employee' }, 'http://x');
    await assert.rejects(t.services.accounts.checkLink(tokenOf(first.url)), { code: 'LINK_INVALID' });
    t.clock.advance(72 * 3_600_000 - 1000);
    assert.equal((await t.services.accounts.checkLink(tokenOf(second.url))).purpose, 'invite');
    t.clock.advance(1000);
    await assert.rejects(t.services.accounts.setPasswordWithLink(tokenOf(second.url), 'too late for this one'), { code: 'LINK_INVALID' });
  });

  test('password rules: at least 12 characters, not a common password, both fields equal; refused forms change nothing', async () => {
    const t = ctx();
    const m = await t.merchant();
    const email = `rules-${Date.now()}@example.com`;
    const { url } = await t.services.accounts.inviteMerchantUser({ merchantId: m.merchantId, email, role: 'employee' }, 'http://x');
    const token = tokenOf(url);
    const web = new WebClient(t.app);
    await web.get(pathOf(url));
    const cases: Array<[string, string, string]> = [
      ['short pass', 'short pass', 'The password must be at least 12 characters long.'],
      ['password1234', 'password1234', 'This password is too common; choose another one.'],
      ['aaaaaaaaaaaaaaaa', 'aaaaaaaaaaaaaaaa', 'This password is too common; choose another one.'],
      ['a fine passphrase', 'a different one!!', 'The two passwords are not the same.'],
    ];
    for (const [password, confirm, message] of cases) {
      const res = await web.post('/dashboard/set-password', { token, password, confirm });
      assert.equal(res.statusCode, 422, password);
      assert.equal(formError(res.body), message);
    }
    const person = await t.database.db.selectFrom('people').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
    assert.equal(person.password_hash, null);
    assert.equal((await t.services.accounts.checkLink(token)).person.id, person.id, 'the link still works');
    const ok = await web.post('/dashboard/set-password', { token, password: 'a fine passphrase', confirm: 'a fine passphrase' });
    assert.equal(ok.statusCode, 303);
    const after = await t.database.db.selectFrom('people').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
    assert.match(after.password_hash!, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
  });

  test('a reset link (mds users reset) sets a new password and ends every session of the person', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId, role: 'admin' });
    const web = new WebClient(t.app);
    await web.login(u.email, u.password);
    const res = await mds(t, 'users', 'reset', '--merchant', m.merchantId, '--email', u.email, '--json');
    assert.equal(res.code, 0, res.stderr);
    const { url } = JSON.parse(res.stdout);
    const other = new WebClient(t.app);
    const page = await other.get(pathOf(url));
    assert.match(page.body, /<h1>Choose a new password<\/h1>/);
    assert.equal(
      (await other.post('/dashboard/set-password', { token: tokenOf(url), password: 'my brand new passphrase', confirm: 'my brand new passphrase' }))
        .statusCode,
      303,
    );
    assert.equal((await web.get('/dashboard/account')).statusCode, 303, 'the old session ended');
    await other.get('/dashboard/login');
    assert.equal((await other.post('/dashboard/login', { email: u.email, password: u.password })).statusCode, 401);
    assert.equal(await other.login(u.email, 'my brand new passphrase'), '/dashboard/deliveries');
  });

  test("the CLI refuses: an e-mail with an account, another merchant's user, an unknown merchant, a bad role", async () => {
    const t = ctx();
    const a = await t.merchant('A');
    const b = await t.merchant('B');
    const u = await createMerchantUser(t.app, { merchantId: a.merchantId });
    const taken = await mds(t, 'users', 'invite', '--merchant', b.merchantId, '--email', u.email, '--role', 'admin', '--json');
    assert.equal(taken.code, 1);
    assert.deepEqual(JSON.parse(taken.stdout), { error: 'EMAIL_TAKEN', message: `${u.email} already has an account` });
    const foreign = await mds(t, 'users', 'remove', '--merchant', b.merchantId, '--email', u.email, '--json');
    assert.equal(foreign.code, 1);
    assert.equal(JSON.parse(foreign.stdout).error, 'PERSON_NOT_FOUND');
    const nobody = await mds(
      t,
      'users',
      'invite',
      '--merchant',
      '00000000-0000-7000-8000-000000000000',
      '--email',
      'x@example.com',
      '--role',
      'admin',
      '--json',
    );
    assert.equal(JSON.parse(nobody.stdout).error, 'MERCHANT_NOT_FOUND');
    const role = await mds(t, 'users', 'invite', '--merchant', a.merchantId, '--email', 'x@example.com', '--role', 'owner', '--json');
    assert.equal(role.code, 2);
    assert.equal(JSON.parse(role.stdout).error, 'USAGE');
    const last = await mds(t, 'users', 'remove', '--merchant', a.merchantId, '--email', u.email, '--json');
    assert.equal(last.code, 1);
    assert.equal(JSON.parse(last.stdout).error, 'LAST_ADMIN');
  });
});

describeEachStore('login throttling', (ctx) => {
  test('per account: after 5 failures the account waits (even with the right password), with the same message for an unknown e-mail', async () => {
    const t = ctx();
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const unknown = `nobody-${Date.now()}@example.com`;
    for (const [i, email] of [u.email, unknown].entries()) {
      const web = new WebClient(t.app, {}, `10.0.0.${i + 1}`);
      await web.get('/dashboard/login');
      for (let k = 0; k < 5; k++) assert.equal((await web.post('/dashboard/login', { email, password: 'wrong password here' })).statusCode, 401);
      // Another address: the account itself is throttled.
      const elsewhere = new WebClient(t.app, {}, `10.0.1.${i + 1}`);
      await elsewhere.get('/dashboard/login');
      const res = await elsewhere.post('/dashboard/login', { email, password: email === u.email ? u.password : 'wrong password here' });
      assert.equal(res.statusCode, 429, email);
      assert.equal(res.headers['retry-after'], '900');
      assert.equal(formError(res.body), 'Too many failed attempts: try again in 15 minutes.');
    }
    t.clock.advance(15 * 60_000);
    const web = new WebClient(t.app, {}, '10.0.2.1');
    assert.equal(await web.login(u.email, u.password), '/dashboard/deliveries');
  });
});

describe('login throttling per address', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp('sqlite', { LOGIN_FAILURES_PER_ADDRESS: '3' });
  });
  after(async () => t?.close());

  test('an address failing on many e-mails waits; other addresses do not', async () => {
    const m = await t.merchant();
    const u = await createMerchantUser(t.app, { merchantId: m.merchantId });
    const attacker = new WebClient(t.app, {}, '203.0.113.9');
    await attacker.get('/dashboard/login');
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) {
      assert.equal((await attacker.post('/dashboard/login', { email, password: 'guess guess guess' })).statusCode, 401);
    }
    const res = await attacker.post('/dashboard/login', { email: u.email, password: u.password });
    assert.equal(res.statusCode, 429);
    assert.equal(attacker.cookies.has('mds_session'), false);
    const someoneElse = new WebClient(t.app, {}, '198.51.100.7');
    assert.equal(await someoneElse.login(u.email, u.password), '/dashboard/deliveries');
  });
});

describe('invites by e-mail when SMTP_URL is set', () => {
  let t: TestApp;
  let server: SMTPServer;
  const mails: Array<{ to: string; body: string }> = [];
  before(async () => {
    server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      onData(stream, session, callback) {
        let body = '';
        stream.on('data', (c: Buffer) => {
          body += c.toString('utf8');
        });
        stream.on('end', () => {
          mails.push({ to: session.envelope.rcptTo.map((r) => r.address).join(','), body });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.server.address() as { port: number }).port;
    t = await createTestApp('sqlite', { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Dashboard <dashboard@example.com>' });
  });
  after(async () => {
    await t?.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('the invite link is e-mailed to the person (and still answered to whoever invited)', async () => {
    const m = await t.merchant();
    const r = await t.services.accounts.inviteMerchantUser(
      { merchantId: m.merchantId, email: 'new.hire@example.com', role: 'employee' },
      'https://dash.example.com',
    );
    assert.equal(r.mailed, true);
    assert.equal(mails.length, 1);
    assert.equal(mails[0].to, 'new.hire@example.com');
    assert.match(mails[0].body, /^From: Dashboard <dashboard@example\.com>$/m);
    assert.match(mails[0].body, /^Subject: You are invited to the merchant dashboard$/m);
    const unfolded = mails[0].body.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    assert.ok(unfolded.includes(r.url), 'the mail carries the link');
  });
});
