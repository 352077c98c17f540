/**
 * Output formats of a run: a fixed-width table for people, JSON and CSV for programs.
 * Every format ends with a newline; NaN (a quantile without successes) is "–" in the table,
 * null in JSON and an empty field in CSV.
 */
import { goalsInMilliseconds, type Goals } from '../model/problem.js';
import { SUMMARY_COLUMNS, busiestComponent, type CaseSummary } from '../model/summary.js';
import type { RunResult } from './types.js';
import { VERDICT_LEVEL } from '../model/verdict.js';

/** What the table's header lines say about the run; `RunMeta` fits, plus the title. */
export interface TableMeta {
  readonly problemId: string;
  readonly title?: string;
  /** The engine that ran (`pool`, `gpu`, ...). */
  readonly engine?: string;
  readonly adapter?: string | null;
  readonly seeds?: number;
  /** Above `seeds`: --seeds auto, each row's seeds column says what it took. */
  readonly maxSeeds?: number;
  readonly baseSeed?: number;
  /** Share of seeds that must meet every goal. */
  readonly confidence?: number;
}

/** A column value as JSON has it: non-finite numbers become null. */
export type JsonCell = string | number | boolean | null;

const DASH = '–';

interface TableColumn {
  readonly title: string;
  readonly align: 'left' | 'right';
  readonly cell: (row: CaseSummary) => string;
}

const TABLE_COLUMNS: readonly TableColumn[] = [
  { title: 'case', align: 'left', cell: (r) => r.case },
  { title: 'result', align: 'left', cell: (r) => r.verdict },
  { title: 'success %', align: 'right', cell: (r) => percentDown(r.success) },
  { title: 'p99 s', align: 'right', cell: (r) => seconds(r.p99_ms) },
  { title: 'p99_all s', align: 'right', cell: (r) => seconds(r.p99_all_ms) },
  { title: 'pass prob (interval)', align: 'right', cell: passProbability },
  { title: 'kv hit %', align: 'right', cell: kvHit },
  { title: 'busiest', align: 'left', cell: busiest },
  { title: 'mean batch', align: 'right', cell: (r) => fixed(r.mean_batch, 1) },
  { title: 'rejected', align: 'right', cell: (r) => count(r.rejected) },
  { title: 'timed out', align: 'right', cell: (r) => count(r.timed_out) },
  { title: 'died', align: 'right', cell: (r) => count(r.died) },
];

/** The KV hit rate, and the part of it the KV offload tier gave where the replicas have one: "19.3 (10.5 tier)". */
function kvHit(r: CaseSummary): string {
  const total = fixed(r.kv_hit_rate * 100, 1);
  return Number.isFinite(r.kv_hit_rate_offload) ? `${total} (${fixed(r.kv_hit_rate_offload * 100, 1)} tier)` : total;
}

/** Only in tables of model calls (not of a plain queueing server). */
const TOKEN_COLUMNS: readonly TableColumn[] = [
  { title: 'ttft p99 ms', align: 'right', cell: (r) => fixed(r.ttft_p99_ms, 1) },
  { title: 'tpot p99 ms', align: 'right', cell: (r) => fixed(r.tpot_p99_ms, 1) },
];

/**
 * Only in tables of GPU replicas: KV in use (its mean, and its peak), the GPU's saturation in
 * memory beside the busiest column's batches; the share of calls the busiest replica took (imbalance).
 */
const GPU_COLUMNS: readonly TableColumn[] = [
  { title: 'kv in use % (peak)', align: 'right', cell: (r) => `${fixed(r.kv_in_use * 100, 1)} (${fixed(r.kv_in_use_peak * 100, 0)})` },
  { title: 'top replica %', align: 'right', cell: (r) => fixed(r.top_replica_share * 100, 1) },
];

/**
 * Only in tables with a row whose replicas take KV incrementally (gpu.kv incremental) and
 * preempted a call: preemptions per finished call, beside the KV in use that caused them; "–"
 * for a row under gpu.kv reserve, which never preempts.
 */
