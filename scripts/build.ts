// `npm run build` (also run by `npm install` through prepare, and before `npm start`): src/ compiled to
// dist/ as plain JavaScript (tsc, types erased, no type check: `npm run check` does that), and the files
// that are not TypeScript (templates, static assets, JSON) copied beside it. The server started from
// JavaScript skips Node's type stripper (about 25 MiB of RSS, WebAssembly memory that never shrinks).
// bin/mds.js runs dist/ only while dist/.built is newer than every file under src/, so nothing ever
// runs stale compiled code: after an edit, it runs the sources until the next build.
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, openSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const src = join(root, 'src');
const dist = join(root, 'dist');
// Stamped with the time the build started: a source edited while it runs is newer than the stamp.
const started = new Date();

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--noCheck'], { stdio: 'inherit' });
if (result.status !== 0) {
  rmSync(dist, { recursive: true, force: true });
  process.exit(result.status ?? 1);
}
const copyAssets = (dir: string) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) copyAssets(path);
    else if (!entry.name.endsWith('.ts')) {
      const target = join(dist, relative(src, path));
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(path, target);
    }
  }
};
copyAssets(src);
const stamp = join(dist, '.built');
closeSync(openSync(stamp, 'w'));
utimesSync(stamp, started, started);
