/**
 * Sweep results as Arrow: one row per (grid point, case). Grid columns first (integers as
 * int32, reals as float64, names dictionary-encoded), then the summary columns of
 * `servesim run`. Dictionaries are fixed up front (grid values and case names are known), so
 * a stream can carry one record batch per grid point as points finish.
 *
 * The schema metadata says how many rows a whole table holds and, for a sweep that stopped
 * early, which grid points it lacks and why: a reader tells a table cut short (refused) from
 * one that is partial on purpose (read, and said to be partial).
 */
import {
  Bool, Dictionary, Field, Float64, Int32, MessageReader, RecordBatch, RecordBatchFileWriter,
  RecordBatchStreamWriter, Schema, Struct, Utf8, makeData, tableFromIPC, vectorFromArray,
  type DataType, type Data, type Table, type Vector,
} from 'apache-arrow';
import { ServesimError } from '../errors.js';
import { INTEGER_COLUMNS, SUMMARY_COLUMNS, type CaseSummary } from '../model/summary.js';
import type { GridAxis, Sweep } from './spec.js';
import type { SweepMeta, SweepRow } from './run.js';

export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

/** The IPC file format (magic at both ends, a footer listing the batches) or the stream format. */
export type IpcFormat = 'file' | 'stream';

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
  if (name === 'overload_reason') return plainColumn(name, new Utf8(), (r) => r.summary.overload_reason, false);
  const type = INTEGER_COLUMNS.has(name) ? new Int32() : new Float64();
  return plainColumn(name, type, (r) => finiteOrNull(r.summary[name]), true);
}

/** Which grid points a table holds, when not all of them: what a sweep stopped early finished. */
export interface HeldPoints {
  /** Grid point indexes, each once. */
  readonly points: readonly number[];
  /** Why the others are missing ("cancelled", an error's message). */
  readonly stopped?: string;
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

/** The metadata that says how much of the sweep a table holds (all of it without `held`). */
function completenessMetadata(sweep: Sweep, held: HeldPoints | undefined): [string, string][] {
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
 * "partial (cancelled): 1 of 8 grid points; missing grid points 1-7", for a table of a sweep
 * that stopped early; null for a whole one (or one written before servesim said).
 */
export function describePartial(metadata: ReadonlyMap<string, string>): string | null {
  const total = metadata.get('servesim.grid_points');
  const points = metadata.get('servesim.points');
  if (total === undefined || points === undefined || Number(points) >= Number(total)) return null;
  const stopped = metadata.get('servesim.stopped');
  return `partial${stopped === undefined ? '' : ` (${stopped})`}: ${points} of ${total} grid points; ` +
    `missing grid points ${metadata.get('servesim.missing_points') ?? 'unknown'}`;
}

/** Builds record batches for a sweep's rows, all with one schema. */
export class SweepTable {
  readonly schema: Schema;
  private readonly columns: readonly Column[];

  /** `held`: the points the table will hold when the sweep stopped early; all by default. */
  constructor(sweep: Sweep, meta: SweepMeta, held?: HeldPoints) {
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
      ...completenessMetadata(sweep, held),
    ]);
    this.schema = new Schema(this.columns.map((c) => c.field), metadata);
  }

  batch(rows: readonly SweepRow[]): RecordBatch {
    const children = this.columns.map((c) => c.build(rows));
    return new RecordBatch(this.schema, makeData({ type: new Struct(this.schema.fields), length: rows.length, children, nullCount: 0 }));
  }
}

export interface SweepArrowOptions {
  /** 'stream' (the default: HTTP answers, stdout, `.arrows`) or 'file' (`.arrow`, `.feather`). */
  readonly format?: IpcFormat;
  /** Why the sweep stopped early, when `rows` lack some grid points. */
  readonly stopped?: string;
}

/**
 * The rows as one Arrow IPC stream or file, a record batch per grid point. Grid points the
 * rows lack are named in the metadata. (The writer closes its sink after a Table: write each
 * batch, then finish once.)
 */
