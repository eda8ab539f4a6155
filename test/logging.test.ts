import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachStore, warehouseBody } from './helpers/app.ts';

describeEachStore(
  'logs never contain secrets',
  (ctx) => {
    test('client secrets, access tokens and Authorization headers appear in no log line', async () => {
      const t = ctx();
      const m = await t.merchant();
      const token = await t.token(m);
      // Exercise every way a secret reaches the service, successful and failing.
      await t.request({
        method: 'POST',
        url: '/auth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=client_credentials&client_id=${m.clientId}&client_secret=${m.clientSecret}`,
      });
      await t.request({
        method: 'POST',
        url: '/auth/token',
        headers: { authorization: `Basic ${Buffer.from(`${m.clientId}:${m.clientSecret}`).toString('base64')}` },
        payload: { grant_type: 'client_credentials' },
      });
      await t.request({
        method: 'POST',
        url: '/auth/token',
        payload: { grant_type: 'client_credentials', client_id: m.clientId, client_secret: `${m.clientSecret}x` },
      });
      await t.as(token, { method: 'POST', url: '/warehouses', payload: warehouseBody() });
      await t.as(token, { method: 'GET', url: '/warehouses?limit=0' });
      await t.as(`${token}x`, { method: 'GET', url: '/warehouses' });
      const original = t.services.warehouses.list;
      t.services.warehouses.list = async () => {
        throw new Error('boom');
      };
      await t.as(token, { method: 'GET', url: '/warehouses' });
      t.services.warehouses.list = original;

      const all = t.logs.join('\n');
      assert.ok(t.logs.length > 10, 'trace logging captured the requests');
      const [, payload, signature] = token.split('.');
      for (const secret of [m.clientSecret, token, payload, signature, Buffer.from(`${m.clientId}:${m.clientSecret}`).toString('base64')]) {
        assert.equal(all.includes(secret), false, `a secret leaked into the logs: ${secret.slice(0, 8)}…`);
      }
      assert.doesNotMatch(all, /Bearer /i);
    });
  },
  { LOG_LEVEL: 'trace' },
);
