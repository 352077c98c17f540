/**
 * The search for the cheapest passing grid points, apart from any simulation: it asks an
 * `evaluate` function about batches of point indexes, so tests can drive it with synthetic
 * pass/fail rules.
 *
 * Grid points are indexed as sweeps index them (the last axis varies fastest). String-valued
 * axes split the grid into families (one per combination, e.g. per router policy), each
 * searched on its own. Within a family the search assumes that a larger value on a numeric
 * axis never turns a pass into a failure, so one evaluated point settles many: a pass passes
 * every point above it, a failure fails every point below it. It then
 *
 * 1. evaluates each family's most generous point: when that fails, nothing in the family
 *    passes (and it is what to show the learner) — checked on the point half way down each
 *    numeric axis, whose pass would be a violation and reopens the family;
 * 2. walks the combinations of the other numeric axes and searches the longest numeric axis
 *    for its lowest passing value, `probes` points of the open interval a round (a k-ary
 *    search: fewer rounds of larger batches than bisection), skipping what is already
 *    settled and, when the cost grows
 *    with every numeric axis (checked on the whole grid, it is only arithmetic), whatever
 *    costs more than the cheapest pass found so far;
 * 3. verifies: the cheapest points settled as passing are decided, as is the next lower
 *    value on each numeric axis from each of them, each family's failing top, and any
 *    estimate that alone settles a point as cheap as those found as failing. A point whose
 *    decided evaluation contradicts what other decided points settled for it is a
 *    monotonicity violation; the search is redone with the new facts until all of these are
 *    decided.
 *
 * Steps 1 and 2 steer: they may ask for an estimate (`decide` false), which the evaluator may
 * answer more cheaply and which step 3 decides again before the answer rests on it. An
 * estimate that turns out wrong only costs evaluations: what is found passes on a decided
 * evaluation, and its cheaper neighbours do not.
 */

export interface SearchAxis {
  readonly values: readonly (number | string)[];
  /** Searched assuming more never hurts; otherwise every value is a family of its own. */
  readonly numeric: boolean;
}

export interface Evaluation {
  readonly passes: boolean;
  /** False for an estimate to steer by, which is decided again before an answer rests on it; absent: decided. */
  readonly decided?: boolean;
}

/**
 * Evaluates grid points; resolves with a result for every index asked, decided ones when
 * `decide` is true (else estimates, or decided ones where they cost no more).
 */
export type Evaluator<E extends Evaluation> = (indexes: readonly number[], decide: boolean) => Promise<ReadonlyMap<number, E>>;

export interface SearchInput<E extends Evaluation> {
  readonly axes: readonly SearchAxis[];
  /** A finite cost per grid point index. */
  readonly cost: (index: number) => number;
  readonly evaluate: Evaluator<E>;
  /** Points of the open interval asked a round; default {@link DEFAULT_PROBES} (1: bisection). */
  readonly probes?: number;
}

/**
 * Probes a round: a round's points go to the engines as one batch, which costs little more
 * than one point, so three probes (four sub-intervals) halve the rounds bisection takes.
 */
export const DEFAULT_PROBES = 3;

export interface Violation {
  /** The evaluated point. */
  readonly index: number;
  readonly passes: boolean;
  /** The earlier evaluated point the search had settled it from. */
  readonly because: number;
}

export interface Found {
  readonly index: number;
  /** One step down each numeric axis (that has a lower value), all decided. */
  readonly cheaper: readonly number[];
}

export interface SearchOutcome<E extends Evaluation> {
  /** The cheapest passing points of each family (ties not dominated by another), cheapest first. */
  readonly found: readonly Found[];
  /** The most generous point of each family where nothing passes, all decided. */
  readonly failing: readonly number[];
  readonly evaluated: ReadonlyMap<number, E>;
  readonly violations: readonly Violation[];
  /** Whether the cost never falls as a numeric value rises (then the search prunes by cost). */
  readonly costMonotone: boolean;
  /** Calls of `evaluate`: the rounds the search took. */
  readonly rounds: number;
}

/** Relative slack for cost ties: 0.1 + 0.2 and 0.3 cost the same. */
const COST_EPSILON = 1e-9;

