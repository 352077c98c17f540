/**
 * Results files read back by decoders other than the ones that wrote them (apache-arrow,
 * hyparquet-writer): the Arrow IPC file (`.arrow`, `.feather`) and stream (`.arrows`) by polars
 * and flechette, Parquet (`.parquet`) by polars and hyparquet. Each must see the sweep's rows as
 * they are, in table order: counts as 32-bit integers, other numbers as doubles, nulls where a
 * number is not finite, names as strings, `passes` as booleans; and Parquet the servesim
 * metadata the Arrow table has, a partial sweep's included.
 */
import { Precision, Type, tableFromIPC, type DataType } from '@uwdata/flechette';
import { parquetMetadata, parquetReadObjects, type FileMetaData, type SchemaElement } from 'hyparquet';
import pl from 'nodejs-polars';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTEGER_COLUMNS, SUMMARY_COLUMNS } from '../src/model/summary.js';
import { closeEngines } from '../src/run/run.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import { sweepToParquet } from '../src/sweep/parquet.js';
import { runSweep, type SweepOutcome, type SweepRow } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { TINY_QUEUE } from './support.js';

// an int, a real and a name axis, two cases: 16 rows of milliseconds each
const sweep = sweepFromObject({
  id: 'tiny',
  problem: { ...TINY_QUEUE, cases: ['as-given', 'peak-hour'] },
  grid: { 'server.slots': [1, 2], 'traffic.rate': [10, 12.5], 'server.timeout': ['80ms', '1s'] },
  seeds: 2,
});

type Kind = 'int32' | 'float64' | 'bool' | 'string';

let outcome: SweepOutcome;
beforeAll(async () => {
  outcome = await runSweep(sweep);
});
afterAll(closeEngines);

/** What every decoder must read: a row per (grid point, case), non-finite numbers as null. */
function expectedRows(rows: readonly SweepRow[]): Record<string, unknown>[] {
  return rows.map(({ point, summary }) => ({
    ...Object.fromEntries(sweep.axes.map((axis, a) => [axis.path, point.values[a]])),
    ...Object.fromEntries(SUMMARY_COLUMNS.map((name) => {
      const v = summary[name];
      return [name, typeof v === 'number' && !Number.isFinite(v) ? null : v];
    })),
  }));
}

/** Each column's type in table order, from the values themselves: a column that counts is int32. */
function expectedKinds(): [string, Kind][] {
  const sample = outcome.rows[0]!.summary;
  return [
    ...sweep.axes.map((axis): [string, Kind] => [axis.path, axis.type === 'int' ? 'int32' : axis.type === 'float' ? 'float64' : 'string']),
    ...SUMMARY_COLUMNS.map((name): [string, Kind] => {
      const v = sample[name];
      return [name, typeof v === 'boolean' ? 'bool' : typeof v === 'string' ? 'string' : INTEGER_COLUMNS.has(name) ? 'int32' : 'float64'];
    }),
  ];
}

function flechetteKind(type: DataType): string {
  switch (type.typeId) {
    case Type.Int: return type.bitWidth === 32 && type.signed ? 'int32' : `int${type.bitWidth}`;
    case Type.Float: return type.precision === Precision.DOUBLE ? 'float64' : `float (precision ${type.precision})`;
    case Type.Bool: return 'bool';
    case Type.Utf8: return 'string';
    case Type.Dictionary: return type.dictionary.typeId === Type.Utf8 ? 'string' : 'dictionary of non-strings';
    default: return `Arrow type ${type.typeId}`;
  }
}

const POLARS_KINDS: Readonly<Record<string, Kind>> = { Int32: 'int32', Float64: 'float64', Bool: 'bool', String: 'string', Categorical: 'string' };

function parquetKind(element: SchemaElement): string {
  if (element.type === 'INT32' && element.converted_type === undefined) return 'int32';
  if (element.type === 'DOUBLE') return 'float64';
  if (element.type === 'BOOLEAN') return 'bool';
  if (element.type === 'BYTE_ARRAY' && element.converted_type === 'UTF8') return 'string';
  return `Parquet ${element.type} (${element.converted_type})`;
}

interface Read {
  readonly kinds: [string, string][];
  readonly rows: unknown[];
}

function byFlechette(bytes: Uint8Array): Read {
  const table = tableFromIPC(bytes);
  return { kinds: table.schema.fields.map((f) => [f.name, flechetteKind(f.type)]), rows: table.toArray() };
}

