/**
 * Sweep results as Arrow: the table of table.ts, integers as int32, reals as float64, names
 * known up front (grid values, case names) dictionary-encoded. Dictionaries are fixed up front,
 * so a stream can carry one record batch per grid point as points finish.
 */
import {
  Bool, Dictionary, Field, Float64, Int32, MessageReader, RecordBatch, RecordBatchFileWriter,
  RecordBatchStreamWriter, Schema, Struct, Utf8, makeData, tableFromIPC, vectorFromArray,
  type DataType, type Data, type Table, type Vector,
} from 'apache-arrow';
import { ServesimError } from '../errors.js';
import type { Sweep } from './spec.js';
import type { SweepMeta, SweepRow } from './run.js';
import { groupByPoint, resultColumns, resultMetadata, type ColumnType, type HeldPoints, type ResultColumn } from './table.js';

export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

/** The IPC file format (magic at both ends, a footer listing the batches) or the stream format. */
export type IpcFormat = 'file' | 'stream';

interface Column {
  readonly field: Field;
  readonly build: (rows: readonly SweepRow[]) => Data;
}

const ARROW_TYPES: Readonly<Record<ColumnType, DataType>> = {
  int32: new Int32(),
  float64: new Float64(),
  bool: new Bool(),
  string: new Utf8(),
};

function arrowColumn({ name, type, nullable, names, valueOf }: ResultColumn): Column {
  if (names !== undefined) {
    const dictionaryType = new Dictionary(new Utf8(), new Int32());
    const dictionary = vectorFromArray([...names], new Utf8()) as Vector<Utf8>;
    const index = new Map(names.map((n, i) => [n, i]));
    return {
      field: new Field(name, dictionaryType, nullable),
      build: (rows) => {
        const data = Int32Array.from(rows, (r) => index.get(valueOf(r) as string)!);
        return makeData({ type: dictionaryType, length: rows.length, data, dictionary });
      },
    };
  }
  const arrowType = ARROW_TYPES[type];
  return {
    field: new Field(name, arrowType, nullable),
    build: (rows) => vectorFromArray(rows.map(valueOf), arrowType).data[0]!,
  };
}

/** Builds record batches for a sweep's rows, all with one schema. */
export class SweepTable {
  readonly schema: Schema;
  private readonly columns: readonly Column[];

  /** `held`: the points the table will hold when the sweep stopped early; all by default. */
  constructor(sweep: Sweep, meta: SweepMeta, held?: HeldPoints) {
    this.columns = resultColumns(sweep).map(arrowColumn);
    this.schema = new Schema(this.columns.map((c) => c.field), new Map(resultMetadata(sweep, meta, held)));
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
  const { groups, held } = groupByPoint(rows, options.stopped);
  const table = new SweepTable(sweep, meta, held);
  const writer = options.format === 'file' ? new RecordBatchFileWriter() : new RecordBatchStreamWriter();
  writer.reset(undefined, table.schema);
  for (const pointRows of groups) writer.write(table.batch(pointRows));
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

/**
 * "partial (cancelled): 1 of 8 grid points; missing grid points 1-7", for a table of a sweep
 * that stopped early (its metadata, table.ts); null for a whole one (or one written before
 * servesim said).
 */
export function describePartial(metadata: ReadonlyMap<string, string>): string | null {
  const total = metadata.get('servesim.grid_points');
  const points = metadata.get('servesim.points');
  if (total === undefined || points === undefined || Number(points) >= Number(total)) return null;
  const stopped = metadata.get('servesim.stopped');
  return `partial${stopped === undefined ? '' : ` (${stopped})`}: ${points} of ${total} grid points; ` +
    `missing grid points ${metadata.get('servesim.missing_points') ?? 'unknown'}`;
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
