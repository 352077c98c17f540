/**
 * A sweep's table in the format the client's Accept header asks for: Arrow IPC stream (the
 * default), Parquet, JSON or CSV. Every format has one row per (grid point, case), grid columns first.
 */
import { PassThrough, Readable } from 'node:stream';
import { giveWay, piecesInSlices } from '../slices.js';
import { ARROW_STREAM_TYPE, ArrowPieces, seedArrowPieces, sweepArrowPieces, type SweepTable } from '../sweep/arrow.js';
import { sweepCsvPieces, sweepJsonPieces } from '../sweep/format.js';
import { PARQUET_TYPE, seedParquetPieces, sweepParquetPieces } from '../sweep/parquet.js';
import type { SweepMeta, SweepOutcome, SweepRow } from '../sweep/run.js';
import { ROWS_PER_BATCH, type SeedRow } from '../sweep/table.js';
import type { Sweep } from '../sweep/spec.js';
import { ServiceError } from './errors.js';

export type TableFormat = 'arrow' | 'parquet' | 'json' | 'csv';

export const TABLE_MEDIA_TYPES: Readonly<Record<TableFormat, string>> = {
  arrow: ARROW_STREAM_TYPE,
  parquet: PARQUET_TYPE,
  json: 'application/json',
  csv: 'text/csv',
};

const BY_MEDIA_TYPE: Readonly<Record<string, TableFormat>> = {
  [ARROW_STREAM_TYPE]: 'arrow',
  [PARQUET_TYPE]: 'parquet',
  'application/json': 'json',
  'text/csv': 'csv',
};

/** Every format of a sweep's table, the default (Arrow) first. */
export const TABLE_FORMATS: readonly TableFormat[] = ['arrow', 'parquet', 'json', 'csv'];

/**
 * The format an Accept header prefers (highest q, then first listed) of those `offered`; the
 * first offered when absent, or for a wildcard that covers it (text/* the first text one).
 */
export function negotiate<F extends TableFormat>(accept: string | undefined, offered: readonly F[] = TABLE_FORMATS as readonly F[]): F {
  if (accept === undefined || accept.trim() === '') return offered[0]!;
  const formatOf = (type: string): F | undefined => {
    if (type === '*/*') return offered[0];
    if (type.endsWith('/*')) return offered.find((f) => TABLE_MEDIA_TYPES[f].startsWith(type.slice(0, -1)));
    const format = BY_MEDIA_TYPE[type];
    return offered.find((f) => f === format);
  };
  const ranges = accept
    .split(',')
    .map((part, order) => {
      const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
      const q = params.find((p) => p.startsWith('q='));
      return { format: formatOf(type), q: q === undefined ? 1 : Number(q.slice(2)), order };
    })
    .filter((r) => r.q > 0 && r.format !== undefined)
    .sort((a, b) => b.q - a.q || a.order - b.order);
  const best = ranges[0];
  if (best === undefined) {
    throw new ServiceError('SERVESIM_NOT_ACCEPTABLE', 406, `cannot answer Accept: ${accept}; this comes as ${offered.map((f) => TABLE_MEDIA_TYPES[f]).join(', ')}`);
  }
  return best.format!;
}

/**
 * The body and its content type, for the finished rows of `outcome` (all of them, or some): a
 * stream made a slice of the event loop at a time (a large table's encoding would hold it for
 * seconds), and only as fast as the client reads it.
 */
export function encodeTable(format: TableFormat, sweep: Sweep, outcome: SweepOutcome): { type: string; body: Readable } {
  switch (format) {
    case 'arrow':
      return { type: ARROW_STREAM_TYPE, body: sliced(sweepArrowPieces(sweep, outcome.rows, outcome.meta, { rowsPerBatch: ROWS_PER_BATCH })) };
    case 'parquet':
      return { type: PARQUET_TYPE, body: sliced(sweepParquetPieces(sweep, outcome.rows, outcome.meta, { rowsPerGroup: ROWS_PER_BATCH })) };
    case 'json':
      return { type: 'application/json; charset=utf-8', body: sliced(sweepJsonPieces(sweep, outcome)) };
    case 'csv':
      return { type: 'text/csv; charset=utf-8', body: sliced(sweepCsvPieces(sweep, outcome)) };
  }
}

/**
 * A sweep's per-seed table (POST /v1/sweeps?table=seeds), Arrow or Parquet, as encodeTable
 * sends a sweep's: ROWS_PER_BATCH rows a record batch or row group, a slice of the event loop
 * at a time.
 */
export function encodeSeedTable(format: 'arrow' | 'parquet', sweep: Sweep, rows: readonly SeedRow[], meta: SweepMeta): { type: string; body: Readable } {
  return format === 'arrow'
    ? { type: ARROW_STREAM_TYPE, body: sliced(seedArrowPieces(sweep, rows, meta, { rowsPerBatch: ROWS_PER_BATCH })) }
    : { type: PARQUET_TYPE, body: sliced(seedParquetPieces(sweep, rows, meta, { rowsPerGroup: ROWS_PER_BATCH })) };
}

/**
 * An Arrow stream answered as a sweep's points finish: the rows that finish together (a pool's
 * burst, a GPU pass) go out as one record batch of up to ROWS_PER_BATCH rows, written a turn
 * of the event loop later, a batch a turn, rather than a batch (each with its fixed cost) for
 * each point at once.
 */
export class ArrowAnswer {
  readonly body = new PassThrough();
  private readonly table: SweepTable;
  private readonly pieces: ArrowPieces;
  private pending: SweepRow[] = [];
  private flushing: Promise<void> | undefined;

  constructor(table: SweepTable) {
    this.table = table;
    this.pieces = new ArrowPieces(table.schema);
    this.body.write(this.pieces.head());
  }

  add(rows: readonly SweepRow[]): void {
    this.pending.push(...rows);
    this.flushing ??= this.flush();
  }

  /** Writes what is pending, then `last` as the last batch (with the whole sweep's `final` meta), then the end. */
  async end(last: readonly SweepRow[], final: SweepMeta): Promise<void> {
    await this.flushing;
    this.body.write(this.pieces.write(this.table.batch(last, final)));
    this.body.end(this.pieces.finish());
  }

  private async flush(): Promise<void> {
    // a body cut short (the client left, the sweep failed) takes no more
    while (this.pending.length > 0 && !this.body.destroyed) {
      await giveWay();
      const rows = this.pending.splice(0, ROWS_PER_BATCH);
      this.body.write(this.pieces.write(this.table.batch(rows)));
    }
    this.flushing = undefined;
  }
}

/** Each slice's pieces as one chunk of the body. */
export function sliced(pieces: Iterable<string | Uint8Array>): Readable {
  return Readable.from(
    (async function* () {
      for await (const slice of piecesInSlices(pieces)) yield Buffer.concat(slice.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
    })(),
    { objectMode: false },
  );
}
