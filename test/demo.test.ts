import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..');

function runDemo(): Promise<{ code: number | null; output: string }> {
  return new Promise((ok, fail) => {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    delete env.FORCE_COLOR;
    const child = spawn(process.execPath, ['scripts/demo.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGINT'), 90_000);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      ok({ code, output });
    });
  });
}

test('npm run demo walks the merchant and courier flow over HTTP, from quote to delivery and a refunded cancel, and never prints a secret', async () => {
  const { code, output } = await runDemo();
  assert.equal(code, 0, output);

  // Every request line is followed by its response status line.
  const exchanges = [...output.matchAll(/^→ (GET|POST|PUT) (\S+)\n[\s\S]*?^← (\d{3}) /gm)].map(
    (m) => `${m[1]} ${m[2].replace(/[0-9a-f-]{36}/, '{id}')} ${m[3]}`,
  );
  assert.deepEqual(exchanges, [
    'POST /auth/token 200',
    'POST /warehouses 201',
    'GET /warehouses 200',
    'POST /options 201',
    'POST /transfer 201',
    'POST /transfer 201', // the retry with the same Idempotency-Key
    'GET /transfer/{id} 200',
    'POST /auth/token 200',
    'PUT /courier/status 200',
    'GET /courier/jobs?radiusKm=5 200',
    'POST /courier/jobs/{id}/accept 200',
    'POST /courier/jobs/{id}/pickup 200',
    'POST /courier/jobs/{id}/deliver 200',
    'GET /transfer/{id}/events 200',
    'POST /options 201',
    'POST /transfer 201',
    'POST /transfer/{id}/cancel 200',
    'GET /balance 200',
  ]);
  for (let i = 1; i <= 17; i++) assert.match(output, new RegExp(`^Step ${i}/17: `, 'm'));
  assert.doesNotMatch(output, /^Step 18\//m, 'the step count is right');
  assert.match(output, /^\$ mds couriers create --name "Ivan Petrov" --phone "\+7 900 111-22-33" --json$/m);
  assert.match(output, /^\$ mds merchants create --name "Demo shop" --balance 5000 --json$/m);
  assert.match(output, /^\$ mds balance show --merchant [0-9a-f-]{36}$/m);
  assert.match(output, /idempotent-replayed: true/);
  assert.match(output, /^Done: 5000\.00 - \d+\.\d{2} \(delivered\) = /m);
  assert.match(output, /"type": "transfer\.delivered"/);
  assert.match(output, /REFUND/);

  // Masked: a prefix and an ellipsis, never the whole value.
  assert.match(output, /"clientSecret": "sk_[\w-]{3}…"/);
  assert.match(output, /"access_token": "eyJ[\w-]{3}…"/);
  assert.match(output, /authorization: Bearer eyJ[\w-]{3}…/);
  assert.doesNotMatch(output, /sk_[\w-]{8,}/, 'a client secret was printed');
  assert.doesNotMatch(output, /eyJ[\w-]{8,}/, 'an access token (or part of one beyond the mask) was printed');
});
