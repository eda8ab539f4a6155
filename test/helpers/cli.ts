import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { TEST_SIGNING_KEYS, type TestApp } from './app.ts';

export const run = promisify(execFile);
export const BIN = new URL('../../bin/mds.js', import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `mds` binary against the test app's database. */
export async function mds(t: TestApp, ...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...t.store.env, TOKEN_SIGNING_KEYS: TEST_SIGNING_KEYS, LOG_LEVEL: 'silent' },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}
