/**
 * Runs a sweep: every grid point's problem over the sweep's cases and seeds, one point after
 * another (each point uses the whole engine). Cancellation or a failure keeps every finished
 * point and says which did not finish: nothing a user submitted is lost.
 */
import type { CaseSummary } from '../model/summary.js';
import { problemFromObject } from '../problem/parse.js';
import { runProblem } from '../run/run.js';
import type { EngineUsed, RunMeta } from '../run/types.js';
import { ServesimError } from '../errors.js';
import type { GridPoint, Sweep } from './spec.js';

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
  readonly seeds: number;
  readonly baseSeed: number;
  readonly servesimVersion: string | null;
  readonly createdAt: string;
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
}

/** The problem a grid point stands for. */
export function pointProblem(sweep: Sweep, point: GridPoint) {
  const problem = problemFromObject(sweep.problemRaw, point.sets, sweep.problemSource);
  return sweep.confidence === problem.confidence ? problem : { ...problem, confidence: sweep.confidence };
}

export async function runSweep(sweep: Sweep, options: SweepRunOptions = {}): Promise<SweepOutcome> {
  const points = options.only === undefined ? sweep.points : options.only.map((i) => sweep.points[i]!);
  const perPoint = sweep.caseNames.length * sweep.seeds;
  const rows: SweepRow[] = [];
  const finished: number[] = [];
  let meta: RunMeta | null = null;
  let error: Error | null = null;
  let arrivals = 0;
  for (const point of points) {
    if (options.signal?.aborted) break;
    try {
      const result = await runProblem(pointProblem(sweep, point), {
        caseNames: sweep.caseNames,
        seeds: sweep.seeds,
        baseSeed: sweep.baseSeed,
        engine: sweep.engine,
        ...(options.signal ? { signal: options.signal } : {}),
        onProgress: (p) =>
          options.onProgress?.({
            pointsDone: finished.length,
            pointsTotal: points.length,
            instancesDone: finished.length * perPoint + p.instancesDone,
            instancesTotal: points.length * perPoint,
            arrivalsDone: arrivals + p.arrivalsDone,
          }),
      });
      meta ??= result.meta;
      const pointRows = result.rows.map((summary) => ({ point, summary }));
      rows.push(...pointRows);
      finished.push(point.index);
      arrivals += result.rows.reduce((s, r) => s + r.requests, 0);
      await options.onPoint?.(point, pointRows);
      options.onProgress?.({
        pointsDone: finished.length,
        pointsTotal: points.length,
        instancesDone: finished.length * perPoint,
        instancesTotal: points.length * perPoint,
        arrivalsDone: arrivals,
      });
    } catch (err) {
      if (options.signal?.aborted || (err instanceof ServesimError && err.code === 'SERVESIM_CANCELLED')) break;
      error = err instanceof Error ? err : new Error(String(err));
      break;
    }
  }
  const done = new Set(finished);
  return {
    rows,
    finished,
    unfinished: points.filter((p) => !done.has(p.index)).map((p) => p.index),
    cancelled: options.signal?.aborted ?? false,
    error,
    meta: {
      problemId: sweep.problem.id,
      sweepId: sweep.id,
      engine: meta?.engine ?? null,
      adapter: meta?.adapter ?? null,
      ...(meta?.choice === undefined ? {} : { choice: meta.choice }),
      seeds: sweep.seeds,
      baseSeed: sweep.baseSeed,
      servesimVersion: meta?.servesimVersion ?? null,
      createdAt: new Date().toISOString(),
    },
  };
}