export function sweepToArrow(sweep: Sweep, rows: readonly SweepRow[], meta: SweepMeta, options: SweepArrowOptions = {}): Uint8Array {
  const byPoint = new Map<number, SweepRow[]>();
  for (const row of rows) {
    const list = byPoint.get(row.point.index) ?? [];
    list.push(row);
    byPoint.set(row.point.index, list);
  }
  const held = { points: [...byPoint.keys()], ...(options.stopped === undefined ? {} : { stopped: options.stopped }) };
  const table = new SweepTable(sweep, meta, held);
  const writer = options.format === 'file' ? new RecordBatchFileWriter() : new RecordBatchStreamWriter();
  writer.reset(undefined, table.schema);
  for (const pointRows of byPoint.values()) writer.write(table.batch(pointRows));
  writer.finish();
  return writer.toUint8Array(true);
}

const MAGIC = Buffer.from('ARROW1');
/** A stream's end: the continuation marker and a zero length. */
const END_OF_STREAM = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

/** The file format's tail: the footer, its length (int32), the magic; the footer fits the file. */
function footerIntact(bytes: Buffer): boolean {
  if (bytes.length < 8 + 10 || !bytes.subarray(-6).equals(MAGIC)) return false;
  const length = bytes.readInt32LE(bytes.length - 10);
  return length > 0 && 8 + length + 10 <= bytes.length;
}

/**
 * The schema (when the bytes start with one: a stream's do, a file's body written by
 * apache-arrow does not) and the rows of the record batches before the bytes end or are cut.
 */
function readUpToCut(body: Uint8Array): { schema: Schema | null; rows: number } {
  const reader = new MessageReader(body);
  let schema: Schema | null = null;
  let rows = 0;
  try {
    for (let message = reader.readMessage(); message !== null; message = reader.readMessage()) {
      if (message.isSchema()) schema = message.header();
      reader.readMessageBody(message.bodyLength);
      if (message.isRecordBatch()) rows += message.header().length;
    }
  } catch {
    // cut inside a message: what came before it is what the file holds
  }
  return { schema, rows };
}

function unreadable(message: string): ServesimError {
  return new ServesimError('SERVESIM_FILE_UNREADABLE', message);
}

/** A results table as read back, and whether it is partial on purpose (describePartial). */
export interface SweepArrow {
  readonly table: Table;
  readonly partial: string | null;
}

/**
 * Reads a results table in either IPC format. Refuses bytes that were cut short, naming what
 * is missing: rows the metadata promises, a file's footer, a stream's end. A table written
 * partial on purpose (a sweep stopped early) is read, with `partial` saying so.
 */
export function readSweepArrow(data: Uint8Array, name: string): SweepArrow {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const file = bytes.subarray(0, 6).equals(MAGIC);
  const gaps: string[] = [];
  if (file && !footerIntact(bytes)) gaps.push('its Arrow file footer is missing');
  if (!file && !bytes.subarray(-8).equals(END_OF_STREAM)) gaps.push('its Arrow stream has no end-of-stream marker');
  let table: Table | null = null;
  if (gaps.length === 0) {
    try {
      table = tableFromIPC(bytes);
    } catch {
      // reported below, with what could be read
    }
  }
  const found = table === null ? readUpToCut(file ? bytes.subarray(8) : bytes) : { schema: table.schema, rows: table.numRows };
  if (!file && found.schema === null) {
    throw unreadable(`${name} is not an Arrow IPC file or stream (write one with servesim sweep --out FILE.arrow)`);
  }
  const expected = Number(found.schema?.metadata.get('servesim.rows') ?? NaN);
  if (found.rows < expected) gaps.unshift(`it holds ${found.rows} of ${expected} rows`);
  // apache-arrow writes a file's schema in its footer only: without it, the rows are all we know
  else if (found.schema === null) gaps.push(`${found.rows} rows come before the cut`);
  if (gaps.length > 0) throw unreadable(`${name} is cut short: ${gaps.join('; ')}. Run the sweep again to write it whole`);
  if (table === null) throw unreadable(`${name} is not a readable Arrow IPC file: its record batches do not decode`);
  return { table, partial: describePartial(table.schema.metadata) };
}
