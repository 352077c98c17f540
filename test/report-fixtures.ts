/**
 * Sweep results for the report tests, made up rather than simulated: a parsed sweep (parsing
 * is cheap) with rows from a toy capacity model, so the charts have shape in milliseconds.
 */
import { tableFromIPC, type Table } from 'apache-arrow';
import type { CaseMargin, HintResult } from '../src/hint/api.js';
import { SUMMARY_COLUMNS, type CaseSummary } from '../src/model/summary.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import type { SweepMeta, SweepOutcome, SweepRow } from '../src/sweep/run.js';
import { sweepFromObject, type GridPoint, type Sweep } from '../src/sweep/spec.js';

export function hotPrefixSweep(grid: Record<string, unknown>): Sweep {
  return sweepFromObject({ id: 'hot-prefix-report', problem: 'hot-prefix', grid, seeds: 16 });
}

/** Every path of the big fixture: two numbers, a name, and a path held fixed. */
export const GRID = {
  'gpu.replicas': [6, 8],
  'gpu.slots': [4, 8, 16, 32],
  'router.policy': ['prefix-affinity', 'least-loaded', 'cache-aware'],
  'app.timeout': ['30s'],
};

function summary(caseName: string, capacity: number, load: number): CaseSummary {
  const rho = load / capacity;
  // past twice the capacity nothing succeeds: the latency quantiles are NaN, as in real runs
  const dead = rho > 2;
  const success = dead ? 0 : Math.min(1, Math.max(0, 1.01 - 0.04 * rho ** 3));
  const p99 = dead ? NaN : 600 / Math.max(0.08, 1.05 - Math.min(rho, 1));
  const passProbability = Number((1 / (1 + Math.exp(12 * (rho - 0.9)))).toFixed(4));
  // passing at 0.95; just short of it the seeds cannot tell (a toy interval, not Clopper-Pearson's)
  const verdict = passProbability >= 0.95 ? 'PASS' : passProbability >= 0.8 ? 'UNDECIDED' : 'FAIL';
  // a column the toy model does not make is NaN, as for a component the design lacks
  const none = Object.fromEntries(SUMMARY_COLUMNS.map((c) => [c, NaN]));
  return {
    ...none,
    case: caseName, seeds: 16, requests: 9000, success,
    success_lo: Math.max(0, success - 0.01), success_hi: Math.min(1, success + 0.005),
    p50_ms: p99 / 3, p90_ms: p99 / 1.6, p99_ms: p99, p99_lo_ms: p99 * 0.85, p99_hi_ms: p99 * 1.2,
    p99_all_ms: dead ? 30_000 : p99, ttft_p99_ms: p99 / 4, pass_probability: passProbability,
    pass_probability_lo: Math.max(0, passProbability - 0.1), pass_probability_hi: Math.min(1, passProbability + 0.05), interval_level: 0.95,
    verdict, undecided: verdict === 'UNDECIDED' ? 'pass_probability' : '', missed: verdict === 'FAIL' ? 'pass_probability' : '', passes: verdict === 'PASS', kv_hit_rate: 0.8, gpu_utilization: Math.min(1, rho),
    gpu_wait_mean_ms: 10, gpu_wait_probability: 0.3, mean_batch: 3, rejected: 0, timed_out: dead ? 9000 : 0, died: 0,
    top_replica_share: 0.2, longest_queue: 4, longest_queue_at: 'gpu', overloaded: 0, overloaded_seeds: 0,
    warmup_s: 10, steady: true, suggested_warmup_s: 10, overload_reason: '',
  } as CaseSummary;
}

/**
 * Rows for the points `keep` takes, from load / capacity (prefix affinity wastes 70% of it);
 * `overrides` replaces columns in every row (NaN: a column no design has).
 */
