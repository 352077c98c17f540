/**
 * One grid point x case, aggregated over seeds (docs/model.md section 6). The field names are the
 * output columns, the same in JSON, CSV, Arrow and Parquet; `COLUMNS` says what each means, and
 * the OpenAPI document and the report read it from there. Durations are milliseconds (`_ms`),
 * rates per second (`_per_s`). A value that does not exist (a quantile of nothing, a component
 * the design lacks) is NaN here: null in JSON, Arrow and Parquet, empty in CSV.
 */
import { COMPONENT_NAMES, QUEUED_COMPONENTS, type ComponentName } from './result.js';
import type { Verdict } from './verdict.js';

type QueuedComponent = (typeof QUEUED_COMPONENTS)[number];

/** What a column holds: a count (an integer), another number, text, or a boolean. */
export type ColumnKind = 'count' | 'number' | 'text' | 'boolean';

interface Column {
  readonly kind: ColumnKind;
  readonly meaning: string;
}

const count = (meaning: string): Column => ({ kind: 'count', meaning });
const number = (meaning: string): Column => ({ kind: 'number', meaning });

/** The columns before the per-component ones, in output order. */
const HEAD = {
  case: { kind: 'text', meaning: 'the case (as-given, peak-hour, ... or the problem\'s own)' },
  seeds: count('instances simulated, each with its own seed'),
  requests: count('counted arrivals (requests, tasks or jobs) over all seeds'),
  success: number('pooled success rate: successes / arrivals'),
  success_lo: number('interval of the pooled success rate across seeds (at interval_level): low end'),
  success_hi: number('interval of the pooled success rate across seeds: high end'),
  mean_ms: number("mean end-to-end latency of successes, pooled over seeds: the seeds' summed latencies over their successes (exact, where the quantiles are within 0.8%)"),
  p50_ms: number('median end-to-end latency of successes (pooled histogram)'),
  p90_ms: number('90th percentile end-to-end latency of successes'),
  p95_ms: number('95th percentile end-to-end latency of successes'),
  p99_ms: number('99th percentile end-to-end latency of successes'),
  p99_lo_ms: number("2.5% quantile of the seeds' own p99"),
  p99_hi_ms: number("97.5% quantile of the seeds' own p99"),
  p99_all_ms: number('p99 where every failure counts as the timeout (infinite without one)'),
  ttft_mean_ms: number('mean time to first token of finished model calls, pooled over seeds (exact): from the arrival (or the tool call\'s end, for a later agent step) to the end of the iteration that finished the prompt'),
  ttft_p50_ms: number('median time to first token (pooled histogram)'),
  ttft_p90_ms: number('90th percentile time to first token'),
  ttft_p95_ms: number('95th percentile time to first token'),
  ttft_p99_ms: number('99th percentile time to first token'),
  ttft_p99_lo_ms: number("2.5% quantile of the seeds' own TTFT p99"),
  ttft_p99_hi_ms: number("97.5% quantile of the seeds' own TTFT p99"),
  tpot_mean_ms: number("mean time per output token after the first, of finished calls with two or more, pooled over seeds: a call's (end - first token) / (output tokens - 1), floored to a microsecond, averaged over calls (vLLM's TPOT; itl_mean_ms is its token-weighted inter-token latency)"),
  tpot_p50_ms: number('median time per output token (pooled histogram)'),
  tpot_p90_ms: number('90th percentile time per output token'),
  tpot_p95_ms: number('95th percentile time per output token'),
  tpot_p99_ms: number('99th percentile time per output token'),
  tpot_p99_lo_ms: number("2.5% quantile of the seeds' own TPOT p99"),
  tpot_p99_hi_ms: number("97.5% quantile of the seeds' own TPOT p99"),
  itl_mean_ms: number("mean inter-token latency, pooled over seeds (exact): every gap between two output tokens of a finished call alike, Σ (end - first token) / Σ (output tokens - 1) over calls with two or more (vLLM's mean ITL; tpot_mean_ms weighs each call alike instead)"),
  pass_probability: number('share of seeds that meet every goal on their own'),
  pass_probability_lo: number('Clopper-Pearson interval of pass_probability (at interval_level): low end'),
  pass_probability_hi: number('Clopper-Pearson interval of pass_probability: high end'),
  interval_level: number("two-sided confidence of this row's intervals: 1 - 2 x 0.05 / (looks x goals), so that the verdict is wrong with probability at most 5% over the goals (3 to 5) and the looks of --seeds auto (1 with a fixed seed count)"),
  verdict: { kind: 'text', meaning: "PASS when every goal's interval lies on its side (pass_probability_lo reaches the confidence, pooled success and p99, TTFT and TPOT p99 meet their goals), FAIL when one lies wholly on the wrong side or a seed overloaded, else UNDECIDED" },
  undecided: { kind: 'text', meaning: "the goals still within seed noise when UNDECIDED (pass_probability, success, p99, ttft_p99, tpot_p99), comma-separated; '' otherwise" },
  missed: { kind: 'text', meaning: "the goals whose interval lies wholly on the wrong side when FAIL, comma-separated; '' otherwise (an overloaded seed fails a case on its own: overload_reason)" },
  passes: { kind: 'boolean', meaning: 'verdict is PASS' },
  throughput_per_s: number('arrivals per second of measured window that succeeded (requests, tasks or jobs)'),
  output_tokens_per_s: number('output tokens of finished model calls per second of measured window'),
  output_tokens_per_s_per_replica: number('output_tokens_per_s per GPU replica'),
  goodput_per_s: number('arrivals per second of measured window that succeeded and met every goal on their own (latency, and TTFT and TPOT of each call)'),
  kv_hit_rate: number('cached prompt tokens / prompt tokens of counted model calls: kv_hit_rate_gpu + kv_hit_rate_offload'),
  kv_hit_rate_gpu: number("the part of kv_hit_rate the GPU's own KV cache held"),
  kv_hit_rate_offload: number('the part of kv_hit_rate loaded back from the KV offload tier (gpu.offload); NaN without one'),
  mean_batch: number('mean running sequences of a GPU replica while it iterates (the plain server: 1)'),
  batch_occupancy: number("mean_batch / gpu.slots (under gpu.disaggregation each pool's batches over its own slots): how full a replica's batch is while it iterates, the GPU's saturation under continuous batching (gpu_utilization is near 1 whenever any sequence runs)"),
  kv_in_use: number("time-weighted mean share of a GPU replica's KV capacity (gpu.kvTokens, a decode replica's its own) in use, averaged over replicas: what its running sequences reserve and the cache entries they pin (with those entries' ancestors), not entries cached for later; the GPU's saturation in memory, as batch_occupancy is in slots"),
  kv_in_use_peak: number("the largest share of its KV capacity one replica had in use in the measured window, per seed, averaged over seeds: how near its memory came to full (a queued call waits while its uncached prompt and output do not fit what is left; under gpu.kv incremental, its uncached prompt and first token)"),
  preemptions_per_call: number("preemptions per finished model call, pooled over seeds: Σ the counted calls' preemptions / Σ calls done (gpu.kv incremental: when a step's new tokens find no KV left, the replica's most recently admitted running sequence is preempted, its KV freed and its call queued again; docs/model.md section 3); NaN under gpu.kv reserve, which never preempts"),
  recomputed_tokens_per_call: number("tokens computed again per finished model call, pooled over seeds: Σ the tokens the counted calls' resumptions after a preemption recomputed (their prompt past what the cache still held and the tokens they had generated, less the prompt not yet reached when preempted) / Σ calls done; NaN under gpu.kv reserve"),
  prefill_utilization: number("gpu.disaggregation: the prefill pool's share of time iterating, pooled over seeds: Σ (busy time of every GPU replica - the decode pool's) / Σ (prefill replicas x measured window), gpu_utilization's definition over the prefill replicas; NaN when prefill and decode share replicas"),
  decode_utilization: number("gpu.disaggregation: the decode pool's share of time iterating: Σ the decode replicas' busy time / Σ (decode replicas x measured window); NaN when co-located"),
  prefill_batch_occupancy: number("gpu.disaggregation: batch_occupancy of the prefill pool: its mean running sequences while it iterates (Σ its batch area / Σ its busy time) / gpu.slots; NaN when co-located"),
  decode_batch_occupancy: number("gpu.disaggregation: batch_occupancy of the decode pool: (Σ its batch area / Σ its busy time) / its slots (gpu.disaggregation.decode.slots, else gpu.slots); NaN when co-located"),
  transfer_ms: number("gpu.disaggregation: mean time on the link of a counted call's KV transfer from its prefill replica to its decode replica (its latency, then the tokens the decode replica's cache does not hold x bytesPerToken / bandwidth), pooled over seeds: Σ link time / Σ transfers (0 with none); NaN when co-located"),
  transfer_wait_ms: number("gpu.disaggregation: mean wait of a counted call in its decode replica's queue once its prompt is done, from joining it until admitted (a free slot and room for its KV), when its transfer starts, pooled over seeds: Σ waits / Σ transfers (0 with none); the prefill pool's queue is gpu_wait_*; NaN when co-located"),
  rejected: count('arrivals refused at once, at any component'),
  timed_out: count('arrivals not done by their deadline'),
  died: count('arrivals whose replica died under them with no retry left'),
  overloaded: count("arrivals failed because an instance reached one of the engines' capacities (overload_reason)"),
  top_replica_share: number("share of the model calls the router placed that went to each seed's most-loaded GPU replica (of the prefill pool under gpu.disaggregation)"),
  longest_queue: count("longest queue seen: one GPU replica's, the tools', or the server's"),
  longest_queue_at: { kind: 'text', meaning: "the component of longest_queue ('' when no queue formed)" },
  gpus: count('GPUs the configuration uses: GPU replicas x the profile\'s tensor-parallel degree'),
  gpu_replicas: count('GPU replicas of the configuration (null without GPUs)'),
  routed_replicas: count("GPU replicas the router places calls on: the prefill pool's under gpu.disaggregation, else gpu_replicas; top_replica_share against 1 / routed_replicas shows imbalance"),
  dollars_per_hour: number('what those GPUs cost an hour: gpus x gpu.pricePerHour (null without a price)'),
  warmup_s: number('the warm-up before the measured window, seconds: traffic.warmup, or what traffic.warmup: auto chose for this case'),
  steady: { kind: 'boolean', meaning: "whether the measured window is in steady state: false when its start (what MSER truncates, over the intervals before the case's first slowdown, failure or burst) moves the mean sojourn by more than 3 standard errors and 5% (docs/model.md section 1); its row is then biased by the start-up" },
  suggested_warmup_s: number("the warm-up the steady-state test suggests: warmup_s plus MSER's truncation point, rounded up to whole seconds (warmup_s when steady); at least that when the truncation reached the middle of the judged intervals"),
} as const satisfies Record<string, Column>;

