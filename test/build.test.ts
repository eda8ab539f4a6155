import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freshBuild } from '../bin/fresh-build.js';
import { startServerProcess } from './helpers/server-process.ts';

const ROOT = join(import.meta.dirname, '..');

test('mds runs the compiled build only while it is newer than every source file, never stale code', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'mds-build-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'src', 'web', 'templates'), { recursive: true });
  const source = join(root, 'src', 'app.ts');
  const template = join(root, 'src', 'web', 'templates', 'layout.eta');
  writeFileSync(source, '');
  writeFileSync(template, '');
  const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds);
  at(source, 1000);
  at(template, 1000);
  assert.equal(freshBuild(root, {}), false, 'no build yet');

  mkdirSync(join(root, 'dist'));
  writeFileSync(join(root, 'dist', '.built'), '');
  at(join(root, 'dist', '.built'), 2000);
  assert.equal(freshBuild(root, {}), true, 'built after the last edit');
  assert.equal(freshBuild(root, { MDS_SOURCES: '1' }), false, 'MDS_SOURCES=1 forces the sources');

  at(template, 3000);
  assert.equal(freshBuild(root, {}), false, 'a template edited after the build (in a subfolder)');
  at(template, 1000);
  at(source, 3000);
  assert.equal(freshBuild(root, {}), false, 'a source edited after the build');
});

// The bundle is built without esbuild's keepNames (scripts/build.ts): a name that collides across modules is
// numbered (render2) and a function's `name` says so. Harmless for functions; a numbered class would change
// the `name` of its errors (jose sets this.name = this.constructor.name), so none may be numbered.
/** Classes in bundled code whose name esbuild numbered: `class X2` or `var X2=class` (a name like Eta$1 is the library's own). */
const numberedClasses = (code: string): string[] =>
  [...code.matchAll(/\bclass ([A-Za-z_][\w]*?[A-Za-z_]\d+)\b|\bvar ([A-Za-z_][\w]*?[A-Za-z_]\d+)=class\b/g)].map((m) => m[1] ?? m[2] ?? '');

test('the bundle numbers no class, so every error keeps the name its class gives it', {
  skip: freshBuild(ROOT) ? false : 'dist/ is older than src/ here: npm run build (CI builds it at npm ci)',
}, () => {
  assert.deepEqual(numberedClasses('var ConfigError2=class extends Error{} class Job3 extends Base{} var Eta$1=class{} var ConfigError=class{}'), [
    'ConfigError2',
    'Job3',
  ]);
  const bundle = join(ROOT, 'dist', 'bundle');
  const code = readdirSync(bundle)
    .filter((f) => f.endsWith('.js'))
    .map((f) => readFileSync(join(bundle, f), 'utf8'))
    .join('\n');
  assert.match(code, /var AppError=class extends Error/, "the bundle holds the service's classes under their own names");
  assert.deepEqual(numberedClasses(code), []);
});

// The bundle (scripts/build.ts) rewrites import.meta in the files that read what lies beside them: the
// pages' templates and static files, the courier app's service worker, the default tariff (read at start).
test('the built server (one bundle) finds the files beside its modules: static assets, templates, the service worker', {
  skip: freshBuild(ROOT) ? false : 'dist/ is older than src/ here: npm run build (CI builds it at npm ci)',
}, async (t) => {
  assert.ok(existsSync(join(ROOT, 'dist', 'bundle', 'program.js')));
  const dir = mkdtempSync(join(tmpdir(), 'mds-bundle-'));
  const server = await startServerProcess({ env: { DATABASE_URL: `sqlite:${join(dir, 'b.sqlite')}` } });
  t.after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const css = await fetch(`${server.url}/static/app.css`);
  assert.equal(css.status, 200);
  assert.equal(await css.text(), readFileSync(join(ROOT, 'src', 'web', 'static', 'app.css'), 'utf8'));
  const worker = await fetch(`${server.url}/courier-app/sw.js`);
  assert.equal(worker.status, 200);
  const source = readFileSync(join(ROOT, 'src', 'web', 'courier-app', 'install', 'sw.js'), 'utf8');
  const text = await worker.text();
  assert.match(text, /"\/courier-app\/offline"/);
  assert.equal(text.split('\n').length, source.split('\n').length);
  const offline = await fetch(`${server.url}/courier-app/offline`);
  assert.equal(offline.status, 200);
  assert.match(await offline.text(), /<title>No network/);
});
