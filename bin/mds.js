#!/usr/bin/env node
// The operator CLI. A JS shim so that `npx mds` works: Node strips types from our .ts sources,
// but not from files reached through node_modules/.bin, so we import the real entry by path.
import { main } from '../src/main.ts';

process.exitCode = await main(process.argv.slice(2));
