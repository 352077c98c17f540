import { packageRoot } from './package-root.js';

/** servesim's version ("0.1.0"), or "unknown" when package.json cannot be found. */
export function packageVersion(): string {
  return packageRoot()?.version ?? 'unknown';
}
