// The WGSL engine runs a batch of many configurations of one shape together (issue 14): each
// run's records equal the reference engine's, bit for bit, whatever the configurations' state
// sizes, the state layout, the passes the buffer limits cut or a device lost between them.
import { beforeEach, expect, it } from 'vitest';
import { batchInstances, runReferenceBatch, type EngineBatch } from '../src/engine/batch.js';
import { acquireGpu, type GpuContext } from '../src/gpu/adapter.js';
import { runGpuBatchWithFallback, type GpuBatchOptions, type GpuBatchOutcome } from '../src/gpu/engine.js';
import { COMPILE_MS, describeGpu } from './gpu-support.js';
import { configFor } from './support.js';
import { CACHE_STORIES, conversations, traceProblem, wholeWindow } from './trace-support.js';

const RUN_MS = 10 * 60_000;
const SEEDS = [11, 20_261_201];

// hot-prefix as given at three batch sizes and two replica counts: one shape, six state sizes
const grid = [4, 8, 16].flatMap((slots) => [6, 8].map((replicas) => configFor('hot-prefix', [`gpu.slots=${slots}`, `gpu.replicas=${replicas}`]).config));
// per configuration a run of each seed, odd counts and firsts, and an empty run among them
const gridBatch: EngineBatch = {
  configs: grid,
  runs: [
    ...grid.flatMap((_, k) => [
      { config: k, seed: SEEDS[0]!, first: 3 * k + 1, count: 3 + (k % 2) },
      { config: k, seed: SEEDS[1]!, first: 1_000, count: 2 },
    ]),
    { config: 2, seed: SEEDS[0]!, first: 0, count: 0 },
    { config: 5, seed: SEEDS[1]!, first: 7, count: 1 },
  ],
};

// replays of one trace (its rows in the tables, read once for the two configurations that share
// them) beside a Poisson configuration of the same shape, under cache pressure and routing by hash ids
const traceLines = conversations(400).map((l, i) => ({ ...l, timestamp: i * 100 }));
const traceGrid = [
  grid[0]!,
  traceProblem('gpu-trace-a', traceLines, 'duration: 10s, warmup: 5s', 'replicas: 2, slots: 4, kvTokens: 6000', 'prefix-affinity').config,
  traceProblem('gpu-trace-b', traceLines, 'duration: 10s, warmup: 5s', 'replicas: 3, slots: 4, kvTokens: 6000', 'cache-aware').config,
  // a gap of 72 minutes, past the u32 clock, that some windows reach
  traceProblem('gpu-trace-gap', conversations(4_000).map((l, i) => ({ ...l, timestamp: i * 100 + (i < 2_000 ? 0 : 4_320_000) })), 'duration: 20s, warmup: 5s', 'replicas: 2, slots: 4, kvTokens: 6000', 'prefix-affinity').config,
  // the block cache's rules: siblings, a split run, leaves before prefixes, pinned blocks
  ...Object.entries(CACHE_STORIES).map(([name, story]) => traceProblem(`gpu-${name}`, story.lines, wholeWindow(story.lines), story.gpu).config),
];
const traceBatch: EngineBatch = {
  configs: traceGrid,
  runs: traceGrid.map((_, k) => ({ config: k, seed: SEEDS[k % 2]!, first: k, count: k === 3 ? 64 : 3 })),
};

// M/M/c at three sizes (seconds to compile a pipeline on llvmpipe, where hot-prefix takes minutes)
const mmc = [['server.replicas=1'], ['server.replicas=2'], ['server.slots=8']].map((sets) => configFor('mmc', sets).config);
const mmcBatch: EngineBatch = {
  configs: mmc,
  runs: [
    { config: 0, seed: SEEDS[0]!, first: 5, count: 5 },
    { config: 1, seed: SEEDS[0]!, first: 5, count: 5 },
    { config: 2, seed: SEEDS[0]!, first: 5, count: 5 },
    { config: 0, seed: SEEDS[1]!, first: 0, count: 4 },
    { config: 1, seed: SEEDS[1]!, first: 0, count: 4 },
  ],
};
// passes of 7 cut runs: instances 0-6 of runs 0 and 1, 7-13 of runs 1 and 2, 14-20 of runs 2 to 4, 21-22 of run 4
const MMC_PASSES = [
  { instances: 7, configs: 2 },
  { instances: 7, configs: 2 },
  { instances: 7, configs: 3 },
  { instances: 2, configs: 1 },
];

const references = new Map<EngineBatch, Uint32Array[]>();
function reference(batch: EngineBatch): Uint32Array[] {
  if (!references.has(batch)) references.set(batch, runReferenceBatch(batch));
  return references.get(batch)!;
}

