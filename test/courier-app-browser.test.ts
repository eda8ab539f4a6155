import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp, warehouseBody } from './helpers/app.ts';
import { ARTIFACTS, browserSkip, launchChromium, seriousViolations } from './helpers/browser.ts';
import { quoteBody, transferBody } from './helpers/flow.ts';
import { type Problems, watch } from './helpers/pages.ts';
import { STORES } from './helpers/stores.ts';

/**
 * The courier app in headless Chromium as a phone (390x844, touch, geolocation granted and placed
 * near the warehouse), on each store: activation link -> password -> login by phone -> go online ->
 * the dispatcher's offer arrives on the open page -> Accept -> transfer code -> a wrong PIN shows the
 * attempts left -> the right PIN; the merchant's API says delivered and Today shows the payout.
 * Offers declined and left to expire. Also: location denied, the network lost
 * and back (a PIN typed offline is kept and marked not sent; the position is sent again), and a
 * second courier who gets the 404 page for the first one's job. axe on every page; screenshots of
 * each step at 390 px (docs/screenshots/courier-*.png with UPDATE_SCREENSHOTS=1, artifacts/ otherwise).
 */

const SKIP = browserSkip('courier app');
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? resolve(import.meta.dirname, '..', 'docs', 'screenshots') : join(ARTIFACTS, 'screenshots');
const PHONE = { width: 390, height: 844 };
const WAREHOUSE = { latitude: 55.7575, longitude: 37.6136 };
const NEAR = { latitude: 55.7585, longitude: 37.6146 };
const PASSWORD = 'my courier passphrase';
const DESTINATION = { display_name: 'Komsomolsky Ave 24, Moscow', lat: 55.7339, lng: 37.5886, city: 'Moscow' };

