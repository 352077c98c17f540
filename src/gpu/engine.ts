/**
 * The WGSL engine: thousands of seeded instances in lockstep, one invocation each, giving the
 * reference engine's result records bit for bit (docs/model.md section 7).
 *
 * It runs a batch (src/engine/batch.ts): runs of instances of any configurations of one
 * shape, together. The params and tables of all of them go to the GPU once; each slot of the
 * state buffer says which configuration, base seed and instance it runs. The batch's instances
 * go in passes of as many as the buffer limits allow, runs side by side. A pass is
 * initialised, then advanced through time windows, each its own submit, so no single dispatch
 * runs long enough for a driver to declare the device hung; after each window the count of
 * finished instances comes back (progress, and an early exit), and at the end only the result
 * records are read back.
 *
 * Mesa's llvmpipe (no GPU) ends every loop once an invocation has run 65,535 loop iterations,
 * which would corrupt instances silently. On such an adapter (a probe finds out) each dispatch
 * handles at most a budget of events per instance and reports whether it hit the cap; one that
 * did is undone from a copy of the state and redone with half the budget.
 */
import { batchInstances, singleRun, type EngineBatch } from '../engine/batch.js';
import { batchParams } from '../engine/batch-params.js';
import type { EngineConfig } from '../engine/compile.js';
import { END_OF_TIME, horizonOf, runReference } from '../engine/reference.js';
import { shapeKey, shapeOf, type Shape } from '../engine/shape.js';
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
import { BINDING, COUNTER, COUNTER_WORDS, ENTRY_POINT, RUN, RUN_WORDS, SLOT, SLOT_WORDS, kernelSource } from './kernel-source.js';

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
  /** Most instances per pass; default as many as the buffer limits allow. */
  readonly maxBatch?: number;
  /**
   * Invocations (instances) per workgroup; default 64 on a GPU, one CPU vector (4) on
   * llvmpipe. Records do not depend on it (`npm run bench:lanes` measures its speed).
   */
  readonly workgroupSize?: number;
  /**
   * How a pass's state records share the state buffer: `records`, one after another (the
   * default), or `interleaved` word by word (docs/kernel-layout.md), meant for GPUs, where
   * lanes reading one field would share a memory transaction; `npm run bench:lanes` measures
   * both. Records do not depend on it.
   */
  readonly stateLayout?: StateLayout;
}

