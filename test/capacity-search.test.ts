/**
 * A simulated capacity search on a small grid of queues, checked by brute force: every design
 * run at a ladder of arrival rates (one sweep, the same seeds), its capacity the highest rung
 * below which every rung passes. The search's capacities and Pareto front must agree with the
 * scan's within the tolerance.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { CapacityRequest } from '../src/capacity/api.js';
import { paretoFront } from '../src/capacity/bisection.js';
import { runCapacity } from '../src/capacity/search.js';
import { closeEngines } from '../src/run/run.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { TINY_QUEUE } from './support.js';

afterAll(closeEngines);

/** A pass at 32 seeds needs about 3 in 4 seeds to meet the goals (the interval's low end above 0.5). */
const QUEUE = { ...TINY_QUEUE, confidence: 0.5 };
const TOLERANCE = 0.05;
const REQUEST: CapacityRequest = {
  problem: QUEUE,
  // two servers of 2 slots carry what one of 4 does (they share one queue), at a server's more cost
  vary: { 'server.replicas': [1, 2], 'server.slots': [2, 4] },
  cost: 'server.replicas * server.slots + server.replicas',
  seeds: 32,
  tolerance: TOLERANCE,
  engine: 'cpu',
};

describe('capacity search, simulated', () => {
  it('agrees with a brute-force scan of the load on each design, and on the Pareto front', async () => {
    const rounds: number[] = [];
    const result = await runCapacity(REQUEST, { onProgress: (p) => rounds.push(p.round) });
    expect(result.designs).toHaveLength(4);
    expect(rounds).toEqual(Array.from({ length: result.rounds }, (_, i) => i + 1));
    for (const d of result.designs) {
      expect(d.rate_scale, JSON.stringify(d.values)).not.toBeNull();
      expect(d.above).not.toBeNull();
      expect(d.above!.verdict).not.toBe('PASS');
      expect(d.above!.rate_scale / d.rate_scale!).toBeLessThanOrEqual(1 + TOLERANCE + 1e-9);
      expect(d.requests_per_second).toBeCloseTo(QUEUE.traffic.rate * d.rate_scale!, 1);
      expect(d.cases.map((c) => c.verdict)).toEqual(['PASS']);
      expect(d.requests_per_second_per_gpu).toBeNull();
    }

    // the scan: each design at rates 1% apart around what the search found, on the same seeds
    const brute: number[] = [];
    for (const d of result.designs) {
      const rates: number[] = [];
      for (let s = d.rate_scale! / 1.25; s <= d.above!.rate_scale * 1.25; s *= 1.01) rates.push(Number((QUEUE.traffic.rate * s).toPrecision(12)));
      const grid = { ...Object.fromEntries(Object.entries(d.values).map(([path, v]) => [path, [v]])), 'traffic.rate': rates };
      const outcome = await runSweep(sweepFromObject({ problem: QUEUE, grid, seeds: 32, engine: 'cpu' }));
      expect(outcome.error).toBeNull();
      const passes = outcome.rows.map((r) => r.summary.verdict === 'PASS');
      expect(passes).toHaveLength(rates.length);
      expect(passes[0], `${JSON.stringify(d.values)} passes at the scan's lowest rate`).toBe(true);
      const first = passes.indexOf(false);
      brute.push(rates[first < 0 ? rates.length - 1 : first - 1]! / QUEUE.traffic.rate);
    }
    for (const [i, d] of result.designs.entries()) {
      expect(d.rate_scale! / brute[i]!, JSON.stringify(d.values)).toBeGreaterThan(1 / (1 + TOLERANCE) ** 2);
      expect(d.rate_scale! / brute[i]!, JSON.stringify(d.values)).toBeLessThan((1 + TOLERANCE) ** 2);
    }
    const bruteFront = paretoFront(result.designs.map((d, i) => ({ cost: d.cost, capacity: brute[i]! })));
    expect(result.designs.map((d) => d.pareto)).toEqual(bruteFront);
    expect(bruteFront.filter((on) => !on)).toHaveLength(1);
  });

  it('refuses to vary the load it searches', async () => {
    await expect(runCapacity({ ...REQUEST, vary: { 'traffic.rate': [10, 20] } })).rejects.toThrow(/vary\.traffic\.rate: the search sets the load itself/);
  });
});
