import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../', import.meta.url));

describe('bench/without-counters.patch', () => {
  // npm run bench:counters times the engine against itself with the patch applied: a patch that
  // no longer applies would fail the benchmark, so it fails here first, where the engine changed
  it('applies to this checkout\'s engine', () => {
    const run = () => execFileSync('patch', ['--dry-run', '--forward', '--batch', '-p1', '-d', root, '-i', 'bench/without-counters.patch'], { cwd: root, encoding: 'utf8' });
    expect(run).not.toThrow();
  });
});
