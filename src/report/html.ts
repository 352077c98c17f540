/**
 * The sweep report: one self-contained HTML page (data as JSON, d3 and Observable Plot inlined,
 * so it opens from disk with no network) with, per case, a heatmap of pass probability over two
 * grid paths, success and p99 against a grid path with their across-seed bands and the goal
 * lines, the hint when one was computed, and the run's metadata. Made from the Arrow table of
 * `servesim sweep --out` or straight from a finished sweep.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DataType, type Table, type Vector } from 'apache-arrow';
import { ServesimError } from '../errors.js';
import type { HintConfiguration, HintResult } from '../hint/api.js';
import { describePartial } from '../sweep/arrow.js';
import type { SweepOutcome } from '../sweep/run.js';
import type { GridValue, Sweep } from '../sweep/spec.js';
import { REPORT_CSS, REPORT_SCRIPT } from './html-template.js';

/** The summary columns the report draws; the others stay in the Arrow file. */
export const REPORT_METRICS = [
  'success', 'success_lo', 'success_hi', 'p99_ms', 'p99_lo_ms', 'p99_hi_ms', 'pass_probability',
] as const;
export type ReportMetric = (typeof REPORT_METRICS)[number];

export interface ReportGoals {
  readonly success: number;
  readonly p99_ms: number;
}

