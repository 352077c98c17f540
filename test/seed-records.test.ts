/**
 * Per-seed records (`--seeds-out`, `POST /v1/sweeps?table=seeds`): read back from Arrow and
 * Parquet, a case's rows give its summary row's seeds, arrivals, pooled success and pass
 * probability; with `--seeds auto` they are every seed each configuration took; the CPU pool
 * and the reference engine give the same rows. Needs `npm run build` (the pool's workers run
 * from dist/).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { runReference } from '../src/engine/reference.js';
import { problemFromObject, selectCases } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { SEED_COLUMNS, seedRecord, type SeedRecord } from '../src/run/seed-records.js';
import { buildServer } from '../src/service/server.js';
import { readSweepArrow, seedsToArrow } from '../src/sweep/arrow.js';
import { seedsToParquet } from '../src/sweep/parquet.js';
import { runSweep, type SweepOutcome } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import type { SeedRow } from '../src/sweep/table.js';
import { runCli } from './cli-support.js';
import { decodeAll, TINY_QUEUE } from './support.js';

afterAll(closeEngines);

const PROBLEM = { ...TINY_QUEUE, cases: ['as-given', 'peak-hour'] };
// with seeds auto, 1 slot fails at the first look (32 seeds), 3 passes at the second, 2 takes more
const sweep = sweepFromObject({ id: 'tiny', problem: PROBLEM, grid: { 'server.slots': [1, 2, 3] }, seeds: 'auto', maxSeeds: 256 });

/** A table's rows as plain objects, whichever format it came in. */
type Row = Record<string, unknown>;

function arrowRows(bytes: Uint8Array): Row[] {
  return tableFromIPC(bytes).toArray().map((r: { toJSON(): Row }) => r.toJSON());
}

async function parquetRows(bytes: Uint8Array): Promise<Row[]> {
  return parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer });
}

/** Each summary row's figures recomputed from the per-seed rows of its grid point and case. */
function recomputed(outcome: SweepOutcome, rows: readonly Row[]) {
  return outcome.rows.map(({ point, summary }) => {
    const seeds = rows.filter((r) => r['server.slots'] === point.values[0] && r['case'] === summary.case);
    const sum = (column: string): number => seeds.reduce((s, r) => s + Number(r[column]), 0);
    return {
      seeds: seeds.map((r) => r['seed']),
      requests: sum('arrivals'),
      success: sum('successes') / sum('arrivals'),
      pass_probability: seeds.filter((r) => r['passes'] === true).length / seeds.length,
      rejected: sum('rejected'),
      timed_out: sum('timed_out'),
      p99_spread_ms: [0.025, 0.975].map((q) => nearestRank(seeds.map((r) => r['p99_ms']).filter((v): v is number => v !== null), q)),
    };
  });
}