/** The per-component columns' meanings, by suffix; NaN where the design lacks the component. */
const PER_COMPONENT = {
  utilization: number("busy slot-time / (slots x measured window); the GPU's: the share of time its replicas iterate; app's and orchestrator's: slots held by arrivals in the system"),
  rejected: count('arrivals or calls it refused at once (full slots; the GPU: a call its KV cache can never hold)'),
  timed_out: count("arrivals whose deadline passed while they were there (the router's: on their way to a GPU)"),
} as const;
const PER_QUEUE = {
  wait_mean_ms: number('mean wait in its queue of the calls that reached it'),
  wait_p99_ms: number('99th percentile wait in its queue (0 for calls that did not wait)'),
  wait_probability: number('share of the calls that reached its queue that waited'),
} as const;

const TAIL = {
  overloaded_seeds: count("seeds whose instance reached one of the engines' capacities: a design past saturation"),
  overload_reason: { kind: 'text', meaning: "why those seeds fail the case ('' when none did), e.g. 'overloaded: queue at server passed its capacity (272 jobs) in 64 of 64 seeds'" },
} as const satisfies Record<string, Column>;

/** `<component>_<suffix>` columns, component by component in call order. */
export type ComponentColumn =
  | `${ComponentName}_${keyof typeof PER_COMPONENT}`
  | `${QueuedComponent}_${keyof typeof PER_QUEUE}`;

