/**
 * Hints on the two seed problems, simulated (a case or two, at most 128 seeds: the claims are
 * about the search, not the calibration): what is found passes when run on its own and was
 * re-checked, each cheaper neighbour does not pass (it fails or is still undecided at the cap),
 * and the search evaluates a small part of the grid.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { HintResult } from '../src/hint/api.js';
import { runHints, UNORDERED_PATHS } from '../src/hint/search.js';
import { loadProblem } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { AUTO_FIRST_SEEDS } from '../src/model/verdict.js';
import { problemFile } from './support.js';

/** Seeds until decided, capped low enough to keep the file fast. */
const SEEDS = { seeds: 'auto', maxSeeds: 128 } as const;

afterAll(closeEngines);

/** Runs the found configuration with plain `run` machinery (the same seeds), apart from the search. */
async function passesOnItsOwn(name: string, cases: readonly string[], values: Readonly<Record<string, number | string>>): Promise<boolean> {
  const problem = loadProblem(problemFile(name), Object.entries(values).map(([path, v]) => `${path}=${v}`));
  const { rows } = await runProblem(problem, { caseNames: cases, seeds: AUTO_FIRST_SEEDS, maxSeeds: SEEDS.maxSeeds, baseSeed: problem.seed, engine: 'auto' });
  return rows.length === cases.length && rows.every((r) => r.verdict === 'PASS');
}

function checkNeighbours(result: HintResult, numericPaths: readonly string[]): void {
  for (const hint of result.hints) {
    // one lower value on each numeric path that has one, each not passing some case, with a reason
    const lowered = hint.cheaper.map((c) => numericPaths.find((p) => c.values[p]! < hint.found.values[p]!));
    expect(new Set(lowered).size).toBe(hint.cheaper.length);
    for (const c of hint.cheaper) {
      expect(c.verdict, JSON.stringify(c.values)).not.toBe('PASS');
      expect(c.recheck?.verdict, JSON.stringify(c.values)).toBeDefined();
      const open = c.cases.filter((m) => !m.passes);
      expect(open.length, JSON.stringify(c.values)).toBeGreaterThan(0);
      for (const m of open) {
        expect(m.passes).toBe(m.verdict === 'PASS');
        expect(m.why).toMatch(
          m.verdict === 'FAIL'
            ? new RegExp(`^${m.case}: (success|p99|pass probability) `)
            : new RegExp(`^${m.case}: undecided at ${m.seeds} seeds: `),
        );
      }
    }
    expect(hint.found.verdict).toBe('PASS');
    expect(hint.found.recheck?.verdict).toBeDefined();
    for (const m of hint.found.cases) {
      // a passing case explains nothing, but that its window may not be in steady state
      expect(m).toMatchObject({ verdict: 'PASS', passes: true });
      expect(m.why).toMatch(new RegExp(`^$|^${m.case}: measured window not in steady state `));
      expect(m.seeds).toBeGreaterThanOrEqual(AUTO_FIRST_SEEDS);
      expect(m.seeds).toBeLessThanOrEqual(SEEDS.maxSeeds);
      expect(m.pass_probability_margin).toBeGreaterThanOrEqual(0);
      expect(m.success_margin).toBeGreaterThanOrEqual(0);
      expect(m.p99_margin_ms).toBeGreaterThanOrEqual(0);
    }
  }
}

