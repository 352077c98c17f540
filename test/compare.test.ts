/**
 * `servesim run --format vllm-bench` and `servesim compare` (issue 31, "The field's statistics"):
 * a case written in `vllm bench serve`'s keys carries its row's columns, compare holds a case
 * against such a result key by key, and a result compare cannot read gets an error naming why.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VLLM_BENCH_KEYS } from '../src/run/vllm-bench.js';
import { runOnReference } from './reference-run.js';

const dir = mkdtempSync(join(tmpdir(), 'servesim-compare-'));

/** A file in the test's folder holding `text`; its path. */
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** One small replica of requests with two cases; a few seconds a seed. */
const PROBLEM = file('small.yaml', `
id: small
goals: { success: 99%, p99: 3s, ttft_p99: 1s }
traffic: { rate: 20, duration: 10s, warmup: 2s }
workload: { kind: request, prefixes: [{ tokens: 2000, weight: 1 }], share: 0.5, suffix: 200, unique: 1000, output: { dist: uniform, min: 1, max: 80 } }
lb: { overhead: 1ms }
app: { slots: 100, timeout: 30s }
router: { policy: least-loaded }
gpu: { replicas: 2, slots: 8, kvTokens: 200000, profile: 8b-h100 }
cases: [as-given, peak-hour]
`);

/** A queueing server: no model calls, so no TTFT or TPOT. */
const JOBS = file('jobs.yaml', `
id: jobs
goals: { success: 99%, p99: 2s }
traffic: { rate: 20, duration: 20s, warmup: 2s }
workload: { kind: job }
server: { replicas: 1, slots: 4, service: { dist: exponential, mean: 100ms }, timeout: 0 }
cases: [as-given]
`);

const SEEDS = ['--seeds', '3'];