/** The columns of each pool under gpu.disaggregation (NaN when co-located). */
export type PoolColumn = 'prefill_utilization' | 'decode_utilization' | 'prefill_batch_occupancy' | 'decode_batch_occupancy' | 'transfer_ms' | 'transfer_wait_ms';

type ValueOf<C extends Column> = C['kind'] extends 'text' ? string : C['kind'] extends 'boolean' ? boolean : number;

/** One output row. */
export type CaseSummary = { readonly [K in keyof typeof HEAD]: ValueOf<(typeof HEAD)[K]> } &
  { readonly [K in keyof typeof TAIL]: ValueOf<(typeof TAIL)[K]> } &
  Readonly<Record<ComponentColumn, number>> & { readonly verdict: Verdict };

function componentColumns(): [ComponentColumn, Column][] {
  return COMPONENT_NAMES.flatMap((c) => {
    const own = Object.entries(PER_COMPONENT).map(([suffix, col]) => [`${c}_${suffix}`, { ...col, meaning: `${c}: ${col.meaning}` }] as [ComponentColumn, Column]);
    if (!(QUEUED_COMPONENTS as readonly string[]).includes(c)) return own;
    const queue = Object.entries(PER_QUEUE).map(([suffix, col]) => [`${c}_${suffix}`, { ...col, meaning: `${c}: ${col.meaning}` }] as [ComponentColumn, Column]);
    return [...own, ...queue];
  });
}

