/**
 * The sweep report: one self-contained HTML page (data as JSON, d3 and Observable Plot inlined,
 * so it opens from disk with no network) with, per case, a heatmap of a metric the reader picks
 * (pass probability first) over two grid paths, success and p99 against a grid path with their
 * across-seed bands and the goal lines, the hint when one was computed, and the run's metadata.
 * It opens on the slice of the other paths where most grid points pass. A case whose seeds
 * cannot yet tell whether it passes (verdict UNDECIDED) is marked as such, not as a failure.
 * Made from the Arrow table of `servesim sweep --out` or straight from a finished sweep.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DataType, type Table, type Vector } from 'apache-arrow';
import { ServesimError } from '../errors.js';
import type { HintConfiguration, HintResult } from '../hint/api.js';
import { goalsInMilliseconds, type GoalsInMilliseconds } from '../model/problem.js';
import { SUMMARY_COLUMNS } from '../model/summary.js';
import { pointVerdict, type Verdict } from '../model/verdict.js';
import { describePartial } from '../sweep/arrow.js';
import type { SweepOutcome } from '../sweep/run.js';
import type { GridValue, Sweep } from '../sweep/spec.js';
import { REPORT_CSS, REPORT_SCRIPT } from './html-template.js';

/**
 * Where the metric picker starts; any other numeric column follows in table order. Names that a
 * table lacks are skipped, so this never limits what is offered. The GPU's saturation is its
 * batches' occupancy and its KV in use before its utilisation, near 1 whenever any sequence runs;
 * under gpu.kv incremental, what a full KV costs follows it: preemptions and the tokens recomputed.
 * Under gpu.disaggregation each pool's utilisation and batch occupancy follow the GPU's, then
 * the KV transfers' time on the link and their wait for the decode replica's KV.
 */
const PREFERRED_METRICS = [
  'pass_probability', 'success', 'p99_ms', 'ttft_p99_ms', 'tpot_p99_ms', 'goodput_per_s', 'kv_hit_rate', 'kv_hit_rate_offload', 'batch_occupancy',
  'kv_in_use', 'preemptions_per_call', 'recomputed_tokens_per_call', 'gpu_utilization',
  'prefill_utilization', 'decode_utilization', 'prefill_batch_occupancy', 'decode_batch_occupancy', 'transfer_ms', 'transfer_wait_ms',
];

/** Labels that their column's name alone would leave unclear; the rest are the name, spaced. */
const COLUMN_LABELS: ReadonlyMap<string, string> = new Map([
  ['transfer_ms', 'KV transfer time'],
  ['transfer_wait_ms', 'KV transfer wait'],
]);

/**
 * The goals keyed by the column each bounds (`success`, `p99_ms`, `ttft_p99_ms`, ...), in its
 * unit; a table may carry goals this version does not name.
 */
export type ReportGoals = GoalsInMilliseconds;

export interface ReportMeta {
  readonly title: string;
  readonly problem: string;
  readonly sweep: string;
  readonly version: string;
  readonly engine: string;
  readonly adapter: string;
  readonly seeds: number | null;
  /** Above `seeds`: seeds until decided, up to this many (null in files written before it). */
  readonly maxSeeds: number | null;
  readonly baseSeed: number | null;
  readonly created: string;
  readonly confidence: number | null;
  readonly goals: ReportGoals | null;
  /** What a table written by a sweep stopped early lacks (describePartial); null otherwise. */
  readonly partial: string | null;
}

export interface ReportAxis {
  readonly path: string;
  /** Numbers are drawn on continuous axes (in the line charts), names as categories. */
  readonly kind: 'number' | 'string';
  /** Grid order for names, ascending for numbers. */
  readonly values: readonly GridValue[];
}

/** One grid point x case. */
export interface ReportRow {
  /** Index into each axis's values, in axis order. */
  readonly point: readonly number[];
  /** Index into the case names. */
  readonly case: number;
  /** The verdict is PASS. */
  readonly passes: boolean;
  /** The `verdict` column; from `passes` (PASS or FAIL) in a table written before it. */
  readonly verdict: Verdict;
  /** When UNDECIDED: the goals still within seed noise (`undecided`, comma-separated), or null. */
  readonly undecided: string | null;
  /** Why an overloaded case fails (`overload_reason`), or null. */
  readonly overloaded: string | null;
  /** One per column of ReportData.columns; null without a value (no successes, no component). */
  readonly values: readonly (number | null)[];
}

