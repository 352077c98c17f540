/**
 * Sweep results as Parquet (`sweep --out x.parquet`): the table of table.ts in one file, rows
 * in the Arrow table's order, its metadata as the file's key/value metadata. Counts are INT32,
 * other numbers DOUBLE, `passes` and `steady` BOOLEAN, names UTF8 strings (dictionary-encoded by the writer
 * where that pays).
 */
import { ByteWriter, ParquetWriter, schemaFromColumnData, type BasicType } from 'hyparquet-writer';
import type { Sweep } from './spec.js';
import type { SweepMeta, SweepRow } from './run.js';
import {
  groupByPoint, recordColumns, recordMetadata, resultColumns, resultMetadata, SEED_TABLE,
  type ColumnType, type RecordRow, type RecordTableKind, type ResultColumn, type SeedRow, type TableSubject,
} from './table.js';

const PARQUET_TYPES: Readonly<Record<ColumnType, BasicType>> = {
  int32: 'INT32',
  float64: 'DOUBLE',
  bool: 'BOOLEAN',
  string: 'STRING',
};

/** Parquet's media type (IANA, 2024). */
export const PARQUET_TYPE = 'application/vnd.apache.parquet';

export interface SweepParquetOptions {
  /** Why the sweep stopped early, when `rows` lack some grid points. */
  readonly stopped?: string;
  /** Rows of a row group, for a file sent as it is encoded (ROWS_PER_BATCH), a group a piece; default: the writer's groups, in one piece. */
  readonly rowsPerGroup?: number;
}

/**
 * The rows as a Parquet file, in pieces: the bytes of each write as it is made, then the
 * footer.
 */
export function* sweepParquetPieces(sweep: Sweep, rows: readonly SweepRow[], meta: SweepMeta, options: SweepParquetOptions = {}): Generator<Uint8Array> {
  const { groups, held } = groupByPoint(rows, options.stopped);
  yield* parquetPieces(resultColumns(sweep), resultMetadata(sweep, meta, held), groups.flat(), options.rowsPerGroup);
}

/** A table of records (`--seeds-out`, `--requests-out`) as Parquet, in pieces, as sweepParquetPieces writes a sweep's. */
export function* recordParquetPieces<T extends { readonly case: string }>(kind: RecordTableKind<T>, subject: TableSubject, rows: readonly RecordRow<T>[], meta: SweepMeta, options: SweepParquetOptions = {}): Generator<Uint8Array> {
  const { groups, held } = groupByPoint(rows, options.stopped);
  yield* parquetPieces(recordColumns(kind, subject), recordMetadata(kind, subject, meta, rows.length, held), groups.flat(), options.rowsPerGroup);
}

/** recordParquetPieces, whole. */
export function recordsToParquet<T extends { readonly case: string }>(kind: RecordTableKind<T>, subject: TableSubject, rows: readonly RecordRow<T>[], meta: SweepMeta, stopped?: string): Uint8Array {
  return Buffer.concat([...recordParquetPieces(kind, subject, rows, meta, stopped === undefined ? {} : { stopped })]);
}

/** A per-seed table (`--seeds-out`), in pieces. */
export function seedParquetPieces(subject: TableSubject, rows: readonly SeedRow[], meta: SweepMeta, options: SweepParquetOptions = {}): Generator<Uint8Array> {
  return recordParquetPieces(SEED_TABLE, subject, rows, meta, options);
}

/** A per-seed table, whole. */
export function seedsToParquet(subject: TableSubject, rows: readonly SeedRow[], meta: SweepMeta, stopped?: string): Uint8Array {
  return recordsToParquet(SEED_TABLE, subject, rows, meta, stopped);
}

/** `ordered` rows in these columns, with this key/value metadata: the bytes of each write as it is made, then the footer. */
function* parquetPieces<R>(columns: readonly ResultColumn<R>[], metadata: readonly [string, string][], ordered: readonly R[], rowsPerGroup: number | undefined): Generator<Uint8Array> {
  const bytes = new ByteWriter();
  // in pieces, a group's metadata (statistics, page indexes) costs more than its rows, and all
  // of it is written with the footer at once: a results table is small enough to read whole
  const sliced = rowsPerGroup !== undefined;
  const writer = new ParquetWriter({
    writer: bytes,
    statistics: !sliced,
    schema: schemaFromColumnData({ columnData: columns.map(({ name, type, nullable }) => ({ name, data: [], type: PARQUET_TYPES[type], nullable })) }),
    kvMetadata: metadata.map(([key, value]) => ({ key, value })),
  });
  let taken = 0;
  const written = (): Uint8Array => {
    const piece = bytes.getBytes().slice(taken);
    taken = bytes.offset;
    return piece;
  };
  const size = rowsPerGroup ?? ordered.length;
  for (let from = 0; from < ordered.length; from += size) {
    const slice = ordered.slice(from, from + size);
    const columnData = columns.map(({ name, valueOf }) => ({ name, data: slice.map(valueOf), offsetIndex: !sliced }));
    writer.write({ columnData, ...(sliced ? { rowGroupSize: size } : {}) });
    yield written();
  }
  writer.finish();
  yield written();
}

/** sweepParquetPieces, whole. `stopped`: why the sweep stopped early, when `rows` lack some grid points. */
export function sweepToParquet(sweep: Sweep, rows: readonly SweepRow[], meta: SweepMeta, stopped?: string): Uint8Array {
  return Buffer.concat([...sweepParquetPieces(sweep, rows, meta, stopped === undefined ? {} : { stopped })]);
}