/** Every column, in output order, with its kind and meaning. */
export const COLUMNS: ReadonlyMap<keyof CaseSummary, Column> = new Map<keyof CaseSummary, Column>([
  ...(Object.entries(HEAD) as [keyof CaseSummary, Column][]),
  ...componentColumns(),
  ...(Object.entries(TAIL) as [keyof CaseSummary, Column][]),
]);

/** The per-component columns, component by component in call order. */
export const COMPONENT_COLUMNS: readonly ComponentColumn[] = componentColumns().map(([name]) => name);

export const SUMMARY_COLUMNS: readonly (keyof CaseSummary)[] = [...COLUMNS.keys()];

const ofKind = (kind: ColumnKind): ReadonlySet<keyof CaseSummary> =>
  new Set([...COLUMNS].filter(([, c]) => c.kind === kind).map(([name]) => name));

/** Columns that count (seeds, requests, failures, queue lengths): integers in Arrow and Parquet. */
export const INTEGER_COLUMNS: ReadonlySet<keyof CaseSummary> = ofKind('count');

/** Text columns: `case` (a dictionary in Arrow), `verdict`, `undecided`, `missed`, `longest_queue_at`, `overload_reason`. */
export const TEXT_COLUMNS: ReadonlySet<keyof CaseSummary> = ofKind('text');

/** Boolean columns: `passes`, `steady`. */
export const BOOLEAN_COLUMNS: ReadonlySet<keyof CaseSummary> = ofKind('boolean');

/**
 * How a component's load is measured: the GPU's by its batches' occupancy or its KV in use,
 * whichever is fuller, since under continuous batching a replica iterates (is "utilised") whenever
 * any sequence runs; the others' (and a GPU's without those columns) by utilisation.
 */
export type LoadMeasure = 'batch' | 'kv' | 'utilization';

/** The most loaded component of a row, its load and how it was measured; null if none has a load. */
export function busiestComponent(row: CaseSummary): { readonly component: ComponentName; readonly load: number; readonly measure: LoadMeasure } | null {
  let best: { component: ComponentName; load: number; measure: LoadMeasure } | null = null;
  for (const c of COMPONENT_NAMES) {
    const { load, measure } = c === 'gpu' ? gpuLoad(row) : { load: row[`${c}_utilization`], measure: 'utilization' as const };
    if (Number.isFinite(load) && (best === null || load > best.load)) best = { component: c, load, measure };
  }
  return best;
}

/**
 * The GPU's load: the fuller of its batches and its KV (the batches on a tie), else its
 * utilisation. Under gpu.disaggregation the batches are the fuller pool's: an average over both
 * would hide a full decode pool behind a prefill pool's few sequences at a time.
 */
function gpuLoad(row: CaseSummary): { readonly load: number; readonly measure: LoadMeasure } {
  const pools = Math.max(row.prefill_batch_occupancy, row.decode_batch_occupancy);
  const batch = Number.isFinite(pools) ? pools : row.batch_occupancy;
  const kv = row.kv_in_use;
  if (Number.isFinite(kv) && !(batch >= kv)) return { load: kv, measure: 'kv' };
  if (Number.isFinite(batch)) return { load: batch, measure: 'batch' };
  return { load: row.gpu_utilization, measure: 'utilization' };
}
