import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { createMerchant, openStore, type ServerProcess, type StoreAccess, startServerProcess } from './helpers/server-process.ts';
import { createStore, type TestStore } from './helpers/stores.ts';

/**
 * The SDK's README example, extracted from packages/sdk/README.md and run as written against a real
 * server process, with the BUILT package (dist, as npm would install it): under the machine's Node 20
 * (/usr/bin/node, or SDK_NODE20) to prove the SDK's Node 20 support, and under this Node.
 */

const ROOT = resolve(import.meta.dirname, '..');
const SDK = join(ROOT, 'packages/sdk');
const NODE20 = process.env.SDK_NODE20 ?? '/usr/bin/node';

function example(): string {
  const readme = readFileSync(join(SDK, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.equal(blocks.length, 1, 'the README has exactly one js example');
  return blocks[0];
}

function run(node: string, file: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(node, [file], { cwd: join(file, '..'), env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      ok({ code, output });
    });
  });
}

let store: TestStore;
let access: StoreAccess;
let server: ServerProcess;
let dir: string;

before(async () => {
  // The package as published: build dist from the sources of this checkout.
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', SDK], { stdio: 'inherit' });
  store = await createStore('sqlite');
  access = await openStore(store.env);
  server = await startServerProcess({ env: store.env });
  // A project that installed the package: node_modules/@merchant-delivery/sdk -> packages/sdk (package.json exports dist).
  dir = mkdtempSync(join(tmpdir(), 'mds-sdk-example-'));
  mkdirSync(join(dir, 'node_modules/@merchant-delivery'), { recursive: true });
  symlinkSync(SDK, join(dir, 'node_modules/@merchant-delivery/sdk'), 'dir');
  writeFileSync(join(dir, 'example.mjs'), example());
});

after(async () => {
  await server?.stop();
  await access?.close();
  await store?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

for (const [name, node] of [
  ['Node 20 (the machine node)', NODE20],
  ['this Node', process.execPath],
] as const) {
  test(`the README example runs as written on ${name}, with the built package`, async () => {
    assert.ok(existsSync(node), `${node} is missing: set SDK_NODE20 to a Node 20 binary`);
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    if (node === NODE20) assert.match(version, /^v20\./, `${node} is ${version}, not Node 20`);
    const m = await createMerchant(access, `README shop ${version}`, '5000');
    const env = {
      MDS_BASE_URL: server.url,
      MDS_CLIENT_ID: m.clientId,
      MDS_CLIENT_SECRET: m.clientSecret,
      MDS_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    };
    const { code, output } = await run(node, join(dir, 'example.mjs'), env);
    assert.equal(code, 0, output);
    assert.match(output, /^Standard delivery: \d+\.\d{2} RUB$/m);
    assert.match(output, /^transfer [0-9a-f-]{36}: inProgress, PIN for the recipient \d{4}$/m);
    assert.match(output, /^QUOTE_ALREADY_USED \(409\): already transfer [0-9a-f-]{36}; request \S+$/m);
    assert.match(output, /^#1 quote\.created -> -\n#2 transfer\.created -> inProgress$/m);
    assert.match(output, /^in progress: [0-9a-f-]{36}$/m);
    assert.match(output, /^webhook: transfer\.created for [0-9a-f-]{36}$/m);
    assert.match(output, /^receiver answered 204$/m);
    assert.ok(!output.includes(m.clientSecret), 'the example printed the secret');
  });
}
