import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freshBuild } from '../bin/fresh-build.js';

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
