/**
 * The package as a user gets it (`npm run test:package`, run by CI): `npm pack` from this
 * checkout, installed without the optional dependencies (no webgpu, bullmq or ioredis) into an
 * empty folder, and the installed `servesim` run from a folder outside both.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const INSTALL_MS = 10 * 60_000;
const root = mkdtempSync(join(tmpdir(), 'servesim-package-'));
const prefix = join(root, 'prefix');
// the user's folder: neither the checkout nor the installed package
const work = join(root, 'work');
const bin = join(prefix, 'node_modules', '.bin', 'servesim');
const installed = join(prefix, 'node_modules', 'servesim');

function servesim(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(bin, args, { cwd: work, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

beforeAll(() => {
  for (const dir of [prefix, work]) mkdirSync(dir);
  // prepare builds dist/ before packing, as from a clean clone
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', root], { encoding: 'utf8' }).trim().split('\n').at(-1)!;
  // into a folder of its own: npm ignores --omit=optional with --global
  execFileSync('npm', ['install', '--prefix', prefix, '--omit=optional', '--no-audit', '--no-fund', join(root, tarball)], {
    cwd: work,
    stdio: 'inherit',
  });
}, INSTALL_MS);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the packed package, installed with --omit=optional', () => {
  it('ships what runs, and installs none of the optional dependencies', () => {
    for (const file of ['dist/src/cli/main.js', 'kernels', 'problems/mmc.yaml', 'sweeps/mmc.yaml', 'bench/results/crossover.json', 'README.md', 'docs/README.md', 'docs/cli.md', 'LICENSE']) {
      expect(existsSync(join(installed, file)), file).toBe(true);
    }
    for (const absent of ['test', 'src', 'dist/bench']) expect(existsSync(join(installed, absent)), absent).toBe(false);
    for (const optional of ['webgpu', 'bullmq', 'ioredis']) {
      expect(existsSync(join(prefix, 'node_modules', optional)), optional).toBe(false);
    }
  });

  it('runs a shipped problem by its id', () => {
    const r = servesim('run', 'mmc', '--seeds', '4', '--format', 'json');
    expect(r.code, r.err).toBe(0);
    const result = JSON.parse(r.out) as { problem: { id: string }; rows: { seeds: number }[] };
    expect(result.problem.id).toBe('mmc');
    expect(result.rows.length).toBeGreaterThan(0);
    expect(result.rows.every((row) => row.seeds === 4)).toBe(true);
  });

  it('replays the shipped trace by the trace problem\'s id, from wherever it is installed', () => {
    const r = servesim('run', 'conversation-trace', '--seeds', '2', '--case', 'as-given', '--format', 'json');
    expect(r.code, r.err).toBe(0);
    expect((JSON.parse(r.out) as { rows: { requests: number }[] }).rows[0]!.requests).toBeGreaterThan(0);
  });

  it('sweeps a shipped sweep file and reports it as HTML', () => {
    let r = servesim('sweep', join(installed, 'sweeps', 'mmc.yaml'), '--seeds', '2', '--out', 'mmc.arrow');
    expect(r.code, r.err).toBe(0);
    r = servesim('report', 'mmc.arrow', '--out', 'mmc.html');
    expect(r.code, r.err).toBe(0);
    expect(readFileSync(join(work, 'mmc.html'), 'utf8')).toMatch(/^<!doctype html>/i);
  });

  it('serves the HTTP API', async () => {
    const child = spawn(bin, ['serve', '--port', '0'], { cwd: work });
    try {
      const address = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (chunk: Buffer) => {
          err += chunk.toString();
          const m = /serving on (\S+)/.exec(err);
          if (m) resolve(m[1]!);
        });
        child.on('exit', () => reject(new Error(`serve exited: ${err}`)));
      });
      const res = await fetch(`${address}/v1/problems`);
      expect(res.status).toBe(200);
      expect(JSON.stringify(await res.json())).toContain('mmc');
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('says which package to install for the GPU engine and the queue', () => {
    let r = servesim('run', 'mmc', '--seeds', '2', '--engine', 'gpu');
    expect(r.code).toBe(2);
    expect(r.err).toContain('npm install webgpu');
    r = servesim('worker', '--queue', 'redis://127.0.0.1:1');
    expect(r.code).toBe(2);
    expect(r.err).toContain('npm install bullmq ioredis');
  });
});
