/**
 * Sweep results as Parquet (`sweep --out x.parquet`): the table of table.ts in one file, rows
 * in the Arrow table's order, its metadata as the file's key/value metadata. Counts are INT32,
 * other numbers DOUBLE, `passes` BOOLEAN, names UTF8 strings (dictionary-encoded by the writer
 * where that pays).
 */
import { parquetWriteBuffer, type BasicType } from 'hyparquet-writer';
import type { Sweep } from './spec.js';
import type { SweepMeta, SweepRow } from './run.js';
import { groupByPoint, resultColumns, resultMetadata, type ColumnType } from './table.js';

const PARQUET_TYPES: Readonly<Record<ColumnType, BasicType>> = {
  int32: 'INT32',
  float64: 'DOUBLE',
  bool: 'BOOLEAN',
  string: 'STRING',
};

/** Parquet's media type (IANA, 2024). */
export const PARQUET_TYPE = 'application/vnd.apache.parquet';

/** The rows as a Parquet file. `stopped`: why the sweep stopped early, when `rows` lack some grid points. */
export function sweepToParquet(sweep: Sweep, rows: readonly SweepRow[], meta: SweepMeta, stopped?: string): Uint8Array {
  const { groups, held } = groupByPoint(rows, stopped);
  const ordered = groups.flat();
  const buffer = parquetWriteBuffer({
    columnData: resultColumns(sweep).map(({ name, type, nullable, valueOf }) => ({
      name,
      data: ordered.map(valueOf),
      type: PARQUET_TYPES[type],
      nullable,
    })),
    kvMetadata: resultMetadata(sweep, meta, held).map(([key, value]) => ({ key, value })),
  });
  return new Uint8Array(buffer);
}