export interface ReportData {
  readonly meta: ReportMeta;
  readonly axes: readonly ReportAxis[];
  readonly cases: readonly string[];
  /** The numeric summary columns with a finite value in some row, in table order. */
  readonly columns: readonly string[];
  readonly rows: readonly ReportRow[];
}

/** A column the reader can colour the heatmaps by. */
export interface ReportMetric {
  /** Index into ReportData.columns. */
  readonly column: number;
  readonly name: string;
  /** From the name: `kv_hit_rate` is "kv hit rate", `p99_ms` "p99 (s)". */
  readonly label: string;
  /** A `_ms` column, drawn in seconds as the rest of the report is. */
  readonly seconds: boolean;
  /** The bound a passing design meets (in the column's unit), and on which side; null: none. */
  readonly goal: { readonly value: number; readonly side: 'min' | 'max' } | null;
}

/**
 * One grid point over all the cases: it FAILs when a case does, else is UNDECIDED when a case
 * is, else PASSes; a point missing a case's result FAILs (it cannot pass).
 */
export interface ReportPoint {
  readonly point: readonly number[];
  /** The verdict is PASS. */
  readonly passes: boolean;
  readonly verdict: Verdict;
  /** When UNDECIDED: each undecided case with its goals within seed noise ("peak-hour: success,p99; ..."), else null. */
  readonly undecided: string | null;
  /** The lowest over the cases; null unless every case has one. */
  readonly pass_probability: number | null;
  /** Each overloaded case's reason, one a line, or null. */
  readonly overloaded: string | null;
}

/** Which axes the charts start on (indices into the axes; -1: none); the page can switch. */
export interface ReportLayout {
  /** Heatmap columns and the line charts' x axis. */
  readonly x: number;
  /** Heatmap rows and the line charts' series. */
  readonly y: number;
  /** Axes with several values besides x and y: one selector each. */
  readonly selectors: readonly number[];
  /** The value (index) each selector starts on; 0 for the other axes. */
  readonly fixed: readonly number[];
}

/** A sweep as it finished (all of `runSweep`'s outcome, or some of its points). */
export interface SweepReportSource {
  readonly sweep: Sweep;
  readonly outcome: Pick<SweepOutcome, 'rows' | 'meta'>;
}

export interface ReportOptions {
  readonly hint?: HintResult | null;
}

function unreadable(message: string): ServesimError {
  return new ServesimError('SERVESIM_FILE_UNREADABLE', message);
}