function cheaperThan(a: number, b: number): boolean {
  // Infinity stands for "none found yet"
  return Number.isFinite(b) ? a < b - COST_EPSILON * Math.max(1, Math.abs(b)) : a < b;
}

type Settled = { readonly status: 'pass' | 'fail'; readonly from: number } | { readonly status: 'unknown' };

export async function searchCheapest<E extends Evaluation>(input: SearchInput<E>): Promise<SearchOutcome<E>> {
  const { axes, cost } = input;
  const lengths = axes.map((a) => a.values.length);
  const strides = new Array<number>(axes.length);
  let size = 1;
  for (let a = axes.length - 1; a >= 0; a--) {
    strides[a] = size;
    size *= lengths[a]!;
  }
  const numeric = axes.flatMap((a, i) => (a.numeric ? [i] : []));
  const strings = axes.flatMap((a, i) => (a.numeric ? [] : [i]));
  // numeric axes are walked by rank (ascending value), whatever order the values came in
  const order = axes.map((a) =>
    a.values.map((_, i) => i).sort((x, y) => (a.numeric ? (a.values[x] as number) - (a.values[y] as number) : x - y)),
  );
  const rankOf = order.map((o) => {
    const r = new Array<number>(o.length);
    o.forEach((valueIndex, rank) => (r[valueIndex] = rank));
    return r;
  });

  /** Axis coordinates of a point, as ranks. */
  const ranks = (index: number): number[] => axes.map((_, a) => rankOf[a]![Math.floor(index / strides[a]!) % lengths[a]!]!);
  const pointAt = (r: readonly number[]): number => r.reduce((sum, rank, a) => sum + order[a]![rank]! * strides[a]!, 0);
  /** p <= q: same family, no numeric axis higher. */
  const below = (p: readonly number[], q: readonly number[]): boolean =>
    strings.every((a) => p[a] === q[a]) && numeric.every((a) => p[a]! <= q[a]!);

  const costs = new Float64Array(size);
  for (let i = 0; i < size; i++) costs[i] = cost(i);
  const costMonotone = Array.from({ length: size }, (_, i) => i).every((i) => {
    const r = ranks(i);
    return numeric.every((a) => r[a]! + 1 >= lengths[a]! || !cheaperThan(costs[pointAt(r.map((v, b) => (b === a ? v + 1 : v)))]!, costs[i]!));
  });

  const probes = Math.max(1, Math.floor(input.probes ?? DEFAULT_PROBES));
  let rounds = 0;
  // each point's latest evaluation: a decided one replaces an estimate
  const evaluated = new Map<number, E>();
  const passed = new Map<number, number[]>();
  const failed = new Map<number, number[]>();
  const violations: Violation[] = [];
  const decided = (index: number): boolean => evaluated.get(index)?.decided !== false;

  /** What the evaluations (or only the decided ones) settle for a point. */
  const settled = (index: number, decidedOnly = false): Settled => {
    const done = evaluated.get(index);
    if (done !== undefined) return { status: done.passes ? 'pass' : 'fail', from: index };
    const r = ranks(index);
    const passFrom = first(passed, (p, i) => (!decidedOnly || decided(i)) && below(p, r));
    const failFrom = first(failed, (f, i) => (!decidedOnly || decided(i)) && below(r, f));
    // contradicting evidence (a violation, or estimates at odds) settles nothing
    if (passFrom !== undefined && failFrom === undefined) return { status: 'pass', from: passFrom };
    if (failFrom !== undefined && passFrom === undefined) return { status: 'fail', from: failFrom };
    return { status: 'unknown' };
  };

  // families ask for points concurrently; the asks of one turn go out as one round
  let pending = { steer: new Set<number>(), decide: new Set<number>() };
  let flush: Promise<void> | null = null;
  let last: Promise<void> = Promise.resolve();
  const need = (indexes: readonly number[], decide: boolean): Promise<void> => {
    for (const i of indexes) {
      if (decide ? evaluated.has(i) && decided(i) : evaluated.has(i)) continue;
      (decide ? pending.decide : pending.steer).add(i);
    }
    if (pending.steer.size + pending.decide.size === 0) return Promise.resolve();
    // setImmediate runs once every family has reached its next ask (or its end)
    flush ??= last = last.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(async () => {
      const asked = pending;
      pending = { steer: new Set(), decide: new Set() };
      flush = null;
      rounds++;
      const steer = [...asked.steer].filter((i) => !asked.decide.has(i));
      const decide = [...asked.decide];
      // what other decided points had settled for each, before this round
      const before = new Map([...steer, ...decide].map((i) => [i, evaluated.has(i) ? ({ status: 'unknown' } as const) : settled(i, true)]));
      const [steered, decisions] = await Promise.all([
        steer.length === 0 ? new Map<number, E>() : input.evaluate(steer, false),
        decide.length === 0 ? new Map<number, E>() : input.evaluate(decide, true),
      ]);
      for (const [batch, results] of [[steer, steered], [decide, decisions]] as const) {
        for (const index of batch) {
          const result = results.get(index);
          if (result === undefined) throw new Error(`the evaluator gave no result for grid point ${index}`);
          const was = before.get(index)!;
          if (result.decided !== false && was.status !== 'unknown' && (was.status === 'pass') !== result.passes) {
            violations.push({ index, passes: result.passes, because: was.from });
          }
          evaluated.set(index, result);
          (result.passes ? failed : passed).delete(index);
          (result.passes ? passed : failed).set(index, ranks(index));
        }
      }
    });
    return flush;
  };

  const familyCount = strings.reduce((n, a) => n * lengths[a]!, 1);
  const families = Array.from({ length: familyCount }, (_, f) => {
    const r = new Array<number>(axes.length).fill(0);
    let rest = f;
    for (let k = strings.length - 1; k >= 0; k--) {
      const a = strings[k]!;
      r[a] = rest % lengths[a]!;
      rest = Math.floor(rest / lengths[a]!);
    }
    return r;
  });
  const topOf = (family: readonly number[]): number => pointAt(family.map((r, a) => (axes[a]!.numeric ? lengths[a]! - 1 : r)));

  const inner = numeric.reduce<number | undefined>((best, a) => (best === undefined || lengths[a]! > lengths[best]! ? a : best), undefined);
  const outer = numeric.filter((a) => a !== inner);

  const searchFamily = async (family: readonly number[]): Promise<void> => {
    const top = topOf(family);
    await need([top], false);
    if (inner === undefined) return;
    if (!evaluated.get(top)!.passes) {
      // a failing top settles the whole family: check that on one point half way down
      const mid = pointAt(family.map((r, a) => (axes[a]!.numeric ? (lengths[a]! - 1) >> 1 : r)));
      await need([mid], false);
      if (!evaluated.get(mid)!.passes) return;
    }
    const n = lengths[inner]!;
    let best = Number.POSITIVE_INFINITY;
    // outer combinations from the most generous down: their failures bound the ones below
    for (const combo of odometerDown(outer.map((a) => lengths[a]!))) {
      const r = [...family];
      outer.forEach((a, k) => (r[a] = combo[k]!));
      const at = (rank: number): number => {
        r[inner] = rank;
        return pointAt(r);
      };
      let lo = 0;
      while (lo < n && settled(at(lo)).status === 'fail') lo++;
      let hi = lo;
      while (hi < n && settled(at(hi)).status !== 'pass') hi++;
      let upper = hi;
      if (costMonotone) while (upper > lo && cheaperThan(best, costs[at(upper - 1)]!)) upper--;
      let l = lo;
      let u = upper;
      while (l < u) {
        // ranks splitting [l, u) into probes + 1 parts (bisection's midpoint when probes = 1)
        const ms = [...new Set(Array.from({ length: probes }, (_, k) => l + Math.floor(((k + 1) * (u - l)) / (probes + 1))))];
        const unknown = ms.map(at).filter((point) => settled(point).status === 'unknown');
        if (unknown.length > 0) await need(unknown, false);
        // the lowest passing probe bounds from above, the failures below it from below
        for (const m of ms) {
          if (settled(at(m)).status === 'pass') {
            u = m;
            break;
          }
          l = m + 1;
        }
      }
      if (l < n && settled(at(l)).status === 'pass') best = Math.min(best, costs[at(l)]!);
    }
  };
  const cheaperNeighbours = (index: number): number[] => {
    const r = ranks(index);
    return numeric.filter((a) => r[a]! > 0).map((a) => pointAt(r.map((v, b) => (b === a ? v - 1 : v))));
  };

  /** The family's cheapest points settled as passing, without those another of them is below. */
  const cheapest = (family: readonly number[]): number[] => {
    let min = Number.POSITIVE_INFINITY;
    let ties: number[] = [];
    for (const combo of odometerDown(numeric.map((a) => lengths[a]!))) {
      const r = [...family];
      numeric.forEach((a, k) => (r[a] = combo[k]!));
      const index = pointAt(r);
      if (settled(index).status !== 'pass') continue;
      const c = costs[index]!;
      if (cheaperThan(c, min)) {
        min = c;
        ties = [index];
      } else if (!cheaperThan(min, c)) ties.push(index);
    }
    const tieRanks = ties.map(ranks);
    return ties.filter((_, i) => !tieRanks.some((other, j) => j !== i && below(other, tieRanks[i]!)));
  };

  /**
   * The estimates that settle a point as cheap as the family's chosen ones as failing, where no
   * decided failure does: that nothing cheaper (or as cheap) passes rests on them.
   */
  const estimatesBelow = (family: readonly number[], chosen: readonly number[]): number[] => {
    if (chosen.length === 0) return [];
    const least = Math.min(...chosen.map((i) => costs[i]!));
    const out = new Set<number>();
    for (const combo of odometerDown(numeric.map((a) => lengths[a]!))) {
      const r = [...family];
      numeric.forEach((a, k) => (r[a] = combo[k]!));
      if (cheaperThan(least, costs[pointAt(r)]!) || first(failed, (f, i) => decided(i) && below(r, f)) !== undefined) continue;
      const estimate = first(failed, (f) => below(r, f));
      if (estimate !== undefined) out.add(estimate);
    }
    return [...out];
  };

  // search on what is known, then decide what the answer rests on, until that is all decided:
  // the chosen points and failing tops first; once they stand, the neighbours below them and
  // the estimates that settle anything cheaper as failing
  const open = (indexes: readonly number[]): number[] => indexes.filter((i) => !(evaluated.has(i) && decided(i)));
  let chosen: number[][];
  for (;;) {
    await Promise.all(families.map(searchFamily));
    chosen = families.map(cheapest);
    const answers = open([...chosen.flat(), ...families.filter((_, f) => chosen[f]!.length === 0).map(topOf)]);
    const then = answers.length > 0 ? answers : open(families.flatMap((family, f) => [...chosen[f]!.flatMap(cheaperNeighbours), ...estimatesBelow(family, chosen[f]!)]));
    if (then.length === 0) break;
    await need(then, true);
  }

  const found = chosen
    .flat()
    .sort((a, b) => costs[a]! - costs[b]! || a - b)
    .map((index) => ({ index, cheaper: cheaperNeighbours(index) }));
  const failing = families.filter((_, f) => chosen[f]!.length === 0).map(topOf);
  return { found, failing, evaluated, violations, costMonotone, rounds };
}

/** The first point (in the map's order) whose ranks satisfy `test`. */
function first(points: ReadonlyMap<number, readonly number[]>, test: (ranks: readonly number[], index: number) => boolean): number | undefined {
  for (const [index, ranks] of points) if (test(ranks, index)) return index;
  return undefined;
}

/** Every combination of ranks below `lengths`, the highest first. */
function* odometerDown(lengths: readonly number[]): Generator<number[]> {
  const r = lengths.map((n) => n - 1);
  if (r.some((v) => v < 0)) return;
  for (;;) {
    yield [...r];
    let k = r.length - 1;
    while (k >= 0 && r[k] === 0) {
      r[k] = lengths[k]! - 1;
      k--;
    }
    if (k < 0) return;
    r[k]!--;
  }
}
