import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { coverageProblems, merchantOperations, renderTypes } from '../packages/sdk/scripts/check.ts';
import { OPERATIONS } from '../packages/sdk/src/index.ts';
import { OPENAPI_FILE, type OpenApiDocument } from './helpers/contract.ts';

/** What `npm run check` holds the SDK to (packages/sdk/scripts/check.ts), and that it would catch a gap. */

const text = readFileSync(OPENAPI_FILE, 'utf8');
const document = () => JSON.parse(text) as OpenApiDocument & { paths: Record<string, Record<string, any>> };

test('the SDK covers every merchant operation of openapi.json, with its method and path, and nothing else', () => {
  assert.deepEqual(coverageProblems(document()), []);
  assert.deepEqual([...merchantOperations(document()).keys()].sort(), Object.keys(OPERATIONS).sort());
});

test('a merchant operation the SDK lacks fails the check; a courier operation does not', () => {
  const d = document();
  d.paths['/payouts'] = {
    post: { operationId: 'createPayout', security: [{ bearerAuth: [] }], responses: {} },
  };
  d.paths['/courier/breaks'] = { post: { operationId: 'takeBreak', security: [{ courierAuth: [] }], responses: {} } };
  const problems = coverageProblems(d);
  assert.equal(problems.length, 1, problems.join('\n'));
  assert.match(problems[0], /^createPayout \(POST \/payouts\) is a merchant operation of openapi.json that the SDK lacks/);
  // and a path the SDK would send wrong
  const moved = document();
  moved.paths['/transfers/{transferId}'] = moved.paths['/transfer/{transferId}'];
  delete moved.paths['/transfer/{transferId}'];
  assert.match(
    coverageProblems(moved).join('\n'),
    /getTransfer: the SDK sends GET \/transfer\/\{transferId\}, the document says GET \/transfers\/\{transferId\}/,
  );
});

test('the committed generated types are what openapi-typescript makes of openapi.json today', async () => {
  const committed = readFileSync(new URL('../packages/sdk/src/generated/openapi.ts', import.meta.url), 'utf8');
  assert.ok(committed === (await renderTypes(text)), 'packages/sdk/src/generated/openapi.ts is stale: run npm run openapi');
  for (const name of ['Warehouse', 'Quote', 'Transfer', 'Event', 'Problem'])
    assert.match(committed, new RegExp(`^        ${name}: \\{$`, 'm'), `named type ${name}`);
});
