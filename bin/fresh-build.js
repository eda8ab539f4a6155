// Whether dist/ (npm run build) may run: its stamp dist/.built exists and no file under src/ is newer
// (an edit after the build, a checkout, a pull). About 2 ms of stat calls. MDS_SOURCES=1 says no.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** @param {string} root the package's directory (holding src/ and dist/) */
export function freshBuild(root, env = process.env) {
  if (env.MDS_SOURCES === '1') return false;
  let built;
  try {
    built = statSync(join(root, 'dist', '.built')).mtimeMs;
  } catch {
    return false;
  }
  for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
    if (!entry.isDirectory() && statSync(join(entry.parentPath, entry.name)).mtimeMs > built) return false;
  }
  return true;
}
