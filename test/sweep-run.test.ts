import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Precision, tableFromIPC, Type } from '@uwdata/flechette';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../src/version.js';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { ServesimError } from '../src/errors.js';
import { SUMMARY_COLUMNS } from '../src/model/summary.js';
import { closeEngines } from '../src/run/run.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import { formatSweepJson } from '../src/sweep/format.js';
import { runSweep, type SweepOutcome } from '../src/sweep/run.js';
import { sweepFromObject, type Sweep } from '../src/sweep/spec.js';
import { TINY_QUEUE } from './support.js';

// Service 100 ms against TINY_QUEUE's 80 ms deadline succeeds never: its latency quantiles are
// NaN, which every format writes as null.
const SWEEP = {
  id: 'tiny',
  problem: TINY_QUEUE,
  grid: { 'server.slots': [1, 2], 'traffic.rate': [10, 12.5], 'server.service': ['50ms', '100ms'] },
  seeds: 2,
  seed: 7,
};

afterAll(closeEngines);

describe('a sweep as Arrow, read back by an independent decoder', () => {
  let sweep: Sweep;
  let outcome: SweepOutcome;
  beforeAll(async () => {
    sweep = sweepFromObject(SWEEP);
    outcome = await runSweep(sweep);
  });

  it('finishes every point', () => {
    expect(outcome.finished).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(outcome).toMatchObject({ unfinished: [], cancelled: false, error: null });
  });

  it('has the grid columns, then the summary columns, with their types', () => {
    const table = tableFromIPC(sweepToArrow(sweep, outcome.rows, outcome.meta));
    const fields = table.schema.fields;
    expect(fields.map((f) => f.name)).toEqual(['server.slots', 'traffic.rate', 'server.service', ...SUMMARY_COLUMNS]);
    const type = (name: string) => fields.find((f) => f.name === name)!.type;
    expect(type('server.slots')).toMatchObject({ typeId: Type.Int, bitWidth: 32, signed: true });
    expect(type('traffic.rate')).toMatchObject({ typeId: Type.Float, precision: Precision.DOUBLE });
    for (const name of ['server.service', 'case']) {
      expect(type(name)).toMatchObject({ typeId: Type.Dictionary, dictionary: { typeId: Type.Utf8 } });
    }
    expect(type('passes')).toMatchObject({ typeId: Type.Bool });
    for (const name of ['verdict', 'undecided']) expect(type(name)).toMatchObject({ typeId: Type.Utf8 });
    for (const name of ['pass_probability_lo', 'pass_probability_hi', 'interval_level', 'batch_occupancy']) {
      expect(type(name)).toMatchObject({ typeId: Type.Float, precision: Precision.DOUBLE });
    }
    expect(type('seeds')).toMatchObject({ typeId: Type.Int, bitWidth: 32 });
    expect(type('p99_ms')).toMatchObject({ typeId: Type.Float, precision: Precision.DOUBLE });
  });

  it('holds the same values as the JSON output, nulls where JSON has them', () => {
    const table = tableFromIPC(sweepToArrow(sweep, outcome.rows, outcome.meta));
    const json = JSON.parse(formatSweepJson(sweep, outcome)) as { rows: Record<string, unknown>[] };
    expect(table.numRows).toBe(8);
    expect(table.toArray()).toEqual(json.rows);
    // the never-succeeding points did reach the formats as nulls
    expect(json.rows.filter((r) => r['server.service'] === '100ms').every((r) => r['p99_ms'] === null)).toBe(true);
    expect(json.rows.filter((r) => r['server.service'] === '50ms').every((r) => typeof r['p99_ms'] === 'number')).toBe(true);
  });

  it('carries the run in the schema metadata', () => {
    const { metadata } = tableFromIPC(sweepToArrow(sweep, outcome.rows, outcome.meta)).schema;
    expect(metadata?.get('servesim.problem')).toBe('tiny-queue');
    expect(metadata?.get('servesim.sweep')).toBe('tiny');
    expect(metadata?.get('servesim.version')).toBe(packageVersion());
    expect(metadata?.get('servesim.engine')).toBe('pool');
    expect(metadata?.get('servesim.adapter')).toBe('');
    expect(metadata?.get('servesim.seeds')).toBe('2');
    expect(metadata?.get('servesim.max_seeds')).toBe('2');
    expect(metadata?.get('servesim.base_seed')).toBe('7');
    expect(Date.parse(metadata?.get('servesim.created') ?? '')).toBeGreaterThan(Date.parse('2024-01-01'));
    expect(JSON.parse(metadata?.get('servesim.grid') ?? '')).toEqual(['server.slots', 'traffic.rate', 'server.service']);
  });
});

