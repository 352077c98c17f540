/**
 * `servesim sweep PROBLEM --vary ...`: a grid without a file, --vary, --set and --case as `hint`
 * takes them, makes the sweep a sweep file with that problem, grid and cases would; a sweep file
 * still runs as before. The sweep runner is a stub that keeps the sweep: nothing is simulated.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { loadProblem } from '../src/problem/parse.js';
import { sweepMeta, type SweepOutcome } from '../src/sweep/run.js';
import { loadSweep, type Sweep } from '../src/sweep/spec.js';

const dir = mkdtempSync(join(tmpdir(), 'servesim-sweep-vary-'));
const HOT_PREFIX = resolve('problems/hot-prefix.yaml');

/** `servesim sweep ARGS` in this process with a runner that keeps the sweep and runs nothing. */
async function sweep(...args: string[]): Promise<{ code: number; err: string; sweep: Sweep | undefined }> {
  let err = '';
  let kept: Sweep | undefined;
  const unused = (): never => {
    throw new Error('not used by sweep');
  };
  const deps: ProgramDeps = {
    loadProblem: unused,
    selectCases: unused,
    runProblem: unused,
    runSweep: (s): Promise<SweepOutcome> => {
      kept = s;
      return Promise.resolve({ rows: [], finished: [], unfinished: [], cancelled: false, error: null, meta: sweepMeta(s, [], new Date().toISOString()) });
    },
  };
  const io: SweepIo = {
    stdout: { write: () => true, isTTY: false },
    stderr: { write: (t: string) => ((err += t), true), isTTY: false } as unknown as SweepIo['stderr'],
    onInterrupt: () => () => {},
  };
  const code = await main(['node', 'servesim', 'sweep', ...args], deps, io);
  return { code, err, sweep: kept };
}

/** What a sweep runs: its grid, cases, seeds and problem (not where the problem was read from). */
function ran(s: Sweep | undefined): Partial<Sweep> {
  if (s === undefined) throw new Error('no sweep ran');
  const { id, title, problem, axes, points, caseNames, seeds, maxSeeds, baseSeed, confidence, engine } = s;
  return { id, title, problem, axes, points, caseNames, seeds, maxSeeds, baseSeed, confidence, engine };
}

function sweepFile(name: string, body: object): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(body));
  return file;
}

describe('servesim sweep PROBLEM --vary', () => {
  it('runs the sweep a file with that problem, grid and cases states', async () => {
    const file = sweepFile('slots.json', {
      problem: HOT_PREFIX,
      grid: { 'gpu.slots': { from: 4, to: 16, step: 4 }, 'router.policy': ['least-loaded', 'cache-aware'] },
      cases: ['as-given', 'peak-hour'],
      seeds: 'auto',
      maxSeeds: 128,
    });
    const fromFile = await sweep(file);
    expect(fromFile.code).toBe(0);
    expect(ran(fromFile.sweep)).toEqual(ran(loadSweep(file)));

    const vary = ['--vary', 'gpu.slots=4..16:4', '--vary', 'router.policy=least-loaded,cache-aware', '--case', 'as-given,peak-hour', '--seeds', 'auto', '--max-seeds', '128'];
    for (const problem of ['hot-prefix', 'problems/hot-prefix.yaml', HOT_PREFIX]) {
      const grid = await sweep(problem, ...vary);
      expect(grid.code, grid.err).toBe(0);
      expect(ran(grid.sweep), problem).toEqual(ran(fromFile.sweep));
    }
  });

  it("takes a sweep file's defaults: every case, 64 seeds, engine auto", async () => {
    const { code, sweep: s } = await sweep('mmc', '--vary', 'server.slots=4,5');
    expect(code).toBe(0);
    expect(ran(s)).toMatchObject({ caseNames: ['as-given'], seeds: 64, maxSeeds: 64, engine: 'auto' });
    expect(s!.points.map((p) => p.values)).toEqual([[4], [5]]);
  });

  it('applies --set to the problem every grid point starts from', async () => {
    const { code, sweep: s } = await sweep('hot-prefix', '--set', 'gpu.replicas=8', '--set', 'app.timeout=20s', '--vary', 'gpu.slots=8,16');
    expect(code).toBe(0);
    expect(s!.problem).toEqual(loadProblem(HOT_PREFIX, ['gpu.replicas=8', 'app.timeout=20s']));
    expect(s!.axes.map((a) => a.path)).toEqual(['gpu.slots']);
  });

  it('finds the trace a problem replays when --set changes it', async () => {
    const file = resolve('problems/conversation-trace.yaml');
    const { code, err, sweep: s } = await sweep('problems/conversation-trace.yaml', '--set', 'gpu.replicas=4', '--vary', 'router.policy=cache-aware');
    expect(code, err).toBe(0);
    // the same trace, named by the absolute path the problem carries inline (as hint's does)
    const { traffic, ...rest } = loadProblem(file, ['gpu.replicas=4']);
    expect(s!.problem).toEqual({ ...rest, traffic: { ...traffic, trace: { ...traffic.trace!, file: resolve('problems/traces/mooncake-conversation.jsonl') } } });
    expect(err).toContain(`trace ${resolve('problems/traces/mooncake-conversation.jsonl')}`);
  });

  it('names the option that is wrong', async () => {
    let r = await sweep('mmc', '--set', 'server.slots=5');
    expect([r.code, r.err]).toEqual([2, "servesim: --set goes with --vary (a problem and a grid); a sweep file states its problem's fields and its cases\n"]);
    r = await sweep('mmc', '--case', 'as-given');
    expect(r.err).toContain('servesim: --case goes with --vary');

    r = await sweep('mmc', '--vary', 'server.slots=0,4');
    expect([r.code, r.err]).toEqual([2, 'servesim: --vary: grid point 0 (server.slots=0): mmc.yaml: invalid problem: server.slots: must be a positive integer, got 0 (from --set server.slots=0)\n']);
    r = await sweep('mmc', '--vary', 'server.slots=4', '--case', 'peak-hour');
    expect([r.code, r.err]).toEqual([2, "servesim: --case: unknown case 'peak-hour'; mmc has as-given\n"]);
    r = await sweep('mmc', '--vary', 'server.slots=4', '--set', 'server.slots=x');
    expect(r.err).toMatch(/^servesim: mmc: invalid problem: server\.slots: .*from --set server\.slots=x/);
    r = await sweep('mmc', '--vary', 'server.slots=1..20000', '--vary', 'traffic.rate=1..100');
    expect(r.err).toMatch(/^servesim: --vary: 2,000,000 grid points x 1 cases x 64 seeds/);
    r = await sweep('mmc', '--vary', 'server.slots=4..2');
    expect(r.err).toContain('--vary server.slots: 2 is below 4');

    // a sweep file is not a problem to vary
    const file = sweepFile('mmc.json', { problem: 'mmc', grid: { 'server.slots': [4] } });
    r = await sweep(file, '--vary', 'server.slots=4,5');
    expect([r.code, r.err]).toEqual([2, `servesim: --vary: ${file} is a sweep file, which states its own grid: with --vary, name a problem file or a shipped problem's id\n`]);
    expect(r.sweep).toBeUndefined();
  });
});
