/**
 * Sweep results as Arrow: one row per (grid point, case). Grid columns first (integers as
 * int32, reals as float64, names dictionary-encoded), then the summary columns of
 * `servesim run`. Dictionaries are fixed up front (grid values and case names are known), so
 * a stream can carry one record batch per grid point as points finish.
 */
import {
  Bool, Dictionary, Field, Float64, Int32, RecordBatch, RecordBatchStreamWriter, Schema, Struct,
  Utf8, makeData, vectorFromArray, type DataType, type Data, type Vector,
} from 'apache-arrow';
import { SUMMARY_COLUMNS, type CaseSummary } from '../model/summary.js';
import type { GridAxis, Sweep } from './spec.js';
import type { SweepMeta, SweepRow } from './run.js';

export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

const INT_COLUMNS = new Set<keyof CaseSummary>(['seeds', 'longest_queue']);

interface Column {
  readonly field: Field;
  readonly build: (rows: readonly SweepRow[]) => Data;
}

function dictionaryColumn(name: string, names: readonly string[], valueOf: (row: SweepRow) => string): Column {
  const type = new Dictionary(new Utf8(), new Int32());
  const dictionary = vectorFromArray([...names], new Utf8()) as Vector<Utf8>;
  const index = new Map(names.map((n, i) => [n, i]));
  return {
    field: new Field(name, type, false),
    build: (rows) => makeData({ type, length: rows.length, data: Int32Array.from(rows, (r) => index.get(valueOf(r))!), dictionary }),
  };
}

function plainColumn(name: string, type: DataType, valueOf: (row: SweepRow) => unknown, nullable: boolean): Column {
  return {
    field: new Field(name, type, nullable),
    build: (rows) => vectorFromArray(rows.map(valueOf), type).data[0]!,
  };
}

function gridColumn(axis: GridAxis, a: number): Column {
  if (axis.type === 'string') return dictionaryColumn(axis.path, axis.values.map(String), (r) => String(r.point.values[a]));
  return plainColumn(axis.path, axis.type === 'int' ? new Int32() : new Float64(), (r) => r.point.values[a], false);
}

/** Non-finite numbers (no successes, no deadline) are nulls, as in the JSON output. */
function finiteOrNull(v: unknown): unknown {
  return typeof v === 'number' && !Number.isFinite(v) ? null : v;
}

function summaryColumn(name: keyof CaseSummary, caseNames: readonly string[]): Column {
  if (name === 'case') return dictionaryColumn('case', caseNames, (r) => r.summary.case);
  if (name === 'passes') return plainColumn(name, new Bool(), (r) => r.summary.passes, false);
  const type = INT_COLUMNS.has(name) ? new Int32() : new Float64();
  return plainColumn(name, type, (r) => finiteOrNull(r.summary[name]), true);
}

/** Builds record batches for a sweep's rows, all with one schema. */
export class SweepTable {
  readonly schema: Schema;
  private readonly columns: readonly Column[];

  constructor(sweep: Sweep, meta: SweepMeta) {
    this.columns = [
      ...sweep.axes.map(gridColumn),
      ...SUMMARY_COLUMNS.map((name) => summaryColumn(name, sweep.caseNames)),
    ];
    const metadata = new Map<string, string>([
      ['servesim.problem', meta.problemId],
      ['servesim.sweep', meta.sweepId],
      ['servesim.version', meta.servesimVersion ?? 'unknown'],
      ['servesim.engine', meta.engine ?? 'none'],
      ['servesim.adapter', meta.adapter ?? ''],
      ['servesim.seeds', String(meta.seeds)],
      ['servesim.base_seed', String(meta.baseSeed)],
      ['servesim.created', meta.createdAt],
      ['servesim.grid', JSON.stringify(sweep.axes.map((a) => a.path))],
      ['servesim.goals', JSON.stringify({ success: sweep.problem.goals.success, p99_ms: sweep.problem.goals.p99 / 1000 })],
      ['servesim.confidence', String(sweep.confidence)],
      ...(meta.choice === undefined ? [] : [['servesim.engine_choice', meta.choice] as [string, string]]),
    ]);
    this.schema = new Schema(this.columns.map((c) => c.field), metadata);
  }

  batch(rows: readonly SweepRow[]): RecordBatch {
    const children = this.columns.map((c) => c.build(rows));
    return new RecordBatch(this.schema, makeData({ type: new Struct(this.schema.fields), length: rows.length, children, nullCount: 0 }));
  }
}

/**
 * The whole table as one Arrow IPC stream. (The writer closes its stream after a Table:
 * write each batch, then finish once.)
 */
export function sweepToArrow(sweep: Sweep, rows: readonly SweepRow[], meta: SweepMeta): Uint8Array {
  const table = new SweepTable(sweep, meta);
  const writer = new RecordBatchStreamWriter();
  writer.reset(undefined, table.schema);
  const byPoint = new Map<number, SweepRow[]>();
  for (const row of rows) {
    const list = byPoint.get(row.point.index) ?? [];
    list.push(row);
    byPoint.set(row.point.index, list);
  }
  for (const pointRows of byPoint.values()) writer.write(table.batch(pointRows));
  writer.finish();
  return writer.toUint8Array(true);
}