describe('hints on the seed problems', () => {
  it('hot prefix: the slots a load-spreading router needs; prefix affinity never passes', async () => {
    const cases = ['as-given', 'peak-hour'];
    const vary = { 'router.policy': ['prefix-affinity', 'least-loaded'], 'gpu.slots': { from: 2, to: 24, step: 1 } };
    const progress: number[] = [];
    const result = await runHints({ problem: 'hot-prefix', vary, cases, ...SEEDS }, { onProgress: (p) => progress.push(p.evaluated) });
    expect(result.hints).toHaveLength(1);
    const { found } = result.hints[0]!;
    expect(found.values['router.policy']).toBe('least-loaded');
    expect(found.cost).toBe(6 * (found.values['gpu.slots'] as number));
    expect(result.hints[0]!.cheaper.map((c) => c.values['gpu.slots'])).toEqual([(found.values['gpu.slots'] as number) - 1]);
    checkNeighbours(result, ['gpu.slots']);
    expect(result.failing.map((f) => f.values)).toEqual([{ 'router.policy': 'prefix-affinity', 'gpu.slots': 24 }]);
    // prefix affinity fails outright (decided at the first look), it is not merely undecided
    expect(result.failing[0]!.verdict).toBe('FAIL');
    expect(result.monotonicityViolations).toEqual([]);
    // bisection, one point a round, finds the same in more rounds
    const bisection = await runHints({ problem: 'hot-prefix', vary, cases, ...SEEDS }, { probes: 1 });
    expect(bisection.hints.map((h) => h.found.values)).toEqual(result.hints.map((h) => h.found.values));
    expect(bisection.rounds).toBeGreaterThan(result.rounds);
    expect(result.gridSize).toBe(46);
    expect(result.evaluated).toBeLessThan(result.gridSize / 3);
    // each point counts once, when first evaluated; a point decided after its first look is reported again
    expect([...new Set(progress)]).toEqual(Array.from({ length: result.evaluated }, (_, i) => i + 1));
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(await passesOnItsOwn('hot-prefix', cases, found.values)).toBe(true);
  });

  it('coding agents: replicas x slots under session affinity', async () => {
    const cases = ['as-given'];
    const result = await runHints({
      problem: 'coding-agents',
      vary: { 'router.policy': ['prefix-affinity'], 'gpu.replicas': { from: 6, to: 10, step: 1 }, 'gpu.slots': [2, 3, 4] },
      cases,
      ...SEEDS,
    });
    expect(result.hints.length).toBeGreaterThan(0);
    checkNeighbours(result, ['gpu.replicas', 'gpu.slots']);
    const cheapest = result.hints[0]!.found;
    expect(cheapest.cost).toBe((cheapest.values['gpu.replicas'] as number) * (cheapest.values['gpu.slots'] as number));
    for (const h of result.hints) expect(h.found.cost).toBe(cheapest.cost);
    expect(result.monotonicityViolations).toEqual([]);
    expect(result.evaluated).toBeLessThan(result.gridSize);
    expect(await passesOnItsOwn('coding-agents', cases, cheapest.values)).toBe(true);
  });
});

describe('a hint across co-located and disaggregated designs (gpu.disaggregation)', () => {
  it('searches the prefill replicas value by value, more of them not being better: 3 of 8 on long prompts', async () => {
    const result = await runHints({
      problem: 'long-prompts',
      vary: { 'gpu.replicas': [7, 8], 'gpu.disaggregation.prefill': [0, 2, 3, 4] },
      cases: ['as-given', 'peak-hour'],
      ...SEEDS,
    });
    const found = result.hints.map((h) => h.found.values);
    expect(found[0]).toEqual({ 'gpu.replicas': 8, 'gpu.disaggregation.prefill': 3 });
    // searched as ordered, prefill 4's failure would have ruled out 3 below it
    expect(result.hints[0]!.found.verdict).toBe('PASS');
    expect(result.failing.map((f) => f.values)).toContainEqual({ 'gpu.replicas': 8, 'gpu.disaggregation.prefill': 4 });
    expect(result.monotonicityViolations).toEqual([]);
  });

  it('names only numeric paths of the problem schema as searched value by value', () => {
    for (const path of UNORDERED_PATHS) {
      const problem = loadProblem(problemFile('long-prompts'), [`${path}=1`]);
      expect(problem.gpu!.disaggregation!.prefill, path).toBe(1);
    }
    expect([...UNORDERED_PATHS]).toEqual(['gpu.disaggregation.prefill']);
  });
});
