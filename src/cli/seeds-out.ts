/**
 * `--seeds-out FILE` (`run`, `sweep`): the per-seed table, one row per (grid point, case, seed),
 * as Arrow (the IPC file; the stream for `.arrows`) or Parquet by FILE's extension; and written
 * alike, `run --requests-out FILE`'s per-request table. Its size is
 * checked before any work (FILE too, as `--out`'s), and it is written as `--out` is, whole or
 * not at all. Arrow and Parquet are imported when the table is written: loading them is a
 * fifth of a short `servesim run`'s time (docs/architecture.md, "A run's time").
 */
import { extname } from 'node:path';
import { ServesimError } from '../errors.js';
import { MAX_SEED_ROWS } from '../sweep/limits.js';

import type { RunResult } from '../run/types.js';
import type { SweepMeta } from '../sweep/run.js';
import type { GridPoint } from '../sweep/spec.js';
import type { RecordRow, RecordTableKind, SeedRow, TableSubject } from '../sweep/table.js';
import { writeOutput } from './output-file.js';

/**
 * Refuses, before any work, a per-seed table of more than MAX_SEED_ROWS rows: `rows`, which
 * `counted` says are what ("3 grid points x 2 cases x up to 4,096 seeds").
 */
export function checkSeedRows(rows: number, counted: string): void {
  if (rows <= MAX_SEED_ROWS) return;
  throw new ServesimError(
    'SERVESIM_GRID_TOO_LARGE',
    `${counted} = ${rows.toLocaleString('en')} rows; a per-seed table holds at most ${MAX_SEED_ROWS.toLocaleString('en')} (ask for fewer seeds, a lower --max-seeds or a smaller grid)`,
    '--seeds-out',
  );
}

/** Writes a table of records to `path` (`flag`'s); returns why that failed (and where the bytes are instead), or null. */
export async function writeRecordsOut<T extends { readonly case: string }>(
  flag: string, kind: RecordTableKind<T>, path: string, subject: TableSubject, rows: readonly RecordRow<T>[], meta: SweepMeta, stopped?: string,
): Promise<string | null> {
  const extension = extname(path).toLowerCase();
  const data = extension === '.parquet'
    ? (await import('../sweep/parquet.js')).recordsToParquet(kind, subject, rows, meta, stopped)
    : (await import('../sweep/arrow.js')).recordsToArrow(kind, subject, rows, meta, { format: extension === '.arrows' ? 'stream' : 'file', ...(stopped === undefined ? {} : { stopped }) });
  return writeOutput(flag, path, data);
}

/** Writes the per-seed table to `path`, as writeRecordsOut. */
export async function writeSeedsOut(path: string, subject: TableSubject, rows: readonly SeedRow[], meta: SweepMeta, stopped?: string): Promise<string | null> {
  return writeRecordsOut('--seeds-out', (await import('../sweep/table.js')).SEED_TABLE, path, subject, rows, meta, stopped);
}

/** `servesim run`'s problem as what a table is of: a grid of one point, no axes. */
const ONLY_POINT: GridPoint = { index: 0, values: [], overrides: [] };

/** A run's records (per seed, per request) as the table `writeRecordsOut` writes: its problem as a grid of one point, its meta as a sweep's. */
export function runRecordTable<T>(result: RunResult, records: readonly T[]): { subject: TableSubject; rows: RecordRow<T>[]; meta: SweepMeta } {
  const { problem, meta } = result;
  const { problemId, engine, adapter, choice, note, batches, seeds, maxSeeds, baseSeed, servesimVersion, trace } = meta;
  return {
    subject: { id: problem.id, problem, axes: [], points: [ONLY_POINT], caseNames: result.rows.map((r) => r.case), confidence: problem.confidence },
    rows: records.map((record) => ({ point: ONLY_POINT, record })),
    meta: {
      problemId, sweepId: problem.id, engine, adapter, batches, seeds, maxSeeds, baseSeed, servesimVersion, trace,
      ...(choice === undefined ? {} : { choice }),
      ...(note === undefined ? {} : { note }),
      createdAt: new Date().toISOString(),
    },
  };
}
