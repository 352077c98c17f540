/**
 * The WGSL engine: thousands of seeded instances in lockstep, one invocation each, giving the
 * reference engine's result records bit for bit (docs/model.md section 7).
 *
 * Instances run in batches sized by the buffer limits. A batch is initialised, then advanced
 * through time windows, each its own submit, so no single dispatch runs long enough for a
 * driver to declare the device hung; after each window the count of finished instances comes
 * back (progress, and an early exit), and at the end only the result records are read back.
 *
 * Mesa's llvmpipe (no GPU) ends every loop once an invocation has run 65,535 loop iterations,
 * which would corrupt instances silently. On such an adapter (a probe finds out) each dispatch
 * handles at most a budget of events per instance and reports whether it hit the cap; one that
 * did is undone from a copy of the state and redone with half the budget.
 */
import type { EngineBatch } from '../engine/batch.js';
import type { EngineConfig } from '../engine/compile.js';
import { END_OF_TIME, horizonOf, runReference } from '../engine/reference.js';
import { ServesimError } from '../errors.js';
import { captureGpuErrors, type GpuContext, type GpuLimits } from './adapter.js';
import {
  checkBufferSize,
  createStorageBuffer,
  createStorageBufferOfSize,
  createUniformBuffer,
  formatCount,
  readStorageBuffer,
  writeBuffer,
} from './buffers.js';
import { planDispatch, type DispatchPlan } from './dispatch.js';
import { BINDING, COUNTER, COUNTER_WORDS, ENTRY_POINT, RUN, RUN_WORDS, kernelSource, shapeConstants } from './kernel-source.js';

/** Time windows a run is advanced in unless told otherwise. */
export const DEFAULT_WINDOWS = 16;
/** Invocations per workgroup (the kernels' `WG` override) on a GPU. */
const WORKGROUP_SIZE = 64;
/**
 * On an adapter that caps loops (llvmpipe): one CPU vector (4 lanes, adapter.ts), so that a few
 * hundred instances still fill every CPU thread (llvmpipe runs a workgroup on one thread).
 */
const LOOP_CAPPED_WORKGROUP_SIZE = 4;
/** Events per instance and dispatch where loops are not capped: no limit. */
const NO_BUDGET = 0xffffffff;
/**
 * The first budget where they are. A dispatch that hits the cap is undone and the budget
 * halves; one that does not grows it by an eighth.
 */
