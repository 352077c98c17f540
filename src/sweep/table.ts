/**
 * A sweep's results table as every writer (Arrow, Parquet) sees it: one row per (grid point,
 * case), the grid columns first, then the summary columns of `servesim run`, each with one
 * type; and the key/value metadata that says what the table is and how much of the sweep it
 * holds (a reader tells a table cut short, refused, from one that is partial on purpose).
 */
import { goalsInMilliseconds } from '../model/problem.js';
import { BOOLEAN_COLUMNS, INTEGER_COLUMNS, SUMMARY_COLUMNS, TEXT_COLUMNS, type CaseSummary } from '../model/summary.js';
import type { GridAxis, GridPoint, Sweep } from './spec.js';
import { VERDICT_LEVEL } from '../model/verdict.js';
import { SEED_COLUMNS, type RecordColumn, type SeedRecord } from '../run/seed-records.js';
import { REQUEST_COLUMNS, type RequestRecord } from '../run/request-records.js';
import type { SweepMeta, SweepRow } from './run.js';

/** Counts are int32, other numbers float64. */
export type ColumnType = 'int32' | 'float64' | 'bool' | 'string';

/** A column of a table of rows R: a sweep's (SweepRow), or a per-seed table's (SeedRow). */
export interface ResultColumn<R = SweepRow> {
  readonly name: string;
  readonly type: ColumnType;
  readonly nullable: boolean;
  /** A string column's values when known up front (grid names, case names), in their order: the Arrow dictionary. */
  readonly names?: readonly string[];
  readonly valueOf: (row: R) => number | string | boolean | null;
}

/** A row of a table of records of a grid point: a seed of a case (`--seeds-out`), a request of a seed (`--requests-out`). */
export interface RecordRow<T> {
  readonly point: GridPoint;
  readonly record: T;
}

/** A per-seed table's row (`--seeds-out`): a seed of a case of a grid point. */
export type SeedRow = RecordRow<SeedRecord>;

/** A per-request table's row (`--requests-out`). */
export type RequestRow = RecordRow<RequestRecord>;

/** A table of records: what its `servesim.table` says it is, and its columns after the grid's. */
export interface RecordTableKind<T extends { readonly case: string }> {
  readonly table: 'seeds' | 'requests';
  readonly columns: readonly RecordColumn<T>[];
}

export const SEED_TABLE: RecordTableKind<SeedRecord> = { table: 'seeds', columns: SEED_COLUMNS };
export const REQUEST_TABLE: RecordTableKind<RequestRecord> = { table: 'requests', columns: REQUEST_COLUMNS };

function gridColumn<R extends { readonly point: GridPoint }>(axis: GridAxis, a: number): ResultColumn<R> {
  if (axis.type === 'string') {
    return { name: axis.path, type: 'string', nullable: false, names: axis.values.map(String), valueOf: (r) => String(r.point.values[a]) };
  }
  return { name: axis.path, type: axis.type === 'int' ? 'int32' : 'float64', nullable: false, valueOf: (r) => r.point.values[a]! };
}

/** Non-finite numbers (no successes, no deadline) are nulls, as in the JSON output. */
function finiteOrNull(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}

function summaryColumn(name: keyof CaseSummary, caseNames: readonly string[]): ResultColumn {
  if (name === 'case') return { name, type: 'string', nullable: false, names: caseNames, valueOf: (r) => r.summary.case };
  if (BOOLEAN_COLUMNS.has(name)) return { name, type: 'bool', nullable: false, valueOf: (r) => r.summary[name] as boolean };
  if (TEXT_COLUMNS.has(name)) return { name, type: 'string', nullable: false, valueOf: (r) => r.summary[name] as string };
  return {
    name,
    type: INTEGER_COLUMNS.has(name) ? 'int32' : 'float64',
    nullable: true,
    valueOf: (r) => finiteOrNull(r.summary[name] as number),
  };
}

/** The columns of a sweep's results, in table order. */
export function resultColumns(sweep: Sweep): ResultColumn[] {
  return [...sweep.axes.map(gridColumn), ...SUMMARY_COLUMNS.map((name) => summaryColumn(name, sweep.caseNames))];
}

/** The columns of a table of records, in table order: the grid's, then the kind's. */
export function recordColumns<T extends { readonly case: string }>(kind: RecordTableKind<T>, subject: TableSubject): ResultColumn<RecordRow<T>>[] {
  const recordColumn = ({ name, kind: type, nullable, value }: RecordColumn<T>): ResultColumn<RecordRow<T>> => {
    if (name === 'case') return { name, type: 'string', nullable: false, names: subject.caseNames, valueOf: (r) => r.record.case };
    if (type === 'boolean') return { name, type: 'bool', nullable: nullable === true, valueOf: (r) => value(r.record) };
    if (type === 'text') return { name, type: 'string', nullable: false, valueOf: (r) => value(r.record) };
    return { name, type: type === 'count' ? 'int32' : 'float64', nullable: type !== 'count' || nullable === true, valueOf: (r) => finiteOrNull(value(r.record) as number) };
  };
  return [...subject.axes.map((axis, a) => gridColumn<RecordRow<T>>(axis, a)), ...kind.columns.map(recordColumn)];
}

