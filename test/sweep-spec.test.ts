import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { loadSweep, SWEEP_SCHEMA_FILE, sweepFromObject, sweepJsonSchemaText } from '../src/sweep/spec.js';

/** The error sweepFromObject throws for `raw`, or a failure when it throws none. */
function errorOf(raw: Record<string, unknown>, options = {}): ServesimError {
  try {
    sweepFromObject({ problem: 'mmc', ...raw }, options);
  } catch (err) {
    expect(err).toBeInstanceOf(ServesimError);
    return err as ServesimError;
  }
  throw new Error(`accepted ${JSON.stringify(raw)}`);
}

describe('sweep files', () => {
  it('expands the grid, last axis fastest, with parsed overrides and column types', () => {
    const sweep = sweepFromObject({
      problem: 'mmc',
      grid: { 'server.slots': { from: 4, to: 6, step: 1 }, 'traffic.rate': [20.5, 30], 'server.timeout': ['1s', '2s'] },
      seeds: 3,
    });
    expect(sweep.points).toHaveLength(12);
    expect(sweep.points[1]!.values).toEqual([4, 20.5, '2s']);
    expect(sweep.points[11]!.overrides).toEqual([
      { path: ['server', 'slots'], value: 6, text: 'server.slots=6' },
      { path: ['traffic', 'rate'], value: 30, text: 'traffic.rate=30' },
      { path: ['server', 'timeout'], value: '2s', text: 'server.timeout="2s"' },
    ]);
    expect(sweep.axes.map((a) => a.type)).toEqual(['int', 'float', 'string']);
    expect(sweep).toMatchObject({ id: 'mmc', seeds: 3, caseNames: ['as-given'], engine: 'auto' });
  });

  it('refuses an unknown key, naming it', () => {
    const err = errorOf({ grid: { 'server.slots': [4] }, grdi: {} });
    expect(err.code).toBe('SERVESIM_SWEEP_INVALID');
    expect(err.message).toContain('"grdi"');
  });

  it('refuses a range that runs backwards or does not step, naming the axis', () => {
    expect(errorOf({ grid: { 'server.slots': { from: 6, to: 4, step: 1 } } }).message).toMatch(
      /grid\.server\.slots: to must be at least from/,
    );
    expect(errorOf({ grid: { 'server.slots': { from: 4, to: 6, step: 0 } } }).message).toMatch(
      /grid\.server\.slots\.step: must be positive/,
    );
    expect(errorOf({ grid: { 'server.slots': { from: 4, to: 6, step: -1 } } }).message).toContain('grid.server.slots.step');
  });

  it('refuses an unknown grid path, naming the path and the point', () => {
    const err = errorOf({ grid: { 'server.slotz': [4, 5] } });
    expect(err.message).toContain('server.slotz');
    expect(err.message).toContain('grid point 0');
  });

  it('refuses an ill-typed grid value, naming the point and the value', () => {
    const err = errorOf({ grid: { 'server.slots': [4, 'many'] } });
    expect(err.message).toContain('grid point 1 (server.slots=many)');
    expect(err.message).toContain('server.slots: must be a positive integer');
  });

  it('sweeps gpu.kv over its two allocations as a string axis, and refuses a third naming it', () => {
    const sweep = sweepFromObject({ problem: 'hot-prefix', grid: { 'gpu.kv': ['reserve', 'incremental'] }, seeds: 2 });
    expect(sweep.axes).toEqual([{ path: 'gpu.kv', values: ['reserve', 'incremental'], type: 'string' }]);
    expect(sweep.points.map((p) => p.overrides)).toEqual([
      [{ path: ['gpu', 'kv'], value: 'reserve', text: 'gpu.kv="reserve"' }],
      [{ path: ['gpu', 'kv'], value: 'incremental', text: 'gpu.kv="incremental"' }],
    ]);
    const err = errorOf({ problem: 'hot-prefix', grid: { 'gpu.kv': ['reserve', 'sometimes'] } });
    expect(err.message).toContain('grid point 1 (gpu.kv=sometimes)');
    expect(err.message).toContain('gpu.kv: must be one of reserve, incremental; got "sometimes"');
  });

  it('refuses a missing problem, naming the file or id', () => {
    expect(errorOf({ problem: 'no-such-problem', grid: {} }).message).toMatch(/^problem: .*"no-such-problem"/);
    const dir = mkdtempSync(join(tmpdir(), 'servesim-sweep-'));
    const file = join(dir, 'sweep.yaml');
    writeFileSync(file, 'problem: ./missing.yaml\ngrid: { gpu.slots: [4] }\n');
    expect(() => loadSweep(file)).toThrow(/^problem: cannot read .*missing\.yaml/);
    expect(() => loadSweep(join(dir, 'nope.yaml'))).toThrow(/nope\.yaml/);
  });

  it('refuses an unknown case under cases', () => {
    const err = errorOf({ grid: {}, cases: ['as-given', 'nope'] });
    expect(err.code).toBe('SERVESIM_CASE_UNKNOWN');
    expect(err.message).toMatch(/^cases: unknown case 'nope'/);
  });

  it('refuses a grid too large before any work, with the count and the limit', () => {
    const err = errorOf({ grid: { 'server.slots': { from: 1, to: 100, step: 1 }, 'traffic.rate': [10, 20, 30] }, seeds: 100 }, { maxInstances: 20_000 });
    expect(err.code).toBe('SERVESIM_GRID_TOO_LARGE');
    expect(err.message).toContain('300 grid points x 1 cases x 100 seeds = 30,000 instances');
    expect(err.message).toContain('the limit is 20,000');
    // --seeds replaces the file's seeds before the check
    expect(sweepFromObject({ problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 100 }, { seeds: 2 }).seeds).toBe(2);
  });
});

describe('shipped sweep files', () => {
  const files = readdirSync('sweeps').filter((f) => f.endsWith('.yaml'));

  it('cover both seeds and every extra problem', () => {
    expect(files.sort()).toEqual(
      ['coding-agents-replicas', 'conversation-trace-offload', 'conversation-trace', 'hot-prefix-slots', 'hung-replica', 'long-answers-kv', 'long-prompts-pools', 'mmc', 'multi-tenant-prefixes', 'small-kv-cache'].map(
        (f) => `${f}.yaml`,
      ),
    );
  });

  it.each(files)('%s parses, names its schema and stays modest', (file) => {
    const sweep = loadSweep(join('sweeps', file));
    expect(readFileSync(join('sweeps', file), 'utf8')).toMatch(/^# yaml-language-server: \$schema=\.\/sweep\.schema\.json\n/);
    expect(sweep.axes.length).toBeGreaterThan(0);
    // sweeps/README.md promises each runs in well under a minute on two cores
    expect(sweep.points.length * sweep.caseNames.length * sweep.seeds).toBeLessThanOrEqual(2_000);
  });
});

// Regenerate after changing the schema in src/sweep/spec.ts:
//   SERVESIM_WRITE_SCHEMA=1 npx vitest run test/sweep-spec.test.ts
describe('sweeps/sweep.schema.json', () => {
  it('equals what the zod schema generates now', () => {
    const generated = sweepJsonSchemaText();
    if (process.env['SERVESIM_WRITE_SCHEMA'] === '1') writeFileSync(SWEEP_SCHEMA_FILE, generated);
    const committed = readFileSync(SWEEP_SCHEMA_FILE, 'utf8');
    expect(committed, 'stale: regenerate with SERVESIM_WRITE_SCHEMA=1 npx vitest run test/sweep-spec.test.ts').toBe(generated);
  });
});
