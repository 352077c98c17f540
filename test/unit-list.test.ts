/**
 * `npm run test:unit` (vitest.unit.config.ts): the files it lists exist, `npm test` runs them
 * too, and none imports what the list promises to leave out: a child process, the HTTP
 * service, the CPU pool (its workers run from dist/, so they need a build), a GPU adapter, the
 * queue's Redis clients or a browser.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LEFT_OUT } from '../vitest.config.ts';
import { UNIT } from '../vitest.unit.config.ts';

/** Modules a unit test may not import directly, by the start of their specifier. */
const LEFT_OUT_MODULES = [
  'node:child_process',
  'child_process',
  '../src/service/server',
  '../src/pool/',
  '../src/gpu/adapter',
  '../src/gpu/engine',
  '../src/run/run',
  '../src/sweep/run',
  '../src/queue/connection',
  '../src/queue/worker',
  '../src/queue/dispatcher',
  './cli-support',
  './queue-support',
  'webgpu',
  'playwright-core',
  'bullmq',
  'ioredis',
];
/** test/support.ts's helpers that start the CPU pool. */
const POOL_HELPERS = ['testPool', 'runCase', 'closePool'];

function imports(text: string): { names: string[]; from: string }[] {
  return [...text.matchAll(/^import\s+(?:type\s+)?([^;']*?)\s*from\s*'([^']+)'/gm)].map((m) => ({
    names: (m[1] ?? '').replace(/[{}]/g, ' ').split(/[\s,]+/).filter((n) => n !== '' && n !== 'type'),
    from: m[2]!,
  }));
}

describe('npm run test:unit', () => {
  it.each(UNIT)('%s exists and npm test runs it too', (file) => {
    expect(existsSync(file), file).toBe(true);
    expect(Object.values(LEFT_OUT).flat()).not.toContain(file);
  });

  it.each(UNIT)('%s starts no child process, service, pool, GPU, queue or browser', (file) => {
    const text = readFileSync(file, 'utf8');
    for (const { names, from } of imports(text)) {
      expect(LEFT_OUT_MODULES.filter((m) => from.startsWith(m)), `${file} imports ${from}`).toEqual([]);
      if (from === './support.js') expect(names.filter((n) => POOL_HELPERS.includes(n)), `${file} imports from ${from}`).toEqual([]);
    }
    expect(text, `${file} runs the build's output`).not.toMatch(/['"`]dist\//);
  });

  it('finds the imports it checks', () => {
    const found = imports("import { spawn } from 'node:child_process';\nimport type { Problem } from '../src/model/problem.js';\n");
    expect(found).toEqual([
      { names: ['spawn'], from: 'node:child_process' },
      { names: ['Problem'], from: '../src/model/problem.js' },
    ]);
  });
});
