// `npm run build` (also run by `npm install` through prepare, and before `npm start`): src/ compiled to
// dist/ as plain JavaScript (tsc, types erased, no type check: `npm run check` does that), and the files
// that are not TypeScript (templates, static assets, JSON) copied beside it. The server started from
// JavaScript skips Node's type stripper (about 25 MiB of RSS, WebAssembly memory that never shrinks).
// Then bundled into dist/bundle/ (below), the module bin/mds.js runs.
// bin/mds.js runs dist/ only while dist/.built is newer than every file under src/, so nothing ever
// runs stale compiled code: after an edit, it runs the sources until the next build.
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, openSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { build, type Plugin } from 'esbuild';

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
await bundle();
const stamp = join(dist, '.built');
closeSync(openSync(stamp, 'w'));
utimesSync(stamp, started, started);

/**
 * dist/bundle/: the compiled tree and the ES-module libraries it imports as one module (esbuild), which
 * bin/mds.js runs; lazily imported modules (metrics) stay chunks of their own. Node keeps a record, the
 * source and the bytecode of every module it loads: ~900 of them (typebox and kysely are a few hundred
 * files each) held 16 MiB of idle RSS that one module with the same code does not (137 -> 121 MiB).
 * The CommonJS packages (fastify, pg, ajv, pino...) stay in node_modules: bundled as well, they saved
 * nothing measurable, and some find files beside themselves. Whitespace and comments go (an ASCII-only
 * source is stored at one byte per character); identifiers are not minified, so stack traces keep their
 * names, except where two modules' top-level names collide and esbuild numbers one (typebox's FromType2,
 * the service's own render2 or loginPages2). Without keepNames: it wrapped every named function and arrow,
 * the ones made per request too, in a call that redefines its `name` (1 979 sites), to keep only those
 * numbered names exact. Nothing reads them; no class is numbered today, so no error's `name` changes
 * (docs/benchmarks.md "Thirty-fourth pass").
 */
async function bundle(): Promise<void> {
  const inlined = new Set(['typebox', 'kysely', 'jose', 'uuid', 'otpauth', 'eta']);
  const outdir = join(dist, 'bundle');
  const packagesOutside: Plugin = {
    name: 'packages-outside',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith('node:')) return { path: args.path, external: true };
        const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
        return inlined.has(name) ? undefined : { path: args.path, external: true };
      });
    },
  };
  // import.meta in a bundled file names the bundle's chunk; the few files that read assets beside
  // themselves (templates, static files, the default tariff) get their own location back.
  const ownLocation: Plugin = {
    name: 'own-location',
    setup(b) {
      b.onLoad({ filter: /\.js$/ }, async (args) => {
        if (!args.path.startsWith(`${dist}/`)) return undefined;
        const code = await readFile(args.path, 'utf8');
        if (!code.includes('import.meta')) return undefined;
        const file = JSON.stringify(relative(outdir, args.path));
        const dir = JSON.stringify(`${relative(outdir, dirname(args.path))}/`);
        return {
          loader: 'js',
          contents: code.replace(/import\.meta\.(dirname|url)/g, (_, what) =>
            what === 'url' ? `new URL(${file}, import.meta.url).href` : `decodeURIComponent(new URL(${dir}, import.meta.url).pathname.slice(0, -1))`,
          ),
        };
      });
    },
  };
  await build({
    entryPoints: { program: join(dist, 'cli', 'program.js') },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    minifyWhitespace: true,
    legalComments: 'external',
    logLevel: 'warning',
    plugins: [packagesOutside, ownLocation],
  });
}
