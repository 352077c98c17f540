/**
 * Runs a problem's cases over many seeds and aggregates each case (docs/model.md section 6):
 * one grid point of src/run/points.ts, its cases one batch per shape.
 */
import type { Problem } from '../model/problem.js';
import { traceSummary } from '../model/trace.js';
import { selectCases } from '../problem/parse.js';
import { ServesimError } from '../errors.js';
import { packageVersion } from '../version.js';
import type { RunMeta, RunOptions, RunResult } from './types.js';
import type { CaseSummary } from '../model/summary.js';
import type { BatchUsed } from './batches.js';
import { runPoints, type PointsRunOptions } from './points.js';
import { withSeedRecords } from './seed-records.js';
import { withRequestRecords } from './request-records.js';

export { closeEngines, pool } from './batches.js';

/** What a run's meta says of the engines: the one that ran the largest batch, why, and every batch. */
export function engineMeta(batches: readonly BatchUsed[]): Pick<RunMeta, 'engine' | 'adapter' | 'threads' | 'choice' | 'note' | 'batches'> {
  const main = [...batches].sort((a, b) => b.instances - a.instances)[0];
  const notes = batches.flatMap((b) => (b.note === undefined ? [] : [b.note]));
  return {
    engine: main?.engine ?? 'pool',
    adapter: main?.adapter ?? null,
    ...(main?.threads === undefined ? {} : { threads: main.threads }),
    // each batch's own reason is in `batches`
    ...(main?.choice === undefined ? {} : { choice: main.choice }),
    ...(notes.length === 0 ? {} : { note: notes.join('; ') }),
    batches,
  };
}

export async function runProblem(problem: Problem, options: RunOptions): Promise<RunResult> {
  const caseNames = selectCases(problem, options.caseNames ?? 'all').map((c) => c.name);
  const maxSeeds = options.maxSeeds ?? options.seeds;
  let rows: readonly CaseSummary[] = [];
  const pointOptions: PointsRunOptions<Problem> = {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onPoint: (_, summaries) => void (rows = summaries),
    onProgress: (instancesDone, arrivalsDone, instancesTotal) => options.onProgress?.({ instancesDone, instancesTotal, arrivalsDone }),
  };
  const { onSeedRecords, requestRecords } = options;
  const withSeeds = onSeedRecords === undefined ? pointOptions : withSeedRecords(pointOptions, (_, records) => onSeedRecords(records));
  // outermost: its onSeeds hands on to the per-seed records'
  const withRequests = requestRecords === undefined ? withSeeds : withRequestRecords(withSeeds, requestRecords.seeds, (_, records) => requestRecords.onRecords(records));
  const { batches, error } = await runPoints([problem], (p) => p, { caseNames, seeds: options.seeds, maxSeeds, baseSeed: options.baseSeed, engine: options.engine }, withRequests);
  if (error !== null) throw error;
  if (options.signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
  return {
    problem,
    rows,
    meta: {
      problemId: problem.id,
      ...engineMeta(batches),
      seeds: options.seeds,
      maxSeeds,
      baseSeed: options.baseSeed,
      servesimVersion: packageVersion(),
      trace: problem.traffic.trace === null ? null : traceSummary(problem.traffic.trace),
    },
  };
}
