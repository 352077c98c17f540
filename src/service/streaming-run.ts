/**
 * A sweep run that says what ran it before its first rows. runSweep reports its meta (engine,
 * adapter, version) only when it returns, but an Arrow stream's schema, which carries the
 * meta, goes out before the first batch: so the first point runs alone, then the rest. The
 * outcome's meta is the whole sweep's, every batch of both runs.
 */
import type { GridPoint, Sweep } from '../sweep/spec.js';
import { sweepMeta, type runSweep, type SweepMeta, type SweepOutcome, type SweepProgress, type SweepRow } from '../sweep/run.js';

export type SweepRunner = typeof runSweep;

export interface StreamingRunOptions {
  readonly signal: AbortSignal;
  /** Called once, after the first point and before its rows reach `onPoint`: what ran that point. */
  readonly onMeta: (meta: SweepMeta) => void;
  readonly onPoint: (point: GridPoint, rows: readonly SweepRow[]) => void;
  readonly onProgress?: (progress: SweepProgress) => void;
}

export async function runSweepStreaming(run: SweepRunner, sweep: Sweep, options: StreamingRunOptions): Promise<SweepOutcome> {
  const { signal } = options;
  const [first, ...rest] = sweep.points.map((p) => p.index);
  const total = sweep.points.length;
  const perPoint = sweep.caseNames.length * sweep.seeds;
  // the run so far (the first point's, once it is done) and the rest's first seeds: with seeds
  // 'auto' the totals grow as undecided configurations take more
  const overall = (p: SweepProgress, before: { points: number; instances: number; arrivals: number }, pointsAfter: number): SweepProgress => ({
    pointsDone: p.pointsDone + before.points,
    pointsTotal: total,
    instancesDone: p.instancesDone + before.instances,
    instancesTotal: p.instancesTotal + before.instances + pointsAfter * perPoint,
    arrivalsDone: p.arrivalsDone + before.arrivals,
  });

  const head = await run(sweep, {
    signal,
    only: [first!],
    ...(options.onProgress ? { onProgress: (p: SweepProgress) => options.onProgress!(overall(p, { points: 0, instances: 0, arrivals: 0 }, rest.length)) } : {}),
  });
  if (head.finished.length === 0) return { ...head, unfinished: sweep.points.map((p) => p.index) };
  options.onMeta(head.meta);
  options.onPoint(sweep.points[first!]!, head.rows);
  if (rest.length === 0) return head;

  const before = {
    points: 1,
    instances: head.rows.reduce((sum, r) => sum + r.summary.seeds, 0),
    arrivals: head.rows.reduce((sum, r) => sum + r.summary.requests, 0),
  };
  const tail = await run(sweep, {
    signal,
    only: rest,
    onPoint: options.onPoint,
    ...(options.onProgress ? { onProgress: (p: SweepProgress) => options.onProgress!(overall(p, before, 0)) } : {}),
  });
  return {
    rows: [...head.rows, ...tail.rows],
    finished: [...head.finished, ...tail.finished],
    unfinished: tail.unfinished,
    cancelled: tail.cancelled,
    error: tail.error,
    meta: sweepMeta(sweep, [...head.meta.batches, ...tail.meta.batches], tail.meta.createdAt),
  };
}
