/**
 * Sweep results as Arrow: the table of table.ts, integers as int32, reals as float64, names
 * known up front (grid values, case names) dictionary-encoded. Dictionaries are fixed up front,
 * so a stream can carry a record batch per grid point as points finish; a whole table is a few
 * large batches.
 */
import {
  AsyncByteQueue, Bool, Dictionary, Field, Float64, Int32, MessageReader, RecordBatch, RecordBatchFileWriter,
  RecordBatchStreamWriter, Schema, Struct, Table, Utf8, makeData, tableFromIPC, vectorFromArray,
  type DataType, type Data, type Vector,
} from 'apache-arrow';
import { ServesimError } from '../errors.js';
import type { Sweep } from './spec.js';
import type { SweepMeta, SweepRow } from './run.js';
import {
  groupByPoint, recordColumns, recordMetadata, resultColumns, resultMetadata, RUN_METADATA_KEYS, runMetadata, SEED_TABLE,
  type ColumnType, type HeldPoints, type RecordRow, type RecordTableKind, type ResultColumn, type SeedRow, type TableSubject,
} from './table.js';

export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

/** The IPC file format (magic at both ends, a footer listing the batches) or the stream format. */
export type IpcFormat = 'file' | 'stream';

interface Column<R> {
  readonly field: Field;
  readonly build: (rows: readonly R[]) => Data;
}

const ARROW_TYPES: Readonly<Record<ColumnType, DataType>> = {
  int32: new Int32(),
  float64: new Float64(),
  bool: new Bool(),
  string: new Utf8(),
};

function arrowColumn<R>({ name, type, nullable, names, valueOf }: ResultColumn<R>): Column<R> {
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
  if (type === 'int32' || type === 'float64') {
    return { field: new Field(name, arrowType, nullable), build: (rows) => numberData(rows, valueOf, arrowType as Int32 | Float64) };
  }
  return {
    field: new Field(name, arrowType, nullable),
    build: (rows) => vectorFromArray(rows.map(valueOf), arrowType).data[0]!,
  };
}

/**
 * A number column's values written straight into their buffer, nulls cleared in a validity
 * bitmap: apache-arrow's vectorFromArray goes through a builder, many times slower, and a
 * table's numbers are almost all of its values.
 */
function numberData<R>(rows: readonly R[], valueOf: ResultColumn<R>['valueOf'], type: Int32 | Float64): Data {
  const data = type instanceof Int32 ? new Int32Array(rows.length) : new Float64Array(rows.length);
  let nullBitmap: Uint8Array | undefined;
  let nullCount = 0;
  rows.forEach((row, i) => {
    const v = valueOf(row);
    if (v !== null) {
      data[i] = v as number;
      return;
    }
    nullBitmap ??= new Uint8Array(Math.ceil(rows.length / 8)).fill(0xff);
    nullBitmap[i >> 3]! &= ~(1 << (i & 7));
    nullCount++;
  });
  const props = { length: rows.length, nullCount, ...(nullBitmap === undefined ? {} : { nullBitmap }) };
  return type instanceof Int32 ? makeData({ type, data: data as Int32Array, ...props }) : makeData({ type, data: data as Float64Array, ...props });
}

/** Builds record batches of rows, all with one schema: these columns and this metadata. */
export class RecordTable<R> {
  readonly schema: Schema;
  private readonly columns: readonly Column<R>[];

  constructor(columns: readonly ResultColumn<R>[], metadata: readonly [string, string][]) {
    this.columns = columns.map((c) => arrowColumn(c));
    this.schema = new Schema(this.columns.map((c) => c.field), new Map(metadata));
  }

  /** `final`: the whole sweep's meta, for a stream's last batch (runMetadata) when its schema went out before. */
  batch(rows: readonly R[], final?: SweepMeta): RecordBatch {
    const children = this.columns.map((c) => c.build(rows));
    const data = makeData({ type: new Struct(this.schema.fields), length: rows.length, children, nullCount: 0 });
    return new RecordBatch(this.schema, data, final === undefined ? undefined : new Map(runMetadata(final)));
  }
}

/** Record batches of a sweep's rows. */
export class SweepTable extends RecordTable<SweepRow> {
  /** `held`: the points the table will hold when the sweep stopped early; all by default. */
  constructor(sweep: Sweep, meta: SweepMeta, held?: HeldPoints) {
    super(resultColumns(sweep), resultMetadata(sweep, meta, held));
  }
}

export interface SweepArrowOptions {
  /** 'stream' (the default: HTTP answers, stdout, `.arrows`) or 'file' (`.arrow`, `.feather`). */
  readonly format?: IpcFormat;
  /** Why the sweep stopped early, when `rows` lack some grid points. */
  readonly stopped?: string;
  /**
   * Rows of a record batch, for a table sent as it is encoded (ROWS_PER_BATCH: few batches, each
   * encoded in milliseconds); default: a batch a grid point, which a file's reader can take alone.
   */
  readonly rowsPerBatch?: number;
}

/** A writer's sink that hands over what it was given so far, as one piece, and keeps nothing. */
class TakenBytes extends AsyncByteQueue {
  private pieces: Uint8Array[] = [];

  override write(value: Uint8Array): void {
    this.pieces.push(value);
  }

  take(): Uint8Array {
    const bytes = Buffer.concat(this.pieces);
    this.pieces = [];
    return bytes;
  }
}

/**
 * Arrow IPC (a stream, or a file) written a record batch at a time, each call answering the
 * bytes it wrote: for a body sent as it is made. (apache-arrow's own writer queues every buffer
 * of every batch until read, and reads its queue from the front, a copy of the rest each time.)
 */
