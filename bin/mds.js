#!/usr/bin/env node
// The operator CLI. A JS shim so that `npx mds` works: Node strips types from our .ts sources,
// but not from files reached through node_modules/.bin, so we import the real entry by path.
// It runs the compiled JavaScript, bundled, in dist/bundle/ (npm run build, also run by npm install and npm start: no
// type stripper in memory) when that build is newer than every file under src/, else the TypeScript
// sources: never stale code. MDS_SOURCES=1 forces the sources.
import { freshBuild } from './fresh-build.js';

const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(`mds needs Node.js 24 or newer (it runs the TypeScript sources directly); this is ${process.version}.\n`);
  process.exit(1);
}
const { main } = await import(freshBuild(new URL('..', import.meta.url).pathname) ? '../dist/bundle/program.js' : '../src/cli/program.ts');
process.exitCode = await main(process.argv.slice(2));
