/**
 * A CPU-only install (`npm install --omit=optional`): a missing webgpu, bullmq or ioredis is
 * reported as the package to install, and `run` takes a shipped problem's id as `hint` does.
 * (test/package.test.ts runs the installed package itself.)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/program.js';
import type { SweepIo } from '../src/cli/sweep-command.js';
import { ServesimError } from '../src/errors.js';
import { installMessage, isMissingPackage } from '../src/optional-package.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { loadQueueModule } from '../src/queue/connection.js';
import { runProblem } from '../src/run/run.js';

// a folder with no node_modules above it: the queue's packages cannot be found from here
const outside = mkdtempSync(join(tmpdir(), 'servesim-optional-'));
afterAll(() => rmSync(outside, { recursive: true, force: true }));

/**
 * What Node throws, loading `name` by `import()` or `require()` where it is not installed: run
 * in a plain node (vitest resolves a test's imports itself), rebuilt from its code and message.
 */
function loadError(name: string, how: 'import' | 'require'): Error {
  const report = '(e) => console.log(JSON.stringify({ code: e.code, message: e.message }))';
  const script = how === 'import' ? `import('${name}').catch(${report})` : `try { require('${name}') } catch (e) { (${report})(e) }`;
  const r = spawnSync(process.execPath, ['--input-type', how === 'import' ? 'module' : 'commonjs', '-e', script], { cwd: outside, encoding: 'utf8' });
  const { code, message } = JSON.parse(r.stdout) as { code: string; message: string };
  return Object.assign(new Error(message), { code });
}

describe('a missing optional package', () => {
  it('is told apart from other failures, for import() and require()', () => {
    for (const how of ['import', 'require'] as const) {
      const err = loadError('bullmq', how);
      expect(isMissingPackage(err, 'bullmq'), how).toBe(true);
      expect(isMissingPackage(err, 'ioredis'), how).toBe(false);
    }
    expect(isMissingPackage(new Error("Cannot find package 'webgpu'"), 'webgpu')).toBe(false);
  });

  it('for the queue, names both packages to install', async () => {
    const missing = loadError('ioredis', 'import');
    const err = await loadQueueModule(() => Promise.reject(missing)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServesimError);
    expect((err as Error).message).toBe(installMessage('--queue', ['bullmq', 'ioredis']));
    expect((err as Error).message).toContain('npm install bullmq ioredis');
    // any other failure of the module is its own
    const other = new Error('boom');
    await expect(loadQueueModule(() => Promise.reject(other))).rejects.toBe(other);
  });
});

describe('run PROBLEM', () => {
  async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await main(['node', 'servesim', 'run', ...args], { loadProblem, selectCases, runProblem }, {
      stdout: { write: (t: string) => (out += t) },
      stderr: { write: (t: string) => (err += t) },
      onInterrupt: () => () => {},
    } as unknown as SweepIo);
    return { code, out, err };
  }

  it("takes a shipped problem's id", async () => {
    const r = await run('mmc', '--seeds', '2', '--engine', 'cpu', '--format', 'json');
    expect(r.code, r.err).toBe(0);
    expect((JSON.parse(r.out) as { problem: { id: string } }).problem.id).toBe('mmc');
  });

  it('says when an id names no shipped problem', async () => {
    const r = await run('no-such-problem');
    expect(r.code).toBe(2);
    expect(r.err).toContain('no shipped problem "no-such-problem"');
  });
});
