import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { main, type CliDeps, type CliIo } from '../src/cli/program.js';
import {
  collectCases,
  collectSet,
  parseEngine,
  formatOption,
  parseSeedBase,
  parseSeeds,
} from '../src/cli/options.js';
import { compact, createProgressReporter, duration } from '../src/cli/progress.js';
import { ServesimError } from '../src/errors.js';
import type { Problem, Scenario } from '../src/model/problem.js';
import { SUMMARY_COLUMNS, type CaseSummary } from '../src/model/summary.js';
import type { RunOptions, RunResult } from '../src/run/types.js';

describe('option parsers', () => {
  it('takes a positive integer for --seeds', () => {
    expect(parseSeeds('64')).toBe(64);
    expect(parseSeeds(' 1 ')).toBe(1);
    expect(parseSeeds('auto')).toBe('auto');
    for (const bad of ['0', '-3', 'abc', '1.5', '', '1e3', '0x10', '99999999999']) {
      expect(() => parseSeeds(bad), bad).toThrow(/--seeds/);
    }
  });

  it('takes a u32 for --seed', () => {
    expect(parseSeedBase('0')).toBe(0);
    expect(parseSeedBase('4294967295')).toBe(4294967295);
    expect(() => parseSeedBase('4294967296')).toThrow(/--seed /);
    expect(() => parseSeedBase('-1')).toThrow(/--seed /);
  });

  it('takes the listed formats and engines only', () => {
    const parseFormat = (text: string): unknown => formatOption().parseArg!(text, undefined);
    expect(parseFormat('csv')).toBe('csv');
    expect(() => parseFormat('xyz')).toThrow(/--format must be one of table, json, csv/);
    expect(parseEngine('gpu')).toBe('gpu');
    expect(() => parseEngine('tpu')).toThrow(/--engine/);
  });

  it('collects repeated and comma-listed cases', () => {
    let cases = collectCases('as-given,peak-hour');
    cases = collectCases('server-dies', cases);
    cases = collectCases('peak-hour', cases);
    expect(cases).toEqual(['as-given', 'peak-hour', 'server-dies']);
    expect(collectCases('all', cases)).toBe('all');
    expect(collectCases('x', 'all')).toBe('all');
    expect(() => collectCases(',')).toThrow(/--case/);
  });

  it('collects --set in order and checks its shape', () => {
    expect(collectSet('b=2', collectSet('gpu.slots=32'))).toEqual(['gpu.slots=32', 'b=2']);
    expect(collectSet('a.b=x=y')).toEqual(['a.b=x=y']);
    for (const bad of ['nonsense', '=3', ' =3']) expect(() => collectSet(bad)).toThrow(/--set/);
  });

  it('prints rates compactly', () => {
    expect(compact(1_234_567)).toBe('1.23M');
    expect(compact(100)).toBe('100');
    expect(compact(45_600)).toBe('45.6k');
  });
});

// ---- the command, with doubles for the parser and the runner

const SCENARIOS: Scenario[] = ['as-given', 'peak-hour', 'server-dies'].map((name) => ({
  name,
  rateScale: 1,
  burst: null,
  slowdown: null,
  failures: [],
}));

function fakeProblem(id: string): Problem {
  return {
    id,
    title: `Title of ${id}`,
    goals: { success: 0.99, p99: 2_000_000 },
    confidence: 0.9,
    seed: 42,
    traffic: { trace: null },
    cases: SCENARIOS,
  } as unknown as Problem;
}

function fakeRow(name: string): CaseSummary {
  const row: Record<string, unknown> = {};
  for (const col of SUMMARY_COLUMNS) row[col] = 0;
  return {
    ...(row as unknown as CaseSummary),
    case: name,
    seeds: 4,
    verdict: 'FAIL',
    undecided: '',
    missed: 'success',
    passes: false,
    p99_ms: Number.NaN,
    longest_queue_at: '',
    overload_reason: '',
  };
}

interface Harness {
  readonly deps: CliDeps;
  readonly io: CliIo;
  readonly out: () => string;
  readonly err: () => string;
  readonly runs: RunOptions[];
  readonly loads: { path: string; overrides: readonly string[] | undefined }[];
  interrupt(): void;
}