/**
 * Runs the batch and checks its records against the reference engine's, that onRun handed
 * each run's over once, in order, and that progress rose to the batch's instances.
 */
async function runChecked(ctx: GpuContext, batch: EngineBatch, options: GpuBatchOptions = {}): Promise<GpuBatchOutcome> {
  const handed: [number, Uint32Array][] = [];
  const progress: number[] = [];
  const outcome = await runGpuBatchWithFallback(ctx, batch, {
    ...options,
    onProgress: (done) => {
      progress.push(done);
      options.onProgress?.(done);
    },
    onRun: (run, records) => handed.push([run, records]),
  });
  batch.runs.forEach((_, i) => expect(outcome.records[i], `run ${i}`).toEqual(reference(batch)[i]));
  expect(handed.map(([run]) => run)).toEqual(batch.runs.map((_, i) => i));
  for (const [run, records] of handed) expect(records).toBe(outcome.records[run]);
  expect(progress.at(-1)).toBe(batchInstances(batch));
  expect(progress).toEqual([...progress].sort((a, b) => a - b));
  return outcome;
}

describeGpu('a batch of configurations on the WGSL engine', () => {
  let ctx: GpuContext;
  let acquiring: Promise<GpuContext> | undefined;

  // Per test rather than in beforeAll: with CI set and no adapter, each GPU test then fails.
  beforeEach(async () => {
    acquiring ??= acquireGpu();
    ctx = await acquiring;
  }, COMPILE_MS);

  it('runs hot-prefix at six state sizes and two seeds in one pass, equal to the reference', async () => {
    const outcome = await runChecked(ctx, gridBatch);
    expect(new Set(grid.map((c) => c.stateWords)).size).toBe(6);
    expect(outcome).toMatchObject({ gpuInstances: batchInstances(gridBatch), cpuInstances: 0, passes: [{ instances: batchInstances(gridBatch), configs: 6 }] });
    expect(outcome.note).toBeUndefined();
  }, COMPILE_MS + RUN_MS);

  it('runs trace replays beside a Poisson configuration in one pass, equal to the reference', async () => {
    const outcome = await runChecked(ctx, traceBatch);
    expect(outcome).toMatchObject({ gpuInstances: batchInstances(traceBatch), cpuInstances: 0 });
  }, COMPILE_MS + RUN_MS);

  it('cuts passes across runs in the interleaved layout, equal to the reference', async () => {
    expect(new Set(mmc.map((c) => c.stateWords)).size).toBe(3);
    const outcome = await runChecked(ctx, mmcBatch, { maxBatch: 7, stateLayout: 'interleaved', workgroupSize: 3 });
    expect(outcome).toMatchObject({ gpuInstances: batchInstances(mmcBatch), cpuInstances: 0, passes: MMC_PASSES });
  }, COMPILE_MS + RUN_MS);

  it('runs on the CPU what does not fit, naming the limit', async () => {
    const bytes = Math.max(...mmc.map((c) => c.stateWords)) * 4;
    const tight = { ...ctx, limits: { ...ctx.limits, maxStorageBufferBindingSize: bytes - 4 } };
    const outcome = await runChecked(tight, mmcBatch);
    expect(outcome).toMatchObject({ gpuInstances: 0, cpuInstances: 23, passes: [] });
    expect(outcome.note).toMatch(/^the state of one instance \(case as-given\) needs .*; maxStorageBufferBindingSize is .* on this adapter; 23 of 23 instances ran on the CPU reference engine instead$/);
  }, RUN_MS);

  it('refuses configurations of different shapes', async () => {
    const mixed: EngineBatch = { configs: [mmc[0]!, grid[0]!], runs: [{ config: 1, seed: 1, first: 0, count: 1 }] };
    await expect(runGpuBatchWithFallback(ctx, mixed)).rejects.toThrow(
      /^runGpu: a batch's configurations must share one shape \(src\/engine\/shape.ts shapeKey\): configuration 1 \(case as-given\) is 0\/0\/0\/0\/0\/0, configuration 0 \(case as-given\) 2\/0\/0\/0\/0\/0$/,
    );
  });
});

describeGpu('a batch on a device lost between passes', () => {
  it('runs the passes not finished on the CPU, runs cut between the two included', async () => {
    const ctx = await acquireGpu();
    const outcome = await runChecked(ctx, mmcBatch, {
      maxBatch: 7,
      // in the second pass
      onProgress: (done) => {
        if (done > 7) ctx.destroy();
      },
    });
    expect(outcome).toMatchObject({ gpuInstances: 7, cpuInstances: 16, passes: [MMC_PASSES[0]] });
    expect(outcome.note).toMatch(/GPU device lost on .* \(destroyed\).*16 of 23 instances ran on the CPU reference engine instead$/);
  }, COMPILE_MS);
});
