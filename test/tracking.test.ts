import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, describeEachStore, type TestApp } from './helpers/app.ts';
import { quote, RECIPIENT, setup, transferBody } from './helpers/flow.ts';

/** Everything a tracking answer must never contain, checked on the raw text (times and the nonce cut out first: digits could collide with the PIN). */
export function assertNothingPrivate(text: string, tr: any) {
  const plain = text
    .replace(/nonce="[^"]*"/g, '')
    .replace(/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}\.\d{3}Z)?/g, '')
    .replaceAll(tr.trackingCode, '');
  for (const secret of [RECIPIENT.phone, RECIPIENT.lastName, tr.destinationAddress, tr.pickupAddress, tr.transferCode, '516.00', 'totalPrice', 'price']) {
    assert.ok(!plain.includes(secret), `must not contain ${secret}`);
  }
  // The page's own script and style are constant code (a PIN of 1000 met its `every = 1000` once): the PIN is
  // looked for in what the page says, not in them.
  const data = plain.replace(/<(script|style)\b[\s\S]*?<\/\1>/g, '');
  assert.doesNotMatch(data, new RegExp(`(^|[^0-9])${tr.deliveryPin}([^0-9]|$)`), 'no deliveryPin');
  assert.ok(!plain.includes(String(tr.destinationLocation.coordinates[0])) || tr.destinationLocation.coordinates[0] === 0, 'no destination coordinates');
}

describeEachStore('tracking page', (ctx) => {
  test('JSON for Accept: application/json: state, timeline, merchant, cities, courier first name, a relative drawing; nothing private', async () => {
    const t = ctx();
    const { m, w } = await setup(t, '5000', 'sandbox');
    const q = await quote(t, m, w.id);
    const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
    assert.equal(tr.trackingUrl, `/track/${tr.trackingCode}`);
    const created = tr.createdAt;
    t.clock.advance(60_000);
    await t.as(m, { method: 'POST', url: `/sandbox/transfer/${tr.id}/advance`, payload: { to: 'courierAssigned' } });
    const res = await t.request({ method: 'GET', url: tr.trackingUrl, headers: { accept: 'application/json' } });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.headers['cache-control'], 'no-store');
    const at = new Date(t.clock.now()).toISOString();
    assert.deepEqual(res.json(), {
      trackingCode: tr.trackingCode,
      state: 'courierAssigned',
      active: true,
      merchant: { name: 'Shop' },
      pickup: { city: 'Gulf' },
      destination: { city: 'Gulf' },
      courier: { firstName: 'Sandbox' },
      // The sandbox courier waits at the pickup once assigned (it moves along the way after pickup).
      map: { pickup: { x: 12, y: 50 }, destination: { x: 88, y: 50 }, courier: { x: 12, y: 50, at } },
      timeline: [
        { type: 'transfer.created', state: 'inProgress', label: 'Order placed', occurredAt: created },
        { type: 'transfer.courier_assigned', state: 'courierAssigned', label: 'Courier Sandbox is on the way to pick it up', occurredAt: at },
      ],
      updatedAt: at,
      sandbox: true,
      // Picked up now, then 11.12 km × 1.35 at 20 km/h (2702 s) plus 3 minutes at the door.
      estimatedDeliveryAt: new Date(t.clock.now() + 2_882_000).toISOString(),
    });
    assertNothingPrivate(res.body, tr);
  });

  test('HTML for browsers: the timeline, a drawing, a nonce CSP, no outside asset; unknown codes get a 404 page (or a problem as JSON)', async () => {
    const t = ctx();
    const { m, w } = await setup(t);
    const q = await quote(t, m, w.id);
    const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
    const res = await t.request({ method: 'GET', url: tr.trackingUrl, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'; script-src 'nonce-[A-Za-z0-9+/=]+'/);
    assert.match(res.body, /<h1 id="state">Waiting for a courier<\/h1>/);
    assert.match(res.body, /<li data-state="inProgress"><span class="label">Order placed<\/span>/);
    assert.match(res.body, /<svg class="map"/);
    assert.doesNotMatch(res.body, /(src|href)="(https?:)?\/\//, 'no outside asset');
    assertNothingPrivate(res.body, tr);

    const missing = await t.request({ method: 'GET', url: '/track/doesNotExist123', headers: { accept: 'text/html' } });
    assert.equal(missing.statusCode, 404);
    assert.match(missing.body, /Tracking code not found/);
    const missingJson = await t.request({ method: 'GET', url: '/track/doesNotExist123', headers: { accept: 'application/json' } });
    assert.equal(missingJson.statusCode, 404);
    assert.equal(missingJson.json().type, 'TRACKING_CODE_NOT_FOUND');
    // A code no transfer could have (a mistyped link, a truncated one with a dot, far too long) is as unknown: the same 404 page, not a 400.
    for (const code of ['abc.def', 'x'.repeat(100), '%C3%A9t%C3%A9']) {
      const page = await t.request({ method: 'GET', url: `/track/${code}`, headers: { accept: 'text/html' } });
      assert.equal(page.statusCode, 404, code);
      assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(page.body.replace(/nonce="[^"]+"/g, ''), missing.body.replace(/nonce="[^"]+"/g, ''));
      const json = await t.request({ method: 'GET', url: `/track/${code}`, headers: { accept: 'application/json' } });
      assert.equal(json.statusCode, 404, code);
      assert.equal(json.json().type, 'TRACKING_CODE_NOT_FOUND');
    }
  });

  test('PUBLIC_BASE_URL makes trackingUrl absolute', async () => {
    const t = await createTestApp(ctx().store.name, { PUBLIC_BASE_URL: 'https://api.example.com/' }, ctx().store);
    try {
      const { m, w } = await setup(t);
      const q = await quote(t, m, w.id);
      const tr = (await t.as(m, { method: 'POST', url: '/transfer', payload: transferBody(q.id) })).json();
      assert.equal(tr.trackingUrl, `https://api.example.com/track/${tr.trackingCode}`);
    } finally {
      await t.close();
    }
  });
});

describe('tracking page rate limit', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp('sqlite', { TRACKING_RATE_LIMIT_PER_MINUTE: '3' });
  });
  after(async () => t?.close());

  test('per address: the 4th request in a minute is 429 RATE_LIMITED with Retry-After; a minute later it is served again', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await t.request({ method: 'GET', url: '/track/abc', headers: { accept: 'application/json' } })).statusCode, 404);
    const limited = await t.request({ method: 'GET', url: '/track/abc', headers: { accept: 'application/json' } });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '60');
    assert.equal(limited.json().type, 'RATE_LIMITED');
    t.clock.advance(60_000);
    assert.equal((await t.request({ method: 'GET', url: '/track/abc', headers: { accept: 'application/json' } })).statusCode, 404);
  });
});