export interface ReportMeta {
  readonly title: string;
  readonly problem: string;
  readonly sweep: string;
  readonly version: string;
  readonly engine: string;
  readonly adapter: string;
  readonly seeds: number | null;
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

/** One grid point x case; metrics without a value (no successes, no requests) are null. */
export type ReportRow = {
  /** Index into each axis's values, in axis order. */
  readonly point: readonly number[];
  /** Index into the case names. */
  readonly case: number;
  readonly passes: boolean;
  /** Why an overloaded case fails (`overload_reason`), or null. */
  readonly overloaded: string | null;
} & { readonly [K in ReportMetric]: number | null };

export interface ReportData {
  readonly meta: ReportMeta;
  readonly axes: readonly ReportAxis[];
  readonly cases: readonly string[];
  readonly rows: readonly ReportRow[];
}

/** Which axes the charts start on (indices into the axes; -1: none); the page can switch. */
export interface ReportLayout {
  /** Heatmap columns and the line charts' x axis. */
  readonly x: number;
  /** Heatmap rows and the line charts' series. */
  readonly y: number;
  /** Axes with several values besides x and y: one selector each. */
  readonly selectors: readonly number[];
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

function parseGoals(text: string | undefined): ReportGoals | null {
  if (text === undefined) return null;
  try {
    const goals = JSON.parse(text) as { success?: unknown; p99_ms?: unknown };
    return typeof goals.success === 'number' && typeof goals.p99_ms === 'number'
      ? { success: goals.success, p99_ms: goals.p99_ms }
      : null;
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
  const metricVectors = REPORT_METRICS.map((name) => column(table, name));
  const passesVector = column(table, 'passes');
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
    const metrics = Object.fromEntries(REPORT_METRICS.map((name, m) => [name, finiteOrNull(metricVectors[m]!.get(i))]));
    rows.push({
      point,
      case: caseIndex.get(String(caseName))!,
      passes: passesVector.get(i) === true,
      overloaded: (overloadVector?.get(i) as string | null | undefined) || null,
      ...(metrics as Record<ReportMetric, number | null>),
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
      baseSeed: numberOrNull(metadata.get('servesim.base_seed')),
      created: metadata.get('servesim.created') ?? '',
      confidence: numberOrNull(metadata.get('servesim.confidence')),
      goals: parseGoals(metadata.get('servesim.goals')),
      partial: describePartial(metadata),
    },
    axes,
    cases,
    rows,
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
  const rows = outcome.rows.map(({ point, summary }): ReportRow => {
    const metrics = Object.fromEntries(REPORT_METRICS.map((name) => [name, finiteOrNull(summary[name])]));
    return {
      point: point.values.map((v, a) => axisIndex[a]!.get(v)!),
      case: caseIndex.get(summary.case)!,
      passes: summary.passes,
      overloaded: summary.overload_reason || null,
      ...(metrics as Record<ReportMetric, number | null>),
    };
  });
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
      baseSeed: meta.baseSeed,
      created: meta.createdAt,
      confidence: sweep.confidence,
      goals: { success: sweep.problem.goals.success, p99_ms: sweep.problem.goals.p99 / 1000 },
      // the note on grid points without results says it: the sweep's whole grid is known here
      partial: null,
    },
    axes,
    cases: sweep.caseNames,
    rows,
  };
}

/**
 * The starting axes: of the paths with several values, numbers before names (a line reads
 * better over a continuous axis), then the longest first, then grid order.
 */
export function chooseLayout(axes: readonly ReportAxis[]): ReportLayout {
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
  return { x, y, selectors: varying.slice(2).sort((a, b) => a - b) };
}

/**
 * Each hint configuration as indices into the axes' values, for the ones the grid holds: the
 * hint must fix every path the grid varies (a path it leaves alone kept the problem's value,
 * which the table does not record), at a value on the grid.
 */
export function hintPoints(axes: readonly ReportAxis[], hint: HintResult): number[][] {
  const points: number[][] = [];
  for (const { found } of hint.hints) {
    const point = axes.map((axis) => {
      if (!(axis.path in found.values)) return axis.values.length === 1 ? 0 : -1;
      const value = found.values[axis.path]!;
      return axis.values.findIndex((v) => v === value || String(v) === String(value));
    });
    if (point.every((k) => k >= 0)) points.push(point);
  }
  return points;
}

function escapeHtml(text: string): string {
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
    notes.push('Only one grid path varies, so there is no heatmap: pass probability is drawn against it as a line.');
  }
  return notes;
}

function metaSection(data: ReportData): string {
  const { meta } = data;
  const items: [string, string][] = [
    ['problem', meta.problem],
    ['sweep', meta.sweep],
    ['goals', meta.goals ? `success ≥ ${percent(meta.goals.success)}, p99 ≤ ${seconds(meta.goals.p99_ms)}` : 'unknown'],
    ['confidence', meta.confidence === null ? 'unknown' : `${meta.confidence} of seeds meet both goals`],
    ['seeds', meta.seeds === null ? 'unknown' : `${meta.seeds} per case and grid point`],
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

function hintSection(hint: HintResult): string {
  const searched = `Searched ${hint.evaluated} of ${hint.gridSize} configurations of ${hint.paths.map((p) => `<code>${escapeHtml(p)}</code>`).join(', ')}` +
    `${hint.engine ? ` on ${escapeHtml(hint.engine)}` : ''}; cost = <code>${escapeHtml(hint.cost)}</code>.`;
  let body = '';
  if (hint.hints.length === 0) {
    body = '<p class="note">No configuration in the searched range passes every case.</p>';
  } else {
    const head = [...hint.paths, 'cost', 'lowest pass probability', 'one step cheaper'];
    const rows = hint.hints.map(({ found, cheaper }) => {
      const lowest = Math.min(...found.cases.map((c) => c.pass_probability));
      const why = cheaper
        .map((c) => `<li><code>${escapeHtml(configurationText(c.values))}</code> (cost ${c.cost}): ${escapeHtml(failingText(c))}</li>`)
        .join('');
      return `<tr>${hint.paths.map((p) => `<td>${escapeHtml(String(found.values[p] ?? '–'))}</td>`).join('')}` +
        `<td class="num">${found.cost}</td><td class="num">${Number.isFinite(lowest) ? lowest.toFixed(2) : '–'}</td>` +
        `<td>${why ? `<ul>${why}</ul>` : '–'}</td></tr>`;
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
  const layout = chooseLayout(data.axes);
  const hint = options.hint ?? null;
  const notes = reportNotes(data, layout).map((n) => `<p class="note">${escapeHtml(n)}</p>`).join('');
  const payload = { ...data, layout, hintPoints: hint ? hintPoints(data.axes, hint) : [] };
  const title = `${data.meta.title}: sweep report`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
<header><h1>${escapeHtml(data.meta.title)}</h1><p class="sub">servesim sweep report: ${data.cases.length} case${data.cases.length === 1 ? '' : 's'} over ${data.axes.length} grid path${data.axes.length === 1 ? '' : 's'}</p></header>
<div class="panel">${metaSection(data)}${notes}${hint ? hintSection(hint) : ''}</div>
<nav id="controls"></nav>
<main id="cases"></main>
<footer>servesim ${escapeHtml(data.meta.version)} · charts: Observable Plot, embedded; this file needs no network.</footer>
<script type="application/json" id="servesim-data">${scriptJson(payload)}</script>
${plottingLibraries()}
<script>${scriptCode(REPORT_SCRIPT)}</script>
</body>
</html>
`;
}