/** `run PROBLEM -f vllm-bench`'s lines, parsed. */
async function vllmBench(problem: string, ...args: string[]): Promise<Record<string, unknown>[]> {
  const { code, out, err } = await runOnReference(['run', problem, ...SEEDS, '-f', 'vllm-bench', ...args]);
  expect(code, err).toBe(0);
  expect(out.endsWith('\n')).toBe(true);
  return out.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('run --format vllm-bench', () => {
  it("writes each case as one line of vllm bench serve's keys, holding its row's columns", async () => {
    const lines = await vllmBench(PROBLEM);
    const { out } = await runOnReference(['run', PROBLEM, ...SEEDS, '-f', 'json']);
    const rows = (JSON.parse(out) as { rows: Record<string, unknown>[] }).rows;
    expect(lines.map((l) => l['case'])).toEqual(['as-given', 'peak-hour']);
    lines.forEach((line, i) => {
      expect(Object.keys(line)).toEqual(['problem', 'case', 'seeds', ...VLLM_BENCH_KEYS.map(([key]) => key)]);
      expect([line['problem'], line['seeds']]).toEqual(['small', 3]);
      for (const [key, column] of VLLM_BENCH_KEYS) expect(line[key], key).toBe(rows[i]![column]);
    });
    const asGiven = lines[0]!;
    // the keys' units: milliseconds, and a mean, median and p99 in order
    expect(asGiven['mean_e2el_ms']).toBeGreaterThan(asGiven['mean_ttft_ms'] as number);
    expect(asGiven['median_ttft_ms']).toBeLessThanOrEqual(asGiven['p99_ttft_ms'] as number);
    expect(asGiven['request_throughput']).toBeCloseTo(20, -1);
  });

  it('writes null for the token figures of a design without model calls', async () => {
    const [line] = await vllmBench(JOBS);
    expect(line!['mean_ttft_ms']).toBeNull();
    expect(line!['p99_tpot_ms']).toBeNull();
    expect(line!['mean_itl_ms']).toBeNull();
    expect(line!['mean_e2el_ms']).toBeGreaterThan(0);
  });
});

describe('compare', () => {
  it('holds a case against its own vllm-bench line with no error on any figure', async () => {
    const [line] = await vllmBench(PROBLEM, '--case', 'peak-hour');
    const result = file('own.json', JSON.stringify(line));
    const { code, out } = await runOnReference(['compare', result, PROBLEM, '--case', 'peak-hour', ...SEEDS, '-f', 'json']);
    expect(code).toBe(0);
    const comparison = JSON.parse(out) as { case: string; seeds: number; figures: { key: string; servesim: number; measured: number; error: number }[]; notCompared: string[] };
    expect([comparison.case, comparison.seeds]).toEqual(['peak-hour', 3]);
    expect(comparison.figures.map((f) => f.key)).toEqual(VLLM_BENCH_KEYS.map(([key]) => key));
    for (const f of comparison.figures) expect([f.key, f.error]).toEqual([f.key, 0]);
    expect(comparison.notCompared).toEqual([]);
  });

  it('prints servesim, the measured figure and the error, and lists what it does not compare', async () => {
    const [line] = await vllmBench(PROBLEM, '--case', 'as-given');
    const ttft = line!['mean_ttft_ms'] as number;
    // measured 25% slower: servesim is 20% under; vLLM's ITL quantiles and deviations have no counterpart, a null goodput is absent
    const measured = { date: '20260101-000000', mean_ttft_ms: ttft * 1.25, request_goodput: null, median_itl_ms: 12.5, std_ttft_ms: 3, p99_itl_ms: 40 };
    const { code, out } = await runOnReference(['compare', file('measured.json', JSON.stringify(measured)), PROBLEM, '--case', 'as-given', ...SEEDS]);
    expect(code).toBe(0);
    const lines = out.split('\n');
    expect(lines[0]).toBe(`small, case as-given: 3 seeds from 1 (engine: reference) against ${join(dir, 'measured.json')}`);
    expect(lines.slice(2, 4)).toEqual(['figure        servesim  measured   error', '------------  --------  --------  ------']);
    expect(lines[4]).toMatch(/^mean_ttft_ms +\S+ +\S+ +-20\.0%$/);
    expect(lines).toHaveLength(8);
    expect(lines[6]).toBe('not compared (servesim gives no such figure for this case): median_itl_ms, std_ttft_ms, p99_itl_ms');
  });

  it("lists a token figure as not compared where the design makes no model calls", async () => {
    const measured = file('jobs-measured.json', JSON.stringify({ mean_e2el_ms: 200, mean_ttft_ms: 20 }));
    const { code, out } = await runOnReference(['compare', measured, JOBS, ...SEEDS, '-f', 'json']);
    expect(code).toBe(0);
    const comparison = JSON.parse(out) as { figures: { key: string }[]; notCompared: string[] };
    expect(comparison.figures.map((f) => f.key)).toEqual(['mean_e2el_ms']);
    expect(comparison.notCompared).toEqual(['mean_ttft_ms']);
  });

  it.each([
    ['several results, one a line', '{"mean_ttft_ms": 1}\n{"mean_ttft_ms": 2}\n', /is not one JSON object \(it has 2 lines: .*--append-result/],
    ['an array', '[{"mean_ttft_ms": 1}]', /must hold one JSON object, a vllm bench serve result/],
    ['a figure that is not a number', '{"mean_ttft_ms": "12 ms"}', /: mean_ttft_ms: must be a number, got "12 ms"/],
    ['no figure servesim gives', '{"p99_itl_ms": 12, "completed": 100}', /holds none of the figures servesim gives \(request_throughput, /],
  ])('refuses a result holding %s, before simulating', async (_, text, message) => {
    let simulated = false;
    const { code, err } = await runOnReference(['compare', file('bad.json', text), PROBLEM, '--case', 'as-given'], () => (simulated = true));
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(simulated).toBe(false);
  });

  it('needs one case: a problem with several takes --case', async () => {
    const result = file('one.json', '{"mean_ttft_ms": 10}');
    const { code, err } = await runOnReference(['compare', result, PROBLEM]);
    expect(code).toBe(2);
    expect(err).toContain('compare holds one case against a measured run, and small has 2: name one with --case (as-given, peak-hour)');
  });
});