function finiteOrNull(v: unknown): number | null {
  if (typeof v === 'bigint') return Number(v);
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function numberOrNull(text: string | undefined): number | null {
  const n = text === undefined ? NaN : Number(text);
  return Number.isFinite(n) ? n : null;
}

const VERDICTS: readonly unknown[] = ['PASS', 'FAIL', 'UNDECIDED'] satisfies Verdict[];

/** A row's verdict and undecided goals; without a verdict (an older table), PASS or FAIL from `passes`. */
function rowVerdict(verdict: unknown, passes: boolean, undecided: unknown): Pick<ReportRow, 'verdict' | 'undecided'> {
  const v: Verdict = VERDICTS.includes(verdict) ? (verdict as Verdict) : passes ? 'PASS' : 'FAIL';
  return { verdict: v, undecided: v === 'UNDECIDED' && typeof undecided === 'string' && undecided !== '' ? undecided : null };
}

function parseGoals(text: string | undefined): ReportGoals | null {
  if (text === undefined) return null;
  try {
    // every finite bound, also of columns this version does not know
    const bounds = Object.fromEntries(Object.entries(JSON.parse(text) as object).filter(([, v]) => typeof v === 'number' && Number.isFinite(v)));
    return 'success' in bounds && 'p99_ms' in bounds ? (bounds as ReportGoals) : null;
  } catch {
    return null;
  }
}

function column(table: Table, name: string): Vector {
  const vector = table.getChild(name);
  if (vector === null) throw unreadable(`not a servesim sweep table: no column "${name}"`);
  return vector;
}

/** Distinct values: a name column keeps its dictionary's (the grid's) order, numbers ascend. */
function distinctValues(vector: Vector, kind: ReportAxis['kind']): GridValue[] {
  const seen = new Set<GridValue>();
  if (kind === 'string') {
    for (const data of vector.data) {
      for (const name of (data.dictionary?.toArray() ?? []) as string[]) seen.add(name);
    }
  }
  for (let i = 0; i < vector.length; i++) {
    const v = vector.get(i) as unknown;
    const n = finiteOrNull(v);
    if (kind === 'string' && v !== null) seen.add(String(v));
    else if (kind === 'number' && n !== null) seen.add(n);
  }
  const values = [...seen];
  return kind === 'number' ? (values as number[]).sort((a, b) => a - b) : values;
}

/** The report's data from a table written by `servesim sweep --out` (its schema metadata). */
export function reportDataFromTable(table: Table): ReportData {
  const metadata = table.schema.metadata;
  const gridText = metadata.get('servesim.grid');
  let paths: unknown;
  try {
    paths = gridText === undefined ? undefined : JSON.parse(gridText);
  } catch {
    paths = undefined;
  }
  if (!Array.isArray(paths) || !paths.every((p) => typeof p === 'string')) {
    throw unreadable('not a servesim sweep table: its schema has no servesim.grid list of grid paths');
  }
  const gridVectors = (paths as string[]).map((path) => column(table, path));
  const axes: ReportAxis[] = gridVectors.map((vector, a) => {
    const kind = DataType.isDictionary(vector.type) || DataType.isUtf8(vector.type) ? 'string' : 'number';
    return { path: (paths as string[])[a]!, kind, values: distinctValues(vector, kind) };
  });
  const caseVector = column(table, 'case');
  const cases = distinctValues(caseVector, 'string') as string[];
  // every numeric column but the grid's, so columns this version does not know are offered too
  const columns = table.schema.fields
    .filter((f) => !(paths as string[]).includes(f.name) && (DataType.isFloat(f.type) || DataType.isInt(f.type)))
    .map((f) => f.name);
  const valueVectors = columns.map((name) => column(table, name));
  const passesVector = column(table, 'passes');
  // files written before verdicts had three values have neither column: PASS or FAIL from passes
  const verdictVector = table.getChild('verdict');
  const undecidedVector = table.getChild('undecided');
  // files written before overloads were answers have no such column
  const overloadVector = table.getChild('overload_reason');

  const axisIndex = axes.map((axis) => new Map(axis.values.map((v, k) => [v, k])));
  const caseIndex = new Map(cases.map((c, k) => [c, k]));
  const rows: ReportRow[] = [];
  for (let i = 0; i < table.numRows; i++) {
    const point = gridVectors.map((vector, a) => {
      const v = vector.get(i) as unknown;
      return axisIndex[a]!.get(axes[a]!.kind === 'string' ? String(v) : finiteOrNull(v)!) ?? -1;
    });
    const caseName = caseVector.get(i) as unknown;
    // a row off the grid (a null grid value) has no place in any chart
    if (point.includes(-1) || caseName === null) continue;
    const passes = passesVector.get(i) === true;
    rows.push({
      point,
      case: caseIndex.get(String(caseName))!,
      passes,
      ...rowVerdict(verdictVector?.get(i), passes, undecidedVector?.get(i)),
      overloaded: (overloadVector?.get(i) as string | null | undefined) || null,
      values: valueVectors.map((vector) => finiteOrNull(vector.get(i))),
    });
  }
  const sweepId = metadata.get('servesim.sweep') ?? '';
  const problem = metadata.get('servesim.problem') ?? '';
  return {
    meta: {
      title: sweepId || problem || 'servesim sweep',
      problem,
      sweep: sweepId,
      version: metadata.get('servesim.version') ?? 'unknown',
      engine: metadata.get('servesim.engine') ?? 'unknown',
      adapter: metadata.get('servesim.adapter') ?? '',
      seeds: numberOrNull(metadata.get('servesim.seeds')),
      maxSeeds: numberOrNull(metadata.get('servesim.max_seeds')),
      baseSeed: numberOrNull(metadata.get('servesim.base_seed')),
      created: metadata.get('servesim.created') ?? '',
      confidence: numberOrNull(metadata.get('servesim.confidence')),
      goals: parseGoals(metadata.get('servesim.goals')),
      partial: describePartial(metadata),
    },
    axes,
    cases,
    ...withoutEmptyColumns(columns, rows),
  };
}

/** The report's data straight from a sweep and its rows (no Arrow round trip). */
export function reportDataFromSweep({ sweep, outcome }: SweepReportSource): ReportData {
  const axes: ReportAxis[] = sweep.axes.map((axis) => ({
    path: axis.path,
    kind: axis.type === 'string' ? 'string' : 'number',
    values: axis.type === 'string' ? axis.values : [...axis.values].sort((a, b) => (a as number) - (b as number)),
  }));
  const axisIndex = axes.map((axis) => new Map(axis.values.map((v, k) => [v, k])));
  const caseIndex = new Map(sweep.caseNames.map((c, k) => [c, k]));
  const first = outcome.rows[0]?.summary;
  const columns = SUMMARY_COLUMNS.filter((name) => typeof first?.[name] === 'number');
  const rows = outcome.rows.map(({ point, summary }): ReportRow => ({
    point: point.values.map((v, a) => axisIndex[a]!.get(v)!),
    case: caseIndex.get(summary.case)!,
    passes: summary.passes,
    ...rowVerdict(summary.verdict, summary.passes, summary.undecided),
    overloaded: summary.overload_reason || null,
    values: columns.map((name) => finiteOrNull(summary[name])),
  }));
  const { meta } = outcome;
  return {
    meta: {
      title: sweep.title,
      problem: meta.problemId,
      sweep: meta.sweepId,
      version: meta.servesimVersion ?? 'unknown',
      engine: meta.engine ?? 'none',
      adapter: meta.adapter ?? '',
      seeds: meta.seeds,
      maxSeeds: meta.maxSeeds,
      baseSeed: meta.baseSeed,
      created: meta.createdAt,
      confidence: sweep.confidence,
      goals: goalsInMilliseconds(sweep.problem.goals),
      // the note on grid points without results says it: the sweep's whole grid is known here
      partial: null,
    },
    axes,
    cases: sweep.caseNames,
    ...withoutEmptyColumns(columns, rows),
  };
}

/** Drops the columns with no finite value anywhere (a design without that component). */
function withoutEmptyColumns(columns: readonly string[], rows: readonly ReportRow[]): Pick<ReportData, 'columns' | 'rows'> {
  const keep = columns.map((_, c) => rows.some((r) => r.values[c] !== null));
  return {
    columns: columns.filter((_, c) => keep[c]),
    rows: rows.map((r) => ({ ...r, values: r.values.filter((_, c) => keep[c]) })),
  };
}

/** A column's name for people: `kv_hit_rate` is "kv hit rate", `p99_ms` "p99", `transfer_ms` "KV transfer time". */
function columnLabel(name: string): string {
  return COLUMN_LABELS.get(name) ?? name.replace(/_ms$/, '').replace(/_/g, ' ');
}

/** `x_lo`, `x_hi`, `x_lo_ms`, `x_hi_ms`: the band drawn around column x (or x_ms), not a metric of its own. */
function isBand(name: string, columns: readonly string[]): boolean {
  const band = /^(.*)_(?:lo|hi)(_ms)?$/.exec(name);
  return band !== null && columns.includes(band[1]! + (band[2] ?? ''));
}

/**
 * The metric picker's columns: PREFERRED_METRICS first, then the rest in table order; bands go
 * with their column. The goals are keyed by column name; pass probability's is the confidence.
 */
export function reportMetrics(data: Pick<ReportData, 'columns' | 'meta'>): ReportMetric[] {
  const { columns, meta } = data;
  const rank = (name: string) => {
    const k = PREFERRED_METRICS.indexOf(name);
    return k < 0 ? PREFERRED_METRICS.length : k;
  };
  const goals: Readonly<Record<string, number | undefined>> = { ...meta.goals };
  return columns
    .map((name, column) => ({ name, column }))
    .filter(({ name }) => !isBand(name, columns))
    .sort((a, b) => rank(a.name) - rank(b.name) || a.column - b.column)
    .map(({ name, column }) => {
      const seconds = name.endsWith('_ms');
      const bound = name === 'pass_probability' ? meta.confidence : goals[name] ?? null;
      return {
        column, name, seconds,
        label: columnLabel(name) + (seconds ? ' (s)' : ''),
        // latencies pass below their goal, shares and rates above it
        goal: bound === null ? null : { value: bound, side: seconds ? 'max' : 'min' },
      };
    });
}

/** Each grid point with a result over all the cases, in the order the rows first reach it. */
export function pointsOverCases(data: Pick<ReportData, 'cases' | 'columns' | 'rows'>): ReportPoint[] {
  const pass = data.columns.indexOf('pass_probability');
  const byPoint = new Map<string, ReportRow[]>();
  for (const r of data.rows) {
    const key = r.point.join(',');
    const list = byPoint.get(key);
    if (list) list.push(r);
    else byPoint.set(key, [r]);
  }
  return [...byPoint.values()].map((list) => {
    const complete = list.length === data.cases.length;
    const probabilities = list.map((r) => (pass < 0 ? null : r.values[pass]!));
    // a point lacking a case's row cannot pass
    const verdict = pointVerdict([...list.map((r) => r.verdict), ...(complete ? [] : ['FAIL' as const])]);
    const undecided = list.filter((r) => r.verdict === 'UNDECIDED')
      .map((r) => `${data.cases[r.case]}${r.undecided === null ? '' : `: ${r.undecided}`}`).join('; ');
    return {
      point: list[0]!.point,
      passes: verdict === 'PASS',
      verdict,
      undecided: verdict === 'UNDECIDED' ? undecided : null,
      pass_probability: complete && !probabilities.includes(null) ? Math.min(...(probabilities as number[])) : null,
      overloaded: list.filter((r) => r.overloaded).map((r) => `${data.cases[r.case]}: ${r.overloaded}`).join('\n') || null,
    };
  });
}

/** Grid order of two lists of value indices. */
function gridOrder(a: readonly number[], b: readonly number[]): number {
  const i = a.findIndex((k, j) => k !== b[j]);
  return i < 0 ? 0 : a[i]! - b[i]!;
}

/**
 * The starting axes: of the paths with several values, numbers before names (a line reads
 * better over a continuous axis), then the longest first, then grid order. The selectors start
 * on the slice where most points pass every case (a sweep's first router policy may fail
 * everywhere), then the one with the highest summed pass probability, then the first in grid order.
 */
export function chooseLayout(axes: readonly ReportAxis[], points: readonly ReportPoint[] = []): ReportLayout {
  const varying = axes
    .map((axis, index) => ({ axis, index }))
    .filter(({ axis }) => axis.values.length > 1)
    .sort((a, b) =>
      Number(a.axis.kind === 'string') - Number(b.axis.kind === 'string') ||
      b.axis.values.length - a.axis.values.length ||
      a.index - b.index)
    .map(({ index }) => index);
  // with no varying path a lone grid point is still drawn (as dots) over the first path
  const x = varying[0] ?? (axes.length > 0 ? 0 : -1);
  const y = varying[1] ?? -1;
  const selectors = varying.slice(2).sort((a, b) => a - b);
  const slices = new Map<string, { fixed: number[]; passes: number; probability: number }>();
  for (const p of points) {
    const fixed = axes.map((_, a) => (selectors.includes(a) ? p.point[a]! : 0));
    const key = fixed.join(',');
    const slice = slices.get(key) ?? { fixed, passes: 0, probability: 0 };
    slice.passes += Number(p.passes);
    slice.probability += p.pass_probability ?? 0;
    slices.set(key, slice);
  }
  const best = [...slices.values()].sort((a, b) => b.passes - a.passes || b.probability - a.probability || gridOrder(a.fixed, b.fixed))[0];
  return { x, y, selectors, fixed: best?.fixed ?? axes.map(() => 0) };
}

/**
 * Each hint configuration as indices into the axes' values, or null for one the grid lacks: the
 * hint must fix every path the grid varies (a path it leaves alone kept the problem's value,
 * which the table does not record), at a value on the grid.
 */
export function hintPoints(axes: readonly ReportAxis[], hint: HintResult): (number[] | null)[] {
  return hint.hints.map(({ found }) => {
    const point = axes.map((axis) => {
      if (!(axis.path in found.values)) return axis.values.length === 1 ? 0 : -1;
      const value = found.values[axis.path]!;
      return axis.values.findIndex((v) => v === value || String(v) === String(value));
    });
    return point.every((k) => k >= 0) ? point : null;
  });
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON inside <script>: `<` escaped so no value can close the element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/** Code inside <script>: "</script" can only sit in a string, regex or comment, where "<\/script" reads the same. */
function scriptCode(code: string): string {
  return code.replace(/<\/script/gi, '<\\/script');
}

const requireHere = createRequire(import.meta.url);
let libraries: string | undefined;

/** A file of an installed package; its entry point may sit in src/ or dist/, so look upwards. */
function packageFile(name: string, file: string): string {
  let dir = dirname(requireHere.resolve(name));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (pkg.name === name) return readFileSync(join(dir, file), 'utf8');
    } catch {
      // no package.json at this level: keep looking upwards
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the package ${name}`);
    dir = parent;
  }
}

/** The plotting libraries' browser builds (Plot's UMD build uses the global d3). */
function plottingLibraries(): string {
  libraries ??= [packageFile('d3', 'dist/d3.min.js'), packageFile('@observablehq/plot', 'dist/plot.umd.min.js')]
    .map((code) => `<script>${scriptCode(code)}</script>`)
    .join('\n');
  return libraries;
}

function formatValue(v: GridValue): string {
  return typeof v === 'number' ? String(v) : v;
}

function listValues(values: readonly GridValue[]): string {
  const shown = values.length <= 12 ? values.map(formatValue) : [...values.slice(0, 8).map(formatValue), '…', ...values.slice(-2).map(formatValue)];
  return `${shown.join(', ')}${values.length > 12 ? ` (${values.length} values)` : ''}`;
}

function percent(v: number): string {
  return `${Number((v * 100).toPrecision(4))}%`;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toPrecision(3))} s`;
}

/** Notes on what the charts cannot show, also for the page's readers. */
export function reportNotes(data: ReportData, layout: ReportLayout): string[] {
  const notes: string[] = [];
  const expected = data.axes.reduce((n, a) => n * a.values.length, 1);
  const present = new Set(data.rows.map((r) => r.point.join(','))).size;
  if (data.rows.length === 0) notes.push('The table has no rows: nothing was simulated.');
  else if (present < expected) notes.push(`${present} of ${expected} grid points have results; the others are left blank.`);
  if (data.meta.partial !== null) notes.push(`This table is ${data.meta.partial}.`);
  if (layout.x < 0) notes.push('The sweep has no grid paths.');
  else if (layout.y < 0) {
    notes.push('Only one grid path varies, so there is no heatmap: the metrics are drawn against it as lines.');
  }
  return notes;
}

/** "success ≥ 99%, p99 ≤ 3 s, ttft p99 ≤ 0.5 s": latencies at most, the rest at least. */
function goalsText(goals: ReportGoals): string {
  return Object.entries(goals)
    .map(([name, v]) => `${columnLabel(name)} ${name.endsWith('_ms') ? `≤ ${seconds(v)}` : `≥ ${name === 'success' ? percent(v) : v}`}`)
    .join(', ');
}

function metaSection(data: ReportData): string {
  const { meta } = data;
  const items: [string, string][] = [
    ['problem', meta.problem],
    ['sweep', meta.sweep],
    ['goals', meta.goals ? goalsText(meta.goals) : 'unknown'],
    ['confidence', meta.confidence === null ? 'unknown' : `${meta.confidence} of seeds meet every goal`],
    ['seeds', meta.seeds === null ? 'unknown' : meta.maxSeeds !== null && meta.maxSeeds > meta.seeds ? `${meta.seeds} to ${meta.maxSeeds} per case and grid point, until decided` : `${meta.seeds} per case and grid point`],
    ['base seed', meta.baseSeed === null ? 'unknown' : String(meta.baseSeed)],
    ['engine', meta.adapter ? `${meta.engine} (${meta.adapter})` : meta.engine],
    ['created', meta.created.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')],
    ['servesim', meta.version],
  ];
  const cells = items.map(([k, v]) => `<div><dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd></div>`).join('');
  const grid = data.axes
    .map((a) => `<li><code>${escapeHtml(a.path)}</code>: ${escapeHtml(listValues(a.values))}${a.values.length === 1 ? ' <em>(fixed)</em>' : ''}</li>`)
    .join('');
  return `<div><dl class="meta">${cells}</dl>${grid ? `<h3>Grid</h3><ul class="grid-paths">${grid}</ul>` : ''}</div>`;
}

function configurationText(values: Readonly<Record<string, number | string>>): string {
  return Object.entries(values).map(([path, v]) => `${path}=${v}`).join(', ');
}

function failingText(c: HintConfiguration): string {
  return c.cases.filter((m) => !m.passes).map((m) => m.why || `${m.case} fails`).join('; ') || 'passes';
}

/** `points`: hintPoints, so that a row on the grid gets a button that shows its cells. */
function hintSection(hint: HintResult, points: readonly (number[] | null)[]): string {
  const searched = `Searched ${hint.evaluated} of ${hint.gridSize} configurations of ${hint.paths.map((p) => `<code>${escapeHtml(p)}</code>`).join(', ')}` +
    `${hint.engine ? ` on ${escapeHtml(hint.engine)}` : ''}; cost = <code>${escapeHtml(hint.cost)}</code>.`;
  let body: string;
  if (hint.hints.length === 0) {
    body = '<p class="note">No configuration in the searched range passes every case.</p>';
  } else {
    const head = [...hint.paths, 'cost', 'lowest pass probability', 'one step cheaper', 'on the charts'];
    const rows = hint.hints.map(({ found, cheaper }, h) => {
      const lowest = Math.min(...found.cases.map((c) => c.pass_probability));
      const why = cheaper
        .map((c) => `<li><code>${escapeHtml(configurationText(c.values))}</code> (cost ${c.cost}): ${escapeHtml(failingText(c))}</li>`)
        .join('');
      return `<tr>${hint.paths.map((p) => `<td>${escapeHtml(String(found.values[p] ?? '–'))}</td>`).join('')}` +
        `<td class="num">${found.cost}</td><td class="num">${Number.isFinite(lowest) ? lowest.toFixed(2) : '–'}</td>` +
        `<td>${why ? `<ul>${why}</ul>` : '–'}</td>` +
        `<td>${points[h] ? `<button type="button" data-hint="${h}">show</button>` : 'not on the grid'}</td></tr>`;
    }).join('');
    body = `<table class="hint"><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows}</tbody></table>`;
  }
  if (hint.failing.length > 0) {
    const items = hint.failing
      .map((c) => `<li><code>${escapeHtml(configurationText(c.values))}</code>: ${escapeHtml(failingText(c))}</li>`)
      .join('');
    body += `<h3>Nothing passes, even at the most generous configuration</h3><ul class="grid-paths">${items}</ul>`;
  }
  const violations = hint.monotonicityViolations.length === 0 ? '' :
    `<p class="note">The search assumed more capacity never hurts; that was false at: ${hint.monotonicityViolations.map(escapeHtml).join('; ')}.</p>`;
  return `<div><h2>Hint: the cheapest passing configurations</h2><p>${searched}</p>${body}${violations}</div>`;
}

/**
 * The report page. Pass the Arrow table of `servesim sweep --out` (e.g. `tableFromIPC(bytes)`)
 * or a sweep with its outcome; the service can answer GET /v1/jobs/:id/report with it.
 */
export function renderReport(source: Table | SweepReportSource, options: ReportOptions = {}): string {
  const data = 'sweep' in source ? reportDataFromSweep(source) : reportDataFromTable(source);
  const points = pointsOverCases(data);
  const layout = chooseLayout(data.axes, points);
  const hint = options.hint ?? null;
  const onGrid = hint ? hintPoints(data.axes, hint) : [];
  const notes = reportNotes(data, layout).map((n) => `<p class="note">${escapeHtml(n)}</p>`).join('');
  const payload = { ...data, metrics: reportMetrics(data), points, layout, hintPoints: onGrid };
  return reportPage(`${data.meta.title}: sweep report`, '', `<header><h1>${escapeHtml(data.meta.title)}</h1><p class="sub">servesim sweep report: ${data.cases.length} case${data.cases.length === 1 ? '' : 's'} over ${data.axes.length} grid path${data.axes.length === 1 ? '' : 's'}</p></header>
<div class="panel">${metaSection(data)}${notes}${hint ? hintSection(hint, onGrid) : ''}</div>
<nav id="controls"></nav>
<main id="cases"></main>
<footer>servesim ${escapeHtml(data.meta.version)} · charts: Observable Plot, embedded; this file needs no network.</footer>
<script type="application/json" id="servesim-data">${scriptJson(payload)}</script>
${plottingLibraries()}
<script>${scriptCode(REPORT_SCRIPT)}</script>`);
}

/** A self-contained page of a report: its title, the styles it adds to the reports' own, and its body. */
export function reportPage(title: string, css: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${REPORT_CSS}${css}</style>
</head>
<body>
${body}
</body>
</html>
`;
}
