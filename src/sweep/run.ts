/**
 * Runs a sweep: every grid point's problem over the sweep's cases and seeds. Grid points go in
 * chunks of about {@link CHUNK_INSTANCES} instances, and each chunk's (point, case) runs go to
 * the engines as one batch per configuration shape (src/run/batches.ts), so points fill the
 * GPU, and the CPU pool's threads, together. A point is finished when its last case is.
 * Cancellation or a failure keeps every finished point and says which did not finish:
 * nothing a user submitted is lost.
 */
import { compile, type EngineConfig } from '../engine/compile.js';
import type { Problem } from '../model/problem.js';
import { summarize } from '../model/summarize.js';
import type { CaseSummary } from '../model/summary.js';
import { problemFromObject, selectCases } from '../problem/parse.js';
import { runItems, type BatchUsed, type WorkItem } from '../run/batches.js';
import { decodeRecords, engineMeta } from '../run/run.js';
import type { EngineUsed } from '../run/types.js';
import { packageVersion } from '../version.js';
import { ServesimError } from '../errors.js';
import type { GridPoint, Sweep } from './spec.js';

/**
 * Instances a chunk of grid points holds (all cases): enough to fill a large GPU, few enough
 * that an interrupted sweep keeps most of its finished points.
 */
export const CHUNK_INSTANCES = 65_536;

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

/** A grid point's problem and the configurations of its cases, or why it has none. */
function compilePoint(sweep: Sweep, point: GridPoint): { problem: Problem; configs: EngineConfig[] } {
  const problem = pointProblem(sweep, point);
  return { problem, configs: selectCases(problem, sweep.caseNames).map((scenario) => compile(problem, scenario)) };
}

export async function runSweep(sweep: Sweep, options: SweepRunOptions = {}): Promise<SweepOutcome> {
  const points = options.only === undefined ? sweep.points : options.only.map((i) => sweep.points[i]!);
  const perPoint = sweep.caseNames.length * sweep.seeds;
  const pointsPerChunk = Math.max(1, Math.floor(CHUNK_INSTANCES / perPoint));
  const rows: SweepRow[] = [];
  const finished: number[] = [];
  const batches: BatchUsed[] = [];
  let error: Error | null = null;
  let arrivals = 0;
  let before = 0;
  let instancesDone = 0;
  // stops the engines when the caller's signal aborts or its onPoint fails; points that finish
  // after that are not taken
  const stop = new AbortController();
  const abort = (): void => stop.abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  if (options.signal?.aborted) stop.abort();
  const progress = (instances: number, arrivalsDone: number): void => {
    instancesDone = instances;
    options.onProgress?.({ pointsDone: finished.length, pointsTotal: points.length, instancesDone, instancesTotal: points.length * perPoint, arrivalsDone });
  };

  for (let from = 0; from < points.length && !stop.signal.aborted; from += pointsPerChunk) {
    // compile the chunk's points; one that fails stops the sweep after the points before it ran
    const chunk: { point: GridPoint; problem: Problem; configs: EngineConfig[] }[] = [];
    for (const point of points.slice(from, from + pointsPerChunk)) {
      try {
        chunk.push({ point, ...compilePoint(sweep, point) });
      } catch (err) {
        error = err instanceof Error ? err : new Error(String(err));
        stop.abort();
        break;
      }
    }
    const items: WorkItem[] = chunk.flatMap((c) => c.configs.map((config) => ({ config, seed: sweep.baseSeed, seeds: sweep.seeds })));
    const owner = chunk.flatMap((c, p) => c.configs.map((_, k) => ({ p, k })));
    const records = chunk.map((c) => new Array<Uint32Array | undefined>(c.configs.length));
    const left = chunk.map((c) => c.configs.length);
    const perInstance = items.length === 0 ? 0 : chunk.reduce((s, c) => s + expectedArrivals(c.problem, sweep.caseNames), 0) / items.length;
    const pending: Promise<void>[] = [];
    const pointDone = async (p: number): Promise<void> => {
      const { point, problem, configs } = chunk[p]!;
      const timeout = problem.app?.timeout ?? problem.server?.timeout ?? 0;
      const cases = selectCases(problem, sweep.caseNames);
      const pointRows = configs.map((config, k) => ({
        point,
        summary: summarize(cases[k]!.name, problem.goals, problem.confidence, decodeRecords(config, records[p]![k]!), timeout),
      }));
      rows.push(...pointRows);
      finished.push(point.index);
      arrivals += pointRows.reduce((s, r) => s + r.summary.requests, 0);
      try {
        await options.onPoint?.(point, pointRows);
      } catch (err) {
        error ??= err instanceof Error ? err : new Error(String(err));
        stop.abort();
      }
      progress(instancesDone, arrivals);
    };
    try {
      const used = await runItems(items, {
        engine: sweep.engine,
        signal: stop.signal,
        onProgress: (done) => progress(before + done, arrivals + done * perInstance),
        onItem: (item, r) => {
          if (stop.signal.aborted) return;
          const { p, k } = owner[item]!;
          records[p]![k] = r;
          left[p]! -= 1;
          if (left[p] === 0) pending.push(pointDone(p));
        },
      });
      batches.push(...used);
      await Promise.all(pending);
    } catch (err) {
      await Promise.all(pending);
      if (!(stop.signal.aborted || (err instanceof ServesimError && err.code === 'SERVESIM_CANCELLED'))) {
        error ??= err instanceof Error ? err : new Error(String(err));
      }
      break;
    }
    before += items.length * sweep.seeds;
  }
  options.signal?.removeEventListener('abort', abort);
  // points finish in the engines' order; the table keeps the grid's
  const order = new Map(points.map((p, i) => [p.index, i]));
  rows.sort((a, b) => order.get(a.point.index)! - order.get(b.point.index)!);
  finished.sort((a, b) => order.get(a)! - order.get(b)!);
  const done = new Set(finished);
  const engines = batches.length === 0 ? null : engineMeta(batches);
  return {
    rows,
    finished,
    unfinished: points.filter((p) => !done.has(p.index)).map((p) => p.index),
    cancelled: options.signal?.aborted ?? false,
    error,
    meta: {
      problemId: sweep.problem.id,
      sweepId: sweep.id,
      engine: engines?.engine ?? null,
      adapter: engines?.adapter ?? null,
      ...(engines?.choice === undefined ? {} : { choice: engines.choice }),
      ...(engines?.note === undefined ? {} : { note: engines.note }),
      batches,
      seeds: sweep.seeds,
      baseSeed: sweep.baseSeed,
      servesimVersion: batches.length === 0 ? null : packageVersion(),
      createdAt: new Date().toISOString(),
    },
  };
}

/** Arrivals an instance of the point's cases simulates on average, warm-up included (a rate for the progress bar). */
function expectedArrivals(problem: Problem, caseNames: readonly string[]): number {
  const { traffic } = problem;
  return selectCases(problem, caseNames).reduce((s, c) => s + traffic.rate * c.rateScale * ((traffic.warmup + traffic.duration) / 1e6), 0);
}
