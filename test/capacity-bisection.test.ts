/**
 * The capacity search's core on synthetic capacities (a design passes a load when the load is
 * at most its capacity): no simulation, so every claim is exact. Each answer is checked against
 * a brute-force scan of the same pass rule, and the Pareto front against the scan's.
 */
import { describe, expect, it } from 'vitest';
import { bisectionLevels, paretoFront, searchCapacities, type DesignPlace, type Probe, type ProbeResult } from '../src/capacity/bisection.js';

const TOLERANCE = 0.02;
const MIN_SCALE = 1 / 1000;
const MAX_SCALE = 1000;

interface Design extends DesignPlace {
  readonly capacity: number;
  readonly cost: number;
}

/** Designs of the families given, on a grid of numeric ranks (each family's ranks alike). */
function designs(families: readonly string[], shape: readonly number[], capacity: (family: number, ranks: readonly number[]) => number): Design[] {
  const out: Design[] = [];
  const size = shape.reduce((n, s) => n * s, 1);
  for (const [f, family] of families.entries()) {
    for (let i = 0; i < size; i++) {
      let rest = i;
      const ranks = shape.map(() => 0);
      for (let a = shape.length - 1; a >= 0; a--) {
        ranks[a] = rest % shape[a]!;
        rest = Math.floor(rest / shape[a]!);
      }
      out.push({ family, ranks, capacity: capacity(f, ranks), cost: 1 + ranks.reduce((s, r) => s + r, 0) + f * 0.5 });
    }
  }
  return out;
}

async function search(grid: readonly Design[], refuses: (scale: number) => boolean = () => false) {
  const asked: Probe[][] = [];
  const outcome = await searchCapacities<ProbeResult>({
    designs: grid,
    tolerance: TOLERANCE,
    minScale: MIN_SCALE,
    maxScale: MAX_SCALE,
    evaluate: (probes) => {
      asked.push([...probes]);
      return Promise.resolve(probes.map((p) => (refuses(p.scale) ? { passes: false, refused: true } : { passes: p.scale <= grid[p.design]!.capacity })));
    },
  });
  return { outcome, asked };
}

/** The brute-force capacity: the highest scale of a ladder 0.1% apart that passes. */
function bruteForce(capacity: number): number | null {
  let best: number | null = null;
  for (let s = MIN_SCALE; s <= MAX_SCALE; s *= 1.001) if (s <= capacity) best = s;
  return best;
}

describe('bisection levels', () => {
  it('takes both ends first, then halves', () => {
    expect(bisectionLevels(1)).toEqual([0]);
    expect(bisectionLevels(2)).toEqual([0, 0]);
    expect(bisectionLevels(5)).toEqual([0, 2, 1, 2, 0]);
    expect(bisectionLevels(9)).toEqual([0, 3, 2, 3, 1, 3, 2, 3, 0]);
  });
});

