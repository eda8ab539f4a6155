import type { Command } from 'commander';
import { generateSigningKey } from '../../modules/auth/signing-keys.ts';
import { group, leaf, type Output } from '../context.ts';

export function keysCommands(program: Command, out: Output): void {
  const keys = group(program, 'keys', 'token signing keys');

  // Needs no configuration: it only prints a fresh key.
  leaf(keys, 'generate', 'print a new TOKEN_SIGNING_KEYS entry').action(() => {
    const key = generateSigningKey();
    out.print(`${key}\n\nAdd it in front of TOKEN_SIGNING_KEYS (comma-separated) to rotate; keep the old key until its tokens expire.`, { key });
  });
}
