/**
 * The package's version, read from package.json: the CLI runs both from `src/` (tests) and
 * from `dist/src/` (the bin), so the file is looked for upwards from this module.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** servesim's version ("0.1.0"), or "unknown" when package.json cannot be found. */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  cached = 'unknown';
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === 'servesim' && typeof pkg.version === 'string') {
        cached = pkg.version;
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
