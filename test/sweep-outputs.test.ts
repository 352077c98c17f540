/**
 * `servesim sweep --out/--report`: a path that cannot be written is refused before the first
 * grid point, naming the flag; a write that fails once the sweep is done loses nothing (the
 * results are kept in a file the error names).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from '@uwdata/flechette';
import { afterAll, describe, expect, it } from 'vitest';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { closeEngines } from '../src/run/run.js';
import { runSweep } from '../src/sweep/run.js';
import { TINY_QUEUE } from './support.js';

const SWEEP = {
  id: 'tiny',
  problem: TINY_QUEUE,
  grid: { 'server.slots': [1, 2, 3, 4] },
  seeds: 2,
};

const unused = (): never => {
  throw new Error('not used by sweep');
};

/**
 * `servesim sweep ARGS...` in this process; `afterPoint` runs as each grid point finishes.
 * Resolves to the exit status, stderr and how many points ran.
 */
async function sweep(args: string[], afterPoint: () => void = () => {}): Promise<{ code: number; err: string; points: number }> {
  let err = '';
  let points = 0;
  const deps: ProgramDeps = {
    loadProblem: unused,
    selectCases: unused,
    runProblem: unused,
    runSweep: (s, opts) => runSweep(s, { ...opts, onPoint: () => void (points++, afterPoint()) }),
  };
  const io: SweepIo = {
    stdout: { write: () => true, isTTY: false },
    stderr: { write: (t: string) => ((err += t), true), isTTY: false } as unknown as SweepIo['stderr'],
    onInterrupt: () => () => {},
  };
  const code = await main(['node', 'servesim', 'sweep', sweepFile, ...args], deps, io);
  return { code, err, points };
}

const dir = mkdtempSync(join(tmpdir(), 'servesim-outputs-'));
const sweepFile = join(dir, 'tiny.json');
writeFileSync(sweepFile, JSON.stringify(SWEEP));

afterAll(closeEngines);

describe('output paths checked before the first grid point', () => {
  it('refuses --out naming a directory', async () => {
    const r = await sweep(['--out', dir, '--format', 'arrow']);
    expect(r).toMatchObject({ code: 2, points: 0, err: `servesim: --out ${dir}: is a directory; name a file\n` });
  });

  it('refuses --report naming a directory', async () => {
    const r = await sweep(['--out', join(dir, 'r.arrow'), '--report', dir]);
    expect(r).toMatchObject({ code: 2, points: 0, err: `servesim: --report ${dir}: is a directory; name a file\n` });
  });

  // not writable even by root: nothing can be created in /proc
  it.skipIf(process.platform !== 'linux')('refuses an --out file that cannot be written', async () => {
    const r = await sweep(['--out', '/proc/version', '--format', 'csv']);
    expect(r.code).toBe(2);
    expect(r.points).toBe(0);
    expect(r.err).toMatch(/^servesim: --out \/proc\/version: cannot write it \(E[A-Z]+: /);
  });
});

describe('a write that fails after the sweep', () => {
  it('keeps the results in a file it names when the folder is gone', async () => {
    const folder = join(dir, 'gone');
    mkdirSync(folder);
    const out = join(folder, 'r.arrow');
    // the folder becomes a file while the sweep runs
    const r = await sweep(['--out', out], () => {
      rmSync(folder, { recursive: true, force: true });
      writeFileSync(folder, 'not a folder');
    });
    expect(r.code).toBe(2);
    expect(r.points).toBe(4);
    const kept = new RegExp(`^servesim: --out ${out}: cannot write it \\(ENOTDIR: .*\\); what it would hold is in (\\S+)$`, 'm').exec(r.err)?.[1];
    expect(kept, r.err).toBeDefined();
    expect(tableFromIPC(readFileSync(kept!)).numRows).toBe(4);
    expect(r.err).not.toMatch(/\n\s+at /);
  });
});