const PREEMPT_COLUMN: TableColumn = { title: 'preempt/call', align: 'right', cell: (r) => perCall(r.preemptions_per_call) };

/**
 * Only in tables with a row whose GPU replicas are split into a prefill and a decode pool
 * (gpu.disaggregation): a KV transfer's mean time on the link, and in parentheses its mean wait
 * in the decode replica's queue (for a slot and KV room) before it; "–" for a co-located row, which has none.
 */
const TRANSFER_COLUMN: TableColumn = {
  title: 'xfer ms (wait)',
  align: 'right',
  cell: (r) => (Number.isNaN(r.transfer_ms) ? DASH : `${fixed(r.transfer_ms, 2)} (${fixed(r.transfer_wait_ms, 2)})`),
};

/** "0.31", "0.0042": two decimals, or two significant digits under 0.1 so that a rare preemption shows. */
function perCall(v: number): string {
  if (!Number.isFinite(v) || v === 0 || v >= 0.1) return fixed(v, v === 0 ? 0 : 2);
  return v.toPrecision(2);
}

/** Only with --seeds auto: the seeds each case took. */
const SEEDS_COLUMN: TableColumn = { title: 'seeds', align: 'right', cell: (r) => count(r.seeds) };

/** "gpu batch 97.9%": the most loaded component (the GPU by batch occupancy or KV in use), where saturation shows first. */
function busiest(row: CaseSummary): string {
  const b = busiestComponent(row);
  if (b === null) return DASH;
  return `${b.component}${b.measure === 'utilization' ? '' : ` ${b.measure}`} ${fixed(b.load * 100, 1)}%`;
}

/** "0.97 (0.91-1.00)": the share of seeds that pass, and its interval. */
function passProbability(row: CaseSummary): string {
  return `${fixed(row.pass_probability, 2)} (${fixed(row.pass_probability_lo, 2)}-${fixed(row.pass_probability_hi, 2)})`;
}

/**
 * Only in tables with a row whose window is not in steady state, or whose cases' warm-ups differ
 * (traffic.warmup: auto): each case's warm-up, and the one the steady-state test suggests.
 */
const WARMUP_COLUMN: TableColumn = {
  title: 'warm-up s',
  align: 'left',
  cell: (r) => (r.steady !== false ? trimNumber(r.warmup_s) : `${trimNumber(r.warmup_s)}: not steady, try ${trimNumber(r.suggested_warmup_s)}`),
};

/** Only in tables with an overloaded row: its unserved requests, and the reason it fails. */
const OVERLOAD_COLUMNS: readonly TableColumn[] = [
  { title: 'overloaded', align: 'right', cell: (r) => count(r.overloaded) },
  { title: 'why', align: 'left', cell: (r) => r.overload_reason },
];

/**
 * A readable fixed-width table, one row per case: a header line with the problem and engine,
 * a line with the goals, then the columns people read first (PASS/FAIL, success, p99, ...).
 */
