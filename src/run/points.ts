/**
 * Runs grid points (a sweep's, a hint's round, a queue chunk's, or one problem's), each over its
 * cases and seeds: in chunks of about {@link CHUNK_INSTANCES} instances, each chunk's
 * (point, case) configurations one engine batch per shape (src/run/batches.ts).
 */
import { compile, type EngineConfig } from '../engine/compile.js';
import { ServesimError } from '../errors.js';
import type { Problem, Scenario } from '../model/problem.js';
import { CaseSeeds, configurationCost } from '../model/summarize.js';
import type { CaseSummary } from '../model/summary.js';
import { selectCases } from '../problem/parse.js';
import { withWarmup } from '../problem/scenarios.js';
import { pilotConfig, pilotWarmup, PILOT_SEEDS } from './warmup.js';
import { GpuWindows, runItems, type BatchUsed, type WorkItem } from './batches.js';
import { decodeResult } from '../engine/result.js';
import type { InstanceResult } from '../model/result.js';
import type { EngineChoice } from './types.js';
import { seedLooks } from '../model/verdict.js';
import { Slice } from '../slices.js';

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
  /** Seeds every configuration (grid point x case) runs: the first look at its verdict. */
  readonly seeds: number;
  /**
   * The most seeds a configuration may take: above `seeds`, undecided configurations get more
   * seeds at the looks of `seedLooks` until decided (src/model/verdict.ts); absent: `seeds`.
   */
  readonly maxSeeds?: number;
  readonly baseSeed: number;
  readonly engine: EngineChoice;
  /** The most instances one batch holds (a chunk's first looks, a piece of a later look); default CHUNK_INSTANCES. */
  readonly batchInstances?: number;
}

export interface PointsRunOptions<P> {
  readonly signal?: AbortSignal;
  /** A point whose every case ran, with its rows (one per case, in case order). */
  readonly onPoint?: (point: P, rows: readonly CaseSummary[]) => void | Promise<void>;
  /**
   * Instances finished so far, arrivals simulated (an estimate while a batch runs), and the
   * instances planned so far: the first look's for every point, and each later look's once
   * it is decided which configurations it takes.
   */
  readonly onProgress?: (instancesDone: number, arrivalsDone: number, instancesPlanned: number) => void;
  /** A batch has run (each is in the outcome's `batches` too). */
  readonly onBatch?: (used: BatchUsed) => void;
  /**
   * Whether an undecided configuration of `point` needs no more seeds (a hint's margin,
   * src/hint/search.ts): its row is then final at this look.
   */
  readonly enough?: (row: CaseSummary, confidence: number, point: P) => boolean;
  /** The cases a point runs, of the spec's (a capacity probe leaves out those it has shown passing under more load); default all. */
  readonly casesOf?: (point: P) => readonly string[];
  /**
   * A configuration's seeds as they come, decoded, before its verdict looks at them (per-seed
   * records, src/run/seed-records.ts); without it no seed's record outlives its summing.
   */
  readonly onSeeds?: (seeds: ConfigurationSeeds<P>) => void;
}

/** Instances `first ..` of case `caseIndex` (of the point's cases, in their order) of a grid point. */
export interface ConfigurationSeeds<P> {
  readonly point: P;
  readonly problem: Problem;
  /** The case as it ran (its warm-up chosen), and the base seed its instances are numbered under. */
  readonly config: EngineConfig;
  readonly baseSeed: number;
  readonly caseIndex: number;
  readonly caseName: string;
  readonly first: number;
  readonly results: readonly InstanceResult[];
}

export interface PointsOutcome {
  /** The batches the points ran as, those of a call stopped part way included. */
  readonly batches: readonly BatchUsed[];
  /** Why the points stopped early (a point that did not parse, an engine, onPoint), cancellation aside. */
  readonly error: Error | null;
}

/** One configuration of a chunk: its seeds so far, and its row once its verdict is final. */
interface Configuration {
  readonly p: number;
  readonly k: number;
  readonly config: EngineConfig;
  readonly seeds: CaseSeeds;
  row: CaseSummary | undefined;
}