/** The smallest of `values` whose rank reaches ceil(q x n). */
function nearestRank(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

describe('a sweep with --seeds auto, its per-seed table read back', () => {
  let outcome: SweepOutcome;
  const seedRows: SeedRow[][] = [];
  beforeAll(async () => {
    outcome = await runSweep(sweep, { onSeedRecords: (point, records) => void (seedRows[point.index] = records.map((record) => ({ point, record }))) });
  });

  it('gives every row its seeds, arrivals, pooled success, pass probability and p99 spread', async () => {
    const rows = seedRows.flat();
    const expected = outcome.rows.map(({ summary }) => ({
      seeds: Array.from({ length: summary.seeds }, (_, i) => i),
      requests: summary.requests,
      success: summary.success,
      pass_probability: summary.pass_probability,
      rejected: summary.rejected,
      timed_out: summary.timed_out,
      p99_spread_ms: [summary.p99_lo_ms, summary.p99_hi_ms],
    }));
    // the configurations took different numbers of seeds: every one of each is a row
    expect(new Set(outcome.rows.map((r) => r.summary.seeds)).size).toBeGreaterThan(1);
    const arrow = seedsToArrow(sweep, rows, outcome.meta, { format: 'file' });
    const parquet = seedsToParquet(sweep, rows, outcome.meta);
    expect(recomputed(outcome, arrowRows(arrow))).toEqual(expected);
    expect(recomputed(outcome, await parquetRows(parquet))).toEqual(expected);
  });

  it('has the columns docs/outputs.md lists, typed, with the sweep metadata and its own row count', () => {
    const rows = seedRows.flat();
    const table = tableFromIPC(seedsToArrow(sweep, rows, outcome.meta));
    expect(table.schema.fields.map((f) => f.name)).toEqual(['server.slots', ...SEED_COLUMNS.map((c) => c.name)]);
    const outputs = readFileSync(new URL('../docs/outputs.md', import.meta.url), 'utf8');
    expect(SEED_COLUMNS.map((c) => c.name).filter((name) => !outputs.includes(`\`${name}\``))).toEqual([]);
    const metadata = table.schema.metadata;
    expect([metadata.get('servesim.table'), metadata.get('servesim.rows'), metadata.get('servesim.max_seeds')]).toEqual(['seeds', String(rows.length), '256']);
    // TINY_QUEUE sets no TTFT goal and makes no model calls
    const first = table.get(0)!.toJSON();
    expect([first['ttft_p99_ms'], first['ttft_p99_met'], typeof first['p99_ms'], typeof first['passes']]).toEqual([null, null, 'number', 'boolean']);
  });

  it('carries the same servesim keys in Arrow and Parquet, and says which points a partial one lacks', () => {
    const part = seedRows[0]!;
    const arrowKeys = (bytes: Uint8Array): string[] => [...tableFromIPC(bytes).schema.metadata.keys()].sort();
    const parquetKeys = (bytes: Uint8Array): string[] =>
      (parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer).key_value_metadata ?? []).map((kv) => kv.key).sort();
    const arrow = seedsToArrow(sweep, part, outcome.meta, { stopped: 'cancelled' });
    expect(parquetKeys(seedsToParquet(sweep, part, outcome.meta, 'cancelled'))).toEqual(arrowKeys(arrow));
    expect(tableFromIPC(arrow).schema.metadata.get('servesim.missing_points')).toBe('1-2');
  });

  it('is refused by servesim report, which reads a sweep table', () => {
    expect(() => readSweepArrow(seedsToArrow(sweep, seedRows.flat(), outcome.meta), 'seeds.arrow')).toThrow(/seeds\.arrow is a per-seed table/);
  });
});

describe('the engines', () => {
  it('give the same per-seed rows on the CPU pool as the reference engine computes', async () => {
    const problem = problemFromObject(PROBLEM);
    let records: readonly SeedRecord[] = [];
    const result = await runProblem(problem, { seeds: 32, maxSeeds: 128, baseSeed: 7, engine: 'cpu', onSeedRecords: (r) => void (records = r) });
    const reference = selectCases(problem, 'all').flatMap((scenario, k) => {
      const config = compile(problem, scenario);
      return decodeAll(config, runReference(config, 7, 0, result.rows[k]!.seeds)).map((r, seed) => seedRecord(scenario.name, seed, r, problem.goals));
    });
    expect(result.meta.engine).toBe('pool');
    expect(records).toEqual(reference);
  });
});