export class ArrowPieces {
  private readonly sink = new TakenBytes();
  private readonly writer: RecordBatchStreamWriter | RecordBatchFileWriter;

  constructor(schema: Schema, format: IpcFormat = 'stream') {
    this.writer = format === 'file' ? new RecordBatchFileWriter() : new RecordBatchStreamWriter();
    this.writer.reset(this.sink, schema);
  }

  /** The schema's bytes (a file's magic first). */
  head(): Uint8Array {
    return this.sink.take();
  }

  write(batch: RecordBatch): Uint8Array {
    this.writer.write(batch);
    return this.sink.take();
  }

  /** The end: a stream's end marker, a file's footer. */
  finish(): Uint8Array {
    this.writer.finish();
    return this.sink.take();
  }
}

/**
 * The rows as one Arrow IPC stream or file, in pieces: the schema, each record batch (rows
 * grouped by grid point), the end. Grid points the rows lack are named in the metadata.
 */
export function* sweepArrowPieces(sweep: Sweep, rows: readonly SweepRow[], meta: SweepMeta, options: SweepArrowOptions = {}): Generator<Uint8Array> {
  const { groups, held } = groupByPoint(rows, options.stopped);
  yield* tablePieces(new SweepTable(sweep, meta, held), groups, options);
}

/**
 * A table of records (`--seeds-out`, `--requests-out`) as one Arrow IPC stream or file, in
 * pieces, as sweepArrowPieces writes a sweep's: rows grouped by grid point, the grid points of
 * `subject` they lack named in the metadata.
 */
export function* recordArrowPieces<T extends { readonly case: string }>(kind: RecordTableKind<T>, subject: TableSubject, rows: readonly RecordRow<T>[], meta: SweepMeta, options: SweepArrowOptions = {}): Generator<Uint8Array> {
  const { groups, held } = groupByPoint(rows, options.stopped);
  yield* tablePieces(new RecordTable(recordColumns(kind, subject), recordMetadata(kind, subject, meta, rows.length, held)), groups, options);
}

/** recordArrowPieces, whole. */
export function recordsToArrow<T extends { readonly case: string }>(kind: RecordTableKind<T>, subject: TableSubject, rows: readonly RecordRow<T>[], meta: SweepMeta, options: SweepArrowOptions = {}): Uint8Array {
  return Buffer.concat([...recordArrowPieces(kind, subject, rows, meta, options)]);
}

/** A per-seed table (`--seeds-out`), in pieces. */
export function seedArrowPieces(subject: TableSubject, rows: readonly SeedRow[], meta: SweepMeta, options: SweepArrowOptions = {}): Generator<Uint8Array> {
  return recordArrowPieces(SEED_TABLE, subject, rows, meta, options);
}

/** A per-seed table, whole. */
export function seedsToArrow(subject: TableSubject, rows: readonly SeedRow[], meta: SweepMeta, options: SweepArrowOptions = {}): Uint8Array {
  return recordsToArrow(SEED_TABLE, subject, rows, meta, options);
}

/** The schema, a record batch a group of rows (or of `rowsPerBatch`), the end. */
function* tablePieces<R>(table: RecordTable<R>, groups: readonly R[][], options: SweepArrowOptions): Generator<Uint8Array> {
  const writer = new ArrowPieces(table.schema, options.format);
  yield writer.head();
  const size = options.rowsPerBatch;
  const batches = size === undefined ? groups : inBatches(groups.flat(), size);
  for (const batchRows of batches) yield writer.write(table.batch(batchRows));
  yield writer.finish();
}

function inBatches<T>(items: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, b) => items.slice(b * size, (b + 1) * size));
}

/** sweepArrowPieces, whole. */
export function sweepToArrow(sweep: Sweep, rows: readonly SweepRow[], meta: SweepMeta, options: SweepArrowOptions = {}): Uint8Array {
  return Buffer.concat([...sweepArrowPieces(sweep, rows, meta, options)]);
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
  const kind = found.schema?.metadata.get('servesim.table');
  if (kind === 'seeds' || kind === 'requests') {
    const what = kind === 'seeds' ? 'a per-seed table (--seeds-out), a row a seed' : 'a per-request table (--requests-out), a row a request or call';
    throw unreadable(`${name} is ${what}: servesim report reads a sweep's table (servesim sweep --out FILE.arrow)`);
  }
  const expected = Number(found.schema?.metadata.get('servesim.rows') ?? NaN);
  if (found.rows < expected) gaps.unshift(`it holds ${found.rows} of ${expected} rows`);
  // apache-arrow writes a file's schema in its footer only: without it, the rows are all we know
  else if (found.schema === null) gaps.push(`${found.rows} rows come before the cut`);
  if (gaps.length > 0) throw unreadable(`${name} is cut short: ${gaps.join('; ')}. Run the sweep again to write it whole`);
  if (table === null) throw unreadable(`${name} is not a readable Arrow IPC file: its record batches do not decode`);
  const whole = withFinalRunMetadata(table);
  return { table: whole, partial: describePartial(whole.schema.metadata) };
}

/** The table with its last record batch's runMetadata, when it has some, in place of its schema's. */
function withFinalRunMetadata(table: Table): Table {
  const final = table.batches.at(-1)?.metadata;
  if (final?.has('servesim.batches') !== true) return table;
  const metadata = new Map(table.schema.metadata);
  for (const key of RUN_METADATA_KEYS) metadata.delete(key);
  for (const [key, value] of final) if (RUN_METADATA_KEYS.includes(key)) metadata.set(key, value);
  const schema = new Schema(table.schema.fields, metadata);
  return new Table(schema, table.batches.map((b) => new RecordBatch(schema, b.data, b.metadata)));
}
