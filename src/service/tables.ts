/**
 * A sweep's table in the format the client's Accept header asks for: Arrow IPC stream (the
 * default), Parquet, JSON or CSV. Every format has one row per (grid point, case), grid columns first.
 */
import { ARROW_STREAM_TYPE, sweepToArrow } from '../sweep/arrow.js';
import { formatSweepCsv, formatSweepJson } from '../sweep/format.js';
import { PARQUET_TYPE, sweepToParquet } from '../sweep/parquet.js';
import type { SweepOutcome } from '../sweep/run.js';
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
  'application/*': 'arrow',
  'text/*': 'csv',
  '*/*': 'arrow',
};

/** The format an Accept header prefers (highest q, then first listed); Arrow when absent. */
export function negotiate(accept: string | undefined): TableFormat {
  if (accept === undefined || accept.trim() === '') return 'arrow';
  const ranges = accept
    .split(',')
    .map((part, order) => {
      const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
      const q = params.find((p) => p.startsWith('q='));
      return { type, q: q === undefined ? 1 : Number(q.slice(2)), order };
    })
    .filter((r) => r.q > 0 && BY_MEDIA_TYPE[r.type] !== undefined)
    .sort((a, b) => b.q - a.q || a.order - b.order);
  const best = ranges[0];
  if (best === undefined) {
    throw new ServiceError('SERVESIM_NOT_ACCEPTABLE', 406, `cannot answer Accept: ${accept}; tables come as ${Object.values(TABLE_MEDIA_TYPES).join(', ')}`);
  }
  return BY_MEDIA_TYPE[best.type]!;
}

/** The body and its content type, for the finished rows of `outcome` (all of them, or some). */
export function encodeTable(format: TableFormat, sweep: Sweep, outcome: SweepOutcome): { type: string; body: string | Uint8Array } {
  switch (format) {
    case 'arrow':
      return { type: ARROW_STREAM_TYPE, body: sweepToArrow(sweep, outcome.rows, outcome.meta) };
    case 'parquet':
      return { type: PARQUET_TYPE, body: sweepToParquet(sweep, outcome.rows, outcome.meta) };
    case 'json':
      return { type: 'application/json; charset=utf-8', body: formatSweepJson(sweep, outcome) };
    case 'csv':
      return { type: 'text/csv; charset=utf-8', body: formatSweepCsv(sweep, outcome) };
  }
}