/**
 * Runs grid points, in chunks of about {@link CHUNK_INSTANCES} instances (at the first
 * look's seeds), each chunk's (point, case) configurations as one batch per shape; then, while
 * some are undecided and looks remain, those configurations' further seeds as one batch per
 * shape. Calls `onPoint` as each point's last case is final. A point whose problem does not
 * parse stops the run after the points before it ran. Cancelling (or `onPoint` failing) stops
 * the engines; points that finish after that are not taken.
 */
export async function runPoints<P>(points: readonly P[], problemOf: (point: P) => Problem, spec: PointsSpec, options: PointsRunOptions<P> = {}): Promise<PointsOutcome> {
  const looks = seedLooks(spec.seeds, spec.maxSeeds ?? spec.seeds);
  const perPoint = spec.caseNames.length * spec.seeds;
  const batchInstances = spec.batchInstances ?? CHUNK_INSTANCES;
  const pointsPerChunk = Math.max(1, Math.floor(batchInstances / perPoint));
  const batches: BatchUsed[] = [];
  let error: Error | null = null;
  // arrivals simulated by earlier chunks (counted), and so far (estimated while a chunk runs)
  let arrivalsBefore = 0;
  let arrivalsDone = 0;
  let before = 0;
  let instancesDone = 0;
  let planned = points.length * perPoint;
  // the GPU's windows grow over the first chunk and keep their size for the rest
  const gpuWindows = new GpuWindows();
  const stop = new AbortController();
  const abort = (): void => stop.abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  if (options.signal?.aborted) stop.abort();
  const fail = (err: unknown): void => {
    error ??= err instanceof Error ? err : new Error(String(err));
    stop.abort();
  };
  const progress = (instances: number, arrivals: number): void => {
    instancesDone = instances;
    arrivalsDone = arrivals;
    options.onProgress?.(instancesDone, arrivalsDone, planned);
  };

  for (let from = 0; from < points.length && !stop.signal.aborted; from += pointsPerChunk) {
    const chunk: { point: P; problem: Problem; cases: Scenario[] }[] = [];
    const configs: Configuration[] = [];
    // a chunk may hold thousands of points, each built and compiled here: a server answers others meanwhile
    const slice = new Slice();
    for (const point of points.slice(from, from + pointsPerChunk)) {
      await slice.pause();
      try {
        const problem = problemOf(point);
        const cases = selectCases(problem, options.casesOf?.(point) ?? spec.caseNames);
        chunk.push({ point, problem, cases });
      } catch (err) {
        fail(err);
        break;
      }
    }
    try {
      const warmups = await autoWarmups(chunk, spec, stop.signal, gpuWindows, (used) => {
        batches.push(used);
        options.onBatch?.(used);
      });
      for (const [p, { problem, cases }] of chunk.entries()) {
        await slice.pause();
        cases.forEach((scenario, k) => {
          // with traffic.warmup: auto, the case's own warm-up moves its windows
          const run = problem.traffic.warmupAuto ? withWarmup(problem, warmups[p]![k]!) : problem;
          const config = compile(run, run.cases.find((c) => c.name === scenario.name)!);
          configs.push({ p, k, config, seeds: new CaseSeeds(problem.goals), row: undefined });
        });
      }
    } catch (err) {
      if (!(stop.signal.aborted || (err instanceof ServesimError && err.code === 'SERVESIM_CANCELLED'))) fail(err);
      break;
    }
    const rows = chunk.map((c) => new Array<CaseSummary>(c.cases.length));
    const left = chunk.map((c) => c.cases.length);
    const perInstance = configs.length === 0 ? 0 : chunk.reduce((s, c) => s + expectedArrivals(c.problem, c.cases), 0) / configs.length;
    const pending: Promise<void>[] = [];
    const pointDone = async (p: number): Promise<void> => {
      if (stop.signal.aborted) return;
      try {
        // called before any await: an onPoint that throws stops the engines before another point is taken
        const taken = options.onPoint?.(chunk[p]!.point, rows[p]!);
        if (taken !== undefined) await taken;
      } catch (err) {
        fail(err);
      }
      progress(instancesDone, arrivalsDone);
    };
    // a configuration's verdict after a look: final when decided, enough or at the last look
    const look = (c: Configuration, last: boolean): void => {
      const { problem, cases } = chunk[c.p]!;
      const timeout = problem.app?.timeout ?? problem.server?.timeout ?? 0;
      const row = c.seeds.summary(cases[c.k]!.name, problem.confidence, timeout, configurationCost(problem), looks.length);
      if (row.verdict === 'UNDECIDED' && !last && options.enough?.(row, problem.confidence, chunk[c.p]!.point) !== true) return;
      c.row = row;
      rows[c.p]![c.k] = row;
      left[c.p]! -= 1;
      if (left[c.p] === 0) pending.push(pointDone(c.p));
    };
    // the instances run before this chunk: progress estimates the chunk's arrivals from the rest
    const chunkStart = before;
    for (let l = 0; l < looks.length && !stop.signal.aborted; l++) {
      const open = configs.filter((c) => c.row === undefined);
      if (open.length === 0) break;
      const first = l === 0 ? 0 : looks[l - 1]!;
      const count = looks[l]! - first;
      if (l > 0) planned += open.length * count;
      // a later look's seeds go in pieces of a chunk's size, as its first look did: an engine
      // holds a batch's records at once
      const perPiece = Math.max(1, Math.floor(batchInstances / count));
      for (let from = 0; from < open.length && !stop.signal.aborted; from += perPiece) {
        const piece = open.slice(from, from + perPiece);
        const items: WorkItem[] = piece.map((c) => ({ config: c.config, seed: spec.baseSeed, first, seeds: count }));
        try {
          await runItems(items, {
            engine: spec.engine,
            signal: stop.signal,
            gpuWindows,
            onBatch: (used) => {
              batches.push(used);
              options.onBatch?.(used);
            },
            onProgress: (done) => progress(before + done, arrivalsBefore + (before - chunkStart + done) * perInstance),
            onItem: (item, r) => {
              if (stop.signal.aborted) return;
              const c = piece[item]!;
              const results = decodeRecords(c.config, r);
              for (const result of results) c.seeds.add(result);
              const { point, problem, cases } = chunk[c.p]!;
              options.onSeeds?.({ point, problem, config: c.config, baseSeed: spec.baseSeed, caseIndex: c.k, caseName: cases[c.k]!.name, first, results });
              look(c, l === looks.length - 1);
            },
          });
          await Promise.all(pending);
        } catch (err) {
          await Promise.all(pending);
          if (!(stop.signal.aborted || (err instanceof ServesimError && err.code === 'SERVESIM_CANCELLED'))) fail(err);
          break;
        }
        pending.length = 0;
        before += items.length * count;
      }
    }
    arrivalsBefore += rows.reduce((sum, pointRows) => sum + pointRows.reduce((s, r) => s + (r?.requests ?? 0), 0), 0);
  }
  options.signal?.removeEventListener('abort', abort);
  return { batches, error };
}

