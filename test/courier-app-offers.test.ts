import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore, type Merchant, type TestApp, warehouseBody } from './helpers/app.ts';
import { quoteBody, transferBody } from './helpers/flow.ts';
import { TEST_PASSWORD, WebClient } from './helpers/people.ts';

/**
 * Offers in the courier app (server side): the dispatcher's offer shows as a card on the shift page
 * and arrives on the session's event stream; Accept makes the job the courier's (the merchant API
 * says courierAssigned), Decline passes it on, an expired offer answers a message; another courier's
 * offer answers 404 and the CSRF token is required. Each test works far from the others (its own
 * spot on the map), so the dispatcher offers its transfer to its courier only.
 */

let spots = 0;
let phones = 0;

async function place(t: TestApp) {
  const spot = { lat: 20 + ++spots, lng: 20 + spots };
  const m = await t.merchant(`Offer shop ${spots}`, '5000');
  const w = (
    await t.as(m, {
      method: 'POST',
      url: '/warehouses',
      payload: warehouseBody({ locationMetadata: { display_name: `Spot ${spots}`, lat: spot.lat, lng: spot.lng, city: 'Far town' } }),
    })
  ).json();
  return { m, w, spot };
}

async function paid(t: TestApp, m: Merchant, w: { id: string }, spot: { lat: number; lng: number }) {
  const q = (
    await t.as(m, {
      method: 'POST',
      url: '/options',
      payload: quoteBody(w.id, { destinationLocation: { lat: spot.lat, lng: spot.lng + 0.02, display_name: 'Far street 1', city: 'Far town' } }),
    })
  ).json();
  const res = await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** An activated courier, logged in and online at `at`. */
async function onlineCourier(t: TestApp, at: { lat: number; lng: number }, name = 'Offer Courier') {
  const phone = `+7 904 ${String(100 + (++phones % 900))}-${String(Date.now() % 100).padStart(2, '0')}-${String(phones % 100).padStart(2, '0')}`;
  const { courier } = await t.services.couriers.create(name, phone);
  const link = await t.services.accounts.courierActivationLink(courier.id, 'http://app.test');
  await t.services.accounts.setPasswordWithLink(new URL(link.url).searchParams.get('token')!, TEST_PASSWORD);
  const web = new WebClient(t.app);
  await web.get('/courier-app/login');
  assert.equal((await web.post('/courier-app/login', { phone, password: TEST_PASSWORD })).statusCode, 303);
  await web.get('/courier-app/shift');
  assert.equal((await web.post('/courier-app/shift/status', { online: 'true', lat: String(at.lat + 0.001), lng: String(at.lng) })).statusCode, 303);
  await web.get('/courier-app/shift');
  return { courierId: courier.id, web };
}

const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');

/** The first `offer` event of the session's stream (real HTTP: the stream is a long answer). */
async function firstStreamedOffer(t: TestApp, web: WebClient): Promise<{ contentType: string; csp: string; card: Record<string, unknown> }> {
  const base = await t.listen();
  const abort = new AbortController();
  const res = await fetch(`${base}/courier-app/offers/stream`, { headers: { cookie: web.cookieHeader() }, signal: abort.signal });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('the stream ended');
      buffer += new TextDecoder().decode(value);
      const m = /event: offer\nid: [^\n]+\ndata: ([^\n]+)\n\n/.exec(buffer);
      if (m) return { contentType: res.headers.get('content-type') ?? '', csp: res.headers.get('content-security-policy') ?? '', card: JSON.parse(m[1]) };
    }
  } finally {
    abort.abort();
  }
}

