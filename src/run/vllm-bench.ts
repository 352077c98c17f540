/**
 * A case's row as `vllm bench serve` writes its result (vllm/benchmarks/serve.py, the JSON of
 * `--save-result`): the same keys and units, so a simulated case and a measured run can be read
 * side by side, and `servesim compare` can hold one against the other. docs/outputs.md lists
 * the keys servesim cannot give and why.
 */
import { ServesimError } from '../errors.js';
import type { CaseSummary } from '../model/summary.js';
import type { RunResult } from './types.js';

/** The per-request statistics vLLM reports, by its name and servesim's column prefix. */
const STATISTICS = [
  { vllm: 'ttft', column: 'ttft_' },
  { vllm: 'tpot', column: 'tpot_' },
  { vllm: 'e2el', column: '' },
] as const;

/** vLLM's statistic of a metric (its key's head) and servesim's (its column's tail). */
const MOMENTS = [
  ['mean', 'mean'],
  ['median', 'p50'],
  ['p90', 'p90'],
  ['p95', 'p95'],
  ['p99', 'p99'],
] as const;

/**
 * Each key servesim gives, in output order, and the column it comes from. The throughputs are
 * per second of the measured window; `request_goodput` counts the successes that met every goal
 * the problem sets, as vLLM's does with `--goodput e2el:P99 ttft:TTFT_P99 tpot:TPOT_P99` (ms).
 */
export const VLLM_BENCH_KEYS: readonly (readonly [key: string, column: keyof CaseSummary])[] = [
  ['request_throughput', 'throughput_per_s'],
  ['request_goodput', 'goodput_per_s'],
  ['output_throughput', 'output_tokens_per_s'],
  ...STATISTICS.flatMap(({ vllm, column }) =>
    MOMENTS.map(([head, tail]) => [`${head}_${vllm}_ms`, `${column}${tail}_ms` as keyof CaseSummary] as const),
  ),
  // ITL's quantiles need a histogram of the gaps between tokens, which the records do not keep
  ['mean_itl_ms', 'itl_mean_ms'],
];

const GIVEN: ReadonlySet<string> = new Set(VLLM_BENCH_KEYS.map(([key]) => key));

/**
 * Figures a vLLM result may hold that servesim has no counterpart for: the inter-token
 * latency's quantiles, standard deviations, percentiles it does not compute, and the token
 * throughputs that count prompts.
 */
const VLLM_FIGURE = /^(?:(?:mean|median|std|p\d+(?:\.\d+)?)_(?:ttft|tpot|itl|e2el)_ms|total_token_throughput|max_output_tokens_per_s)$/;

/** A number as JSON has it: non-finite (no such value) is null. */
const jsonNumber = (v: number): number | null => (Number.isFinite(v) ? v : null);

/** One case's row as a `vllm bench serve` result object, with the problem, case and seeds it came from. */
export function vllmBenchRecord(problemId: string, row: CaseSummary): Record<string, string | number | null> {
  const out: Record<string, string | number | null> = { problem: problemId, case: row.case, seeds: row.seeds };
  for (const [key, column] of VLLM_BENCH_KEYS) out[key] = jsonNumber(row[column] as number);
  return out;
}

/**
 * A run as JSON Lines, one object a case, as `vllm bench serve --append-result` appends its
 * results to one file (several problems' lines follow each other).
 */
export function formatVllmBench(result: RunResult): string {
  return result.rows.map((row) => `${JSON.stringify(vllmBenchRecord(result.problem.id, row))}\n`).join('');
}

/** One figure held against its measurement: error is servesim / measured - 1 (NaN when measured is 0). */
export interface FigureComparison {
  readonly key: string;
  readonly servesim: number;
  readonly measured: number;
  readonly error: number;
}

/** A measured `vllm bench serve` result: the figures servesim gives that it holds, and the others it holds. */
export interface MeasuredResult {
  /** Key to value, for the keys of {@link VLLM_BENCH_KEYS} it holds as numbers. */
  readonly figures: ReadonlyMap<string, number>;
  /** Its figures servesim has no counterpart for (ITL's quantiles, deviations, ...), as they come. */
  readonly others: readonly string[];
}

/**
 * The figures of a measured result (parsed JSON; `source` names it in errors). A key it holds
 * as null (vLLM's `request_goodput` without `--goodput`) is absent; one it holds as anything
 * else but a number is an error naming it, as is a result with no key servesim gives.
 */
export function measuredResult(value: unknown, source: string): MeasuredResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${source} must hold one JSON object, a vllm bench serve result (--save-result)`);
  }
  const result = value as Readonly<Record<string, unknown>>;
  const figures = new Map<string, number>();
  for (const [key] of VLLM_BENCH_KEYS) {
    const v = result[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number') throw new ServesimError('SERVESIM_FILE_UNREADABLE', `must be a number, got ${JSON.stringify(v)}`, `${source}: ${key}`);
    figures.set(key, v);
  }
  if (figures.size === 0) {
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${source} holds none of the figures servesim gives (${[...GIVEN].join(', ')})`);
  }
  const others = Object.keys(result).filter((key) => VLLM_FIGURE.test(key) && !GIVEN.has(key) && typeof result[key] === 'number');
  return { figures, others };
}

/**
 * A case's row held against a measured result, key by key in {@link VLLM_BENCH_KEYS} order:
 * each key both give (servesim gives none where the case has no such value, as TTFT without
 * model calls).
 */
export function compareWithMeasured(row: CaseSummary, measured: MeasuredResult): FigureComparison[] {
  const out: FigureComparison[] = [];
  for (const [key, column] of VLLM_BENCH_KEYS) {
    const value = measured.figures.get(key);
    const servesim = row[column] as number;
    if (value === undefined || !Number.isFinite(servesim)) continue;
    out.push({ key, servesim, measured: value, error: value === 0 ? Number.NaN : servesim / value - 1 });
  }
  return out;
}

/** A figure as compare prints it: four significant digits, whole numbers from 1,000 up. */
export function formatFigure(v: number): string {
  if (!Number.isFinite(v)) return '–';
  return Math.abs(v) >= 1000 ? v.toFixed(0) : v.toPrecision(4);
}

/** A relative error as compare prints it: a signed percentage to a tenth. */
export function formatError(error: number): string {
  if (!Number.isFinite(error)) return '–';
  const percent = (error * 100).toFixed(1);
  return error >= 0 ? `+${percent}%` : `${percent}%`;
}
