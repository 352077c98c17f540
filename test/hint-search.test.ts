/**
 * The search core on synthetic pass/fail rules: no simulation, so every claim is exact. Then
 * one small simulated hint (an M/M/c queue), for what a hint result carries beyond the search:
 * the re-check on fresh seeds.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { CaseMargin, HintConfiguration, HintProgress, HintRequest, HintRun } from '../src/hint/api.js';
import { searchCheapest, type SearchAxis } from '../src/hint/frontier.js';
import { freshSeed, runHints } from '../src/hint/search.js';
import { pointVerdict } from '../src/model/verdict.js';
import { closeEngines } from '../src/run/run.js';
import { seededRandom } from './support.js';

afterAll(closeEngines);

type Value = number | string;

/** A grid as sweeps index it (last axis fastest), with a pass rule and a cost on values. */
function grid(axes: readonly SearchAxis[]) {
  const valuesOf = (index: number): Value[] => {
    const out: Value[] = [];
    let rest = index;
    for (let a = axes.length - 1; a >= 0; a--) {
      const n = axes[a]!.values.length;
      out.unshift(axes[a]!.values[rest % n]!);
      rest = Math.floor(rest / n);
    }
    return out;
  };
  const size = axes.reduce((n, a) => n * a.values.length, 1);
  return { valuesOf, size };
}

/**
 * The search on a pass rule; with `estimate`, what it asks to steer by is that rule's answer
 * (an estimate, to be decided again) and only what it asks to decide is `passes`'.
 */