export interface GpuBatchOptions extends GpuRunOptions {
  /** Called as each run's records are complete (its index in the batch's runs), in run order. */
  readonly onRun?: (run: number, records: Uint32Array) => void;
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

/** One pass of the GPU over part of a batch: the instances its buffers held at once. */
export interface GpuPass {
  readonly instances: number;
  /** Configurations among them. */
  readonly configs: number;
  /**
   * Seconds from the pass's first write to the GPU to its records read back: the kernel's
   * windows with their submits and read backs, not the compile or the buffers' creation.
   */
  readonly seconds: number;
}

/** What {@link runGpuBatchWithFallback} ran where. */
export interface GpuBatchOutcome {
  /** Each run's records, `resultWords` of its configuration each: what runReferenceBatch gives. */
  readonly records: Uint32Array[];
  /** Instances whose records came from the GPU: the batch's first ones, runs in order. */
  readonly gpuInstances: number;
  /** Instances the CPU reference engine ran after the GPU failed: the rest. */
  readonly cpuInstances: number;
  /** The passes the GPU finished, in order. */
  readonly passes: readonly GpuPass[];
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

/** The pipelines for a shape at the options' workgroup size and state layout, or the defaults. */
async function kernelFor(ctx: GpuContext, shape: Shape, options: GpuRunOptions): Promise<Kernel> {
  const { device } = ctx;
  const what = 'compiling the WGSL engine';
  const kernel = await cachedPromise(kernels, device, () => captureGpuErrors(device, what, () => buildDeviceKernel(device)));
  const workgroupSize = options.workgroupSize ?? kernel.workgroupSize;
  planDispatch(1, workgroupSize, ctx.limits); // a size past the limits fails here, naming the limit, not in the compiler
  const stateLayout = options.stateLayout ?? 'records';
  const constants = { ...shape, WG: workgroupSize, INTERLEAVED: stateLayout === 'interleaved' ? 1 : 0 };
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
      entry('read-only-storage', BINDING.SLOTS),
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
 * Instances of these configurations whose state fits one pass on these limits: every slot
 * holds the largest configuration's state, so that a slot's record starts at slot x stride in
 * either state layout.
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT, naming the limit, when not even one fits.
 */
export function batchCapacity(
  configs: readonly EngineConfig[],
  limits: Pick<GpuLimits, 'maxStorageBufferBindingSize' | 'maxBufferSize' | 'maxUniformBufferBindingSize'>,
): number {
  const largest = largestState(configs);
  const bytes = largest.stateWords * 4;
  checkBufferSize(bytes, limits, `the state of one instance (case ${largest.scenario})`);
  return Math.floor(Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize) / bytes);
}

function largestState(configs: readonly EngineConfig[]): EngineConfig {
  if (configs.length === 0) throw new RangeError('runGpu: a batch with runs needs configurations');
  return configs.reduce((a, b) => (b.stateWords > a.stateWords ? b : a));
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

/**
 * The end of window w of `windows` (1-based) over `horizon`. Records do not depend on the
 * windows, so a pass of many configurations cuts the longest horizon among them.
 */
function windowEnd(horizon: number, w: number, windows: number): number {
  return w === windows ? END_OF_TIME : Math.floor((horizon * w) / windows);
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

/** Instances `from .. from + count - 1` of a run (counted within the run), at slots `slot ..` of a pass. */
interface Segment {
  readonly run: number;
  readonly from: number;
  readonly count: number;
  readonly slot: number;
}

/** Each run's records as they come in, GPU or CPU; the batch's first `finished` instances are in. */
interface RecordSink {
  readonly records: Uint32Array[];
  /** Where each run's instances start among the batch's, runs in order. */
  readonly starts: readonly number[];
  readonly finished: number;
  /** Notes that the first `finished` instances are in, and hands each run they complete to `onRun`. */
  finish(finished: number): void;
}

/**
 * Checks a batch and makes room for its records.
 *
 * @throws RangeError when a run names no configuration or its count is not a whole number,
 *   or when the configurations differ in shape (one pipeline runs them all).
 */
function startBatch(batch: EngineBatch, onRun: GpuBatchOptions['onRun']): RecordSink {
  batch.runs.forEach((r, i) => {
    if (batch.configs[r.config] === undefined) throw new RangeError(`runGpu: run ${i} names configuration ${r.config} of ${batch.configs.length}`);
    checkCount('count', r.count, 0);
  });
  const shapes = batch.configs.map(shapeKey);
  shapes.forEach((shape, k) => {
    if (shape !== shapes[0]) {
      throw new RangeError(
        `runGpu: a batch's configurations must share one shape (src/engine/shape.ts shapeKey): configuration ${k} (case ${batch.configs[k]!.scenario}) is ${shape}, configuration 0 (case ${batch.configs[0]!.scenario}) ${shapes[0]}`,
      );
    }
  });
  const records = batch.runs.map((r) => new Uint32Array(r.count * batch.configs[r.config]!.resultWords));
  const starts: number[] = [];
  let start = 0;
  for (const r of batch.runs) {
    starts.push(start);
    start += r.count;
  }
  let reported = 0;
  const sink = {
    records,
    starts,
    finished: 0,
    finish(finished: number): void {
      sink.finished = finished;
      for (; reported < batch.runs.length && starts[reported]! + batch.runs[reported]!.count <= finished; reported++) {
        onRun?.(reported, records[reported]!);
      }
    },
  };
  return sink;
}

/** The runs' parts among the batch's instances `start .. start + count - 1`. */
function segmentsOf(batch: EngineBatch, starts: readonly number[], start: number, count: number): Segment[] {
  const out: Segment[] = [];
  batch.runs.forEach((r, run) => {
    const from = Math.max(start, starts[run]!);
    const to = Math.min(start + count, starts[run]! + r.count);
    if (to > from) out.push({ run, from: from - starts[run]!, count: to - from, slot: from - start });
  });
  return out;
}

/** "instances 300 to 320" (of one run), or "1,024 instances of 16 runs", for messages. */
function describePass(batch: EngineBatch, segments: readonly Segment[]): string {
  if (segments.length === 1) {
    const s = segments[0]!;
    const first = batch.runs[s.run]!.first + s.from;
    return `instances ${formatCount(first)} to ${formatCount(first + s.count - 1)}`;
  }
  return `${formatCount(segments.reduce((n, s) => n + s.count, 0))} instances of ${segments.length} runs`;
}

/** A pass the GPU finished, its records written: the batch's first `end` instances are done. */
interface FinishedPass extends GpuPass {
  readonly end: number;
}

/**
 * Runs the batch's instances on the GPU pass by pass, writing each pass's records into the
 * sink's arrays, and yields as each completes (a generator, so that what the caller does with
 * a pass, `onRun` included, is not taken for a GPU failure). Throws SERVESIM_GPU_ERROR on any
 * GPU failure.
 */
async function* runPasses(
  ctx: GpuContext,
  batch: EngineBatch,
  options: GpuRunOptions,
  report: (done: number) => void,
  sink: Pick<RecordSink, 'records' | 'starts'>,
): AsyncGenerator<FinishedPass> {
  const windows = options.windows ?? DEFAULT_WINDOWS;
  checkCount('windows', windows, 1);
  if (options.maxBatch !== undefined) checkCount('maxBatch', options.maxBatch, 1);
  if (options.workgroupSize !== undefined) checkCount('workgroupSize', options.workgroupSize, 1);
  throwIfCancelled(options.signal);
  const total = batchInstances(batch);
  if (total === 0) return;
  const { configs } = batch;
  const stride = largestState(configs).stateWords;
  const resultStride = configs.reduce((words, c) => Math.max(words, c.resultWords), 0);
  const size = Math.min(total, batchCapacity(configs, ctx.limits), options.maxBatch ?? Infinity);
  checkDevice(ctx, 'before the WGSL engine');
  const kernel = await whileAlive(ctx, kernelFor(ctx, shapeOf(configs[0]!), options), 'compiling the WGSL engine');

  const { device } = ctx;
  const { params: paramWords, tables: tableWords, bases } = batchParams(configs);
  const stateBytes = size * stride * 4;
  const buffers: GPUBuffer[] = [];
  const keep = (b: GPUBuffer): GPUBuffer => {
    buffers.push(b);
    return b;
  };
  try {
    const ofConfigs = `of ${formatCount(configs.length)} configuration${configs.length === 1 ? '' : 's'}`;
    const params = keep(createStorageBuffer(device, paramWords, { label: 'params', what: `the parameter blocks ${ofConfigs}` }));
    const tables = keep(createStorageBuffer(device, tableWords, { label: 'tables', what: `the distribution tables ${ofConfigs}` }));
    const stateWhat = `the state of ${formatCount(size)} instances`;
    const state = keep(createStorageBufferOfSize(device, stateBytes, { label: 'state', what: stateWhat }));
    // where loops are capped, each advance may be undone: the state as it was before it
    const backup = kernel.loopCapped ? keep(createStorageBufferOfSize(device, stateBytes, { label: 'state backup', what: stateWhat })) : null;
    const results = keep(createStorageBufferOfSize(device, size * resultStride * 4, { label: 'results', what: `the results of ${formatCount(size)} instances` }));
    const slots = keep(createStorageBufferOfSize(device, size * SLOT_WORDS * 4, { label: 'slots', what: `the slots of ${formatCount(size)} instances` }));
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
        { binding: BINDING.SLOTS, resource: { buffer: slots } },
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

    let budget = kernel.loopCapped ? FIRST_BUDGET : NO_BUDGET;
    runWords[RUN.STRIDE] = stride;
    runWords[RUN.RESULT_STRIDE] = resultStride;
    runWords[RUN.TWO] = 2;
    for (let offset = 0; offset < total; offset += size) {
      const n = Math.min(size, total - offset);
      const segments = segmentsOf(batch, sink.starts, offset, n);
      const what = describePass(batch, segments);
      const inPass = [...new Set(segments.map((s) => batch.runs[s.run]!.config))].map((k) => configs[k]!);
      const cases = [...new Set(inPass.map((c) => c.scenario))].join(' or ');
      const loopCapError = (step: string): ServesimError =>
        new ServesimError(
          'SERVESIM_GPU_LIMIT',
          `${step}: one instance of case ${cases} needs more loop iterations than ${ctx.adapterName} runs in one invocation (Mesa llvmpipe stops every loop after ${formatCount(LLVMPIPE_LOOP_CAP)})`,
        );
      const started = performance.now();
      const slotWords = new Uint32Array(n * SLOT_WORDS);
      for (const s of segments) {
        const r = batch.runs[s.run]!;
        for (let i = 0; i < s.count; i++) {
          const at = (s.slot + i) * SLOT_WORDS;
          slotWords[at + SLOT.PARAMS] = bases[r.config]!;
          slotWords[at + SLOT.SEED] = r.seed;
          slotWords[at + SLOT.INSTANCE] = r.first + s.from + i;
        }
      }
      writeBuffer(device, slots, slotWords);
      const horizon = Math.max(...inPass.map(horizonOf));
      const plan = planDispatch(n, kernel.workgroupSize, ctx.limits);
      const usedBytes = n * stride * 4;
      runWords[RUN.COUNT] = n;
      writeBuffer(device, run, runWords);
      const init = device.createCommandEncoder();
      init.clearBuffer(state, 0, usedBytes);
      if ((await counted(init, kernel.init, plan, `initialising ${what}`))[COUNTER.CAPPED]! > 0) throw loopCapError(`initialising ${what}`);
      let done = 0;
      for (let w = 1; w <= windows && done < n; w++) {
        const step = `${what}, window ${w} of ${windows}`;
        runWords[RUN.UNTIL] = windowEnd(horizon, w, windows);
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
      const words = await whileAlive(ctx, readStorageBuffer(device, results, { byteLength: n * resultStride * 4 }), `reading back ${what}`);
      checkDevice(ctx, `reading back ${what}`);
      const seconds = (performance.now() - started) / 1000;
      for (const s of segments) {
        const resultWords = configs[batch.runs[s.run]!.config]!.resultWords;
        for (let i = 0; i < s.count; i++) {
          const at = (s.slot + i) * resultStride;
          sink.records[s.run]!.set(words.subarray(at, at + resultWords), (s.from + i) * resultWords);
        }
      }
      yield { instances: n, configs: inPass.length, seconds, end: offset + n };
    }
  } catch (err) {
    throw asGpuError(ctx, err, 'the WGSL engine');
  } finally {
    for (const b of buffers) b.destroy();
  }
}

/**
 * Runs a batch on the GPU, all its runs together in as few passes as the buffer limits allow,
 * and returns each run's records: exactly what `runReferenceBatch(batch)` returns. When the
 * GPU fails (device lost, an uncaptured error, a pipeline that does not compile, a
 * configuration past the adapter's limits) the instances it had not finished run on the CPU
 * reference engine instead; the outcome says how many ran where, and why. `onRun` is called as
 * each run's records are complete.
 *
 * @throws RangeError when the batch's configurations differ in shape (src/engine/shape.ts);
 *   ServesimError SERVESIM_CANCELLED when `signal` aborts.
 */
export async function runGpuBatchWithFallback(ctx: GpuContext, batch: EngineBatch, options: GpuBatchOptions = {}): Promise<GpuBatchOutcome> {
  const sink = startBatch(batch, options.onRun);
  const report = progressReporter(options.onProgress);
  const passes: GpuPass[] = [];
  const total = batchInstances(batch);
  try {
    for await (const { end, ...pass } of runPasses(ctx, batch, options, report, sink)) {
      passes.push(pass);
      sink.finish(end);
    }
    sink.finish(total);
    return { records: sink.records, gpuInstances: total, cpuInstances: 0, passes, adapter: ctx.adapterName };
  } catch (err) {
    if (!(err instanceof ServesimError) || (err.code !== 'SERVESIM_GPU_ERROR' && err.code !== 'SERVESIM_GPU_LIMIT')) throw err;
    const gpu = sink.finished;
    for (const [index, r] of batch.runs.entries()) {
      const config = batch.configs[r.config]!;
      for (let i = Math.max(0, sink.finished - sink.starts[index]!); i < r.count; i += CPU_SLICE) {
        throwIfCancelled(options.signal);
        const n = Math.min(CPU_SLICE, r.count - i);
        sink.records[index]!.set(runReference(config, r.seed, r.first + i, n), i * config.resultWords);
        report(sink.starts[index]! + i + n);
        sink.finish(sink.starts[index]! + i + n);
        // lets an abort (or a server's other requests) in between slices
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    sink.finish(total);
    const note = `${err.message}; ${formatCount(total - gpu)} of ${formatCount(total)} instances ran on the CPU reference engine instead`;
    return { records: sink.records, gpuInstances: gpu, cpuInstances: total - gpu, passes, adapter: ctx.adapterName, note };
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
  const batch = singleRun(config, seed, first, count);
  const sink = startBatch(batch, undefined);
  for await (const { end } of runPasses(ctx, batch, options, progressReporter(options.onProgress), sink)) sink.finish(end);
  return sink.records[0]!;
}

/** {@link runGpu} with {@link runGpuBatchWithFallback}'s fallback to the CPU. */
export async function runGpuWithFallback(
  ctx: GpuContext,
  config: EngineConfig,
  seed: number,
  first: number,
  count: number,
  options: GpuRunOptions = {},
): Promise<GpuRunOutcome> {
  const { records, gpuInstances, cpuInstances, adapter, note } = await runGpuBatchWithFallback(ctx, singleRun(config, seed, first, count), options);
  return { records: records[0]!, gpuInstances, cpuInstances, adapter, ...(note === undefined ? {} : { note }) };
}