for (const store of STORES) {
  describe(`courier app in headless Chromium as a phone [${store}]`, { skip: SKIP }, () => {
    let t: TestApp;
    let browser: Browser;
    let base: string;
    let m: Merchant;
    let warehouseId: string;
    before(async () => {
      t = await createTestApp(store, { SUPPORT_PHONE: '+7 495 123-45-67' }, undefined, { now: Date.parse('2026-11-20T09:00:00.000Z') });
      base = await t.listen();
      browser = await launchChromium();
      mkdirSync(SHOTS, { recursive: true });
      m = await t.merchant('Corner shop', '10000');
      warehouseId = (await t.as(m, { method: 'POST', url: '/warehouses', payload: warehouseBody() })).json().id;
    });
    after(async () => {
      await browser?.close();
      await t?.close();
    });

    /** A phone: 390x844, touch, geolocation granted (or not) at `at`. */
    async function phone(opts: { geolocation?: boolean; at?: { latitude: number; longitude: number } } = {}) {
      const context = await browser.newContext({
        viewport: PHONE,
        isMobile: true,
        hasTouch: true,
        deviceScaleFactor: 1,
        locale: 'en-GB',
        timezoneId: 'UTC',
        ...(opts.geolocation === false ? {} : { geolocation: opts.at ?? NEAR, permissions: ['geolocation'] }),
      });
      const page = await context.newPage();
      const problems = watch(page, base);
      return { context, page, problems };
    }

    async function check(page: Page, what: string, shot?: string): Promise<void> {
      assert.deepEqual(await seriousViolations(page), [], `axe on ${what}`);
      if (shot && store === 'sqlite')
        await page.screenshot({ path: join(SHOTS, `courier-${shot}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
    }

    let phones = 0;
    async function courier(name: string): Promise<{ id: string; phone: string; activation: string }> {
      const phoneNumber = `+7 903 ${String(100 + ++phones)}-00-0${phones}`;
      const { courier: c } = await t.services.couriers.create(name, phoneNumber);
      const link = await t.services.accounts.courierActivationLink(c.id, base);
      return { id: c.id, phone: phoneNumber, activation: link.url };
    }

    const paidIds: string[] = [];
    async function paid(description = 'Two books') {
      const q = (await t.as(m, { method: 'POST', url: '/options', payload: quoteBody(warehouseId, { destinationLocation: DESTINATION }) })).json();
      const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id, { description }) });
      assert.equal(res.statusCode, 201, res.body);
      paidIds.push(res.json().id);
      return res.json();
    }

    // A test that stops half-way must not leave a paid transfer waiting: the dispatcher would offer
    // it in the next test, ahead of that test's own. The merchant cancels whatever still has no courier.
    afterEach(async () => {
      for (const id of paidIds.splice(0)) {
        if ((await t.as(m, { method: 'GET', url: `/transfer/${id}` })).json().state !== 'inProgress') continue;
        const res = await t.as(m, { method: 'POST', url: `/transfer/${id}/cancel`, payload: { reason: 'OTHER' } });
        assert.equal(res.statusCode, 200, res.body);
      }
    });

    async function logIn(page: Page, phoneNumber: string) {
      await page.goto(`${base}/courier-app/login`);
      await page.getByLabel('Phone number').fill(phoneNumber);
      await page.getByLabel('Password').fill(PASSWORD);
      await Promise.all([page.waitForURL(`${base}/courier-app/shift`), page.getByRole('button', { name: 'Log in' }).tap()]);
    }

    async function activate(page: Page, c: { activation: string }) {
      await page.goto(c.activation);
      await page.getByLabel('New password').fill(PASSWORD);
      await page.getByLabel('The same password again').fill(PASSWORD);
      await Promise.all([page.waitForURL(`${base}/courier-app/login`), page.getByRole('button', { name: 'Set password' }).tap()]);
    }

    async function goOnline(page: Page) {
      await Promise.all([page.waitForURL(`${base}/courier-app/shift`), page.getByRole('button', { name: 'Go online' }).tap()]);
      await page.getByRole('heading', { name: 'You are online' }).waitFor();
    }

    /** Every other courier offline, so the dispatcher's only candidate is this one. */
    async function aloneOnline(courierId: string) {
      for (const other of await t.services.couriers.list()) {
        if (other.id !== courierId && other.online) await t.services.couriers.updateStatus(other.id, { online: false });
      }
    }

    const noProblems = (problems: Problems, allowed: RegExp[] = []) =>
      assert.deepEqual({ ...problems, console: problems.console.filter((c) => !allowed.some((r) => r.test(c))) }, { console: [], failed: [], foreign: [] });

    test('from the activation link to a delivered parcel: an offer pushed by the dispatcher arrives without a reload and is accepted, code, wrong PIN with attempts left, right PIN; the merchant API and Today agree', {
      timeout: 180_000,
    }, async () => {
      const c = await courier('Pavel Orlov');
      const tr = await paid();
      const { context, page, problems } = await phone();

      await page.goto(c.activation);
      await check(page, 'activation', 'activate');
      await activate(page, c);
      await page.getByLabel('Phone number').waitFor();
      await check(page, 'login', 'login');
      await logIn(page, c.phone);
      await check(page, 'shift (offline)', 'shift-offline');
      // Installable: the service worker is active for the app's scope.
      assert.equal(await page.evaluate(() => navigator.serviceWorker.ready.then((r) => r.scope)), `${base}/courier-app/`);

      await goOnline(page);
      const status = await t.services.couriers.status(c.id);
      assert.deepEqual([status.online, status.location?.lat, status.location?.lng], [true, NEAR.latitude, NEAR.longitude]);
      await check(page, 'shift (online)', 'shift-online');

      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).tap();
      await page.getByRole('heading', { name: 'Open jobs near you' }).waitFor();
      const card = page.getByRole('listitem').filter({ hasText: 'Take this job' }).filter({ hasText: 'Main warehouse' });
      assert.match(await card.innerText(), /Payout\s+275\.38 RUB/);
      await check(page, 'open jobs', 'jobs');

      // The dispatcher offers the job: the card arrives on the open page without a reload.
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Shift' }).tap();
      await page.getByRole('heading', { name: 'Offers' }).waitFor();
      await aloneOnline(c.id);
      assert.equal((await t.services.dispatch.runOnce()).offered, 1);
      const offer = page.locator('.offer-card').filter({ hasText: 'Main warehouse' });
      await offer.waitFor({ timeout: 10_000 });
      assert.match(
        await offer.innerText(),
        /Pickup\s+Tverskaya St 1, Moscow, 0\.1 km from you\s+To\s+Moscow, 3\.1 km\s+Payout\s+275\.38 RUB\s+Time left\s+\d+ s/,
      );
      assert.match((await page.locator('#offers-note').innerText()).trim(), /^New offer from Main warehouse: 275\.38 RUB\.$/);
      await check(page, 'an offer', 'offer');
      await Promise.all([page.waitForURL(`${base}/courier-app/jobs/${tr.id}`), offer.getByRole('button', { name: 'Accept' }).tap()]);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'courierAssigned');
      const navigate = page.getByRole('link', { name: 'Navigate to the pickup' });
      assert.equal(await navigate.getAttribute('href'), 'https://www.google.com/maps/dir/?api=1&destination=55.7575,37.6136&travelmode=driving');
      assert.equal(
        await page.getByRole('link', { name: 'Open in another maps app' }).getAttribute('href'),
        'geo:55.7575,37.6136?q=55.7575,37.6136(Main%20warehouse)',
      );
      assert.equal(await page.getByText('Anna Ivanova').count(), 0, 'no recipient before pickup');
      await check(page, 'job: to the pickup', 'job-pickup');

      await page.getByLabel('Transfer code').fill(tr.transferCode);
      await Promise.all([page.waitForURL(`${base}/courier-app/jobs/${tr.id}`), page.getByRole('button', { name: 'Confirm pickup' }).tap()]);
      await page.getByRole('heading', { name: 'Go to the recipient' }).waitFor();
      assert.equal(await page.getByRole('link', { name: '+7 900 000-00-00' }).getAttribute('href'), 'tel:+79000000000');
      await check(page, 'job: to the recipient', 'job-recipient');

      await page.getByLabel("The recipient's PIN").fill(tr.deliveryPin === '0000' ? '1111' : '0000');
      await page.getByRole('button', { name: 'Confirm delivery' }).tap();
      await page.getByRole('alert').filter({ hasText: 'PIN' }).waitFor();
      assert.equal(
        (await page.getByRole('alert').filter({ hasText: 'PIN' }).innerText()).trim(),
        'That PIN is wrong: 4 attempts left before the job is locked.',
      );
      assert.equal(await page.getByLabel("The recipient's PIN").getAttribute('aria-invalid'), 'true');
      await check(page, 'job: wrong PIN', 'job-wrong-pin');

      await page.getByLabel("The recipient's PIN").fill(tr.deliveryPin);
      await Promise.all([page.waitForURL(`${base}/courier-app/jobs/${tr.id}`), page.getByRole('button', { name: 'Confirm delivery' }).tap()]);
      await page.getByRole('heading', { name: 'Delivered', exact: true }).waitFor();
      const seen = (await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json();
      assert.equal(seen.state, 'delivered');
      assert.equal(await page.getByText('Anna Ivanova').count(), 0, 'the recipient is gone once delivered');
      await check(page, 'job: delivered', 'job-delivered');

      await page.getByRole('link', { name: 'See today' }).tap();
      await page.waitForURL(`${base}/courier-app/today`);
      assert.equal(await page.locator('#today-total').innerText(), '275.38 RUB');
      assert.match(await page.getByRole('main').innerText(), /1 delivered\./);
      await check(page, 'today', 'today');
      noProblems(problems, [/status of 422/]);
      await context.close();
    });

    test('the network lost and back: the position is sent again, a PIN typed offline is kept and marked not sent, then goes through', {
      timeout: 180_000,
    }, async () => {
      const c = await courier('Nina Sokolova');
      const tr = await paid('A lamp');
      const { context, page, problems } = await phone();
      await activate(page, c);
      await logIn(page, c.phone);
      await goOnline(page);
      await page.locator('#location-state', { hasText: 'Position sent at' }).waitFor({ timeout: 15_000 });

      // Offline on the shift page: nothing is sent, and the app says so; back online, the latest point goes.
      await context.setOffline(true);
      await context.setGeolocation({ latitude: 55.76, longitude: 37.62 });
      await page.getByText('Offline: nothing is being sent until the network is back.').waitFor();
      await page.locator('#location-state', { hasText: 'Not sent: no network' }).waitFor({ timeout: 15_000 });
      await check(page, 'shift offline', 'offline');
      t.clock.advance(5_000); // the service keeps one point a second (by its clock)
      await context.setOffline(false);
      await page.locator('#location-state', { hasText: 'Position sent at' }).waitFor({ timeout: 15_000 });
      assert.deepEqual((await t.services.couriers.status(c.id)).location, { lat: 55.76, lng: 37.62, updatedAt: new Date(t.clock.now()).toISOString() });

      await t.services.couriers.accept(c.id, tr.id);
      await t.services.couriers.pickUp(c.id, tr.id, tr.transferCode);
      await page.goto(`${base}/courier-app/jobs/${tr.id}`);
      await context.setOffline(true);
      await page.getByLabel("The recipient's PIN").fill(tr.deliveryPin);
      await page.getByRole('button', { name: 'Confirm delivery' }).tap();
      const note = page.locator('.not-sent').first();
      await note.waitFor();
      assert.equal(await note.innerText(), 'Not sent: you are offline. What you entered is kept here; press the button again when the network is back.');
      assert.equal(await page.getByLabel("The recipient's PIN").inputValue(), tr.deliveryPin, 'the PIN is still there');
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'pickedUp', 'nothing was sent');
      await check(page, 'PIN not sent', 'not-sent');
      await context.setOffline(false);
      await page.getByText('The network is back: what you entered has still not been sent. Press the button to send it.').waitFor();
      await Promise.all([page.waitForURL(`${base}/courier-app/jobs/${tr.id}`), page.getByRole('button', { name: 'Confirm delivery' }).tap()]);
      await page.getByRole('heading', { name: 'Delivered', exact: true }).waitFor();
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'delivered');
      noProblems(problems, [/ERR_INTERNET_DISCONNECTED/]);
      await context.close();
    });

    test('a position kept offline for more than a minute is dropped as stale, not sent when the network is back, and the page says so', {
      timeout: 120_000,
    }, async () => {
      const c = await courier('Stas Stale');
      const { context, page, problems } = await phone();
      await page.clock.install();
      await activate(page, c);
      await logIn(page, c.phone);
      await goOnline(page);
      await page.locator('#location-state', { hasText: 'Position sent at' }).waitFor({ timeout: 15_000 });
      const before = (await t.services.couriers.status(c.id)).location;
      await context.setOffline(true);
      await context.setGeolocation({ latitude: 55.77, longitude: 37.63 });
      await page.locator('#location-state', { hasText: 'Not sent: no network' }).waitFor({ timeout: 15_000 });
      await page.clock.fastForward(61_000);
      await page.locator('#location-state', { hasText: 'kept while offline, was dropped: too old to send.' }).waitFor();
      assert.match(
        await page.locator('#location-state').innerText(),
        /^Position is stale: the last fix is from .+\. Check that location is on\. The position from .+, kept while offline, was dropped: too old to send\.$/,
      );
      await check(page, 'position dropped as stale', 'stale');
      t.clock.advance(5000);
      await context.setOffline(false);
      await page.clock.fastForward(2000);
      assert.deepEqual((await t.services.couriers.status(c.id)).location, before, 'the stale point was not sent');
      noProblems(problems, [/ERR_INTERNET_DISCONNECTED/]);
      await context.close();
    });

    test("location denied: going online says how to allow it; a second courier gets the 404 page for the first one's job", { timeout: 120_000 }, async () => {
      const first = await courier('Oleg First');
      const second = await courier('Sofia Second');
      const tr = await paid('Shoes');
      await t.services.couriers.updateStatus(first.id, { online: true, lat: WAREHOUSE.latitude, lng: WAREHOUSE.longitude });
      await t.services.couriers.accept(first.id, tr.id);

      const { context, page, problems } = await phone({ geolocation: false });
      await activate(page, second);
      await logIn(page, second.phone);
      await page.getByRole('button', { name: 'Go online' }).tap();
      await page.locator('#location-state', { hasText: 'Location is denied' }).waitFor();
      assert.equal(
        (await page.locator('#location-state').innerText()).trim(),
        'Location is denied: allow location for this site in your browser settings to go online.',
      );
      assert.equal((await t.services.couriers.status(second.id)).online, false);
      await check(page, 'location denied', 'location-denied');

      const res = await page.goto(`${base}/courier-app/jobs/${tr.id}`);
      assert.equal(res?.status(), 404);
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Not found');
      assert.equal(await page.getByText('Anna Ivanova').count(), 0);
      assert.equal(await page.getByText('Main warehouse').count(), 0);
      await check(page, 'not found', 'not-found');
      noProblems(problems, [/status of 404/]);
      await context.close();
    });
    test('offers: Decline takes the card away with a message; an offer left to run out counts down and goes away saying it expired', {
      timeout: 120_000,
    }, async () => {
      const c = await courier('Dina Decline');
      const { context, page, problems } = await phone();
      await activate(page, c);
      await logIn(page, c.phone);
      await goOnline(page);
      await aloneOnline(c.id);
      const first = await paid('Flowers');
      await t.services.dispatch.runOnce();
      const card = page.locator('.offer-card');
      await card.waitFor({ timeout: 10_000 });
      await Promise.all([page.waitForURL(`${base}/courier-app/shift`), card.getByRole('button', { name: 'Decline' }).tap()]);
      await page.getByText('Offer declined: it goes to another courier.').waitFor();
      assert.equal(await page.locator('.offer-card').count(), 0);
      await check(page, 'offer declined', 'offer-declined');
      const [declined] = await t.services.dispatch.listOffers(c.id);
      assert.equal(declined, undefined);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${first.id}` })).json().state, 'inProgress');

      // The next transfer is offered to this courier; it is left to run out (the service's clock says 3 s are left).
      const second = await paid('Cake');
      await t.services.dispatch.runOnce();
      await card.waitFor({ timeout: 10_000 });
      const [open] = await t.services.dispatch.listOffers(c.id);
      assert.equal(open.transferId, second.id);
      t.clock.advance(Date.parse(open.expiresAt) - t.clock.now() - 3000);
      await page.reload();
      await page
        .locator('.offer-card [data-countdown]')
        .filter({ hasText: /^[0-3]$/ })
        .waitFor();
      await page.getByText('The offer from Main warehouse expired: it went to another courier.').waitFor({ timeout: 10_000 });
      assert.equal(await page.locator('.offer-card').count(), 0);
      await check(page, 'offer expired', 'offer-expired');
      t.clock.advance(5000);
      await t.services.dispatch.runOnce();
      assert.equal((await t.services.dispatch.getOffer(c.id, open.id)).status, 'expired');
      noProblems(problems);
      await context.close();
    });
  });
}