describe('cancelling a sweep', () => {
  it('keeps the finished points and lists the rest', async () => {
    const sweep = sweepFromObject(SWEEP);
    const controller = new AbortController();
    const outcome = await runSweep(sweep, { signal: controller.signal, onPoint: () => controller.abort() });
    expect(outcome.cancelled).toBe(true);
    expect(outcome.finished.length).toBeGreaterThanOrEqual(1);
    expect(outcome.rows).toHaveLength(outcome.finished.length);
    expect([...outcome.finished, ...outcome.unfinished].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

// ---- the command, with the real engine, an injected io and (for stopping early) runSweep wrapped

interface Harness {
  readonly deps: ProgramDeps;
  readonly io: SweepIo;
  readonly out: () => string;
  readonly bytes: () => Uint8Array;
  readonly err: () => string;
  interrupt(): void;
  /** Whether the command holds an interrupt handler now. */
  listening(): boolean;
}

function harness(options: { stdoutTTY?: boolean; onPoint?: (h: Harness) => void } = {}): Harness {
  const chunks: (string | Uint8Array)[] = [];
  let err = '';
  let interruptHandler: (() => void) | null = null;
  const unused = (): never => {
    throw new Error('not a sweep dependency');
  };
  const h: Harness = {
    deps: {
      loadProblem: unused,
      selectCases: unused,
      runProblem: unused,
      ...(options.onPoint === undefined
        ? {}
        : { runSweep: (sweep, opts) => runSweep(sweep, { ...opts, onPoint: () => options.onPoint!(h) }) }),
    },
    io: {
      stdout: { write: (data: string | Uint8Array) => chunks.push(data), isTTY: options.stdoutTTY ?? false },
      stderr: { write: (t: string) => ((err += t), true), isTTY: false } as unknown as SweepIo['stderr'],
      onInterrupt(handler) {
        interruptHandler = handler;
        return () => {
          interruptHandler = null;
        };
      },
    },
    out: () => chunks.map((c) => (typeof c === 'string' ? c : new TextDecoder().decode(c))).join(''),
    bytes: () => Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))),
    err: () => err,
    interrupt: () => interruptHandler?.(),
    listening: () => interruptHandler !== null,
  };
  return h;
}

const dir = mkdtempSync(join(tmpdir(), 'servesim-sweep-cli-'));
const sweepFile = join(dir, 'tiny.yaml');
writeFileSync(sweepFile, JSON.stringify(SWEEP)); // JSON is YAML

const cli = (h: Harness, ...args: string[]): Promise<number> => main(['node', 'servesim', 'sweep', ...args], h.deps, h.io);

describe('servesim sweep', () => {
  it('prints a table with the grid columns first', async () => {
    const h = harness();
    expect(await cli(h, sweepFile)).toBe(0);
    const lines = h.out().split('\n');
    expect(lines[0]).toBe('tiny — A tiny queue');
    expect(h.out()).toMatch(/^server\.slots {2}traffic\.rate {2}server\.service {2}case {6}result/m);
    expect(h.out()).toMatch(/^ {11}2 {10}12\.5 {2}100ms {11}as-given {2}FAIL/m);
    expect(h.err()).toContain('engine: pool');
  });

  it('writes Arrow to --out, the format taken from the extension', async () => {
    const h = harness();
    const out = join(dir, 'results.arrow');
    expect(await cli(h, sweepFile, '--out', out, '--seeds', '1')).toBe(0);
    const table = tableFromIPC(readFileSync(out));
    expect(table.numRows).toBe(8);
    expect(table.getChild('seeds').toArray()).toEqual(new Int32Array(8).fill(1));
    expect(h.err()).toContain(`wrote 8 rows (8 grid points) to ${out}`);
    expect(h.out()).toBe('');
  });

  it('writes Arrow to stdout only when stdout is not a terminal', async () => {
    const piped = harness();
    expect(await cli(piped, sweepFile, '-f', 'arrow', '--seeds', '1')).toBe(0);
    expect(tableFromIPC(piped.bytes()).numRows).toBe(8);
    const tty = harness({ stdoutTTY: true });
    expect(await cli(tty, sweepFile, '-f', 'arrow')).toBe(2);
    expect(tty.err()).toContain('--out');
    expect(tty.out()).toBe('');
  });

  it('refuses an --out whose extension names no format, before any work', async () => {
    const h = harness();
    expect(await cli(h, sweepFile, '--out', join(dir, 'results.xlsx'))).toBe(2);
    expect(h.err()).toMatch(/results\.xlsx.*--format/);
    expect(h.err()).not.toContain('engine');
  });

  it('refuses a grid over --max-instances with the count and the limit', async () => {
    const h = harness();
    expect(await cli(h, sweepFile, '--max-instances', '10')).toBe(2);
    expect(h.err()).toBe(
      'servesim: grid: 8 grid points x 1 cases x 2 seeds = 16 instances; the limit is 10 instances (100,000 points)\n',
    );
  });

  it('on Ctrl-C writes the finished points, lists the others and exits 130', async () => {
    const h = harness({ onPoint: (self) => self.interrupt() });
    expect(await cli(h, sweepFile, '-f', 'csv')).toBe(130);
    const lines = h.out().trimEnd().split('\n');
    expect(lines[0]).toBe(['server.slots', 'traffic.rate', 'server.service', ...SUMMARY_COLUMNS].join(','));
    // the points run as one batch: whichever finished first is the one written
    expect(lines).toHaveLength(2);
    const [slots, rate, service] = lines[1]!.split(',');
    const points = sweepFromObject(SWEEP).points;
    const kept = points.find((p) => p.values.join(',') === [Number(slots), Number(rate), service].join(','))!;
    expect(lines[1]).toMatch(/^[12],(10|12\.5),(50|100)ms,as-given,2,/);
    expect(h.err()).toContain('7 of 8 grid points did not finish (cancelled):');
    for (const p of points) {
      const line = `  ${p.index}: server.slots=${p.values[0]}, traffic.rate=${p.values[1]}, server.service=${p.values[2]}\n`;
      if (p === kept) expect(h.err()).not.toContain(line);
      else expect(h.err()).toContain(line);
    }
    expect(h.err()).toMatch(/cancelled\n$/);
  });

  it('holds its interrupt handler until the table is written: a signal after the last point does not cut the writing off', async () => {
    const h = harness();
    const heldAtWrite: boolean[] = [];
    const write = h.io.stdout.write.bind(h.io.stdout);
    h.io.stdout.write = ((data: string | Uint8Array) => (heldAtWrite.push(h.listening()), write(data))) as typeof h.io.stdout.write;
    expect(await cli(h, sweepFile, '-f', 'csv', '--seeds', '1')).toBe(0);
    expect(heldAtWrite.length).toBeGreaterThan(0);
    expect(heldAtWrite.every(Boolean)).toBe(true);
    expect(h.listening()).toBe(false);
  });

  it('on a failure writes the finished points first, then the error (status 2 for a ServesimError)', async () => {
    const h = harness({
      onPoint: () => {
        throw new ServesimError('SERVESIM_GPU_ERROR', 'device lost');
      },
    });
    expect(await cli(h, sweepFile, '-f', 'json')).toBe(2);
    const json = JSON.parse(h.out()) as { sweep: Record<string, unknown>; rows: unknown[]; unfinished: { index: number }[]; error: string };
    expect(json.sweep).toMatchObject({ id: 'tiny', problem: 'tiny-queue', grid: ['server.slots', 'traffic.rate', 'server.service'], seeds: 2, baseSeed: 7 });
    expect(json.rows).toHaveLength(1);
    // the points run as one batch: whichever finished first is the one kept
    expect(json.unfinished).toHaveLength(7);
    const paths = ['server.slots', 'traffic.rate', 'server.service'];
    for (const u of json.unfinished) {
      expect(u).toEqual({ index: u.index, ...Object.fromEntries(paths.map((path, a) => [path, sweepFromObject(SWEEP).points[u.index]!.values[a]])) });
    }
    expect(json.error).toBe('device lost');
    expect(h.err()).toContain('7 of 8 grid points did not finish (stopped by the error below)');
    expect(h.err()).toMatch(/servesim: device lost\n$/);
  });

  it('on an unexpected failure exits 1 with the stack', async () => {
    const h = harness({
      onPoint: () => {
        throw new TypeError('boom');
      },
    });
    expect(await cli(h, sweepFile, '-f', 'csv')).toBe(1);
    expect(h.out().trimEnd().split('\n')).toHaveLength(2);
    expect(h.err()).toMatch(/TypeError: boom\n\s+at /);
  });

  it('runs the smallest shipped sweep', async () => {
    const h = harness();
    expect(await cli(h, 'sweeps/mmc.yaml', '--seeds', '2', '-f', 'csv')).toBe(0);
    const lines = h.out().trimEnd().split('\n');
    expect(lines).toHaveLength(16);
    expect(lines[0]!.startsWith('server.slots,traffic.rate,case,')).toBe(true);
  });
});
