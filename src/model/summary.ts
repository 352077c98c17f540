/**
 * One grid point x case, aggregated over seeds (docs/model.md section 6). The field names are the
 * output columns, the same in JSON, CSV and Arrow.
 */
export interface CaseSummary {
  readonly case: string;
  readonly seeds: number;
  /** Counted arrivals over all seeds. */
  readonly requests: number;
  /** Pooled success rate and its 95% interval across seeds. */
  readonly success: number;
  readonly success_lo: number;
  readonly success_hi: number;
  /** Pooled quantiles of successes' latency, milliseconds. */
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  /** Spread (2.5% and 97.5% quantiles) of the per-seed p99. */
  readonly p99_lo_ms: number;
  readonly p99_hi_ms: number;
  /** p99 where every failure counts as the timeout. */
  readonly p99_all_ms: number;
  /** Share of seeds meeting both goals. */
  readonly pass_probability: number;
  readonly passes: boolean;
  readonly kv_hit_rate: number;
  readonly gpu_utilization: number;
  readonly mean_batch: number;
  readonly rejected: number;
  readonly timed_out: number;
  readonly died: number;
  /** Requests failed because an instance was overloaded (see `overload_reason`). */
  readonly overloaded: number;
  /** Share of model calls that went to each seed's most-loaded GPU replica (pooled over seeds). */
  readonly top_replica_share: number;
  readonly mean_wait_ms: number;
  readonly wait_probability: number;
  readonly longest_queue: number;
  /** Seeds whose instance reached one of the engines' capacities: a design past saturation. */
  readonly overloaded_seeds: number;
  /**
   * Why those seeds fail the case, '' when none did: "overloaded: queue at server passed its
   * capacity (272 jobs) in 64 of 64 seeds".
   */
  readonly overload_reason: string;
}

export const SUMMARY_COLUMNS: readonly (keyof CaseSummary)[] = [
  'case', 'seeds', 'requests', 'success', 'success_lo', 'success_hi', 'p50_ms', 'p90_ms',
  'p99_ms', 'p99_lo_ms', 'p99_hi_ms', 'p99_all_ms', 'pass_probability', 'passes',
  'kv_hit_rate', 'gpu_utilization', 'mean_batch', 'rejected', 'timed_out', 'died', 'overloaded',
  'top_replica_share', 'mean_wait_ms', 'wait_probability', 'longest_queue', 'overloaded_seeds',
  'overload_reason',
];

/** Columns that count (seeds, requests, queue lengths): integers in Arrow and Parquet. */
export const INTEGER_COLUMNS: ReadonlySet<keyof CaseSummary> = new Set<keyof CaseSummary>([
  'seeds', 'requests', 'rejected', 'timed_out', 'died', 'overloaded', 'longest_queue',
  'overloaded_seeds',
]);
