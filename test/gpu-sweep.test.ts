/**
 * A sweep on the GPU: its (grid point, case) configurations run as one kernel batch per shape,
 * even where the grid changes the state's size, and the table equals the CPU pool's bit for bit;
 * each batch, and a hint search over its rounds, says how long the GPU spent on it.
 */
import { afterAll, expect, it } from 'vitest';
import { runHints } from '../src/hint/search.js';
import { closeEngines } from '../src/run/run.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { COMPILE_MS, describeGpu } from './gpu-support.js';
import { TINY_QUEUE } from './support.js';

afterAll(closeEngines);

const sweep = (engine: 'cpu' | 'gpu') =>
  sweepFromObject({
    problem: { ...TINY_QUEUE, cases: undefined, scenarios: { 'server-down': { failures: [{ target: 'server', replica: 0 }] } } },
    // replicas and slots change the state's size; server-down is a shape of its own
    grid: { 'server.replicas': [1, 2], 'server.slots': [1, 3] },
    cases: ['as-given', 'server-down'],
    seeds: 8,
    engine,
  });

describeGpu('a sweep on the GPU', () => {
  it('runs one kernel batch per shape and gives the pool\'s table bit for bit', async () => {
    const gpu = await runSweep(sweep('gpu'));
    expect(gpu.error).toBeNull();
    expect(gpu.meta.batches.map((b) => [b.engine, b.instances, b.configs])).toEqual([['gpu', 32, 4], ['gpu', 32, 4]]);
    // each says how long its passes held the GPU (what bench/ reports as the kernel's seconds)
    for (const b of gpu.meta.batches) expect(b.gpuSeconds).toBeGreaterThan(0);
    const cpu = await runSweep(sweep('cpu'));
    expect(cpu.meta.engine).toBe('pool');
    expect(cpu.meta.batches.every((b) => b.gpuSeconds === undefined)).toBe(true);
    expect(gpu.rows).toEqual(cpu.rows);
  }, COMPILE_MS);

  it('gives a hint search\'s GPU seconds over its rounds, and the pool\'s hints', async () => {
    const hint = (engine: 'cpu' | 'gpu') =>
      runHints({ problem: TINY_QUEUE, vary: { 'server.slots': [1, 2, 3, 4] }, cost: 'server.slots', cases: ['as-given'], seeds: 8, engine });
    const [gpu, cpu] = [await hint('gpu'), await hint('cpu')];
    expect(gpu.gpuSeconds).toBeGreaterThan(0);
    expect(cpu.gpuSeconds).toBeNull();
    expect(gpu.hints).toEqual(cpu.hints);
  }, COMPILE_MS);
});
