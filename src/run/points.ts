/**
 * Runs grid points (a sweep's, a hint's round, a queue chunk's, or one problem's), each over its
 * cases and seeds: in chunks of about {@link CHUNK_INSTANCES} instances, each chunk's
 * (point, case) configurations one engine batch per shape (src/run/batches.ts).
 */
import { compile, type EngineConfig } from '../engine/compile.js';
import { ServesimError } from '../errors.js';
import type { Problem, Scenario } from '../model/problem.js';
import { configurationCost, summarize } from '../model/summarize.js';
import type { CaseSummary } from '../model/summary.js';
import { selectCases } from '../problem/parse.js';
import { runItems, type BatchUsed, type WorkItem } from './batches.js';
import { decodeResult } from '../engine/result.js';
import type { InstanceResult } from '../model/result.js';
import type { EngineChoice } from './types.js';

/** Each instance's decoded record, `config.resultWords` words each. */
function decodeRecords(config: EngineConfig, records: Uint32Array): InstanceResult[] {
  const out: InstanceResult[] = [];
  for (let i = 0; i < records.length / config.resultWords; i++) {
    out.push(decodeResult(config, records.subarray(i * config.resultWords, (i + 1) * config.resultWords)));
  }
  return out;
}

/**
 * Instances a chunk of grid points holds (all cases): enough to fill a large GPU, few enough
 * that an interrupted sweep keeps most of its finished points.
 */
export const CHUNK_INSTANCES = 65_536;

/** What runs each grid point: its cases, seeds and engine. */
export interface PointsSpec {
  readonly caseNames: readonly string[];
  readonly seeds: number;
  readonly baseSeed: number;
  readonly engine: EngineChoice;
}

export interface PointsRunOptions<P> {
  readonly signal?: AbortSignal;
  /** A point whose every case ran, with its rows (one per case, in case order). */
  readonly onPoint?: (point: P, rows: readonly CaseSummary[]) => void | Promise<void>;
  /** Instances finished so far, and arrivals simulated (an estimate while a batch runs). */
  readonly onProgress?: (instancesDone: number, arrivalsDone: number) => void;
}

export interface PointsOutcome {
  /** The batches the points ran as. */
  readonly batches: readonly BatchUsed[];
  /** Why the points stopped early (a point that did not parse, an engine, onPoint), cancellation aside. */
  readonly error: Error | null;
}

/**
 * Runs grid points, in chunks of about {@link CHUNK_INSTANCES} instances, each chunk's
 * (point, case) configurations as one batch per shape; calls `onPoint` as each point's last
 * case finishes. A point whose problem does not parse stops the run after the points before
 * it ran. Cancelling (or `onPoint` failing) stops the engines; points that finish after that
 * are not taken.
 */
export async function runPoints<P>(points: readonly P[], problemOf: (point: P) => Problem, spec: PointsSpec, options: PointsRunOptions<P> = {}): Promise<PointsOutcome> {
  const perPoint = spec.caseNames.length * spec.seeds;
  const pointsPerChunk = Math.max(1, Math.floor(CHUNK_INSTANCES / perPoint));
  const batches: BatchUsed[] = [];
  let error: Error | null = null;
  let arrivals = 0;
  let before = 0;
  let instancesDone = 0;
  const stop = new AbortController();
  const abort = (): void => stop.abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  if (options.signal?.aborted) stop.abort();
  const fail = (err: unknown): void => {
    error ??= err instanceof Error ? err : new Error(String(err));
    stop.abort();
  };
  const progress = (instances: number, arrivalsDone: number): void => {
    instancesDone = instances;
    options.onProgress?.(instancesDone, arrivalsDone);
  };

  for (let from = 0; from < points.length && !stop.signal.aborted; from += pointsPerChunk) {
    const chunk: { point: P; problem: Problem; cases: Scenario[]; configs: EngineConfig[] }[] = [];
    for (const point of points.slice(from, from + pointsPerChunk)) {
      try {
        const problem = problemOf(point);
        const cases = selectCases(problem, spec.caseNames);
        chunk.push({ point, problem, cases, configs: cases.map((scenario) => compile(problem, scenario)) });
      } catch (err) {
        fail(err);
        break;
      }
    }
    const items: WorkItem[] = chunk.flatMap((c) => c.configs.map((config) => ({ config, seed: spec.baseSeed, seeds: spec.seeds })));
    const owner = chunk.flatMap((c, p) => c.configs.map((_, k) => ({ p, k })));
    const records = chunk.map((c) => new Array<Uint32Array | undefined>(c.configs.length));
    const left = chunk.map((c) => c.configs.length);
    const perInstance = items.length === 0 ? 0 : chunk.reduce((s, c) => s + expectedArrivals(c.problem, c.cases), 0) / items.length;
    const pending: Promise<void>[] = [];
    const pointDone = async (p: number): Promise<void> => {
      if (stop.signal.aborted) return;
      const { point, problem, cases, configs } = chunk[p]!;
      const timeout = problem.app?.timeout ?? problem.server?.timeout ?? 0;
      const cost = configurationCost(problem);
      const rows = configs.map((config, k) => summarize(cases[k]!.name, problem.goals, problem.confidence, decodeRecords(config, records[p]![k]!), timeout, cost));
      arrivals += rows.reduce((s, r) => s + r.requests, 0);
      try {
        // called before any await: an onPoint that throws stops the engines before another point is taken
        const taken = options.onPoint?.(point, rows);
        if (taken !== undefined) await taken;
      } catch (err) {
        fail(err);
      }
      progress(instancesDone, arrivals);
    };
    try {
      batches.push(...(await runItems(items, {
        engine: spec.engine,
        signal: stop.signal,
        onProgress: (done) => progress(before + done, arrivals + done * perInstance),
        onItem: (item, r) => {
          if (stop.signal.aborted) return;
          const { p, k } = owner[item]!;
          records[p]![k] = r;
          left[p]! -= 1;
          if (left[p] === 0) pending.push(pointDone(p));
        },
      })));
      await Promise.all(pending);
    } catch (err) {
      await Promise.all(pending);
      if (!(stop.signal.aborted || (err instanceof ServesimError && err.code === 'SERVESIM_CANCELLED'))) fail(err);
      break;
    }
    before += items.length * spec.seeds;
  }
  options.signal?.removeEventListener('abort', abort);
  return { batches, error };
}

/** Arrivals the instances of a point's cases simulate, one instance each, warm-up included (a rate for the progress bar). */
function expectedArrivals(problem: Problem, cases: readonly Scenario[]): number {
  const { traffic } = problem;
  return cases.reduce((s, c) => s + traffic.rate * c.rateScale * ((traffic.warmup + traffic.duration) / 1e6), 0);
}
