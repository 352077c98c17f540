/**
 * Runs work items (a configuration x seeds: one case of one grid point) as few engine
 * batches as their shapes allow: items of one shape (src/engine/shape.ts) share a batch, so a
 * sweep's grid points fill the GPU together and the CPU pool's threads stay busy across them.
 * The engine is decided per batch, by its size. The one place that decides which engine runs.
 * Work goes in the items' order whatever their shapes (on the pool slice by slice, on the GPU
 * window by window), so a sweep's points finish one after another as their last seeds do.
 */
import { batchInstances, type EngineBatch } from '../engine/batch.js';
import type { EngineConfig } from '../engine/compile.js';
import { shapeKey } from '../engine/shape.js';
import { ServesimError } from '../errors.js';
import { acquireGpu, probeGpu, type GpuContext } from '../gpu/adapter.js';
import { runGpuBatchWithFallback } from '../gpu/engine.js';
import { defaultPoolThreads, SimulationPool } from '../pool/pool.js';
import { decideAuto, loadCrossovers, type CrossoverTable } from './crossover.js';
import type { EngineChoice, EngineUsed } from './types.js';

let sharedPool: SimulationPool | undefined;
let sharedGpu: Promise<GpuContext> | undefined;
let crossovers: CrossoverTable | undefined;
let poolHere = false;

/**
 * Lets the pool, when it has one thread, run on this one (PoolOptions.here): for a command that
 * runs its work and exits, not a server. Before the pool's first use.
 */
export function poolOnThisThread(): void {
  poolHere = true;
}

/** One pool per process, started on first use and closed by `closeEngines`. */
export function pool(): SimulationPool {
  sharedPool ??= new SimulationPool(defaultPoolThreads(), { here: poolHere });
  return sharedPool;
}

/** One WebGPU device per process, acquired on first use of the GPU engine. */
function gpu(): Promise<GpuContext> {
  sharedGpu ??= acquireGpu();
  sharedGpu.catch(() => (sharedGpu = undefined));
  return sharedGpu;
}

export async function closeEngines(): Promise<void> {
  await sharedPool?.close();
  sharedPool = undefined;
  const device = sharedGpu;
  sharedGpu = undefined;
  (await device?.catch(() => undefined))?.destroy();
}

/** One configuration's instances `first .. first + seeds - 1` of base seed `seed` (first: 0 when absent). */
export interface WorkItem {
  readonly config: EngineConfig;
  readonly seed: number;
  readonly first?: number;
  readonly seeds: number;
}

/** What ran one batch: how large, on which engine, and why. */
export interface BatchUsed {
  readonly instances: number;
  /** Configurations (grid points x cases) in it. */
  readonly configs: number;
  readonly engine: EngineUsed;
  readonly adapter: string | null;
  /** Worker threads, when the CPU pool ran it. */
  readonly threads?: number;
  /** With `auto`: why this engine. */
  readonly choice?: string;
  /** Why some instances ran elsewhere than asked. */
  readonly note?: string;
  /** When the GPU ran it: seconds of its passes on the GPU (GpuPass.seconds), summed. */
  readonly gpuSeconds?: number;
}

export interface BatchRunOptions {
  readonly engine: EngineChoice;
  readonly signal?: AbortSignal;
  /** Instances finished so far, over every batch of the call. */
  readonly onProgress?: (instancesDone: number) => void;
  /** An item's records, as soon as they are all done. */
  readonly onItem?: (item: number, records: Uint32Array) => void;
  /** A batch has run, and what ran it. */
  readonly onBatch?: (used: BatchUsed) => void;
  /** The GPU's window sizes, kept across calls (a run's chunks); a fresh one when absent. */
  readonly gpuWindows?: GpuWindows;
}

/** The batch of these items, in this order: their runs, each of its own configuration. */
function batchOf(items: readonly WorkItem[], members: readonly number[]): EngineBatch {
  return {
    configs: members.map((i) => items[i]!.config),
    runs: members.map((i, k) => ({ config: k, seed: items[i]!.seed, first: items[i]!.first ?? 0, count: items[i]!.seeds })),
  };
}

/** Items grouped by shape, each group one batch, in the order their first items come. */
export function planBatches(items: readonly WorkItem[]): { readonly batch: EngineBatch; readonly items: readonly number[] }[] {
  const groups = new Map<string, number[]>();
  items.forEach((item, i) => {
    const key = shapeKey(item.config);
    const members = groups.get(key);
    if (members === undefined) groups.set(key, [i]);
    else members.push(i);
  });
  return [...groups.values()].map((members) => ({ items: members, batch: batchOf(items, members) }));
}

