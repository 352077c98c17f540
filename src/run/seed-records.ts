/**
 * Per-seed records (`--seeds-out`, `POST /v1/sweeps?table=seeds`): one row per (grid point, case,
 * seed), each seed's own counts, success rate, percentiles and goal verdicts, from the instance
 * records every engine decodes alike. The pooled row of a case (src/model/summarize.ts) follows
 * from them: its pass probability is the share of these rows that pass, its success Σ successes
 * / Σ arrivals. Made only when asked (PointsRunOptions.onSeeds): a run keeps no seed's record
 * otherwise.
 */
import type { Goals } from '../model/problem.js';
import type { InstanceResult } from '../model/result.js';
import type { ColumnKind } from '../model/summary.js';
import { quantile } from '../model/histogram.js';
import { meanItlMicros, seedGoals } from '../model/summarize.js';
import type { ConfigurationSeeds, PointsRunOptions } from './points.js';

/** One seed of one case. Durations in milliseconds; NaN where there is no value (null in a table). */
export interface SeedRecord {
  readonly case: string;
  readonly seed: number;
  readonly arrivals: number;
  readonly successes: number;
  readonly rejected: number;
  readonly timed_out: number;
  readonly died: number;
  readonly overloaded: number;
  readonly success: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  readonly ttft_p99_ms: number;
  readonly tpot_p99_ms: number;
  readonly itl_mean_ms: number;
  readonly success_met: boolean;
  readonly p99_met: boolean;
  /** null where the problem sets no such goal. */
  readonly ttft_p99_met: boolean | null;
  readonly tpot_p99_met: boolean | null;
  readonly passes: boolean;
}

/**
 * A column of a table of records T (per seed, per request): its kind, meaning and value (NaN:
 * none). `nullable`: a count or boolean that may be null (other numbers always may).
 */
export interface RecordColumn<T> {
  readonly name: keyof T & string;
  readonly kind: ColumnKind;
  readonly meaning: string;
  readonly nullable?: boolean;
  // a function literal a column: a shared `r[name]` would read every column through one megamorphic keyed load
  readonly value: (r: T) => string | number | boolean | null;
}

/** A column of a per-seed table. */
export type SeedColumn = RecordColumn<SeedRecord>;

/** The columns of a per-seed table, in table order (docs/outputs.md). */
export const SEED_COLUMNS: readonly SeedColumn[] = [
  { name: 'case', kind: 'text', meaning: 'the case', value: (r) => r.case },
  { name: 'seed', kind: 'count', meaning: "the instance's index under the run's base seed (servesim.base_seed): 0 .. seeds - 1, and with --seeds auto every seed a configuration took", value: (r) => r.seed },
  { name: 'arrivals', kind: 'count', meaning: 'counted arrivals (requests, tasks or jobs) in its measured window', value: (r) => r.arrivals },
  { name: 'successes', kind: 'count', meaning: 'arrivals that succeeded', value: (r) => r.successes },
  { name: 'rejected', kind: 'count', meaning: 'arrivals refused at once, at any component', value: (r) => r.rejected },
  { name: 'timed_out', kind: 'count', meaning: 'arrivals not done by their deadline', value: (r) => r.timed_out },
  { name: 'died', kind: 'count', meaning: 'arrivals whose replica died and no retry finished', value: (r) => r.died },
  { name: 'overloaded', kind: 'count', meaning: "arrivals refused or failed because the instance reached one of the engines' capacities", value: (r) => r.overloaded },
  { name: 'success', kind: 'number', meaning: 'its success rate: successes / arrivals (null without arrivals)', value: (r) => r.success },
  { name: 'p50_ms', kind: 'number', meaning: 'its median end-to-end latency of successes, from its own histogram as the pooled row reads the pooled one', value: (r) => r.p50_ms },
  { name: 'p90_ms', kind: 'number', meaning: 'its 90th percentile end-to-end latency', value: (r) => r.p90_ms },
  { name: 'p99_ms', kind: 'number', meaning: 'its 99th percentile end-to-end latency: the p99 its pass weighs', value: (r) => r.p99_ms },
  { name: 'ttft_p99_ms', kind: 'number', meaning: 'its 99th percentile time to first token (null without model calls)', value: (r) => r.ttft_p99_ms },
  { name: 'tpot_p99_ms', kind: 'number', meaning: 'its 99th percentile time per output token', value: (r) => r.tpot_p99_ms },
  { name: 'itl_mean_ms', kind: 'number', meaning: "its mean inter-token latency, token-weighted as vLLM's: Σ (end - first token) / Σ (output tokens - 1) of its calls with two or more (exact)", value: (r) => r.itl_mean_ms },
  { name: 'success_met', kind: 'boolean', meaning: 'its success rate meets the success goal', value: (r) => r.success_met },
  { name: 'p99_met', kind: 'boolean', meaning: 'its p99 meets the p99 goal', value: (r) => r.p99_met },
  { name: 'ttft_p99_met', kind: 'boolean', nullable: true, meaning: 'its TTFT p99 meets the TTFT goal (null where the problem sets none)', value: (r) => r.ttft_p99_met },
  { name: 'tpot_p99_met', kind: 'boolean', nullable: true, meaning: 'its TPOT p99 meets the TPOT goal (null where the problem sets none)', value: (r) => r.tpot_p99_met },
  { name: 'passes', kind: 'boolean', meaning: 'it had arrivals, reached no capacity of the engines and met every goal set: a seed pass_probability counts (seedGoals, src/model/summarize.ts)', value: (r) => r.passes },
];

