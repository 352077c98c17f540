/**
 * The folder of servesim's package.json: code runs both from `src/` (tests) and from
 * `dist/src/` (the bin), so paths to the package's own files start here, not at a module.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: { dir: string; version: string } | null | undefined;

/** The package root and its package.json's version, or null when it cannot be found. */
export function packageRoot(): { readonly dir: string; readonly version: string } | null {
  if (cached !== undefined) return cached;
  cached = null;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'servesim' && typeof pkg.version === 'string') {
        cached = { dir, version: pkg.version };
        break;
      }
    } catch {
      // no package.json here: keep looking upwards
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return cached;
}