export function syntheticOutcome(sweep: Sweep, keep: (point: GridPoint) => boolean = () => true, overrides: Partial<CaseSummary> = {}): SweepOutcome {
  const rows: SweepRow[] = [];
  for (const point of sweep.points.filter(keep)) {
    const at = (path: string, fallback: number | string) => {
      const a = sweep.axes.findIndex((axis) => axis.path === path);
      return a < 0 ? fallback : point.values[a]!;
    };
    const capacity = Number(at('gpu.replicas', 6)) * Number(at('gpu.slots', 8)) * (at('router.policy', 'least-loaded') === 'prefix-affinity' ? 0.3 : 1);
    sweep.caseNames.forEach((name, c) => rows.push({ point, summary: { ...summary(name, capacity, 40 * (1 + 0.25 * c)), ...overrides } }));
  }
  const meta: SweepMeta = {
    problemId: sweep.problem.id, sweepId: sweep.id, engine: 'pool', adapter: null, seeds: sweep.seeds, maxSeeds: sweep.maxSeeds,
    baseSeed: sweep.baseSeed, servesimVersion: '0.1.0', createdAt: '2026-11-29T15:07:31.123Z', batches: [], trace: null,
  };
  const done = new Set(rows.map((r) => r.point.index));
  return {
    rows, finished: [...done], unfinished: sweep.points.filter((p) => !done.has(p.index)).map((p) => p.index),
    cancelled: false, error: null, meta,
  };
}

export function asTable(sweep: Sweep, outcome: SweepOutcome): Table {
  return tableFromIPC(sweepToArrow(sweep, outcome.rows, outcome.meta));
}

function margin(caseName: string, passes: boolean, why = ''): CaseMargin {
  const [probability, lo, hi] = passes ? [0.98, 0.93, 0.99] : [0.4, 0.2, 0.62];
  return {
    case: caseName, verdict: passes ? 'PASS' : 'FAIL', passes, seeds: 16, success: 0.995, p99_ms: 2100, ttft_p99_ms: null, tpot_p99_ms: null,
    pass_probability: probability, pass_probability_lo: lo, pass_probability_hi: hi, pass_probability_margin: lo - 0.9,
    success_margin: 0.005, p99_margin_ms: 900, ttft_p99_margin_ms: null, tpot_p99_margin_ms: null, why,
  };
}

/** A hint over the three varying paths of {@link GRID}: 8 x 16 slots of least-loaded. */
export const HINT: HintResult = {
  problemId: 'hot-prefix',
  title: 'One replica owns the hot prefix',
  paths: ['gpu.replicas', 'gpu.slots', 'router.policy'],
  cost: 'gpu.replicas * gpu.slots',
  goals: { success: 0.99, p99_ms: 3000 },
  confidence: 0.9,
  seeds: 16,
  maxSeeds: 16,
  seed: 1,
  recheckSeed: 2,
  verdictLevel: 0.95,
  margin: 0.1 / 3,
  cases: ['as-given', 'peak-hour', 'slow-dependency', 'server-dies'],
  hints: [{
    found: { values: { 'gpu.replicas': 8, 'gpu.slots': 16, 'router.policy': 'least-loaded' }, cost: 128, verdict: 'PASS', cases: [margin('as-given', true), margin('server-dies', true)] },
    cheaper: [
      { values: { 'gpu.replicas': 6, 'gpu.slots': 16, 'router.policy': 'least-loaded' }, cost: 96, verdict: 'FAIL', cases: [margin('as-given', true), margin('server-dies', false, 'server-dies: success 98.9% < 99%')] },
      { values: { 'gpu.replicas': 8, 'gpu.slots': 8, 'router.policy': 'least-loaded' }, cost: 64, verdict: 'FAIL', cases: [margin('as-given', true), margin('slow-dependency', false, 'slow-dependency: p99 5.3 s > 3 s')] },
    ],
    holds: true,
  }],
  failing: [
    { values: { 'gpu.replicas': 8, 'gpu.slots': 32, 'router.policy': 'prefix-affinity' }, cost: 256, verdict: 'FAIL', cases: [margin('as-given', false, 'as-given: p99 4.3 s > 3 s')] },
  ],
  evaluated: 14,
  instances: 14 * 4 * 16,
  rounds: 2,
  gridSize: 24,
  monotonicityViolations: [],
  engine: 'pool',
  gpuSeconds: null,
};