/** Instance `seed` of a case as its row. */
export function seedRecord(caseName: string, seed: number, r: InstanceResult, goals: Goals): SeedRecord {
  const p99 = quantile(r.latency, 0.99);
  const ttftP99 = quantile(r.ttft, 0.99);
  const tpotP99 = quantile(r.tpot, 0.99);
  const met = seedGoals(r, p99, ttftP99, tpotP99, goals);
  return {
    case: caseName,
    seed,
    arrivals: r.arrivals,
    successes: r.successes,
    rejected: r.rejected,
    timed_out: r.timedOut,
    died: r.died,
    overloaded: r.overloaded,
    success: r.arrivals > 0 ? r.successes / r.arrivals : Number.NaN,
    p50_ms: quantile(r.latency, 0.5) / 1000,
    p90_ms: quantile(r.latency, 0.9) / 1000,
    p99_ms: p99 / 1000,
    ttft_p99_ms: ttftP99 / 1000,
    tpot_p99_ms: tpotP99 / 1000,
    itl_mean_ms: meanItlMicros(r) / 1000,
    success_met: met.success,
    p99_met: met.p99,
    ttft_p99_met: met.ttftP99,
    tpot_p99_met: met.tpotP99,
    passes: met.passes,
  };
}

/**
 * `options` that also hand each finished point's per-seed records, cases in the point's order
 * and each case's seeds in order, to `onRecords`, just before its rows go to `options.onPoint`.
 * A point that does not finish (a stopped run) gives none: the records match the rows.
 */
export function withSeedRecords<P>(options: PointsRunOptions<P>, onRecords: (point: P, records: readonly SeedRecord[]) => void): PointsRunOptions<P> {
  // per point, per case: the records so far (a later look of --seeds auto adds to them)
  const pending = new Map<P, SeedRecord[][]>();
  const { onPoint } = options;
  return {
    ...options,
    onSeeds: ({ point, problem, caseIndex, caseName, first, results }: ConfigurationSeeds<P>) => {
      const cases = pending.get(point) ?? [];
      pending.set(point, cases);
      const records = (cases[caseIndex] ??= []);
      results.forEach((r, i) => records.push(seedRecord(caseName, first + i, r, problem.goals)));
    },
    onPoint: (point, rows) => {
      const records = (pending.get(point) ?? []).flatMap((c) => c ?? []);
      pending.delete(point);
      onRecords(point, records);
      return onPoint?.(point, rows);
    },
  };
}