export function formatTable(
  rows: readonly CaseSummary[],
  goals: Goals,
  meta: TableMeta,
): string {
  const lines: string[] = [];
  const title = meta.title === undefined || meta.title === '' ? '' : ` — ${meta.title}`;
  lines.push(`${meta.problemId}${title}`);

  const about: string[] = [];
  if (meta.engine !== undefined) {
    about.push(`engine: ${meta.engine}${meta.adapter ? ` (${meta.adapter})` : ''}`);
  }
  const auto = meta.seeds !== undefined && meta.maxSeeds !== undefined && meta.maxSeeds > meta.seeds;
  if (meta.seeds !== undefined) {
    const from = meta.baseSeed === undefined ? '' : ` from ${meta.baseSeed}`;
    const count = auto ? `${meta.seeds} to ${meta.maxSeeds} seeds until decided` : `${meta.seeds} seed${meta.seeds === 1 ? '' : 's'}`;
    about.push(`${count}${from}`);
  }
  const level = rows[0]?.interval_level;
  // the verdicts' confidence, and the intervals' that gives it over the goals and looks
  if (level !== undefined) about.push(`verdicts at ${trimNumber(VERDICT_LEVEL * 100)}% (intervals ${Number((level * 100).toFixed(2))}%)`);
  let goalText = `goals: success ≥ ${trimNumber(goals.success * 100)}%, p99 ≤ ${trimNumber(goals.p99 / 1e6)} s`;
  if (goals.ttftP99 !== null) goalText += `, ttft p99 ≤ ${trimNumber(goals.ttftP99 / 1000)} ms`;
  if (goals.tpotP99 !== null) goalText += `, tpot p99 ≤ ${trimNumber(goals.tpotP99 / 1000)} ms`;
  if (meta.confidence !== undefined) goalText += `, pass prob ≥ ${trimNumber(meta.confidence)}`;
  about.push(goalText);
  lines.push(about.join(' · '));
  lines.push('');

  const tokens = rows.some((r) => Number.isFinite(r.ttft_p99_ms)) ? TOKEN_COLUMNS : [];
  const gpu = rows.some((r) => Number.isFinite(r.batch_occupancy)) ? GPU_COLUMNS : [];
  // after KV in use (the first GPU column), where some call was preempted
  const preempt = gpu.length > 0 && rows.some((r) => r.preemptions_per_call > 0) ? [PREEMPT_COLUMN] : [];
  // after the preemptions, where some row is disaggregated
  const transfer = gpu.length > 0 && rows.some((r) => Number.isFinite(r.transfer_ms)) ? [TRANSFER_COLUMN] : [];
  const overloads = rows.some((r) => r.overloaded_seeds > 0) ? OVERLOAD_COLUMNS : [];
  const warmups = rows.some((r) => r.steady === false || !Object.is(r.warmup_s, rows[0]!.warmup_s)) ? [WARMUP_COLUMN] : [];
  // the seeds after the result, the token columns after p99_all
  const columns = [...TABLE_COLUMNS.slice(0, 2), ...(auto ? [SEEDS_COLUMN] : []), ...TABLE_COLUMNS.slice(2, 5), ...tokens, ...TABLE_COLUMNS.slice(5), ...gpu.slice(0, 1), ...preempt, ...transfer, ...gpu.slice(1), ...overloads, ...warmups];
  const cells = rows.map((row) => columns.map((c) => c.cell(row)));
  const widths = columns.map((c, i) =>
    Math.max(width(c.title), ...cells.map((r) => width(r[i]!))),
  );
  const render = (values: readonly string[]): string =>
    values
      .map((v, i) => pad(v, widths[i]!, columns[i]!.align))
      .join('  ')
      .trimEnd();
  lines.push(render(columns.map((c) => c.title)));
  lines.push(render(widths.map((w) => '-'.repeat(w))));
  for (const r of cells) lines.push(render(r));
  if (rows.length === 0) lines.push('(no cases)');
  return lines.join('\n') + '\n';
}

/** One row as a JSON object with every column of `SUMMARY_COLUMNS`, in order. */
export function summaryToJson(row: CaseSummary): Record<string, JsonCell> {
  const out: Record<string, JsonCell> = {};
  for (const col of SUMMARY_COLUMNS) {
    const v = row[col];
    out[col] = typeof v === 'number' && !Number.isFinite(v) ? null : v;
  }
  return out;
}

/** A run as a plain JSON value: the problem's identity and goals, the run's meta, the rows. */
export function runToJson(result: RunResult): Record<string, unknown> {
  const { problem } = result;
  return {
    problem: {
      id: problem.id,
      title: problem.title,
      goals: goalsInMilliseconds(problem.goals),
      confidence: problem.confidence,
    },
    meta: result.meta,
    rows: result.rows.map(summaryToJson),
  };
}