describe('servesim run and sweep --seeds-out', () => {
  const dir = mkdtempSync(join(tmpdir(), 'servesim-seeds-'));

  it('writes a row a seed beside the sweep table (--vary), Parquet', async () => {
    const file = join(dir, 'seeds.parquet');
    const r = await runCli('sweep', 'mmc', '--vary', 'server.slots=4,5', '--seeds', '3', '--format', 'json', '--seeds-out', file);
    expect(r.code, r.err).toBe(0);
    const table = JSON.parse(r.out) as { rows: { 'server.slots': number; case: string; seeds: number; pass_probability: number }[] };
    const rows = await parquetRows(readFileSync(file));
    expect(r.err).toContain(`wrote ${rows.length} rows (a row a seed) to ${file}`);
    expect(table.rows.map((row) => [row['server.slots'], row.case, row.seeds, row.pass_probability])).toEqual(
      table.rows.map((row) => {
        const seeds = rows.filter((s) => s['server.slots'] === row['server.slots'] && s['case'] === row.case);
        return [row['server.slots'], row.case, seeds.length, seeds.filter((s) => s['passes']).length / seeds.length];
      }),
    );
  });

  it('writes one problem\'s seeds from run (an Arrow stream for .arrows), and refuses several problems', async () => {
    const file = join(dir, 'seeds.arrows');
    const r = await runCli('run', 'mmc', '--seeds', '4', '--format', 'json', '--seeds-out', file);
    expect(r.code, r.err).toBe(0);
    const cases = (JSON.parse(r.out) as { rows: { case: string }[] }).rows.map((row) => row.case);
    // a stream, not the file format and its magic
    expect(readFileSync(file).subarray(0, 6).toString()).not.toBe('ARROW1');
    const rows = arrowRows(readFileSync(file));
    expect(rows.map((s) => [s['case'], s['seed']])).toEqual(cases.flatMap((c) => [0, 1, 2, 3].map((seed) => [c, seed])));
    const several = await runCli('run', 'mmc', 'mmc', '--seeds', '4', '--seeds-out', file);
    expect([several.code, several.err]).toEqual([2, "servesim: --seeds-out writes one problem's seeds, and 2 problems were named: run them one at a time\n"]);
  });

  it('refuses a file that is neither Arrow nor Parquet, and a table over its limit, before any work', async () => {
    const csv = await runCli('run', 'mmc', '--seeds-out', join(dir, 'seeds.csv'));
    expect(csv.code).toBe(2);
    expect(csv.err).toContain('--seeds-out writes Arrow or Parquet');
    const large = await runCli('sweep', 'mmc', '--vary', 'traffic.rate=1..300', '--case', 'as-given', '--seeds', 'auto', '--seeds-out', join(dir, 'large.arrow'));
    expect([large.code, large.err]).toEqual([2, 'servesim: --seeds-out: 300 grid points x 1 cases x 4,096 seeds = 1,228,800 rows; a per-seed table holds at most 1,000,000 (ask for fewer seeds, a lower --max-seeds or a smaller grid)\n']);
  });
});

describe('POST /v1/sweeps?table=seeds', () => {
  const body = { problem: 'mmc', grid: { 'server.slots': [4, 5] }, seeds: 3 };

  it('answers the per-seed table as Arrow or Parquet, and refuses JSON and an unknown table', async () => {
    const app = buildServer();
    try {
      const post = (url: string, accept: string) => app.inject({ method: 'POST', url, headers: { accept }, payload: body });
      const arrow = await post('/v1/sweeps?table=seeds', 'application/vnd.apache.arrow.stream');
      const parquet = await post('/v1/sweeps?table=seeds', 'application/vnd.apache.parquet');
      expect([arrow.statusCode, parquet.statusCode]).toEqual([200, 200]);
      const rows = arrowRows(new Uint8Array(arrow.rawPayload));
      expect(rows.map((r) => [r['server.slots'], r['seed']])).toEqual([4, 4, 4, 5, 5, 5].map((slots, i) => [slots, i % 3]));
      expect(await parquetRows(new Uint8Array(parquet.rawPayload))).toEqual(rows);
      const json = await post('/v1/sweeps?table=seeds', 'application/json');
      expect([json.statusCode, json.json().detail]).toEqual([406, 'the per-seed table (?table=seeds) comes as application/vnd.apache.arrow.stream or application/vnd.apache.parquet, not application/json']);
      const unknown = await post('/v1/sweeps?table=seed', 'application/vnd.apache.arrow.stream');
      expect(unknown.statusCode).toBe(400);
      expect(unknown.json().detail).toContain('table');
    } finally {
      await app.close();
    }
  });
});
