import { beforeEach, describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { acquireGpu, type GpuContext } from '../src/gpu/adapter.js';
import { batchCapacity, runGpu, runGpuWithFallback, type GpuRunOptions } from '../src/gpu/engine.js';
import { runReference } from '../src/engine/reference.js';
import { COMPILE_MS, describeGpu } from './gpu-support.js';
import { configFor } from './support.js';

const RUN_MS = 10 * 60_000;
const SEED = 77;
const FIRST = 300;
const COUNT = 21;

// Slowdown and a dead replica put events on both sides of many window ends.
const config = configFor('hot-prefix', [], 'server-dies').config;

describe('time windows on the reference engine', () => {
  it('advancing in 7 windows gives what 1 window gives', () => {
    expect(runReference(config, SEED, FIRST, 8, 7)).toEqual(runReference(config, SEED, FIRST, 8, 1));
  });
});

describeGpu('time windows and batches on the WGSL engine', () => {
  let ctx: GpuContext;
  let acquiring: Promise<GpuContext> | undefined;
  let reference: Uint32Array;

  // Per test rather than in beforeAll: with CI set and no adapter, each GPU test then fails
  // (a failed beforeAll would report them as skipped). One instance compiles M/M/c's shape.
  beforeEach(async () => {
    acquiring ??= acquireGpu().then(async (c) => {
      await runGpu(c, config, SEED, FIRST, 1);
      return c;
    });
    ctx = await acquiring;
    reference ??= runReference(config, SEED, FIRST, COUNT);
  }, COMPILE_MS);

  it('gives the same records advanced in 1, 7 and 60 windows, equal to the reference', async () => {
    for (const windows of [1, 7, 60]) {
      expect(await runGpu(ctx, config, SEED, FIRST, COUNT, { windows })).toEqual(reference);
    }
  }, RUN_MS);

  it('gives the same records in batches of 8 as in one, and reports progress up to the count', async () => {
    const progress: number[] = [];
    const records = await runGpu(ctx, config, SEED, FIRST, COUNT, { maxBatch: 8, onProgress: (done) => progress.push(done) });
    expect(records).toEqual(reference);
    expect(progress.at(-1)).toBe(COUNT);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
  }, RUN_MS);

  // Each workgroup size and layout compiles its own pipelines: M/M/c's take seconds on llvmpipe,
  // hot prefix's interleaved one as long as a cold compile may take.
  it('gives the same records at any workgroup size and in either state layout, and refuses a size past the limits', async () => {
    const mmc = configFor('mmc', [], 'as-given').config;
    const expected = runReference(mmc, SEED, FIRST, COUNT);
    const variants: GpuRunOptions[] = [
      {},
      { workgroupSize: 1 },
      { workgroupSize: 3, stateLayout: 'records' },
      // a last batch of 5: interleaved words are spread over the batch's own count
      { workgroupSize: 3, stateLayout: 'interleaved', maxBatch: 8 },
    ];
    for (const options of variants) {
      expect(await runGpu(ctx, mmc, SEED, FIRST, COUNT, options)).toEqual(expected);
    }
    // replicas, caches and a failure, in both layouts
    for (const stateLayout of ['records', 'interleaved'] as const) {
      expect(await runGpu(ctx, config, SEED, FIRST, COUNT, { stateLayout })).toEqual(reference);
    }
    const size = ctx.limits.maxComputeInvocationsPerWorkgroup + 1;
    const err = await runGpu(ctx, mmc, SEED, FIRST, 2, { workgroupSize: size }).catch((e: unknown) => e);
    expect((err as ServesimError).code).toBe('SERVESIM_GPU_LIMIT');
    expect((err as Error).message).toMatch(/^workgroup size [\d,]+ exceeds maxComputeInvocationsPerWorkgroup, [\d,]+ on this adapter$/);
    await expect(runGpu(ctx, mmc, SEED, FIRST, 2, { workgroupSize: 0 })).rejects.toThrow(/workgroupSize 0 is not an integer >= 1/);
  }, COMPILE_MS + RUN_MS);

  it('sizes batches by the buffer limits and refuses an instance that fits none, naming the limit', async () => {
    const bytes = config.stateWords * 4;
    expect(batchCapacity([config], { ...ctx.limits, maxStorageBufferBindingSize: 3 * bytes + 4 })).toBe(3);
    const tight = { ...ctx, limits: { ...ctx.limits, maxStorageBufferBindingSize: bytes - 4 } };
    const err = await runGpu(tight, config, SEED, FIRST, 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServesimError);
    expect((err as ServesimError).code).toBe('SERVESIM_GPU_LIMIT');
    expect((err as Error).message).toMatch(/the state of one instance .* needs .*; maxStorageBufferBindingSize is .* on this adapter/);

    // the fallback runs them on the CPU instead, and says why
    const outcome = await runGpuWithFallback(tight, config, SEED, FIRST, 2);
    expect(outcome.records).toEqual(reference.subarray(0, 2 * config.resultWords));
    expect(outcome).toMatchObject({ gpuInstances: 0, cpuInstances: 2, adapter: ctx.adapterName });
    expect(outcome.note).toMatch(/maxStorageBufferBindingSize.*2 of 2 instances ran on the CPU reference engine/);
  }, RUN_MS);

  it('runs no instances at once', async () => {
    expect(await runGpu(ctx, config, SEED, FIRST, 0)).toEqual(new Uint32Array(0));
  });
});
