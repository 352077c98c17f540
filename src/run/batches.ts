/**
 * Runs work items (a configuration x seeds: one case of one grid point) as few engine
 * batches as their shapes allow: items of one shape (src/engine/shape.ts) share a batch, so a
 * sweep's grid points fill the GPU together and the CPU pool's threads stay busy across them.
 * The engine is decided per batch, by its size. The one place that decides which engine runs.
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

/** One pool per process, started on first use and closed by `closeEngines`. */
export function pool(): SimulationPool {
  sharedPool ??= new SimulationPool();
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
  /** An item's records, as soon as its batch has them all. */
  readonly onItem?: (item: number, records: Uint32Array) => void;
  /** A batch has run, and what ran it. */
  readonly onBatch?: (used: BatchUsed) => void;
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
  return [...groups.values()].map((members) => ({
    items: members,
    batch: {
      configs: members.map((i) => items[i]!.config),
      runs: members.map((i, k) => ({ config: k, seed: items[i]!.seed, first: items[i]!.first ?? 0, count: items[i]!.seeds })),
    },
  }));
}

/** What `engine` runs a batch of this many instances on. */
async function decide(engine: EngineChoice, instances: number): Promise<{ engine: 'gpu' | 'pool'; why?: string }> {
  if (engine !== 'auto') return { engine: engine === 'gpu' ? 'gpu' : 'pool' };
  crossovers ??= loadCrossovers();
  return decideAuto(instances, sharedPool?.threads ?? defaultPoolThreads(), crossovers, () => probeGpu());
}

/** Runs one batch; resolves with each run's records and what ran it. */
async function runOne(batch: EngineBatch, options: BatchRunOptions, done: number, onItem: (run: number, records: Uint32Array) => void): Promise<BatchUsed> {
  const instances = batchInstances(batch);
  const decision = await decide(options.engine, instances);
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
  const common = {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onProgress: (n: number) => options.onProgress?.(done + n),
    onRun: onItem,
  };
  const base = { instances, configs: batch.configs.length, ...(why === undefined ? {} : { choice: why }) };
  if (ctx !== null) {
    const outcome = await runGpuBatchWithFallback(ctx, batch, common);
    const gpuSeconds = outcome.passes.reduce((sum, pass) => sum + pass.seconds, 0);
    return { ...base, engine: 'gpu', adapter: ctx.adapterName, gpuSeconds, ...(outcome.note === undefined ? {} : { note: outcome.note }) };
  }
  await pool().runBatch(batch, common);
  return { ...base, engine: 'pool', adapter: null, threads: pool().threads };
}

/**
 * Runs every item, batched by shape, and calls `onItem` as each item's records are complete
 * and `onBatch` as each batch has run (a call cancelled part way has still run those before).
 * Rejects with SERVESIM_CANCELLED when `signal` aborts.
 */
export async function runItems(items: readonly WorkItem[], options: BatchRunOptions): Promise<void> {
  let done = 0;
  for (const { batch, items: members } of planBatches(items)) {
    if (options.signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
    options.onBatch?.(await runOne(batch, options, done, (run, records) => options.onItem?.(members[run]!, records)));
    done += batchInstances(batch);
  }
}

/** "2 batches: 4,096 instances (16 configurations) on gpu; 1,024 (4) on pool" for a CLI's first lines. */
export function describeBatches(used: readonly BatchUsed[]): string {
  const parts = used.map((b, i) => `${b.instances.toLocaleString('en')}${i === 0 ? ' instances' : ''} (${b.configs}${i === 0 ? ` configuration${b.configs === 1 ? '' : 's'}` : ''}) on ${b.engine}`);
  return `${used.length} batch${used.length === 1 ? '' : 'es'}: ${parts.join('; ')}`;
}