function harness(runProblem?: CliDeps['runProblem'], loadError?: Error): Harness {
  let out = '';
  let err = '';
  let interruptHandler: (() => void) | null = null;
  const runs: RunOptions[] = [];
  const loads: Harness['loads'] = [];
  const deps: CliDeps = {
    loadProblem(path, overrides) {
      loads.push({ path, overrides });
      if (loadError) throw loadError;
      return fakeProblem(path.replace(/\.yaml$/, ''));
    },
    selectCases(problem, names) {
      if (names === 'all') return problem.cases;
      return names.map((n) => {
        const s = problem.cases.find((c) => c.name === n);
        if (!s) throw new ServesimError('SERVESIM_CASE_UNKNOWN', `unknown case '${n}'`, 'case');
        return s;
      });
    },
    runProblem:
      runProblem ??
      (async (problem, options) => {
        runs.push(options);
        options.onProgress?.({ instancesDone: 1, instancesTotal: 1, arrivalsDone: 10 });
        const names = options.caseNames ?? problem.cases.map((c) => c.name);
        const result: RunResult = {
          problem,
          rows: names.map(fakeRow),
          meta: {
            problemId: problem.id,
            engine: 'reference',
            adapter: null,
            batches: [{ instances: options.seeds * names.length, configs: names.length, engine: 'reference', adapter: null }],
            seeds: options.seeds,
            maxSeeds: options.maxSeeds ?? options.seeds,
            baseSeed: options.baseSeed,
            servesimVersion: '0.1.0',
            trace: null,
          },
        };
        return result;
      }),
  };
  const io: CliIo = {
    stdout: { write: (t: string) => (out += t) },
    stderr: Object.assign(
      { write: (t: string) => ((err += t), true) },
      { isTTY: false },
    ) as unknown as CliIo['stderr'],
    onInterrupt(handler) {
      interruptHandler = handler;
      return () => {
        interruptHandler = null;
      };
    },
  };
  return {
    deps,
    io,
    out: () => out,
    err: () => err,
    runs,
    loads,
    interrupt: () => interruptHandler?.(),
  };
}

const cli = (h: Harness, ...args: string[]): Promise<number> =>
  main(['node', 'servesim', ...args], h.deps, h.io);