async function search(axes: readonly SearchAxis[], passes: (v: Value[]) => boolean, cost: (v: Value[]) => number, probes?: number, estimate?: (v: Value[]) => boolean) {
  const { valuesOf, size } = grid(axes);
  const batches: Value[][][] = [];
  const outcome = await searchCheapest({
    axes,
    ...(probes === undefined ? {} : { probes }),
    cost: (i) => cost(valuesOf(i)),
    evaluate: async (indexes, decide) => {
      batches.push(indexes.map(valuesOf));
      return new Map(indexes.map((i) => [i, decide || estimate === undefined ? { passes: passes(valuesOf(i)) } : { passes: estimate(valuesOf(i)), decided: false }]));
    },
  });
  return {
    outcome,
    size,
    batches,
    found: outcome.found.map((f) => valuesOf(f.index)),
    cheaper: outcome.found.map((f) => f.cheaper.map(valuesOf)),
    failing: outcome.failing.map(valuesOf),
    violations: outcome.violations.map((v) => ({ at: valuesOf(v.index), passes: v.passes, because: valuesOf(v.because) })),
  };
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

const random = seededRandom;

describe('searchCheapest', () => {
  it('finds every cheapest replicas x slots pair, bisecting rather than sweeping', async () => {
    const axes = [
      { values: range(1, 10), numeric: true },
      { values: range(1, 20), numeric: true },
    ];
    const r = await search(axes, ([a, b]) => (a as number) * (b as number) >= 40, ([a, b]) => (a as number) * (b as number));
    expect(r.found).toEqual([[2, 20], [4, 10], [5, 8], [8, 5], [10, 4]]);
    for (const [k, found] of r.found.entries()) {
      expect(r.outcome.evaluated.get(r.outcome.found[k]!.index)?.passes).toBe(true);
      for (const c of r.outcome.found[k]!.cheaper) expect(r.outcome.evaluated.get(c)?.passes, String(found)).toBe(false);
    }
    expect(r.outcome.costMonotone).toBe(true);
    expect(r.violations).toEqual([]);
    expect(r.outcome.evaluated.size).toBeLessThan(r.size / 3);
  });

  it('searches a single path in a handful of evaluations, and fewer rounds than bisection', async () => {
    const rule = ([s]: Value[]): boolean => (s as number) >= 11;
    const r = await search([{ values: range(2, 24), numeric: true }], rule, ([s]) => 6 * (s as number));
    expect(r.found).toEqual([[11]]);
    expect(r.cheaper).toEqual([[[10]]]);
    expect(r.outcome.evaluated.size).toBeLessThanOrEqual(9);
    const bisection = await search([{ values: range(2, 24), numeric: true }], rule, ([s]) => 6 * (s as number), 1);
    expect(bisection.found).toEqual([[11]]);
    expect(bisection.outcome.evaluated.size).toBeLessThanOrEqual(6);
    expect(r.outcome.rounds).toBeLessThan(bisection.outcome.rounds);
  });

  it('takes numeric values in any order and searches each string value on its own, in batches', async () => {
    const axes = [
      { values: ['round-robin', 'least-loaded', 'cache-aware'], numeric: false },
      { values: [16, 2, 8, 4, 12], numeric: true },
    ];
    const need: Record<string, number> = { 'least-loaded': 8, 'cache-aware': 4 };
    const r = await search(
      axes,
      ([policy, slots]) => need[policy as string] !== undefined && (slots as number) >= need[policy as string]!,
      ([, slots]) => slots as number,
    );
    expect(r.found).toEqual([['cache-aware', 4], ['least-loaded', 8]]);
    expect(r.cheaper).toEqual([[['cache-aware', 2]], [['least-loaded', 4]]]);
    // round robin never passes: its most generous point says why
    expect(r.failing).toEqual([['round-robin', 16]]);
    // every family's most generous point goes out in the first batch
    expect(r.batches[0]).toEqual([['round-robin', 16], ['least-loaded', 16], ['cache-aware', 16]]);
    expect(r.outcome.evaluated.size).toBeLessThan(r.size);
  });

  /** A random grid of two families and one to three numeric axes, a monotone pass rule per family, and a cost. */
  function randomGrid(next: () => number, trial: number) {
    const dims = 1 + Math.floor(next() * 3);
    const axes: SearchAxis[] = [{ values: ['x', 'y'], numeric: false }];
    for (let d = 0; d < dims; d++) axes.push({ values: range(1, 2 + Math.floor(next() * 6)), numeric: true });
    // a monotone rule: a weighted sum over a threshold, per family
    const weights = axes.map(() => next());
    const threshold = { x: next() * 8, y: next() * 12 };
    const passes = (v: Value[]): boolean =>
      v.slice(1).reduce<number>((s, x, k) => s + weights[k + 1]! * (x as number), 0) >= threshold[v[0] as 'x' | 'y'];
    const monotoneCost = trial % 3 !== 0;
    const coef = axes.map(() => (monotoneCost ? 1 : -1) * Math.ceil(next() * 3));
    const cost = (v: Value[]): number => v.slice(1).reduce<number>((s, x, k) => s + coef[k + 1]! * (x as number), 0);
    // each family's cheapest passing points, ties not dominated by another
    const { valuesOf, size } = grid(axes);
    const all = Array.from({ length: size }, (_, i) => valuesOf(i));
    const expected: Value[][] = [];
    for (const family of ['x', 'y']) {
      const passing = all.filter((v) => v[0] === family && passes(v));
      if (passing.length === 0) continue;
      const min = Math.min(...passing.map(cost));
      const ties = passing.filter((v) => cost(v) === min);
      const le = (p: Value[], q: Value[]) => p.every((x, k) => k === 0 || (x as number) <= (q[k] as number));
      expected.push(...ties.filter((t) => !ties.some((o) => o !== t && le(o, t))));
    }
    return { axes, passes, cost, monotoneCost, expected: expected.map(key).sort() };
  }
  const key = (v: Value[]) => v.join(',');

  it('agrees with brute force on random monotone grids, whatever the cost', async () => {
    const next = random(7);
    for (let trial = 0; trial < 60; trial++) {
      const { axes, passes, cost, monotoneCost, expected } = randomGrid(next, trial);
      const r = await search(axes, passes, cost);
      // bisection finds the same, in as many rounds or more
      const bisection = await search(axes, passes, cost, 1);
      expect(bisection.found, `trial ${trial}`).toEqual(r.found);
      expect(bisection.outcome.rounds, `trial ${trial}`).toBeGreaterThanOrEqual(r.outcome.rounds);
      expect(r.found.map(key).sort(), `trial ${trial}`).toEqual(expected);
      expect(r.violations, `trial ${trial}`).toEqual([]);
      expect(r.outcome.costMonotone).toBe(monotoneCost);
    }
  });

  it('steers by estimates wrong a third of the time, yet answers as brute force on what it decides', async () => {
    const next = random(11);
    let estimated = 0;
    for (let trial = 0; trial < 60; trial++) {
      const { axes, passes, cost, expected } = randomGrid(next, trial);
      const r = await search(axes, passes, cost, undefined, (v) => (next() < 1 / 3 ? !passes(v) : passes(v)));
      expect(r.found.map(key).sort(), `trial ${trial}`).toEqual(expected);
      // what the answer shows was decided: what was found, its cheaper neighbours, each failing top
      const { evaluated, found, failing } = r.outcome;
      for (const index of [...found.flatMap((f) => [f.index, ...f.cheaper]), ...failing]) expect(evaluated.get(index)?.decided, `trial ${trial}`).not.toBe(false);
      // wrong estimates are not violations: the rule is monotone
      expect(r.violations, `trial ${trial}`).toEqual([]);
      estimated += [...evaluated.values()].filter((e) => e.decided === false).length;
    }
    // most points were only estimated
    expect(estimated).toBeGreaterThan(60);
  });

  it('checks the lower neighbours it assumed fail, and reports one that passes', async () => {
    // with 1 replica, 4 slots pass but 5 do not: the search bisects past 4 and settles it as
    // failing; checking the cheaper neighbour of (2 replicas, 4 slots) finds it out
    const axes = [
      { values: [1, 2], numeric: true },
      { values: range(1, 8), numeric: true },
    ];
    const rule = ([a, b]: Value[]): boolean => (a === 2 ? (b as number) >= 4 : b === 4 || (b as number) >= 6);
    const r = await search(axes, rule, ([a, b]) => (a as number) + (b as number), 1);
    expect(r.violations).toEqual([{ at: [1, 4], passes: true, because: [1, 5] }]);
    expect(r.found).toEqual([[1, 4]]);
    expect(r.cheaper).toEqual([[[1, 3]]]);
  });

  it('checks what it assumed passes, and reports one that fails', async () => {
    // a cost that falls with slots makes the most slots cheapest; its neighbour was settled
    // as passing from a smaller passing count
    const r = await search([{ values: range(1, 8), numeric: true }], ([s]) => (s as number) >= 3 && s !== 7, ([s]) => -(s as number), 1);
    expect(r.outcome.costMonotone).toBe(false);
    expect(r.found).toEqual([[8]]);
    expect(r.violations).toEqual([{ at: [7], passes: false, because: [4] }]);
  });

  it('reports nothing found when nothing passes, after checking one point half way down', async () => {
    const r = await search([{ values: range(1, 50), numeric: true }], () => false, ([s]) => s as number);
    expect(r.found).toEqual([]);
    expect(r.failing).toEqual([[50]]);
    expect(r.outcome.evaluated.size).toBe(2);
  });

  it('a failing top does not hide a passing range below it: the check finds it, as a violation', async () => {
    const r = await search([{ values: range(1, 50), numeric: true }], ([s]) => (s as number) >= 10 && (s as number) <= 40, ([s]) => s as number);
    expect(r.found).toEqual([[10]]);
    expect(r.violations[0]).toEqual({ at: [25], passes: true, because: [50] });
  });
});

describe('a hint result', () => {
  // mmc: 4 slots serve 32 jobs a second at 80% load; 3 slots are overloaded (rho 1.07)
  const request: HintRequest = { problem: 'mmc', vary: { 'server.slots': [3, 4, 5] }, cost: 'server.slots', seeds: 64 };

  it('carries the re-check on fresh seeds, whether it holds, and margins without binary noise', async () => {
    const progress: HintProgress[] = [];
    const result = await runHints(request, { onProgress: (p) => progress.push(p) });
    expect(progress.map((p) => p.seeds)).toEqual(progress.map(() => 64));
    expect(progress.map((p) => p.verdict)).toEqual(expect.arrayContaining(['PASS', 'FAIL']));
    // the re-check's base seed is derived from the search's, and is another
    expect(result).toMatchObject({ seeds: 64, maxSeeds: 64, seed: 1, verdictLevel: 0.95 });
    expect(result.recheckSeed).toBe(freshSeed(result.seed));
    expect(result.recheckSeed).not.toBe(result.seed);

    expect(result.hints).toHaveLength(1);
    const hint = result.hints[0]!;
    expect(hint.found).toMatchObject({ values: { 'server.slots': 4 }, cost: 4, verdict: 'PASS' });
    expect(hint.cheaper.map((c) => [c.values, c.verdict])).toEqual([[{ 'server.slots': 3 }, 'FAIL']]);
    // what was found and its cheaper neighbours were run again; the failing top was not
    const rechecked: HintConfiguration[] = [hint.found, ...hint.cheaper];
    for (const c of rechecked) expect(['PASS', 'FAIL', 'UNDECIDED'], JSON.stringify(c.values)).toContain(c.recheck?.verdict);
    expect(result.failing).toEqual([]);
    const runs: HintRun[] = rechecked.flatMap((c) => [c, c.recheck!]);
    for (const r of runs) expect(r.verdict).toBe(pointVerdict(r.cases.map((m) => m.verdict)));
    // on other seeds: as many, other numbers
    expect(hint.found.recheck!.cases.map((m) => [m.case, m.seeds])).toEqual([['as-given', 64]]);
    expect(hint.found.recheck!.cases[0]!.p99_ms).not.toBe(hint.found.cases[0]!.p99_ms);

    // holds: the found one passes again, and no neighbour's verdict turned over
    const turned = (c: HintConfiguration): boolean =>
      (c.verdict === 'PASS' && c.recheck?.verdict === 'FAIL') || (c.verdict === 'FAIL' && c.recheck?.verdict === 'PASS');
    expect(typeof hint.holds).toBe('boolean');
    expect(hint.holds).toBe(hint.found.recheck!.verdict === 'PASS' && !hint.cheaper.some(turned));
    // M/M/4 at 80% load passes far from its goals and 3 slots overload: nothing here is near noise
    expect(hint.holds).toBe(true);

    // every margin is resolved: no binary noise (1 - 0.99 is 0.010000000000000009)
    const margins: CaseMargin[] = runs.flatMap((r) => r.cases);
    for (const m of margins) {
      for (const v of [m.success_margin, m.pass_probability_margin, m.p99_margin_ms]) expect(Number(v.toPrecision(12)), m.case).toBe(v);
      expect(m.ttft_p99_margin_ms).toBeNull();
      expect(m.tpot_p99_margin_ms).toBeNull();
    }
    expect(hint.found.cases[0]).toMatchObject({ success: 1, success_margin: 0.01 });
    expect(hint.found.recheck!.cases[0]!.success_margin).toBe(0.01);
    expect(hint.found.cases[0]!.pass_probability_margin).toBeGreaterThan(0);
    expect(hint.cheaper[0]!.cases[0]!.pass_probability_margin).toBeLessThan(0);
  });

  it('re-checks from the seed it is given: the search\'s own seed reruns the same seeds', async () => {
    const same = await runHints({ ...request, vary: { 'server.slots': [4] }, recheckSeed: 1 });
    expect(same).toMatchObject({ seed: 1, recheckSeed: 1 });
    const { found } = same.hints[0]!;
    expect(found.recheck?.cases).toEqual(found.cases);
  });
});
