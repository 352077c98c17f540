import { expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { acquireGpu, type GpuContext } from '../src/gpu/adapter.js';
import { runGpu, runGpuWithFallback } from '../src/gpu/engine.js';
import { runReference } from '../src/engine/reference.js';
import { COMPILE_MS, describeGpu } from './gpu-support.js';
import { configFor } from './support.js';

const SEED = 4242;
const FIRST = 50;
const COUNT = 19;
const BATCH = 8;

const config = configFor('hot-prefix', [], 'as-given').config;
const reference = runReference(config, SEED, FIRST, COUNT);

/** Destroys the device once the second batch has finished an instance. */
function destroyInSecondBatch(ctx: GpuContext, seen: number[]): (done: number) => void {
  return (done) => {
    seen.push(done);
    if (done > BATCH) ctx.destroy();
  };
}

describeGpu('a device lost mid-run', () => {
  it('falls back to the CPU for the instances not yet finished, with the same records', async () => {
    const ctx = await acquireGpu();
    const seen: number[] = [];
    const outcome = await runGpuWithFallback(ctx, config, SEED, FIRST, COUNT, {
      maxBatch: BATCH,
      onProgress: destroyInSecondBatch(ctx, seen),
    });
    expect(outcome.records).toEqual(reference);
    expect(outcome).toMatchObject({ gpuInstances: BATCH, cpuInstances: COUNT - BATCH, adapter: ctx.adapterName });
    expect(outcome.note).toMatch(/GPU device lost on .* \(destroyed\).*11 of 19 instances ran on the CPU reference engine instead/);
    expect(seen.at(-1)).toBe(COUNT);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  }, COMPILE_MS);

  it('fails runGpu with SERVESIM_GPU_ERROR', async () => {
    const ctx = await acquireGpu();
    const err = await runGpu(ctx, config, SEED, FIRST, COUNT, {
      maxBatch: BATCH,
      onProgress: destroyInSecondBatch(ctx, []),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServesimError);
    expect((err as ServesimError).code).toBe('SERVESIM_GPU_ERROR');
    expect((err as Error).message).toMatch(/GPU device lost on .* \(destroyed\)/);
  }, COMPILE_MS);

  it('runs everything on the CPU when the device is gone before the run', async () => {
    const ctx = await acquireGpu();
    ctx.destroy();
    await ctx.lost;
    const outcome = await runGpuWithFallback(ctx, config, SEED, FIRST, 3);
    expect(outcome.records).toEqual(reference.subarray(0, 3 * config.resultWords));
    expect(outcome).toMatchObject({ gpuInstances: 0, cpuInstances: 3 });
  });
});

describeGpu('a cancelled run', () => {
  it('stops with SERVESIM_CANCELLED, on the GPU and in the fallback', async () => {
    const ctx = await acquireGpu();
    try {
      const controller = new AbortController();
      controller.abort();
      for (const run of [runGpu, runGpuWithFallback]) {
        const err = await run(ctx, config, SEED, FIRST, 2, { signal: controller.signal }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ServesimError);
        expect((err as ServesimError).code).toBe('SERVESIM_CANCELLED');
      }
    } finally {
      ctx.destroy();
    }
  }, COMPILE_MS);
});
