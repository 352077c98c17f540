/**
 * Per-request records (`servesim run --requests-out`): read back from Parquet and Arrow, a
 * seed's rows give the figures of that seed's per-seed record (`--seeds-out`) of the same run:
 * its arrivals and outcomes, its p99 and TTFT and TPOT p99 (the rows' values put in the
 * histogram's buckets give the same quantile, and their own nearest-rank quantile lies within
 * the bucket's 0.8%), and its mean inter-token latency, exactly. For requests (hot prefix),
 * agent tasks (a row a task and a row a model call) and M/M/c jobs. Needs `npm run build` (the
 * run's pool runs from dist/).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HISTOGRAM_BUCKETS, bucketOf, quantile } from '../src/model/histogram.js';
import { MAX_REQUEST_SEEDS } from '../src/run/limits.js';
import { REQUEST_COLUMNS } from '../src/run/request-records.js';
import { closeEngines } from '../src/run/run.js';
import { readSweepArrow } from '../src/sweep/arrow.js';
import { runCli } from './cli-support.js';

afterAll(closeEngines);

type Row = Record<string, unknown>;

const dir = mkdtempSync(join(tmpdir(), 'servesim-requests-'));

async function parquetRows(path: string): Promise<Row[]> {
  const bytes = readFileSync(path);
  return parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer });
}

/** The histogram of these microsecond values, as the engines bucket them. */
function histogram(micros: readonly number[]): Uint32Array {
  const h = new Uint32Array(HISTOGRAM_BUCKETS);
  for (const v of micros) h[bucketOf(v)]!++;
  return h;
}

