/**
 * Runs a sweep: every grid point's problem over the sweep's cases and seeds. Grid points go in
 * chunks (src/run/points.ts), and each chunk's (point, case) runs go to
 * the engines as one batch per configuration shape (src/run/batches.ts), so points fill the
 * GPU, and the CPU pool's threads, together. A point is finished when its last case is.
 * Cancellation or a failure keeps every finished point and says which did not finish:
 * nothing a user submitted is lost.
 */
import type { CaseSummary } from '../model/summary.js';
import type { Trace, TraceSummary } from '../model/trace.js';
import { problemFromObject } from '../problem/parse.js';
import type { BatchUsed } from '../run/batches.js';
import { engineMeta } from '../run/run.js';
import { runPoints, type PointsRunOptions } from '../run/points.js';
import { withSeedRecords, type SeedRecord } from '../run/seed-records.js';
import type { EngineUsed } from '../run/types.js';
import { packageVersion } from '../version.js';
import { sweepTraceSummary, TRACE_AXIS, type GridPoint, type GridValue, type Sweep } from './spec.js';

export interface SweepRow {
  readonly point: GridPoint;
  readonly summary: CaseSummary;
}

export interface SweepProgress {
  readonly pointsDone: number;
  readonly pointsTotal: number;
  readonly instancesDone: number;
  readonly instancesTotal: number;
  readonly arrivalsDone: number;
}

export interface SweepMeta {
  readonly problemId: string;
  readonly sweepId: string;
  readonly engine: EngineUsed | null;
  readonly adapter: string | null;
  /** With engine `auto`: why this engine (see RunMeta.choice). */
  readonly choice?: string;
  /** Why some instances ran elsewhere than asked (a lost GPU device). */
  readonly note?: string;
  /** Every batch the sweep ran: its size, configurations and engine. */
  readonly batches: readonly BatchUsed[];
  /** Seeds every configuration ran, and the most an undecided one could take (each row's `seeds` says what it took). */
  readonly seeds: number;
  readonly maxSeeds: number;
  readonly baseSeed: number;
  readonly servesimVersion: string | null;
  readonly createdAt: string;
  /** The trace the sweep replays, as loaded (sweepTraceSummary); null without one or with a grid of traces. */
  readonly trace: TraceSummary | null;
}

export interface SweepOutcome {
  readonly rows: readonly SweepRow[];
  readonly finished: readonly number[];
  readonly unfinished: readonly number[];
  readonly cancelled: boolean;
  /** Why the sweep stopped early, when it did (cancellation aside). */
  readonly error: Error | null;
  readonly meta: SweepMeta;
}

export interface SweepRunOptions {
  readonly signal?: AbortSignal;
  /** Called as each grid point finishes, with its rows (one per case). */
  readonly onPoint?: (point: GridPoint, rows: readonly SweepRow[]) => void | Promise<void>;
  readonly onProgress?: (progress: SweepProgress) => void;
  /** Runs only these points (by index), e.g. for a hint search; all when absent. */
  readonly only?: readonly number[];
  /** The most instances one engine batch holds (src/run/points.ts); a hint search over HTTP keeps its rounds under the server's limit. */
  readonly batchInstances?: number;
  /** A batch has run (the meta lists every one when the sweep returns). */
  readonly onBatch?: (used: BatchUsed) => void;
  /** An undecided configuration that needs no more seeds (PointsRunOptions.enough). */
  readonly enough?: PointsRunOptions<GridPoint>['enough'];
  /** A finished point's per-seed records (src/run/seed-records.ts), before its rows go to `onPoint`; none are made without it. */
  readonly onSeedRecords?: (point: GridPoint, records: readonly SeedRecord[]) => void;
}

/** The problem a grid point stands for. */
export function pointProblem(sweep: Sweep, point: GridPoint) {
  const problem = problemFromObject(sweep.problemRaw, point.overrides, sweep.problemSource, sweep.traceDirs);
  return sweep.confidence === problem.confidence ? problem : { ...problem, confidence: sweep.confidence };
}

/**
 * The traces a sweep replays, each once: its problem's, or with traffic.trace on the grid each
 * value's (from the first grid point that takes it).
 */
export function sweepTraces(sweep: Sweep): Trace[] {
  const axis = sweep.axes.findIndex((a) => a.path === TRACE_AXIS);
  const base = sweep.problem.traffic.trace;
  if (axis < 0) return base === null ? [] : [base];
  const seen = new Set<GridValue>();
  const out: Trace[] = [];
  for (const point of sweep.points) {
    const value = point.values[axis]!;
    if (seen.has(value)) continue;
    seen.add(value);
    const trace = pointProblem(sweep, point).traffic.trace;
    if (trace !== null) out.push(trace);
  }
  return out;
}

export async function runSweep(sweep: Sweep, options: SweepRunOptions = {}): Promise<SweepOutcome> {
  const points = options.only === undefined ? sweep.points : options.only.map((i) => sweep.points[i]!);
  const rows: SweepRow[] = [];
  const finished: number[] = [];
  let instances = 0;
  const spec = options.batchInstances === undefined ? sweep : { ...sweep, batchInstances: options.batchInstances };
  const pointOptions: PointsRunOptions<GridPoint> = {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.onBatch === undefined ? {} : { onBatch: options.onBatch }),
    ...(options.enough === undefined ? {} : { enough: options.enough }),
    onPoint: (point, summaries) => {
      const pointRows = summaries.map((summary) => ({ point, summary }));
      rows.push(...pointRows);
      finished.push(point.index);
      return options.onPoint?.(point, pointRows);
    },
    onProgress: (instancesDone, arrivalsDone, instancesPlanned) => {
      instances = instancesDone;
      options.onProgress?.({ pointsDone: finished.length, pointsTotal: points.length, instancesDone: instances, instancesTotal: instancesPlanned, arrivalsDone });
    },
  };
  const { onSeedRecords } = options;
  const { batches, error } = await runPoints(points, (point) => pointProblem(sweep, point), spec,
    onSeedRecords === undefined ? pointOptions : withSeedRecords(pointOptions, onSeedRecords));
  // points finish in the engines' order; the table keeps the grid's
  const order = new Map(points.map((p, i) => [p.index, i]));
  rows.sort((a, b) => order.get(a.point.index)! - order.get(b.point.index)!);
  finished.sort((a, b) => order.get(a)! - order.get(b)!);
  const done = new Set(finished);
  return {
    rows,
    finished,
    unfinished: points.filter((p) => !done.has(p.index)).map((p) => p.index),
    cancelled: options.signal?.aborted ?? false,
    error,
    meta: sweepMeta(sweep, batches, new Date().toISOString()),
  };
}

/**
 * A sweep's meta from the batches it ran, wherever they ran (here, in parts, on a queue's
 * workers): the engine that ran the most instances, and every batch.
 */
export function sweepMeta(sweep: Sweep, batches: readonly BatchUsed[], createdAt: string): SweepMeta {
  const engines = batches.length === 0 ? null : engineMeta(batches);
  return {
    problemId: sweep.problem.id,
    sweepId: sweep.id,
    engine: engines?.engine ?? null,
    adapter: engines?.adapter ?? null,
    ...(engines?.choice === undefined ? {} : { choice: engines.choice }),
    ...(engines?.note === undefined ? {} : { note: engines.note }),
    batches,
    seeds: sweep.seeds,
    maxSeeds: sweep.maxSeeds,
    baseSeed: sweep.baseSeed,
    servesimVersion: batches.length === 0 ? null : packageVersion(),
    createdAt,
    trace: sweepTraceSummary(sweep),
  };
}