describe('capacity search on synthetic capacities', () => {
  it('brackets every capacity within the tolerance on its own probes, and finds the brute-force front', async () => {
    // two families on a 5 x 4 grid, capacities rising with both paths, 7% apart at least
    const grid = designs(['a', 'b'], [5, 4], (f, [x, y]) => (f === 0 ? 0.3 : 1.7) * 1.07 ** (x! + 2 * y!) * (1 + 0.001 * x!));
    const { outcome, asked } = await search(grid);
    const probed = new Set(asked.flat().map((p) => `${p.design}@${p.scale}`));
    for (const [d, found] of outcome.designs.entries()) {
      const { capacity } = grid[d]!;
      expect(found.lower, `design ${d}`).not.toBeNull();
      expect(found.upper, `design ${d}`).not.toBeNull();
      expect(found.lower!.scale).toBeLessThanOrEqual(capacity);
      expect(found.upper!.scale).toBeGreaterThan(capacity);
      expect(found.upper!.scale / found.lower!.scale).toBeLessThanOrEqual(1 + TOLERANCE + 1e-9);
      // a capacity is the design's own pass; the load above it, its own or a design's above it
      expect(probed.has(`${d}@${found.lower!.scale}`)).toBe(true);
      expect(probed.has(`${found.upperFrom}@${found.upper!.scale}`)).toBe(true);
      expect(grid[found.upperFrom]!.family).toBe(grid[d]!.family);
      expect(grid[found.upperFrom]!.ranks.every((r, a) => r >= grid[d]!.ranks[a]!)).toBe(true);
      const brute = bruteForce(capacity)!;
      expect(found.lower!.scale).toBeGreaterThanOrEqual(brute / (1 + TOLERANCE));
    }
    const front = paretoFront(outcome.designs.map((f, d) => ({ cost: grid[d]!.cost, capacity: f.lower?.scale ?? null })));
    const bruteFront = paretoFront(grid.map((g) => ({ cost: g.cost, capacity: bruteForce(g.capacity) })));
    expect(front).toEqual(bruteFront);
    expect(front.some((on) => !on)).toBe(true);
    expect(outcome.violations).toEqual([]);
  });

  it('shares what designs show: fewer probes than searching each design alone', async () => {
    // capacities that level off: the top half of the path all alike
    const grid = designs(['a'], [17], (_f, [x]) => 0.8 * 1.1 ** Math.min(x!, 8));
    const { outcome } = await search(grid);
    const alone = await Promise.all(grid.map(async (g) => (await search([{ ...g, ranks: [0] }])).outcome.designs[0]!.probes));
    const shared = outcome.designs.reduce((s, d) => s + d.probes, 0);
    expect(shared).toBeLessThan(0.6 * alone.reduce((s, n) => s + n, 0));
    for (const [d, found] of outcome.designs.entries()) {
      expect(found.lower!.scale).toBeLessThanOrEqual(grid[d]!.capacity);
      expect(found.upper!.scale).toBeGreaterThan(grid[d]!.capacity);
      expect(found.upper!.scale / found.lower!.scale).toBeLessThanOrEqual(1 + TOLERANCE + 1e-9);
    }
    // on the plateau, a design above closes a bracket with its failure
    expect(outcome.designs.filter((f, d) => f.upperFrom !== d).length).toBeGreaterThan(4);
    // each probe of a round is in one batch; no round repeats a design
    expect(outcome.rounds).toBeGreaterThan(0);
  });

  it('stops at the loads the problem refuses, and at the search\'s limits', async () => {
    const grid = designs(['a'], [4], (_f, [x]) => [0.01, 0.5, 10, 5000][x!]!);
    const { outcome } = await search(grid, (scale) => scale > 6 || scale < 0.05);
    const [none, half, refusedAbove, alsoRefused] = outcome.designs;
    // fails down to the least load accepted
    expect(none!.lower).toBeNull();
    expect(none!.upper!.scale).toBeGreaterThanOrEqual(0.05);
    expect(none!.upper!.scale).toBeLessThanOrEqual(0.05 * (1 + TOLERANCE) ** 2);
    expect(half!.lower!.scale).toBeLessThanOrEqual(0.5);
    expect(half!.upper!.scale / half!.lower!.scale).toBeLessThanOrEqual(1 + TOLERANCE + 1e-9);
    for (const found of [refusedAbove!, alsoRefused!]) {
      expect(found.upper!.result.refused).toBe(true);
      expect(found.lower!.scale).toBeLessThanOrEqual(6);
      expect(found.upper!.scale / found.lower!.scale).toBeLessThanOrEqual(1 + TOLERANCE + 1e-9);
    }
  });

  it('passes at the highest scale, or at none down to the lowest', async () => {
    const grid = designs(['a', 'b'], [1], (f) => (f === 0 ? 1e-6 : 1e6));
    const { outcome } = await search(grid);
    expect(outcome.designs[0]).toMatchObject({ lower: null, upper: { scale: MIN_SCALE } });
    expect(outcome.designs[1]).toMatchObject({ lower: { scale: MAX_SCALE }, upper: null });
  });

  it('reports a design whose own probes contradict "more never lowers the capacity", and still brackets it', async () => {
    const caps = [1, 2, 0.7, 3, 4];
    const grid = designs(['a'], [5], (_f, [x]) => caps[x!]!);
    const { outcome } = await search(grid);
    expect(outcome.violations.length).toBeGreaterThan(0);
    expect(outcome.violations.every((v) => v.design === 2 || v.because === 2)).toBe(true);
    for (const [d, found] of outcome.designs.entries()) {
      expect(found.lower!.scale).toBeLessThanOrEqual(caps[d]!);
      expect(found.upper!.scale).toBeGreaterThan(caps[d]!);
      expect(found.upper!.scale / found.lower!.scale).toBeLessThanOrEqual(1 + TOLERANCE + 1e-9);
    }
  });
});

describe('monotonicity violations', () => {
  /** Two designs, the second above the first, where the second does not pass in a band the first passes. */
  async function band(decided: boolean) {
    const grid = designs(['a'], [2], () => 1);
    return searchCapacities<ProbeResult>({
      designs: grid,
      tolerance: TOLERANCE,
      minScale: MIN_SCALE,
      maxScale: MAX_SCALE,
      evaluate: (probes) =>
        Promise.resolve(probes.map((p) => (p.design === 1 && p.scale > 0.6 && p.scale <= 1 ? { passes: false, decided } : { passes: p.scale <= 1 }))),
    });
  }

  it('are what decided probes contradict, not what is still within seed noise', async () => {
    const failing = await band(true);
    expect(failing.violations.length).toBeGreaterThan(0);
    expect(failing.violations.every((v) => v.design === 1 && !v.passes && v.because === 0)).toBe(true);
    expect((await band(false)).violations).toEqual([]);
  });
});

describe('Pareto front', () => {
  it('keeps a design no other matches at no more cost, and drops designs without a capacity', () => {
    const front = paretoFront([
      { cost: 1, capacity: 10 },
      { cost: 2, capacity: 10 }, // as much for more
      { cost: 2, capacity: 15 },
      { cost: 3, capacity: 12 }, // less for more
      { cost: 0.5, capacity: null },
      { cost: 4, capacity: 20 },
      { cost: 4, capacity: 20 }, // a tie: neither beats the other
    ]);
    expect(front).toEqual([true, false, true, false, false, true, true]);
  });
});