/** What `engine` runs a batch of this many instances on. */
async function decide(engine: EngineChoice, instances: number): Promise<{ engine: 'gpu' | 'pool'; why?: string }> {
  if (engine !== 'auto') return { engine: engine === 'gpu' ? 'gpu' : 'pool' };
  crossovers ??= loadCrossovers();
  return decideAuto(instances, sharedPool?.threads ?? defaultPoolThreads(), crossovers, () => probeGpu());
}

/** A batch of the plan and what runs it: a GPU device, or the pool (null). */
interface Assigned {
  readonly batch: EngineBatch;
  readonly items: readonly number[];
  readonly ctx: GpuContext | null;
  readonly choice?: string;
}

async function assign(batch: EngineBatch, items: readonly number[], options: BatchRunOptions): Promise<Assigned> {
  const decision = await decide(options.engine, batchInstances(batch));
  let why = decision.why;
  let ctx: GpuContext | null = null;
  if (decision.engine === 'gpu') {
    try {
      ctx = await gpu();
    } catch (err) {
      // `auto` never fails for want of a device it was not promised
      if (options.engine === 'gpu') throw err;
      why = `${why}; then the CPU pool, as opening the device failed: ${(err as Error).message}`;
    }
  }
  return { batch, items, ctx, ...(why === undefined ? {} : { choice: why }) };
}

/**
 * Passes items' records to `onItem` as they finish; `settle` passes the batches whose items
 * have all finished to `onBatch` (once what it reports is known), in the plan's order whatever
 * order they finish in, so that a run's list of batches is the same every time; `stop`, when
 * the run stops part way, those with any item finished too, so that the batches listed name
 * what ran every finished point.
 */
function batchTracker(batches: readonly Assigned[], options: BatchRunOptions, used: (batch: number) => BatchUsed) {
  const batchOfItem = new Map<number, number>();
  batches.forEach((b, k) => b.items.forEach((item) => batchOfItem.set(item, k)));
  const left = batches.map((b) => b.items.length);
  let reported = 0;
  const report = (ready: (k: number) => boolean): void => {
    for (; reported < batches.length && ready(reported); reported++) options.onBatch?.(used(reported));
  };
  return {
    batchOf: (item: number): number => batchOfItem.get(item)!,
    itemDone(item: number, records: Uint32Array): void {
      options.onItem?.(item, records);
      left[batchOfItem.get(item)!]! -= 1;
    },
    settle: (): void => report((k) => left[k] === 0),
    stop(): void {
      const started = batches.flatMap((b, k) => (k >= reported && left[k]! < b.items.length ? [k] : []));
      for (const k of started) options.onBatch?.(used(k));
      reported = batches.length;
    },
  };
}

/** A batch's size and what chose its engine, for its BatchUsed. */
function sizeOf(a: Assigned): Pick<BatchUsed, 'instances' | 'configs' | 'choice'> {
  return { instances: batchInstances(a.batch), configs: a.batch.configs.length, ...(a.choice === undefined ? {} : { choice: a.choice }) };
}

/** The items of these batches, in the order given (a sweep's: point by point). */
function itemsOf(batches: readonly Assigned[]): number[] {
  return batches.flatMap((b) => b.items).sort((a, b) => a - b);
}

/**
 * The pool's batches, run as one in the items' order: the threads take slices of any shape, so
 * a point's cases, of whatever shapes, finish together, and points finish one after another
 * rather than all with the last batch.
 */
async function runOnPool(items: readonly WorkItem[], batches: readonly Assigned[], options: BatchRunOptions, done: number): Promise<void> {
  const members = itemsOf(batches);
  const threads = pool().threads;
  const track = batchTracker(batches, options, (k) => ({ ...sizeOf(batches[k]!), engine: 'pool', adapter: null, threads }));
  try {
    await pool().runBatch(batchOf(items, members), {
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      onProgress: (n) => options.onProgress?.(done + n),
      onRun: (run, records) => {
        track.itemDone(members[run]!, records);
        track.settle();
      },
    });
  } finally {
    track.stop();
  }
}

/** Seconds a GPU window's passes aim at: a stop loses at most one window, and points finish window by window. */
const WINDOW_SECONDS = 10;
/** Instances of a GPU window at first: about where a GPU overtakes the pool (bench/results/crossover.json). */
const FIRST_WINDOW = 4_096;