/**
 * JSON text of one run (an object) or several (an array of them), indented, NaN as null.
 */
export function formatJson(result: RunResult | readonly RunResult[]): string {
  const value = isRunList(result) ? result.map(runToJson) : runToJson(result);
  return JSON.stringify(value, null, 2) + '\n';
}

function isRunList(result: RunResult | readonly RunResult[]): result is readonly RunResult[] {
  return Array.isArray(result);
}

/** Options of {@link formatCsv}. */
export interface CsvOptions {
  /** Adds a leading `problem` column with this value (several problems in one file). */
  readonly problem?: string;
  /** Writes the header line (default true); off to append a further problem's rows. */
  readonly header?: boolean;
}

/**
 * CSV with the header `SUMMARY_COLUMNS` in order (after `problem` when asked), fields quoted
 * as RFC 4180 says (only when they hold a comma, quote or line break), lines ending in "\n".
 * NaN is an empty field; Infinity is written `Infinity`, which spreadsheet and dataframe
 * readers parse.
 */
export function formatCsv(rows: readonly CaseSummary[], options: CsvOptions = {}): string {
  const lines: string[] = [];
  const lead = options.problem === undefined ? [] : ['problem'];
  if (options.header ?? true) lines.push([...lead, ...SUMMARY_COLUMNS].map(csvField).join(','));
  for (const row of rows) {
    const values = SUMMARY_COLUMNS.map((col) => csvValue(row[col]));
    if (options.problem !== undefined) values.unshift(csvField(options.problem));
    lines.push(values.join(','));
  }
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

function csvValue(v: string | number | boolean): string {
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return '';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return String(v);
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return csvField(v);
}

/** RFC 4180: quote a field holding a comma, a quote or a line break; double its quotes. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function fixed(v: number, digits: number): string {
  if (Number.isNaN(v)) return DASH;
  if (!Number.isFinite(v)) return v > 0 ? '∞' : '-∞';
  return v.toFixed(digits);
}

/** Rounded down, so a success rate just short of a goal never prints as meeting it. */
function percentDown(v: number): string {
  if (!Number.isFinite(v)) return fixed(v, 2);
  // the epsilon undoes binary noise (0.9912 x 10000 = 9911.999...)
  return (Math.floor(v * 10000 + 1e-6) / 100).toFixed(2);
}

/** Milliseconds as seconds with about four significant digits. */
function seconds(ms: number): string {
  if (!Number.isFinite(ms)) return fixed(ms, 0);
  const s = ms / 1000;
  const digits = s < 10 ? 3 : s < 100 ? 2 : 1;
  return s.toFixed(digits);
}

function count(v: number): string {
  return Number.isFinite(v) ? String(Math.round(v)) : fixed(v, 0);
}

/** Up to four decimals, without trailing zeros (0.99 -> "0.99", 2 -> "2"). */
function trimNumber(v: number): string {
  return String(Number(v.toFixed(4)));
}

/** Display width: code points, so "–" and "≥" count as one column. */
function width(text: string): number {
  return [...text].length;
}

function pad(text: string, w: number, align: 'left' | 'right'): string {
  const fill = ' '.repeat(Math.max(0, w - width(text)));
  return align === 'left' ? text + fill : fill + text;
}

/**
 * "as-given: measured window not in steady state after a 10 s warm-up, its start-up biases the
 * row: the steady-state test suggests traffic.warmup of 130s or more (or auto)"; null for a
 * steady row. The CLI's warning line and the hint's explanation.
 */
export function unsteadyWarning(row: Pick<CaseSummary, 'case' | 'steady' | 'warmup_s' | 'suggested_warmup_s'>): string | null {
  // strictly false: a row read back from an older results file lacks the column
  if (row.steady !== false) return null;
  return `${row.case}: measured window not in steady state after a ${row.warmup_s} s warm-up, its start-up biases the row: ` +
    `the steady-state test suggests traffic.warmup of ${row.suggested_warmup_s}s or more (or auto)`;
}