const FIRST_BUDGET = 64;
/** Loop iterations after which Mesa llvmpipe (LP_MAX_TGSI_LOOP_ITERATIONS) ends every loop. */
const LLVMPIPE_LOOP_CAP = 65_535;
const LOOP_PROBE_ITERATIONS = 100_000;
const LOOP_PROBE = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> words: array<u32>;
@compute @workgroup_size(1)
fn main() {
  var n = 0u;
  for (var i = 0u; i < words[0]; i++) { n += 1u; }
  words[1] = n;
}
`;
/** Instances the CPU fallback runs between progress reports. */
const CPU_SLICE = 16;

// The spec's flag values, written out so this module works before webgpu's globals exist.
const COMPUTE_STAGE = 0x4;
const USAGE_MAP_READ = 0x0001;
const USAGE_COPY_DST = 0x0008;
const MAP_MODE_READ = 0x0001;

export interface GpuRunOptions {
  /** Time windows to advance in, each its own submit; default {@link DEFAULT_WINDOWS}. */
  readonly windows?: number;
  readonly signal?: AbortSignal;
  /** Called as instances finish (after each window), with the number finished so far. */
  readonly onProgress?: (done: number) => void;
  /** Most instances per batch; default as many as the buffer limits allow. */
  readonly maxBatch?: number;
  /**
   * Invocations (instances) per workgroup; default 64 on a GPU, one CPU vector (4) on
   * llvmpipe. Records do not depend on it (`npm run bench:lanes` measures its speed).
   */
  readonly workgroupSize?: number;
  /**
   * How a batch's state records share the state buffer: `records`, one after another (the
   * default), or `interleaved` word by word (docs/kernel-layout.md), meant for GPUs, where
   * lanes reading one field would share a memory transaction; `npm run bench:lanes` measures
   * both. Records do not depend on it.
   */
  readonly stateLayout?: StateLayout;
}

/** See {@link GpuRunOptions.stateLayout}. */
export type StateLayout = 'records' | 'interleaved';

/** What {@link runGpuWithFallback} ran where. */
export interface GpuRunOutcome {
  /** The result records, as {@link runGpu} returns them. */
  readonly records: Uint32Array;
  /** Instances whose records came from the GPU: the first ones, in order. */
  readonly gpuInstances: number;
  /** Instances the CPU reference engine ran after the GPU failed: the rest. */
  readonly cpuInstances: number;
  readonly adapter: string;
  /** Why some instances ran on the CPU; absent when none did. */
  readonly note?: string;
}

/** What a device compiles once: the module, its layout, and how the adapter runs loops. */
interface DeviceKernel {
  /** Whether the adapter ends loops early (Mesa llvmpipe): then dispatches get an event budget. */
  readonly loopCapped: boolean;
  readonly workgroupSize: number;
  readonly layout: GPUBindGroupLayout;
  readonly pipelineLayout: GPUPipelineLayout;
  readonly module: GPUShaderModule;
  /** The entry points compiled for each configuration shape, by shapeKey. */
  readonly shapes: Map<string, Promise<Pipelines>>;
}

interface Pipelines {
  readonly init: GPUComputePipeline;
  readonly advance: GPUComputePipeline;
  readonly gather: GPUComputePipeline;
}

type Kernel = Omit<DeviceKernel, 'shapes' | 'module' | 'pipelineLayout'> & Pipelines;

// Once per device, and once per shape on it: llvmpipe compiles the whole engine for minutes,
// one shape's handlers in seconds (and Mesa keeps each in its disk cache).
const kernels = new WeakMap<GPUDevice, Promise<DeviceKernel>>();

/** Caches `make()` under `key`, dropping it if it fails so that a later call tries again. */
function cachedPromise<K, V>(cache: { get(k: K): Promise<V> | undefined; set(k: K, v: Promise<V>): unknown; delete(k: K): unknown }, key: K, make: () => Promise<V>): Promise<V> {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    value.catch(() => cache.delete(key));
    cache.set(key, value);
  }
  return value;
}

/** The pipelines for `config`'s shape at the options' workgroup size and state layout, or the defaults. */
async function kernelFor(ctx: GpuContext, config: EngineConfig, options: GpuRunOptions): Promise<Kernel> {
  const { device } = ctx;
  const what = 'compiling the WGSL engine';
  const kernel = await cachedPromise(kernels, device, () => captureGpuErrors(device, what, () => buildDeviceKernel(device)));
  const workgroupSize = options.workgroupSize ?? kernel.workgroupSize;
  planDispatch(1, workgroupSize, ctx.limits); // a size past the limits fails here, naming the limit, not in the compiler
  const stateLayout = options.stateLayout ?? 'records';
  const constants = { ...shapeConstants(config), WG: workgroupSize, INTERLEAVED: stateLayout === 'interleaved' ? 1 : 0 };
  const key = JSON.stringify(constants);
  const pipelines = await cachedPromise(kernel.shapes, key, () => captureGpuErrors(device, what, () => buildPipelines(device, kernel, constants)));
  return { loopCapped: kernel.loopCapped, workgroupSize, layout: kernel.layout, ...pipelines };
}

async function buildDeviceKernel(device: GPUDevice): Promise<DeviceKernel> {
  const entry = (type: GPUBufferBindingType, binding: number): GPUBindGroupLayoutEntry => ({
    binding,
    visibility: COMPUTE_STAGE,
    buffer: { type },
  });
  const layout = device.createBindGroupLayout({
    label: 'servesim engine',
    entries: [
      entry('read-only-storage', BINDING.PARAMS),
      entry('read-only-storage', BINDING.TABLES),
      entry('storage', BINDING.STATE),
      entry('uniform', BINDING.RUN),
      entry('storage', BINDING.COUNTERS),
      entry('storage', BINDING.RESULTS),
    ],
  });
  const pipelineLayout = device.createPipelineLayout({ label: 'servesim engine', bindGroupLayouts: [layout] });
  const module = device.createShaderModule({ label: 'servesim engine', code: kernelSource() });
  const loopCapped = await capsLoops(device);
  const workgroupSize = loopCapped ? LOOP_CAPPED_WORKGROUP_SIZE : WORKGROUP_SIZE;
  return { loopCapped, workgroupSize, layout, pipelineLayout, module, shapes: new Map() };
}

async function buildPipelines(device: GPUDevice, kernel: DeviceKernel, constants: Record<string, number>): Promise<Pipelines> {
  const pipeline = (entryPoint: string): Promise<GPUComputePipeline> =>
    device.createComputePipelineAsync({
      label: entryPoint,
      layout: kernel.pipelineLayout,
      compute: { module: kernel.module, entryPoint, constants },
    });
  const [init, advance, gather] = await Promise.all([
    pipeline(ENTRY_POINT.init),
    pipeline(ENTRY_POINT.advance),
    pipeline(ENTRY_POINT.gather),
  ]);
  return { init, advance, gather };
}

/** Runs a loop past llvmpipe's cap and says whether it was cut short. */
async function capsLoops(device: GPUDevice): Promise<boolean> {
  const words = createStorageBuffer(device, new Uint32Array([LOOP_PROBE_ITERATIONS, 0]), { label: 'loop cap probe' });
  try {
    const pipeline = await device.createComputePipelineAsync({
      label: 'loop cap probe',
      layout: 'auto',
      compute: { module: device.createShaderModule({ label: 'loop cap probe', code: LOOP_PROBE }), entryPoint: 'main' },
    });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: words } }] }));
    pass.dispatchWorkgroups(1);
    pass.end();
    device.queue.submit([encoder.finish()]);
    return (await readStorageBuffer(device, words))[1] !== LOOP_PROBE_ITERATIONS;
  } finally {
    words.destroy();
  }
}

/**
 * Instances whose state fits one batch on these limits.
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT, naming the limit, when not even one fits.
 */
export function batchCapacity(
  config: EngineConfig,
  limits: Pick<GpuLimits, 'maxStorageBufferBindingSize' | 'maxBufferSize' | 'maxUniformBufferBindingSize'>,
): number {
  const bytes = config.stateWords * 4;
  checkBufferSize(bytes, limits, `the state of one instance (case ${config.scenario})`);
  return Math.floor(Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize) / bytes);
}

function lostError(ctx: GpuContext, info: GPUDeviceLostInfo, what: string): ServesimError {
  return new ServesimError('SERVESIM_GPU_ERROR', `${what}: GPU device lost on ${ctx.adapterName} (${info.reason}): ${info.message}`);
}

// Unlike ctx.throwIfFailed, a device destroyed under a run fails it: its results are gone.
function checkDevice(ctx: GpuContext, what: string): void {
  if (ctx.lostInfo !== null) throw lostError(ctx, ctx.lostInfo, what);
  ctx.throwIfFailed(what);
}

function asGpuError(ctx: GpuContext, err: unknown, what: string): ServesimError {
  if (err instanceof ServesimError) return err;
  if (ctx.lostInfo !== null) return lostError(ctx, ctx.lostInfo, what);
  return new ServesimError('SERVESIM_GPU_ERROR', `${what}: ${err instanceof Error ? err.message : String(err)} on ${ctx.adapterName}`);
}

/** Awaits GPU work, or fails as soon as the device is lost (a lost device may never answer). */
async function whileAlive<T>(ctx: GpuContext, work: Promise<T>, what: string): Promise<T> {
  const lost = ctx.lost.then((info) => ({ lost: info }));
  let winner: { value: T } | { lost: GPUDeviceLostInfo };
  try {
    winner = await Promise.race([work.then((value) => ({ value })), lost]);
  } catch (err) {
    throw asGpuError(ctx, err, what);
  }
  if ('lost' in winner) throw lostError(ctx, winner.lost, what);
  return winner.value;
}

function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
}

/** The end of window w of `windows` (1-based), as runReference advances them. */
function windowEnd(config: EngineConfig, w: number, windows: number): number {
  return w === windows ? END_OF_TIME : Math.floor((horizonOf(config) * w) / windows);
}

function checkCount(name: string, n: number, min: number): void {
  if (!Number.isSafeInteger(n) || n < min) throw new RangeError(`runGpu: ${name} ${n} is not an integer >= ${min}`);
}

/** Reports only increases: the CPU fallback restarts instances the GPU had reported. */
function progressReporter(onProgress: ((done: number) => void) | undefined): (done: number) => void {
  let reported = 0;
  return (done) => {
    if (done <= reported) return;
    reported = done;
    onProgress?.(done);
  };
}

/**
 * Runs the instances on the GPU, writing each batch's records into `out` as it completes;
 * `finished.gpu` counts the instances written. Throws SERVESIM_GPU_ERROR on any GPU failure.
 */
async function runBatches(
  ctx: GpuContext,
  config: EngineConfig,
  seed: number,
  first: number,
  count: number,
  options: GpuRunOptions,
  report: (done: number) => void,
  out: Uint32Array,
  finished: { gpu: number },
): Promise<void> {
  const windows = options.windows ?? DEFAULT_WINDOWS;
  checkCount('windows', windows, 1);
  const capacity = Math.min(batchCapacity(config, ctx.limits), options.maxBatch ?? Infinity);
  checkCount('maxBatch', capacity, 1);
  if (options.workgroupSize !== undefined) checkCount('workgroupSize', options.workgroupSize, 1);
  const batch = Math.min(count, capacity);
  throwIfCancelled(options.signal);
  if (count === 0) return;
  checkDevice(ctx, 'before the WGSL engine');
  const kernel = await whileAlive(ctx, kernelFor(ctx, config, options), 'compiling the WGSL engine');

  const { device } = ctx;
  const stateBytes = batch * config.stateWords * 4;
  const buffers: GPUBuffer[] = [];
  const keep = (b: GPUBuffer): GPUBuffer => {
    buffers.push(b);
    return b;
  };
  try {
    const params = keep(createStorageBuffer(device, config.params, { label: 'params', what: 'the parameter block' }));
    const tables = keep(createStorageBuffer(device, config.tables, { label: 'tables', what: 'the distribution tables' }));
    const stateWhat = `the state of ${formatCount(batch)} instances`;
    const state = keep(createStorageBufferOfSize(device, stateBytes, { label: 'state', what: stateWhat }));
    // where loops are capped, each advance may be undone: the state as it was before it
    const backup = kernel.loopCapped ? keep(createStorageBufferOfSize(device, stateBytes, { label: 'state backup', what: stateWhat })) : null;
    const results = keep(createStorageBufferOfSize(device, batch * config.resultWords * 4, { label: 'results', what: `the results of ${formatCount(batch)} instances` }));
    const counters = keep(createStorageBufferOfSize(device, COUNTER_WORDS * 4, { label: 'counters' }));
    const countersStaging = keep(device.createBuffer({ label: 'counters readback', size: COUNTER_WORDS * 4, usage: USAGE_MAP_READ | USAGE_COPY_DST }));
    const runWords = new Uint32Array(RUN_WORDS);
    const run = keep(createUniformBuffer(device, runWords, { label: 'run' }));
    const bindGroup = device.createBindGroup({
      label: 'servesim engine',
      layout: kernel.layout,
      entries: [
        { binding: BINDING.PARAMS, resource: { buffer: params } },
        { binding: BINDING.TABLES, resource: { buffer: tables } },
        { binding: BINDING.STATE, resource: { buffer: state } },
        { binding: BINDING.RUN, resource: { buffer: run } },
        { binding: BINDING.COUNTERS, resource: { buffer: counters } },
        { binding: BINDING.RESULTS, resource: { buffer: results } },
      ],
    });
    const dispatch = (encoder: GPUCommandEncoder, pipeline: GPUComputePipeline, plan: DispatchPlan): void => {
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(plan.x, plan.y);
      pass.end();
    };
    // Clears the counters, runs the pipeline, and reads the counters back.
    const counted = async (encoder: GPUCommandEncoder, pipeline: GPUComputePipeline, plan: DispatchPlan, what: string): Promise<Uint32Array> => {
      encoder.clearBuffer(counters);
      dispatch(encoder, pipeline, plan);
      encoder.copyBufferToBuffer(counters, 0, countersStaging, 0, COUNTER_WORDS * 4);
      device.queue.submit([encoder.finish()]);
      await whileAlive(ctx, countersStaging.mapAsync(MAP_MODE_READ), what);
      const words = new Uint32Array(countersStaging.getMappedRange().slice(0));
      countersStaging.unmap();
      checkDevice(ctx, what);
      return words;
    };
    const loopCapError = (what: string): ServesimError =>
      new ServesimError(
        'SERVESIM_GPU_LIMIT',
        `${what}: one instance of case ${config.scenario} needs more loop iterations than ${ctx.adapterName} runs in one invocation (Mesa llvmpipe stops every loop after ${formatCount(LLVMPIPE_LOOP_CAP)})`,
      );

    let budget = kernel.loopCapped ? FIRST_BUDGET : NO_BUDGET;
    runWords[RUN.SEED] = seed;
    runWords[RUN.TWO] = 2;
    for (let offset = 0; offset < count; offset += batch) {
      const n = Math.min(batch, count - offset);
      const what = `instances ${formatCount(first + offset)} to ${formatCount(first + offset + n - 1)}`;
      const plan = planDispatch(n, kernel.workgroupSize, ctx.limits);
      const usedBytes = n * config.stateWords * 4;
      runWords[RUN.COUNT] = n;
      runWords[RUN.FIRST] = first + offset;
      writeBuffer(device, run, runWords);
      const init = device.createCommandEncoder();
      init.clearBuffer(state, 0, usedBytes);
      if ((await counted(init, kernel.init, plan, `initialising ${what}`))[COUNTER.CAPPED]! > 0) throw loopCapError(`initialising ${what}`);
      let done = 0;
      for (let w = 1; w <= windows && done < n; w++) {
        const step = `${what}, window ${w} of ${windows}`;
        runWords[RUN.UNTIL] = windowEnd(config, w, windows);
        for (;;) {
          throwIfCancelled(options.signal);
          runWords[RUN.BUDGET] = budget;
          writeBuffer(device, run, runWords);
          const advance = device.createCommandEncoder();
          if (backup !== null) advance.copyBufferToBuffer(state, 0, backup, 0, usedBytes);
          const c = await counted(advance, kernel.advance, plan, step);
          if (c[COUNTER.CAPPED]! > 0) {
            if (backup === null || budget === 1) throw loopCapError(step);
            const undo = device.createCommandEncoder();
            undo.copyBufferToBuffer(backup, 0, state, 0, usedBytes);
            device.queue.submit([undo.finish()]);
            budget = Math.max(1, budget >>> 1);
            continue;
          }
          done = c[COUNTER.DONE]!;
          report(offset + done);
          if (c[COUNTER.PENDING] === 0) break;
          budget = Math.min(NO_BUDGET, budget + Math.max(1, budget >>> 3));
        }
      }
      const gather = device.createCommandEncoder();
      dispatch(gather, kernel.gather, plan);
      device.queue.submit([gather.finish()]);
      const words = await whileAlive(
        ctx,
        readStorageBuffer(device, results, { byteLength: n * config.resultWords * 4 }),
        `reading back ${what}`,
      );
      checkDevice(ctx, `reading back ${what}`);
      out.set(words, offset * config.resultWords);
      finished.gpu = offset + n;
    }
  } catch (err) {
    throw asGpuError(ctx, err, 'the WGSL engine');
  } finally {
    for (const b of buffers) b.destroy();
  }
}

/**
 * Simulates instances `first .. first + count - 1` of base seed `seed` on the GPU and returns
 * their result records, concatenated (config.resultWords each): exactly what
 * `runReference(config, seed, first, count)` returns.
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT when one instance's state exceeds the buffer
 *   limits; SERVESIM_GPU_ERROR when the device is lost or reports an error;
 *   SERVESIM_CANCELLED when `signal` aborts.
 */
export async function runGpu(
  ctx: GpuContext,
  config: EngineConfig,
  seed: number,
  first: number,
  count: number,
  options: GpuRunOptions = {},
): Promise<Uint32Array> {
  checkCount('count', count, 0);
  const out = new Uint32Array(count * config.resultWords);
  await runBatches(ctx, config, seed, first, count, options, progressReporter(options.onProgress), out, { gpu: 0 });
  return out;
}

/**
 * {@link runGpu}, except that when the GPU fails (device lost, an uncaptured error, a pipeline
 * that does not compile, a configuration past the adapter's limits) the instances it had not
 * finished run on the CPU reference engine instead; the outcome says how many ran where, and
 * why.
 */
export async function runGpuWithFallback(
  ctx: GpuContext,
  config: EngineConfig,
  seed: number,
  first: number,
  count: number,
  options: GpuRunOptions = {},
): Promise<GpuRunOutcome> {
  checkCount('count', count, 0);
  const out = new Uint32Array(count * config.resultWords);
  const report = progressReporter(options.onProgress);
  const finished = { gpu: 0 };
  try {
    await runBatches(ctx, config, seed, first, count, options, report, out, finished);
    return { records: out, gpuInstances: count, cpuInstances: 0, adapter: ctx.adapterName };
  } catch (err) {
    if (!(err instanceof ServesimError) || (err.code !== 'SERVESIM_GPU_ERROR' && err.code !== 'SERVESIM_GPU_LIMIT')) throw err;
    const gpu = finished.gpu;
    for (let i = gpu; i < count; i += CPU_SLICE) {
      throwIfCancelled(options.signal);
      const n = Math.min(CPU_SLICE, count - i);
      out.set(runReference(config, seed, first + i, n), i * config.resultWords);
      report(i + n);
      // lets an abort (or a server's other requests) in between slices
      await new Promise((resolve) => setImmediate(resolve));
    }
    const note = `${err.message}; ${formatCount(count - gpu)} of ${formatCount(count)} instances ran on the CPU reference engine instead`;
    return { records: out, gpuInstances: gpu, cpuInstances: count - gpu, adapter: ctx.adapterName, note };
  }
}

/** What {@link runGpuBatchWithFallback} ran: each run's records, and why some ran on the CPU. */
export interface GpuBatchOutcome {
  readonly records: Uint32Array[];
  readonly adapter: string;
  readonly note?: string;
}

/**
 * A batch on the GPU, each run's records as {@link runGpuWithFallback} gives them. Runs go to
 * the device one after another; `onRun` is called as each finishes.
 */
export async function runGpuBatchWithFallback(
  ctx: GpuContext,
  batch: EngineBatch,
  options: GpuRunOptions & { readonly onRun?: (run: number, records: Uint32Array) => void } = {},
): Promise<GpuBatchOutcome> {
  const records: Uint32Array[] = [];
  const notes: string[] = [];
  let before = 0;
  for (const [index, r] of batch.runs.entries()) {
    const outcome = await runGpuWithFallback(ctx, batch.configs[r.config]!, r.seed, r.first, r.count, {
      ...options,
      onProgress: (done) => options.onProgress?.(before + done),
    });
    if (outcome.note !== undefined) notes.push(outcome.note);
    records.push(outcome.records);
    before += r.count;
    options.onRun?.(index, outcome.records);
  }
  return { records, adapter: ctx.adapterName, ...(notes.length === 0 ? {} : { note: notes.join('; ') }) };
}
