// `npm run openapi`: writes openapi.json, the OpenAPI 3.1 document generated from the route schemas
// (the same document the service serves at GET /openapi.json). It is committed: it is the contract
// merchants integrate against, and tests validate every response against it.
//   node scripts/openapi.ts --write   regenerate openapi.json
//   node scripts/openapi.ts --check   exit 1 if the committed openapi.json differs from the code
//   node scripts/openapi.ts           print the document to stdout
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig, parseSigningKeys } from '../src/config.ts';
import { migrateToLatest, openDatabase } from '../src/db/database.ts';

export const OPENAPI_PATH = resolve(import.meta.dirname, '..', 'openapi.json');

/** The document as committed: pretty JSON, two-space indent, trailing newline. */
export async function renderOpenApi(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'mds-openapi-'));
  const url = `sqlite:${join(dir, 'openapi.sqlite')}`;
  const database = openDatabase({ url, poolSize: 1 });
  try {
    await migrateToLatest(database);
    // Only the environment given here: the document must not depend on the caller's shell.
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: url });
    const app = await buildApp({ config, database, signingKeys: parseSigningKeys(`openapi:${randomBytes(32).toString('base64url')}`) });
    try {
      await app.ready();
      return `${JSON.stringify(app.swagger(), null, 2)}\n`;
    } finally {
      await app.close();
    }
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first differing line, to point at what changed. */
export function firstDifference(committed: string, generated: string): string {
  const a = committed.split('\n');
  const b = generated.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1}:\n  committed: ${a[i] ?? '(end of file)'}\n  generated: ${b[i] ?? '(end of file)'}`;
  }
  return '(no difference)';
}

async function main(args: string[]): Promise<number> {
  const generated = await renderOpenApi();
  if (args.includes('--write')) {
    writeFileSync(OPENAPI_PATH, generated);
    console.log(`wrote ${OPENAPI_PATH}`);
    return 0;
  }
  if (args.includes('--check')) {
    let committed: string;
    try {
      committed = readFileSync(OPENAPI_PATH, 'utf8');
    } catch {
      console.error(`openapi.json is missing: run npm run openapi and commit the file`);
      return 1;
    }
    if (committed !== generated) {
      console.error(
        `openapi.json is out of date: the route schemas changed but the committed document did not.\n` +
          `Run npm run openapi and commit openapi.json.\nFirst difference at ${firstDifference(committed, generated)}`,
      );
      return 1;
    }
    console.log('openapi.json is up to date');
    return 0;
  }
  process.stdout.write(generated);
  return 0;
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
