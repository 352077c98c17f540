/**
 * A sweep on the GPU: its (grid point, case) configurations run as one kernel batch per shape,
 * even where the grid changes the state's size, and its table and per-seed records equal the
 * CPU pool's bit for bit; each batch, and a hint search over its rounds, says how long the GPU
 * spent on it. The
 * batches go in windows of points, a pass of each shape a window, so points finish window by
 * window and a stop keeps the windows before it.
 */
import { afterAll, expect, it } from 'vitest';
import { runReference } from '../src/engine/reference.js';
import { compile } from '../src/engine/compile.js';
import { ServesimError } from '../src/errors.js';
import { runHints } from '../src/hint/search.js';
import { selectCases } from '../src/problem/parse.js';
import { GpuWindows, runItems, type BatchUsed, type WorkItem } from '../src/run/batches.js';
import { closeEngines } from '../src/run/run.js';
import type { SeedRecord } from '../src/run/seed-records.js';
import { pointProblem, runSweep } from '../src/sweep/run.js';
import { sweepFromObject, type GridPoint } from '../src/sweep/spec.js';
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
  it('runs one kernel batch per shape and gives the pool\'s table and per-seed records bit for bit', async () => {
    const seeds: Record<'gpu' | 'cpu', SeedRecord[][]> = { gpu: [], cpu: [] };
    const keep = (engine: 'gpu' | 'cpu') => (point: GridPoint, records: readonly SeedRecord[]) => void (seeds[engine][point.index] = [...records]);
    const gpu = await runSweep(sweep('gpu'), { onSeedRecords: keep('gpu') });
    expect(gpu.error).toBeNull();
    expect(gpu.meta.batches.map((b) => [b.engine, b.instances, b.configs])).toEqual([['gpu', 32, 4], ['gpu', 32, 4]]);
    // each says how long its passes held the GPU (what bench/ reports as the kernel's seconds)
    for (const b of gpu.meta.batches) expect(b.gpuSeconds).toBeGreaterThan(0);
    const cpu = await runSweep(sweep('cpu'), { onSeedRecords: keep('cpu') });
    expect(cpu.meta.engine).toBe('pool');
    expect(cpu.meta.batches.every((b) => b.gpuSeconds === undefined)).toBe(true);
    expect(gpu.rows).toEqual(cpu.rows);
    expect(seeds.gpu.flat()).toHaveLength(4 * 2 * 8);
    expect(seeds.gpu).toEqual(seeds.cpu);
  }, COMPILE_MS);

  it('gives a hint search\'s GPU seconds over its rounds, and the pool\'s hints', async () => {
    const hint = (engine: 'cpu' | 'gpu') =>
      runHints({ problem: TINY_QUEUE, vary: { 'server.slots': [1, 2, 3, 4] }, cost: 'server.slots', cases: ['as-given'], seeds: 8, engine });
    const [gpu, cpu] = [await hint('gpu'), await hint('cpu')];
    expect(gpu.gpuSeconds).toBeGreaterThan(0);
    expect(cpu.gpuSeconds).toBeNull();
    expect(gpu.hints).toEqual(cpu.hints);
  }, COMPILE_MS);

  it('runs points window by window across shapes, and a stop keeps the windows before it', async () => {
    const s = sweep('gpu');
    // point by point, each point's cases (of two shapes) in turn
    const items: WorkItem[] = s.points.flatMap((point) => {
      const problem = pointProblem(s, point);
      return selectCases(problem, s.caseNames).map((c) => ({ config: compile(problem, c), seed: s.baseSeed, seeds: s.seeds }));
    });
    const run = async (stopAfter: number | null) => {
      const done: number[] = [];
      const records: Uint32Array[] = [];
      const batches: BatchUsed[] = [];
      const stop = new AbortController();
      // a window of one point's two cases at first
      const outcome = runItems(items, {
        engine: 'gpu',
        signal: stop.signal,
        gpuWindows: new GpuWindows(2 * s.seeds),
        onItem: (item, r) => {
          done.push(item);
          records[item] = r;
          if (done.length === stopAfter) stop.abort();
        },
        onBatch: (used) => batches.push(used),
      }).then(
        () => null,
        (err: unknown) => err,
      );
      return { error: await outcome, done, records, batches };
    };

    const whole = await run(null);
    expect(whole.error).toBeNull();
    // the first window is point 0's cases, whatever their shapes: it finishes first
    expect(whole.done.slice(0, 2)).toEqual([0, 1]);
    expect([...whole.done].sort((a, b) => a - b)).toEqual(items.map((_, i) => i));
    items.forEach((item, i) => expect(whole.records[i]).toEqual(runReference(item.config, item.seed, 0, item.seeds)));
    // each shape's batch listed once, with the GPU seconds of all its passes
    expect(whole.batches.map((b) => [b.engine, b.instances, b.configs])).toEqual([['gpu', 32, 4], ['gpu', 32, 4]]);
    for (const b of whole.batches) expect(b.gpuSeconds).toBeGreaterThan(0);

    const stopped = await run(2);
    expect(stopped.error).toBeInstanceOf(ServesimError);
    expect((stopped.error as ServesimError).code).toBe('SERVESIM_CANCELLED');
    expect(stopped.done).toEqual([0, 1]);
    // both shapes ran part of the point kept: both are listed
    expect(stopped.batches.map((b) => b.engine)).toEqual(['gpu', 'gpu']);
  }, COMPILE_MS);
});