function byPolars(frame: pl.DataFrame): Read {
  return { kinds: Object.entries<pl.DataType>(frame.schema).map(([name, type]) => [name, POLARS_KINDS[type.variant] ?? type.variant]), rows: frame.toRecords() };
}

function arrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/** The root's children (a flat table's columns) and the key/value metadata. */
function parquetFooter(bytes: Uint8Array): { metadata: FileMetaData; columns: SchemaElement[]; keyValue: Map<string, string | undefined> } {
  const metadata = parquetMetadata(arrayBuffer(bytes));
  return { metadata, columns: metadata.schema.slice(1), keyValue: new Map(metadata.key_value_metadata?.map((kv) => [kv.key, kv.value])) };
}

async function byHyparquet(bytes: Uint8Array): Promise<Read> {
  return {
    kinds: parquetFooter(bytes).columns.map((element) => [element.name, parquetKind(element)]),
    rows: await parquetReadObjects({ file: arrayBuffer(bytes) }),
  };
}

function expectWhole(read: Read): void {
  expect(read.kinds).toEqual(expectedKinds());
  expect(read.rows).toEqual(expectedRows(outcome.rows));
}

describe('the fixture', () => {
  it('has nulls in integer and real columns, and the columns of every type', () => {
    const kinds = new Map(expectedKinds());
    const nullIn = new Set(expectedRows(outcome.rows).flatMap((row) => Object.keys(row).filter((name) => row[name] === null)));
    expect([...nullIn].some((name) => kinds.get(name) === 'int32')).toBe(true);
    expect([...nullIn].some((name) => kinds.get(name) === 'float64')).toBe(true);
    expect(new Set(kinds.values())).toEqual(new Set(['int32', 'float64', 'bool', 'string']));
  });
});

describe('the Arrow IPC file (.arrow, .feather)', () => {
  const file = () => sweepToArrow(sweep, outcome.rows, outcome.meta, { format: 'file' });

  it('reads back in polars', () => expectWhole(byPolars(pl.readIPC(Buffer.from(file())))));
  it('reads back in flechette', () => expectWhole(byFlechette(file())));
});

describe('the Arrow IPC stream (.arrows)', () => {
  const stream = () => sweepToArrow(sweep, outcome.rows, outcome.meta, { format: 'stream' });

  it('reads back in polars', () => expectWhole(byPolars(pl.readIPCStream(Buffer.from(stream())))));
  it('reads back in flechette', () => expectWhole(byFlechette(stream())));
});

describe('Parquet (.parquet)', () => {
  const parquet = () => sweepToParquet(sweep, outcome.rows, outcome.meta);

  it('reads back in polars', () => expectWhole(byPolars(pl.readParquet(Buffer.from(parquet())))));
  it('reads back in hyparquet', async () => expectWhole(await byHyparquet(parquet())));

  it("marks the summary's numbers nullable, the rest required", () => {
    const grid = new Set(sweep.axes.map((axis) => axis.path));
    const repetition = parquetFooter(parquet()).columns.map((element) => [element.name, element.repetition_type]);
    expect(repetition).toEqual(expectedKinds().map(([name, kind]) =>
      [name, !grid.has(name) && (kind === 'int32' || kind === 'float64') ? 'OPTIONAL' : 'REQUIRED']));
  });

  it("holds the Arrow table's metadata, whole or partial", () => {
    const whole = parquetFooter(parquet());
    expect(whole.keyValue).toEqual(tableFromIPC(sweepToArrow(sweep, outcome.rows, outcome.meta)).schema.metadata);
    expect(whole.metadata.num_rows).toBe(16n);

    // a sweep cancelled after 3 of its 8 points
    const rows = outcome.rows.filter((row) => row.point.index < 3);
    const partial = parquetFooter(sweepToParquet(sweep, rows, outcome.meta, 'cancelled'));
    expect(partial.keyValue).toEqual(tableFromIPC(sweepToArrow(sweep, rows, outcome.meta, { stopped: 'cancelled' })).schema.metadata);
    expect(partial.metadata.num_rows).toBe(6n);
    expect(Object.fromEntries(partial.keyValue)).toMatchObject({
      'servesim.rows': '6', 'servesim.points': '3', 'servesim.grid_points': '8',
      'servesim.missing_points': '3-7', 'servesim.stopped': 'cancelled',
    });
  });
});