/** The smallest value whose rank reaches ceil(q x n). */
function nearestRank(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

const micros = (ms: unknown): number => Math.round((ms as number) * 1000);

/** A quantile from the rows' values, as the seed's record reads its histogram (ms; null without values). */
function histogramQuantile(valuesMs: readonly number[], q: number): number | null {
  return valuesMs.length === 0 ? null : quantile(histogram(valuesMs.map(micros)), q) / 1000;
}

/** A seed's figures recomputed from its rows. */
function fromRows(rows: readonly Row[]) {
  // an arrival's own row has its latency (a task's call rows have none)
  const own = rows.filter((r) => r['latency_ms'] !== null);
  const calls = rows.filter((r) => r['ttft_ms'] !== null);
  const outcomes = (name: string): number => own.filter((r) => r['outcome'] === name).length;
  const latencies = own.filter((r) => r['outcome'] === 'success').map((r) => r['latency_ms'] as number);
  const decoding = calls.filter((r) => (r['output_tokens'] as number) >= 2);
  // each call's (end - first token), whole microseconds, back from its mean gap
  const decode = decoding.map((r) => micros((r['itl_mean_ms'] as number) * ((r['output_tokens'] as number) - 1)));
  const gaps = decoding.reduce((s, r) => s + (r['output_tokens'] as number) - 1, 0);
  return {
    arrivals: own.length,
    successes: outcomes('success'),
    rejected: outcomes('rejected'),
    timed_out: outcomes('timed_out'),
    died: outcomes('died'),
    overloaded: outcomes('overloaded'),
    p99_ms: histogramQuantile(latencies, 0.99),
    ttft_p99_ms: histogramQuantile(calls.map((r) => r['ttft_ms'] as number), 0.99),
    tpot_p99_ms: decoding.length === 0 ? null : quantile(histogram(decode.map((d, i) => Math.floor(d / ((decoding[i]!['output_tokens'] as number) - 1)))), 0.99) / 1000,
    itl_mean_ms: gaps === 0 ? null : decode.reduce((a, b) => a + b, 0) / gaps / 1000,
    // the rows' own p99s, not bucketed
    raw: { p99_ms: latencies.length === 0 ? null : nearestRank(latencies, 0.99), ttft_p99_ms: calls.length === 0 ? null : nearestRank(calls.map((r) => r['ttft_ms'] as number), 0.99) },
  };
}

/** `servesim run` of one case with --seeds-out and --requests-out; the two tables' rows. */
async function runBoth(problem: string, sets: readonly string[], seeds: number, requestSeeds: number, extension: '.parquet' | '.arrow') {
  const seedsFile = join(dir, `${problem}-seeds.parquet`);
  const requestsFile = join(dir, `${problem}-requests${extension}`);
  const r = await runCli('run', problem, '--case', 'as-given', ...sets.flatMap((s) => ['--set', s]), '--seeds', String(seeds), '--engine', 'cpu',
    '--seeds-out', seedsFile, '--requests-out', requestsFile, '--requests-seeds', String(requestSeeds), '--format', 'json');
  expect(r.code, r.err).toBe(0);
  expect(r.err).toMatch(new RegExp(`wrote \\d+ rows \\(a row a counted arrival or model call of seeds 0 to ${requestSeeds - 1}, run again on the reference engine\\) to `));
  const requests = extension === '.parquet' ? await parquetRows(requestsFile) : tableFromIPC(readFileSync(requestsFile)).toArray().map((x: { toJSON(): Row }) => x.toJSON());
  return { seedRows: await parquetRows(seedsFile), requests, requestsFile };
}

describe.each([
  ['hot-prefix', ['router.policy=least-loaded', 'traffic.duration=10s'], '.parquet'],
  ['coding-agents', ['traffic.duration=20s', 'traffic.rate=2'], '.arrow'],
  ['mmc', ['traffic.duration=20s'], '.parquet'],
] as const)('servesim run %s --requests-out, read back', (problem, sets, extension) => {
  let seedRows: Row[];
  let requests: Row[];
  let requestsFile: string;
  beforeAll(async () => {
    ({ seedRows, requests, requestsFile } = await runBoth(problem, sets, 4, 3, extension));
  }, 120_000);

  it("gives each recorded seed's arrivals, outcomes, p99, TTFT and TPOT p99 and mean ITL", () => {
    expect(new Set(requests.map((r) => r['seed']))).toEqual(new Set([0, 1, 2]));
    for (const seed of [0, 1, 2]) {
      const record = seedRows.find((r) => r['seed'] === seed)!;
      const { raw, ...figures } = fromRows(requests.filter((r) => r['seed'] === seed));
      const keys = Object.keys(figures) as (keyof typeof figures)[];
      expect(figures, `seed ${seed}`).toEqual(Object.fromEntries(keys.map((k) => [k, record[k]])));
      expect(figures.arrivals).toBeGreaterThan(20);
      // the bucket's midpoint is within 0.8% of the values in it
      for (const k of ['p99_ms', 'ttft_p99_ms'] as const) {
        if (raw[k] === null) expect(record[k]).toBeNull();
        else expect(Math.abs(raw[k] / (record[k] as number) - 1)).toBeLessThan(0.008);
      }
    }
  });

  it('has the columns docs/outputs.md lists, in order, and is no table servesim report reads', () => {
    const outputs = readFileSync(new URL('../docs/outputs.md', import.meta.url), 'utf8');
    expect(Object.keys(requests[0]!)).toEqual(REQUEST_COLUMNS.map((c) => c.name));
    expect(REQUEST_COLUMNS.map((c) => c.name).filter((name) => !outputs.includes(`\`${name}\``))).toEqual([]);
    if (extension === '.arrow') {
      const table = tableFromIPC(readFileSync(requestsFile));
      expect([table.schema.metadata.get('servesim.table'), table.schema.metadata.get('servesim.rows')]).toEqual(['requests', String(requests.length)]);
      expect(() => readSweepArrow(readFileSync(requestsFile), 'requests.arrow')).toThrow(/requests\.arrow is a per-request table/);
    }
  });

  it('orders each seed by arrival, and gives calls, tokens and replicas where the design has them', () => {
    const calls = requests.filter((r) => r['call'] !== null);
    const keys = requests.map((r) => [r['seed'] as number, r['arrival'] as number, r['call'] === null ? Infinity : (r['call'] as number)]);
    const sorted = [...keys].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!);
    expect(keys).toEqual(sorted);
    if (problem === 'mmc') {
      expect(calls).toEqual([]);
      expect(requests.some((r) => (r['queue_wait_ms'] as number) > 0)).toBe(true);
      // a job is no model call: it has no preemptions to count
      expect(requests.every((r) => r['preemptions'] === null)).toBe(true);
      return;
    }
    for (const r of calls.filter((c) => c['ttft_ms'] !== null)) {
      expect((r['cached_tokens'] as number) + (r['computed_prompt_tokens'] as number)).toBeGreaterThan(0);
      expect(r['replica']).toBeGreaterThanOrEqual(0);
      expect(r['queue_wait_ms']).toBeGreaterThanOrEqual(0);
      // gpu.kv reserve (the default) never preempts
      expect(r['preemptions']).toBe(0);
    }
    expect(requests.filter((r) => r['ttft_ms'] === null).every((r) => r['preemptions'] === null)).toBe(true);
    // a task's calls are its steps; a request's one call is call 0
    const steps = new Set(calls.map((r) => r['call']));
    if (problem === 'coding-agents') {
      expect(steps.size).toBeGreaterThan(1);
      expect(requests.filter((r) => r['call'] === null && r['outcome'] === 'success').every((r) => (r['tool_wait_ms'] as number) >= 0)).toBe(true);
    } else {
      expect([...steps]).toEqual([0]);
    }
  });
});

describe('servesim run --requests-out refuses', () => {
  it.each([
    [['--requests-seeds', String(MAX_REQUEST_SEEDS + 1)], `--requests-seeds must be an integer from 1 to ${MAX_REQUEST_SEEDS}, got '${MAX_REQUEST_SEEDS + 1}'.`],
    [['--seeds', '2', '--requests-seeds', '3'], 'servesim: --requests-seeds 3 is more than the 2 seeds each case runs (--seeds)'],
    [['--requests-out', join(dir, 'r.csv')], '--requests-out writes Arrow or Parquet'],
  ])('%j', async (args, message) => {
    const out = args.includes('--requests-out') ? [] : ['--requests-out', join(dir, 'refused.parquet')];
    const r = await runCli('run', 'mmc', ...out, ...args);
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });

  it('--requests-seeds without the file, and several problems', async () => {
    const alone = await runCli('run', 'mmc', '--seeds', '2', '--requests-seeds', '2');
    expect([alone.code, alone.err]).toEqual([2, 'servesim: --requests-seeds says how many seeds --requests-out records: name the file too\n']);
    const several = await runCli('run', 'mmc', 'mmc', '--seeds', '2', '--requests-out', join(dir, 'several.parquet'));
    expect([several.code, several.err]).toEqual([2, "servesim: --requests-out writes one problem's requests, and 2 problems were named: run them one at a time\n"]);
  });
});