/** Which grid points a table holds, when not all of them: what a sweep stopped early finished. */
export interface HeldPoints {
  /** Grid point indexes, each once. */
  readonly points: readonly number[];
  /** Why the others are missing ("cancelled", an error's message). */
  readonly stopped?: string;
}

/**
 * Rows of a record batch (Arrow) or row group (Parquet) of a table the service encodes as it
 * sends it: each has a fixed cost (a batch a grid point made a table many times larger, and
 * slower to encode, than its rows), and one batch is encoded between two turns of the event
 * loop (src/slices.ts), so a batch holds few enough rows to take milliseconds.
 */
export const ROWS_PER_BATCH = 512;

/**
 * The rows grouped by grid point (points in the order they first appear), and which points
 * they hold; `stopped`: why the sweep stopped early, when they lack some.
 */
export function groupByPoint<R extends { readonly point: GridPoint }>(rows: readonly R[], stopped?: string): { groups: R[][]; held: HeldPoints } {
  const byPoint = new Map<number, R[]>();
  for (const row of rows) {
    const list = byPoint.get(row.point.index) ?? [];
    list.push(row);
    byPoint.set(row.point.index, list);
  }
  return { groups: [...byPoint.values()], held: { points: [...byPoint.keys()], ...(stopped === undefined ? {} : { stopped }) } };
}

/** `[1, 2, 3, 7]` -> "1-3, 7". */
function indexRanges(indexes: readonly number[]): string {
  const sorted = [...indexes].sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    ranges.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return ranges.join(', ');
}

/**
 * What a table is of: a sweep, or for `servesim run --seeds-out` one problem as a grid of one
 * point and no axes.
 */
export type TableSubject = Pick<Sweep, 'id' | 'problem' | 'axes' | 'points' | 'caseNames' | 'confidence'>;

/** The metadata that says how much of the sweep a table holds (all of it without `held`). */
function completenessMetadata(sweep: TableSubject, held: HeldPoints | undefined): [string, string][] {
  const total = sweep.points.length;
  const points = held?.points.length ?? total;
  const entries: [string, string][] = [
    ['servesim.rows', String(points * sweep.caseNames.length)],
    ['servesim.grid_points', String(total)],
    ['servesim.points', String(points)],
  ];
  if (held !== undefined && points < total) {
    const present = new Set(held.points);
    entries.push(['servesim.missing_points', indexRanges(sweep.points.map((p) => p.index).filter((i) => !present.has(i)))]);
    if (held.stopped !== undefined) entries.push(['servesim.stopped', held.stopped]);
  }
  return entries;
}

/**
 * The entries that say what ran the sweep: the engine of most of its instances, why, and every
 * batch. An Arrow stream's schema goes out after its first grid point (service/streaming-run.ts),
 * so its last record batch carries these again, for the whole sweep, and a reader takes those.
 */
export function runMetadata(meta: SweepMeta): [string, string][] {
  return [
    ['servesim.engine', meta.engine ?? 'none'],
    ['servesim.adapter', meta.adapter ?? ''],
    // '' when the engine was named rather than chosen: every table carries every key
    ['servesim.engine_choice', meta.choice ?? ''],
    ['servesim.batches', JSON.stringify(meta.batches)],
  ];
}

/** The keys runMetadata writes. */
export const RUN_METADATA_KEYS: readonly string[] = ['servesim.engine', 'servesim.adapter', 'servesim.engine_choice', 'servesim.batches'];

/**
 * The table's key/value metadata: the problem, sweep, engine and goals, and how much of the
 * sweep it holds. `held`: the points the table holds when the sweep stopped early; all by default.
 */
export function resultMetadata(sweep: TableSubject, meta: SweepMeta, held?: HeldPoints): [string, string][] {
  return [
    ['servesim.problem', meta.problemId],
    ['servesim.sweep', meta.sweepId],
    ['servesim.version', meta.servesimVersion ?? 'unknown'],
    ...runMetadata(meta),
    ['servesim.seeds', String(meta.seeds)],
    ['servesim.max_seeds', String(meta.maxSeeds)],
    ['servesim.verdict_level', String(VERDICT_LEVEL)],
    ['servesim.base_seed', String(meta.baseSeed)],
    ['servesim.created', meta.createdAt],
    ['servesim.grid', JSON.stringify(sweep.axes.map((a) => a.path))],
    ['servesim.goals', JSON.stringify(goalsInMilliseconds(sweep.problem.goals))],
    ['servesim.confidence', String(sweep.confidence)],
    // a meta from before the field has none
    ['servesim.trace', JSON.stringify(meta.trace ?? null)],
    ...completenessMetadata(sweep, held),
  ];
}

/**
 * A table of records' metadata: the sweep's (resultMetadata), `servesim.rows` its own, and
 * `servesim.table` its kind's (`seeds`, `requests`), which tells it from a sweep's table.
 */
export function recordMetadata(kind: Pick<RecordTableKind<never>, 'table'>, subject: TableSubject, meta: SweepMeta, rows: number, held?: HeldPoints): [string, string][] {
  return [
    ['servesim.table', kind.table],
    ...resultMetadata(subject, meta, held).map(([key, value]): [string, string] => [key, key === 'servesim.rows' ? String(rows) : value]),
  ];
}
