import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MDS_BIN, type MdsResult, runMds } from '../../scripts/lib/server-process.ts';
import { TEST_SIGNING_KEYS, type TestApp } from './app.ts';

export const run = promisify(execFile);
export const BIN = MDS_BIN;

export type CliResult = MdsResult;

/** Runs the real `mds` binary against the test app's database. */
export function mds(t: TestApp, ...args: string[]): Promise<CliResult> {
  return runMds(args, { ...process.env, ...t.store.env, TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS, LOG_LEVEL: 'silent' }, 0);
}