/**
 * How many instances a GPU window holds: it starts at `first` and grows towards
 * {@link WINDOW_SECONDS} as the windows' passes are timed (at most four-fold a window). It
 * never shrinks below `first`: below the GPU's width a pass takes as long as its slowest
 * instance, so a smaller one would be no quicker, only emptier.
 */
export class GpuWindows {
  instances: number;
  private readonly first: number;

  constructor(first = FIRST_WINDOW) {
    this.first = first;
    this.instances = first;
  }

  /** A window of `instances` took `seconds` on the GPU. */
  timed(instances: number, seconds: number): void {
    const fit = seconds > 0 ? Math.floor((instances * WINDOW_SECONDS) / seconds) : Infinity;
    this.instances = Math.max(this.first, Math.min(4 * instances, fit));
  }
}

/**
 * The GPU's batches in windows of consecutive items (a sweep's: point by point), each window
 * one pass of each shape in it: points finish window by window, across shapes, not all with
 * the last batch; a stop loses at most the window running. Each batch is still listed once,
 * with the GPU seconds of all its passes.
 */
async function runOnGpu(ctx: GpuContext, items: readonly WorkItem[], batches: readonly Assigned[], options: BatchRunOptions, done: number): Promise<void> {
  const members = itemsOf(batches);
  const windows = options.gpuWindows ?? new GpuWindows();
  const seconds = batches.map(() => 0);
  const notes = batches.map(() => [] as string[]);
  const track = batchTracker(batches, options, (k) => ({
    ...sizeOf(batches[k]!),
    engine: 'gpu',
    adapter: ctx.adapterName,
    gpuSeconds: seconds[k]!,
    ...(notes[k]!.length === 0 ? {} : { note: notes[k]!.join('; ') }),
  }));
  let failed = false;
  try {
    for (let from = 0; from < members.length; ) {
      // once the GPU has failed, the rest goes to its fallback at once rather than window by window
      let to = from + 1;
      let size = items[members[from]!]!.seeds;
      while (to < members.length && (failed || size + items[members[to]!]!.seeds <= windows.instances)) size += items[members[to++]!]!.seeds;
      const window = members.slice(from, to);
      let windowSeconds = 0;
      for (let k = 0; k < batches.length; k++) {
        const mine = window.filter((item) => track.batchOf(item) === k);
        if (mine.length === 0) continue;
        const batch = batchOf(items, mine);
        const outcome = await runGpuBatchWithFallback(ctx, batch, {
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          onProgress: (n) => options.onProgress?.(done + n),
          onRun: (run, records) => track.itemDone(mine[run]!, records),
        });
        done += batchInstances(batch);
        const passSeconds = outcome.passes.reduce((sum, pass) => sum + pass.seconds, 0);
        seconds[k]! += passSeconds;
        windowSeconds += passSeconds;
        if (outcome.note !== undefined) notes[k]!.push(outcome.note);
        failed ||= outcome.cpuInstances > 0;
        track.settle();
      }
      if (!failed) windows.timed(size, windowSeconds);
      from = to;
    }
  } finally {
    track.stop();
  }
}

/**
 * Runs every item, batched by shape, and calls `onItem` as each item's records are complete
 * and `onBatch` as each batch has run (a call stopped part way lists those it had started).
 * The pool runs its batches as one and the GPU in windows, both in the items' order, so items
 * finish in about that order. Rejects with SERVESIM_CANCELLED when `signal` aborts.
 */
export async function runItems(items: readonly WorkItem[], options: BatchRunOptions): Promise<void> {
  const assigned: Assigned[] = [];
  for (const { batch, items: members } of planBatches(items)) {
    if (options.signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
    assigned.push(await assign(batch, members, options));
  }
  const onPool = assigned.filter((a) => a.ctx === null);
  const onGpu = assigned.filter((a) => a.ctx !== null);
  if (onPool.length > 0) await runOnPool(items, onPool, options, 0);
  // one device per process: every GPU batch has the same
  if (onGpu.length > 0) await runOnGpu(onGpu[0]!.ctx!, items, onGpu, options, onPool.reduce((n, a) => n + batchInstances(a.batch), 0));
}

/** "2 batches: 4,096 instances (16 configurations) on gpu; 1,024 (4) on pool" for a CLI's first lines. */
export function describeBatches(used: readonly BatchUsed[]): string {
  const parts = used.map((b, i) => `${b.instances.toLocaleString('en')}${i === 0 ? ' instances' : ''} (${b.configs}${i === 0 ? ` configuration${b.configs === 1 ? '' : 's'}` : ''}) on ${b.engine}`);
  return `${used.length} batch${used.length === 1 ? '' : 'es'}: ${parts.join('; ')}`;
}