/**
 * Each case's warm-up, by point (traffic.warmup for a problem that gives it): the pilots of the
 * cases of problems with `traffic.warmup: auto` run first, as batches of their own (src/run/warmup.ts).
 */
async function autoWarmups(
  chunk: readonly { readonly problem: Problem; readonly cases: readonly Scenario[] }[],
  spec: PointsSpec,
  signal: AbortSignal,
  gpuWindows: GpuWindows,
  onBatch: (used: BatchUsed) => void,
): Promise<number[][]> {
  const warmups = chunk.map(({ problem, cases }) => cases.map(() => problem.traffic.warmup));
  const pilots = chunk.flatMap(({ problem, cases }, p) => (problem.traffic.warmupAuto ? cases.map((scenario, k) => ({ p, k, config: pilotConfig(problem, scenario) })) : []));
  if (pilots.length === 0) return warmups;
  await runItems(pilots.map(({ config }) => ({ config, seed: spec.baseSeed, seeds: PILOT_SEEDS })), {
    engine: spec.engine,
    signal,
    gpuWindows,
    onBatch,
    onItem: (i, records) => {
      const { p, k, config } = pilots[i]!;
      warmups[p]![k] = pilotWarmup(chunk[p]!.problem, decodeRecords(config, records));
    },
  });
  return warmups;
}

/** Arrivals the instances of a point's cases simulate, one instance each, warm-up included (a rate for the progress bar). */
function expectedArrivals(problem: Problem, cases: readonly Scenario[]): number {
  const { traffic } = problem;
  return cases.reduce((s, c) => s + traffic.rate * c.rateScale * ((traffic.warmup + traffic.duration) / 1e6), 0);
}