describe('servesim run', () => {
  it('runs every case with the defaults and prints a table on stdout', async () => {
    const h = harness();
    expect(await cli(h, 'run', 'hot-prefix.yaml')).toBe(0);
    expect(h.runs).toHaveLength(1);
    expect(h.runs[0]).toMatchObject({ seeds: 64, maxSeeds: 64, baseSeed: 42, engine: 'auto' });
    expect(h.runs[0]!.caseNames).toBeUndefined();
    expect(h.runs[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(h.out()).toContain('hot-prefix — Title of hot-prefix');
    expect(h.out()).toMatch(/as-given\s+FAIL/);
    expect(h.err()).toContain('engine: reference');
    expect(h.err()).not.toContain('as-given');
  });

  it('passes the cases, seeds, seed and overrides on', async () => {
    const h = harness();
    const code = await cli(
      h, 'run', 'p.yaml', '--case', 'peak-hour', '-c', 'as-given,server-dies',
      '--seeds', '8', '--seed', '7', '--set', 'gpu.slots=32', '-s', 'router.policy=random',
      '--engine', 'cpu',
    );
    expect(code).toBe(0);
    expect(h.loads[0]).toEqual({ path: 'p.yaml', overrides: ['gpu.slots=32', 'router.policy=random'] });
    expect(h.runs[0]).toMatchObject({
      seeds: 8,
      baseSeed: 7,
      engine: 'cpu',
      caseNames: ['peak-hour', 'as-given', 'server-dies'],
    });
  });

  it('passes --seeds auto and --max-seeds on as seeds until decided, and refuses a cap below --seeds', async () => {
    const auto = harness();
    expect(await cli(auto, 'run', 'p.yaml', '--seeds', 'auto')).toBe(0);
    expect(auto.runs[0]).toMatchObject({ seeds: 32, maxSeeds: 4096 });
    const capped = harness();
    expect(await cli(capped, 'run', 'p.yaml', '--seeds', '16', '--max-seeds', '128')).toBe(0);
    expect(capped.runs[0]).toMatchObject({ seeds: 16, maxSeeds: 128 });
    const fixed = harness();
    expect(await cli(fixed, 'run', 'p.yaml', '--seeds', '8')).toBe(0);
    expect(fixed.runs[0]).toMatchObject({ seeds: 8, maxSeeds: 8 });
    const low = harness();
    expect(await cli(low, 'run', 'p.yaml', '--seeds', '64', '--max-seeds', '8')).toBe(2);
    expect(low.err()).toContain('--max-seeds');
    expect(low.runs).toHaveLength(0);
  });

  it('--check makes the verdicts the exit status: 1 if a case FAILs, else 3 if one is UNDECIDED, else 0', async () => {
    const verdicts = (...v: CaseSummary['verdict'][]): CliDeps['runProblem'] => async (problem, options) => ({
      problem,
      rows: v.map((verdict, i) => ({ ...fakeRow(`case-${i}`), verdict, passes: verdict === 'PASS' })),
      meta: { problemId: problem.id, engine: 'reference', adapter: null, batches: [], seeds: options.seeds, maxSeeds: options.seeds, baseSeed: options.baseSeed, servesimVersion: '0.1.0', trace: null },
    });
    const status = async (runner: CliDeps['runProblem'], ...flags: string[]): Promise<number> => cli(harness(runner), 'run', 'p.yaml', ...flags);
    expect(await status(verdicts('PASS', 'PASS'), '--check')).toBe(0);
    expect(await status(verdicts('PASS', 'UNDECIDED'), '--check')).toBe(3);
    expect(await status(verdicts('UNDECIDED', 'FAIL', 'PASS'), '--check')).toBe(1);
    // without --check a verdict is a result, not a status
    expect(await status(verdicts('UNDECIDED', 'FAIL'))).toBe(0);
    const h = harness(verdicts('PASS', 'UNDECIDED'));
    await cli(h, 'run', 'p.yaml');
    expect(h.out()).toMatch(/case-1\s+UNDECIDED/);
  });

  it('prints one JSON array for several problems', async () => {
    const h = harness();
    expect(await cli(h, 'run', 'a.yaml', 'b.yaml', '-f', 'json')).toBe(0);
    const parsed = JSON.parse(h.out()) as { problem: { id: string }; rows: { p99_ms: unknown }[] }[];
    expect(parsed.map((p) => p.problem.id)).toEqual(['a', 'b']);
    expect(parsed[0]!.rows[0]!.p99_ms).toBeNull();
  });

  it('prints one JSON object for one problem', async () => {
    const h = harness();
    expect(await cli(h, 'run', 'a.yaml', '--format', 'json')).toBe(0);
    expect((JSON.parse(h.out()) as { problem: { id: string } }).problem.id).toBe('a');
  });

  it('prints one CSV with a problem column for several problems', async () => {
    const h = harness();
    expect(await cli(h, 'run', 'a.yaml', 'b.yaml', '--format', 'csv', '--case', 'as-given')).toBe(0);
    const lines = h.out().trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(['problem', ...SUMMARY_COLUMNS].join(','));
    expect(lines[2]!.startsWith('b,as-given,')).toBe(true);
  });

  it('rejects bad --seeds, naming it, with status 2', async () => {
    for (const bad of ['0', '-3', 'abc']) {
      const h = harness();
      expect(await cli(h, 'run', 'p.yaml', '--seeds', bad)).toBe(2);
      expect(h.err()).toContain('--seeds');
      expect(h.runs).toHaveLength(0);
    }
  });

  it('rejects a bad --format and unknown options', async () => {
    const h = harness();
    expect(await cli(h, 'run', 'p.yaml', '--format', 'xyz')).toBe(2);
    expect(h.err()).toContain('--format');
    const u = harness();
    expect(await cli(u, 'run', 'p.yaml', '--bogus')).toBe(2);
    expect(u.err()).toMatch(/unknown option '--bogus'/);
    const m = harness();
    expect(await cli(m, 'run')).toBe(2);
    expect(m.err()).toMatch(/missing required argument/);
  });

  it('reports a ServesimError by its message, without a stack', async () => {
    const h = harness(undefined, new ServesimError('SERVESIM_PROBLEM_INVALID', 'must be at least 1', 'gpu.slots'));
    expect(await cli(h, 'run', 'p.yaml')).toBe(2);
    expect(h.err()).toBe('servesim: gpu.slots: must be at least 1\n');
  });

  it('reports an unknown case from selectCases before running anything', async () => {
    const h = harness();
    expect(await cli(h, 'run', 'a.yaml', '--case', 'nope')).toBe(2);
    expect(h.err()).toContain("servesim: case: unknown case 'nope'");
    expect(h.runs).toHaveLength(0);
  });

  it('prints the stack of an unexpected error, with status 1', async () => {
    const h = harness(async () => {
      throw new TypeError('boom');
    });
    expect(await cli(h, 'run', 'p.yaml')).toBe(1);
    expect(h.err()).toMatch(/TypeError: boom\n\s+at /);
  });

  it('cancels on Ctrl-C with status 130', async () => {
    const run: CliDeps['runProblem'] = (_problem, options) =>
      new Promise((_resolve, reject) => {
        options.signal!.addEventListener('abort', () => reject(new Error('aborted')));
        setTimeout(() => h.interrupt(), 5);
      });
    const h = harness(run);
    expect(await cli(h, 'run', 'p.yaml')).toBe(130);
    expect(h.err()).toContain('cancelled');
    expect(h.out()).toBe('');
  });

  it('shows help and the version with status 0', async () => {
    const h = harness();
    expect(await cli(h, '--help')).toBe(0);
    expect(h.out()).toContain('run [options] <problem...>');
    const r = harness();
    expect(await cli(r, 'run', '--help')).toBe(0);
    for (const flag of ['--seeds', '--seed', '--case', '--set', '--format', '--engine']) {
      expect(r.out()).toContain(flag);
    }
    expect(r.out()).toContain('(default: 64)');
    const v = harness();
    expect(await cli(v, '--version')).toBe(0);
    expect(v.out().trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('progress', () => {
  function stream(isTTY: boolean): { text: () => string; s: NodeJS.WritableStream & { isTTY: boolean } } {
    let text = '';
    const s = { isTTY, write: (t: string) => ((text += t), true) } as unknown as NodeJS.WritableStream & {
      isTTY: boolean;
    };
    return { text: () => text, s };
  }

  it('says nothing for a run under a second', () => {
    const { s, text } = stream(false);
    let now = 0;
    const p = createProgressReporter(s, { label: 'x', now: () => now });
    p.onProgress({ instancesDone: 1, instancesTotal: 4, arrivalsDone: 100 });
    now = 900;
    p.onProgress({ instancesDone: 4, instancesTotal: 4, arrivalsDone: 400 });
    p.stop();
    expect(text()).toBe('');
  });

  it('prints plain lines when stderr is not a terminal', () => {
    const { s, text } = stream(false);
    let now = 0;
    const p = createProgressReporter(s, { label: 'hot-prefix', now: () => now });
    now = 2000;
    p.onProgress({ instancesDone: 2, instancesTotal: 4, arrivalsDone: 2_000_000 });
    p.onProgress({ instancesDone: 4, instancesTotal: 4, arrivalsDone: 4_000_000 });
    p.stop();
    expect(text()).toContain('hot-prefix 2/4 instances (50%) | 1.00M arrivals/s');
    expect(text()).toContain('4/4 instances (100%)');
    expect(text()).toContain('ETA 2s');
    expect(text()).not.toContain('\x1b');
    expect(text().split('\n').filter((l) => l === '')).toHaveLength(1); // only the final newline
  });

  it('draws a bar on a terminal and clears it at the end', () => {
    const { s, text } = stream(true);
    let now = 0;
    const p = createProgressReporter(s, { label: 'hot-prefix', now: () => now });
    now = 1500;
    p.onProgress({ instancesDone: 1, instancesTotal: 4, arrivalsDone: 1000 });
    p.stop();
    expect(text()).toContain('hot-prefix');
    expect(text()).toContain('1/4 instances');
    expect(text()).toContain('\x1b[?25h'); // the cursor is shown again
  });

  it('formats durations', () => {
    expect(duration(4_400)).toBe('4s');
    expect(duration(75_000)).toBe('1m15s');
    expect(duration(3_725_000)).toBe('1h02m');
  });
});

// the built bin, once the parser and the runner exist and `npm run build` has run
const BIN = 'dist/src/cli/main.js';
describe.skipIf(!existsSync(BIN))('the built bin', () => {
  const bin = (...args: string[]) =>
    spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });

  it('shows help', () => {
    const r = bin('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('run');
  });

  it('rejects --seeds 0 with status 2 and no stack', () => {
    const r = bin('run', 'problems/hot-prefix.yaml', '--seeds', '0');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--seeds');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stdout).toBe('');
  });

  it('names a missing problem file', () => {
    const r = bin('run', 'no/such/problem.yaml', '--seeds', '1');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^servesim: .*no\/such\/problem\.yaml/);
  });
});
