/**
 * Sweep results as text: a table for people, JSON and CSV for programs (Arrow: arrow.ts). One
 * row per (grid point, case): the grid columns first, then `servesim run`'s summary columns,
 * encoded as run/format.ts encodes them (NaN and Infinity: null in JSON, as in Arrow).
 */
import { goalsInMilliseconds } from '../model/problem.js';
import { SUMMARY_COLUMNS } from '../model/summary.js';
import { csvField, formatCsv, formatTable, summaryToJson, type JsonCell } from '../run/format.js';
import type { SweepOutcome, SweepRow } from './run.js';
import type { GridPoint, GridValue, Sweep } from './spec.js';

/** A grid point's values keyed by their paths (`{"gpu.slots": 8, ...}`). */
export function pointValues(sweep: Sweep, point: GridPoint): Record<string, GridValue> {
  return Object.fromEntries(sweep.axes.map((axis, a) => [axis.path, point.values[a]!]));
}

/** `gpu.slots=8, router.policy=least-loaded`: a point as people name it. */
export function describePoint(sweep: Sweep, point: GridPoint): string {
  return sweep.axes.map((axis, a) => `${axis.path}=${String(point.values[a])}`).join(', ');
}

/** A row of a sweep's JSON: the grid values, then the summary columns. */
function rowToJson(sweep: Sweep, row: SweepRow): Record<string, JsonCell> {
  // not a literal spreading both: V8 copies a second spread key by key, many times slower
  return Object.assign(pointValues(sweep, row.point), summaryToJson(row.summary));
}

/** The sweep, its meta and every finished row as a plain JSON value; unfinished points last. */
export function sweepToJson(sweep: Sweep, outcome: SweepOutcome): Record<string, unknown> {
  return sweepJson(sweep, outcome, outcome.rows.map((r) => rowToJson(sweep, r)));
}

function sweepJson(sweep: Sweep, outcome: SweepOutcome, rows: unknown): Record<string, unknown> {
  return {
    sweep: {
      id: sweep.id,
      title: sweep.title,
      problem: sweep.problem.id,
      grid: sweep.axes.map((a) => a.path),
      cases: sweep.caseNames,
      seeds: sweep.seeds,
      maxSeeds: sweep.maxSeeds,
      baseSeed: sweep.baseSeed,
      confidence: sweep.confidence,
      goals: goalsInMilliseconds(sweep.problem.goals),
    },
    meta: outcome.meta,
    rows,
    unfinished: outcome.unfinished.map((i) => ({ index: i, ...pointValues(sweep, sweep.points[i]!) })),
    cancelled: outcome.cancelled,
    error: outcome.error?.message ?? null,
  };
}

/** Stands for the rows in the JSON text around them (a top-level key: its line is indented by two). */
const ROWS_AT = `\n  "rows": ${JSON.stringify('\u0000rows')}`;

/**
 * sweepToJson's text (indented by two, as JSON.stringify writes it), in pieces: what comes
 * before the rows, each row, what comes after; a server answers others between them.
 */
export function* sweepJsonPieces(sweep: Sweep, outcome: SweepOutcome): Generator<string> {
  const around = JSON.stringify(sweepJson(sweep, outcome, '\u0000rows'), null, 2);
  const at = around.indexOf(ROWS_AT);
  const rows = outcome.rows;
  yield `${around.slice(0, at)}\n  "rows": [`;
  for (let i = 0; i < rows.length; i++) {
    // a list's items sit two deeper than its key, their lines too
    yield `${i === 0 ? '' : ','}\n    ${JSON.stringify(rowToJson(sweep, rows[i]!), null, 2).replaceAll('\n', '\n    ')}`;
  }
  yield `${rows.length === 0 ? '' : '\n  '}]${around.slice(at + ROWS_AT.length)}\n`;
}

export function formatSweepJson(sweep: Sweep, outcome: SweepOutcome): string {
  return [...sweepJsonPieces(sweep, outcome)].join('');
}

/** CSV whose header is the grid paths, then `SUMMARY_COLUMNS`, in pieces: the header, then a line a row. */
export function* sweepCsvPieces(sweep: Sweep, outcome: SweepOutcome): Generator<string> {
  yield `${[...sweep.axes.map((a) => a.path), ...SUMMARY_COLUMNS].map(csvField).join(',')}\n`;
  for (const { point, summary } of outcome.rows) {
    const grid = point.values.map((v) => (typeof v === 'number' ? String(v) : csvField(v)));
    yield `${[...grid, formatCsv([summary], { header: false }).trimEnd()].join(',')}\n`;
  }
}

export function formatSweepCsv(sweep: Sweep, outcome: SweepOutcome): string {
  return [...sweepCsvPieces(sweep, outcome)].join('');
}

/**
 * `servesim run`'s table with the grid columns in front: formatTable lays out the header
 * lines, a blank line, the column titles, a rule and one line per row, in the rows' order.
 */
export function formatSweepTable(sweep: Sweep, outcome: SweepOutcome): string {
  const { meta } = outcome;
  const lines = formatTable(
    outcome.rows.map((r) => r.summary),
    sweep.problem.goals,
    {
      problemId: sweep.id,
      title: sweep.title,
      ...(meta.engine === null ? {} : { engine: meta.engine, adapter: meta.adapter }),
      seeds: meta.seeds,
      maxSeeds: meta.maxSeeds,
      baseSeed: meta.baseSeed,
      confidence: sweep.confidence,
    },
  ).trimEnd().split('\n');
  const blank = lines.indexOf('');
  const paths = sweep.axes.map((a) => a.path);
  const cells = outcome.rows.map((r) => r.point.values.map(String));
  const widths = paths.map((p, a) => Math.max(width(p), ...cells.map((c) => width(c[a]!))));
  const prefix = (values: readonly string[]): string =>
    values.map((v, a) => pad(v, widths[a]!, sweep.axes[a]!.type === 'string' ? 'left' : 'right') + '  ').join('');

  const points = outcome.finished.length + outcome.unfinished.length;
  const out = [
    ...lines.slice(0, blank),
    `problem ${sweep.problem.id} · ${points} grid point${points === 1 ? '' : 's'}: ${paths.join(' × ') || '(no grid)'}`,
    '',
  ];
  lines.slice(blank + 1).forEach((line, i) => {
    const values = i === 0 ? paths : i === 1 ? widths.map((w) => '-'.repeat(w)) : cells[i - 2];
    out.push(values === undefined ? line : prefix(values) + line);
  });
  if (outcome.unfinished.length > 0) {
    out.push('', `${outcome.unfinished.length} of ${points} grid points did not finish`);
  }
  return out.join('\n') + '\n';
}

/** Display width: code points, as run/format.ts counts them. */
function width(text: string): number {
  return [...text].length;
}

function pad(text: string, w: number, align: 'left' | 'right'): string {
  const fill = ' '.repeat(Math.max(0, w - width(text)));
  return align === 'left' ? text + fill : fill + text;
}
