/**
 * Hints on the two seed problems, simulated (few seeds: the claims are about the search, not
 * the calibration): what is found passes when run on its own, each cheaper neighbour fails,
 * and the search evaluates a small part of the grid.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { HintResult } from '../src/hint/api.js';
import { runHints } from '../src/hint/search.js';
import { loadProblem } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { problemFile } from './support.js';

const SEEDS = 8;

afterAll(closeEngines);

/** Runs the found configuration with plain `run` machinery, apart from the search. */
async function passesOnItsOwn(name: string, values: Readonly<Record<string, number | string>>): Promise<boolean> {
  const problem = loadProblem(problemFile(name), Object.entries(values).map(([path, v]) => `${path}=${v}`));
  const { rows } = await runProblem(problem, { seeds: SEEDS, baseSeed: problem.seed, engine: 'auto' });
  return rows.every((r) => r.passes);
}

function checkNeighbours(result: HintResult, numericPaths: readonly string[]): void {
  for (const hint of result.hints) {
    // one lower value on each numeric path that has one, each failing some case with a reason
    const lowered = hint.cheaper.map((c) => numericPaths.find((p) => c.values[p]! < hint.found.values[p]!));
    expect(new Set(lowered).size).toBe(hint.cheaper.length);
    for (const c of hint.cheaper) {
      const failing = c.cases.filter((m) => !m.passes);
      expect(failing.length, JSON.stringify(c.values)).toBeGreaterThan(0);
      for (const m of failing) expect(m.why).toMatch(new RegExp(`^${m.case}: (success|p99|pass probability) `));
    }
    for (const m of hint.found.cases) {
      expect(m.passes).toBe(true);
      expect(m.success_margin).toBeGreaterThanOrEqual(-1e-12);
      expect(m.p99_margin_ms).toBeGreaterThanOrEqual(0);
    }
  }
}

describe('hints on the seed problems', () => {
  it('hot prefix: the slots a load-spreading router needs; prefix affinity never passes', async () => {
    const progress: number[] = [];
    const result = await runHints(
      {
        problem: 'hot-prefix',
        vary: { 'router.policy': ['prefix-affinity', 'least-loaded'], 'gpu.slots': { from: 2, to: 24, step: 1 } },
        seeds: SEEDS,
      },
      { onProgress: (p) => progress.push(p.evaluated) },
    );
    expect(result.hints).toHaveLength(1);
    const { found } = result.hints[0]!;
    expect(found.values['router.policy']).toBe('least-loaded');
    expect(found.cost).toBe(6 * (found.values['gpu.slots'] as number));
    expect(result.hints[0]!.cheaper.map((c) => c.values['gpu.slots'])).toEqual([(found.values['gpu.slots'] as number) - 1]);
    checkNeighbours(result, ['gpu.slots']);
    expect(result.failing.map((f) => f.values)).toEqual([{ 'router.policy': 'prefix-affinity', 'gpu.slots': 24 }]);
    expect(result.monotonicityViolations).toEqual([]);
    // bisection, one point a round, finds the same in more rounds
    const bisection = await runHints(
      { problem: 'hot-prefix', vary: { 'router.policy': ['prefix-affinity', 'least-loaded'], 'gpu.slots': { from: 2, to: 24, step: 1 } }, seeds: SEEDS },
      { probes: 1 },
    );
    expect(bisection.hints.map((h) => h.found.values)).toEqual(result.hints.map((h) => h.found.values));
    expect(bisection.rounds).toBeGreaterThan(result.rounds);
    expect(result.gridSize).toBe(46);
    expect(result.evaluated).toBeLessThanOrEqual(10);
    expect(progress).toEqual(Array.from({ length: result.evaluated }, (_, i) => i + 1));
    expect(await passesOnItsOwn('hot-prefix', found.values)).toBe(true);
  });

  it('coding agents: replicas x slots under session affinity', async () => {
    const result = await runHints(
      {
        problem: 'coding-agents',
        vary: { 'router.policy': ['prefix-affinity'], 'gpu.replicas': { from: 6, to: 10, step: 1 }, 'gpu.slots': [2, 3, 4] },
        seeds: SEEDS,
      },
      {},
    );
    expect(result.hints.length).toBeGreaterThan(0);
    checkNeighbours(result, ['gpu.replicas', 'gpu.slots']);
    const cheapest = result.hints[0]!.found;
    expect(cheapest.cost).toBe((cheapest.values['gpu.replicas'] as number) * (cheapest.values['gpu.slots'] as number));
    for (const h of result.hints) expect(h.found.cost).toBe(cheapest.cost);
    expect(result.monotonicityViolations).toEqual([]);
    expect(result.evaluated).toBeLessThan(result.gridSize);
    expect(await passesOnItsOwn('coding-agents', cheapest.values)).toBe(true);
  });
});