describeEachStore(
  'courier app offers',
  (ctx) => {
    test("the dispatcher's offer is a card (areas, distance, payout, time left) on the page and on the session's stream; Accept makes the job the courier's", async () => {
      const t = ctx();
      const { m, w, spot } = await place(t);
      const c = await onlineCourier(t, spot, 'Pavel Offer');
      const tr = await paid(t, m, w, spot);
      assert.equal((await t.services.dispatch.runOnce()).offered, 1);
      const [offer] = await t.services.dispatch.listOffers(c.courierId);
      assert.equal(offer.transferId, tr.id);

      const streamed = await firstStreamedOffer(t, c.web);
      assert.match(streamed.contentType, /^text\/event-stream/);
      assert.match(streamed.csp, /default-src 'none'/);
      assert.deepEqual(streamed.card, {
        id: offer.id,
        pickupName: 'Main warehouse',
        pickupAddress: 'Tverskaya St 1, Moscow',
        destinationArea: 'Far town',
        distanceKm: (offer.distanceMeters / 1000).toFixed(1),
        deliveryDistanceKm: offer.deliveryDistanceKm.toFixed(1),
        payout: `${offer.payout.toFixed(2)} RUB`,
        expiresAt: offer.expiresAt,
        secondsLeft: 30,
      });

      const shift = await c.web.get('/courier-app/shift');
      assert.match(
        text(shift.body),
        /Offers .* Main warehouse Pickup Tverskaya St 1, Moscow, 0\.1 km from you To Far town, \d\.\d km Payout \d+\.\d\d RUB Time left 30 s Accept Decline/,
      );
      assert.equal(shift.body.includes('Anna Ivanova'), false, 'an offer does not name the recipient');
      const forged = await c.web.post(`/courier-app/offers/${offer.id}/accept`, { _csrf: 'forged' });
      assert.equal(forged.statusCode, 403);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress', 'a refused form changes nothing');

      const accepted = await c.web.post(`/courier-app/offers/${offer.id}/accept`);
      assert.deepEqual([accepted.statusCode, accepted.headers.location], [303, `/courier-app/jobs/${tr.id}`]);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'courierAssigned');
      assert.equal((await c.web.get(`/courier-app/jobs/${tr.id}`)).statusCode, 200);
    });

    test('Decline passes the offer on (never offered to this courier again); an expired offer answers a message; another courier gets 404', async () => {
      const t = ctx();
      const { m, w, spot } = await place(t);
      const a = await onlineCourier(t, spot, 'Anna Decline');
      const tr = await paid(t, m, w, spot);
      await t.services.dispatch.runOnce();
      const [offer] = await t.services.dispatch.listOffers(a.courierId);

      const far = await onlineCourier(t, { lat: -40, lng: -40 }, 'Far Away');
      await far.web.get('/courier-app/shift');
      assert.equal((await far.web.post(`/courier-app/offers/${offer.id}/accept`)).statusCode, 404, "another courier's offer is not found");
      assert.equal((await far.web.post(`/courier-app/offers/${offer.id}/decline`)).statusCode, 404);
      assert.equal((await t.services.dispatch.getOffer(a.courierId, offer.id)).status, 'open');

      const declined = await a.web.post(`/courier-app/offers/${offer.id}/decline`);
      assert.deepEqual([declined.statusCode, declined.headers.location], [303, '/courier-app/shift']);
      const after = await a.web.get('/courier-app/shift');
      assert.match(text(after.body), /Offer declined: it goes to another courier\. .* No offer right now\./);
      assert.equal((await t.services.dispatch.getOffer(a.courierId, offer.id)).status, 'declined');
      await t.services.dispatch.runOnce();
      assert.deepEqual(await t.services.dispatch.listOffers(a.courierId), [], 'never offered to this courier again');
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress');

      // Expiry: a second courier gets the next offer and lets it run out.
      const b = await onlineCourier(t, spot, 'Boris Late');
      await t.services.dispatch.runOnce();
      const [late] = await t.services.dispatch.listOffers(b.courierId);
      assert.equal(late.transferId, tr.id);
      t.clock.advance(31_000);
      await b.web.get('/courier-app/shift');
      const expired = await b.web.post(`/courier-app/offers/${late.id}/accept`);
      assert.deepEqual([expired.statusCode, expired.headers.location], [303, '/courier-app/shift']);
      assert.match(text((await b.web.get('/courier-app/shift')).body), /That offer has expired: the job went to another courier\./);
      assert.equal((await t.as(m, { method: 'GET', url: `/transfer/${tr.id}` })).json().state, 'inProgress', 'an expired offer gives no job');
    });
  },
  { OFFER_TTL_SECONDS: '30' },
);
