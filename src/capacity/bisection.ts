/**
 * The capacity search apart from any simulation: for each design, the highest load scale at
 * which it passes, found by asking an `evaluate` function about batches of (design, scale)
 * probes, so tests can drive it with synthetic capacities.
 *
 * A design's bracket is its highest scale shown passing and its lowest shown not passing. From
 * the problem as given (scale 1) the search doubles while the design passes, up to `maxScale`,
 * or halves while it does not, down to `minScale`; then it bisects the bracket (geometric
 * midpoints) until its top is within `tolerance` of its bottom. A scale the problem refuses
 * (past a limit on its rates) ends the bracket there.
 *
 * Designs share what they show. Within a family (one combination of the string-valued paths)
 * the search assumes that more on a numeric path never lowers the capacity, so a scale that a
 * design below passes is where a design above starts, and one that a design above does not pass
 * bounds a design below. Designs go by levels: a family's extremes first, then the points half
 * way along each numeric path, then the quarters, and so on, each level's bisections starting
 * from the brackets the levels before left, which are narrow once the neighbours are close.
 * A capacity is always a load its own design passed at: what a design below showed only steers.
 * The load above it that does not pass may be a design's above it (within the tolerance, that
 * design's failure settles this one's bracket without a probe), and a decided probe that
 * contradicts a neighbour's is a monotonicity violation, reported.
 */

/** A design's place in the grid: its family, and its rank on each numeric path (more is more). */
export interface DesignPlace {
  readonly family: string;
  readonly ranks: readonly number[];
}

export interface Probe {
  readonly design: number;
  readonly scale: number;
}

export interface ProbeResult {
  /** Every case passes (PASS, decided): an undecided probe does not pass. */
  readonly passes: boolean;
  /** The problem refuses this scale (a limit on its rates): no simulation ran. */
  readonly refused?: boolean;
  /** False for a probe that does not pass only because it is within seed noise (undecided); absent: decided. */
  readonly decided?: boolean;
}

/** Runs the probes of a round, as one batch; resolves with a result for each, in order. */
export type ProbeEvaluator<R extends ProbeResult> = (probes: readonly Probe[]) => Promise<readonly R[]>;

export interface CapacityInput<R extends ProbeResult> {
  readonly designs: readonly DesignPlace[];
  /** A bracket is closed when its top is at most (1 + tolerance) times its bottom. */
  readonly tolerance: number;
  readonly minScale: number;
  readonly maxScale: number;
  readonly evaluate: ProbeEvaluator<R>;
  /** After each round: its number from 1, and how many designs are settled. */
  readonly onRound?: (round: number, settled: number) => void;
  /** Ends the search before its next round, or in the middle of one (whose probes are dropped): the outcome is what the rounds before showed. */
  readonly stop?: AbortSignal;
}

export interface Edge<R> {
  readonly scale: number;
  readonly result: R;
}

export interface DesignCapacity<R> {
  /** The highest scale the design passed at; null when it passed at none. */
  readonly lower: Edge<R> | null;
  /**
   * The lowest scale it did not pass at (failed, undecided or refused); null when it passed at
   * `maxScale`. With no `lower`, the search went down to `minScale` or to the lowest scale the
   * problem accepts.
   */
  readonly upper: Edge<R> | null;
  /** The design that probe was of: this one, or one above it in its family. */
  readonly upperFrom: number;
  readonly probes: number;
}

export interface CapacityViolation {
  readonly design: number;
  readonly scale: number;
  readonly passes: boolean;
  /** The design of the same family that said otherwise: below it and passing at a scale at least this one, or above it and not passing at one at most this one. */
  readonly because: number;
}

export interface CapacityOutcome<R> {
  readonly designs: readonly DesignCapacity<R>[];
  readonly rounds: number;
  readonly violations: readonly CapacityViolation[];
  /** Designs not settled when `stop` ended the search (their brackets as far as they got); empty otherwise. */
  readonly unsettled: readonly number[];
}

interface State<R> {
  lower: Edge<R> | null;
  upper: Edge<R> | null;
  /** The highest scale refused as too little load: the search goes no lower. */
  floor: number | null;
  probes: number;
}

/** Scales carry four significant digits: a probe's rate reads plainly, and the tolerance is far coarser. */
function tidy(scale: number): number {
  return Number(scale.toPrecision(4));
}

/** The geometric midpoint of a bracket, tidied where that keeps it strictly inside. */
function midpoint(a: number, b: number): number {
  const mid = Math.sqrt(a * b);
  const tidied = tidy(mid);
  return tidied > a && tidied < b ? tidied : mid;
}

/** Each rank's level when a path of `n` values is halved and halved again: 0 for both ends, 1 for the middle, ... */
export function bisectionLevels(n: number): number[] {
  const levels = new Array<number>(n).fill(0);
  const spans: [number, number, number][] = n > 2 ? [[0, n - 1, 1]] : [];
  while (spans.length > 0) {
    const [a, b, level] = spans.shift()!;
    const mid = Math.floor((a + b) / 2);
    levels[mid] = level;
    if (mid - a > 1) spans.push([a, mid, level + 1]);
    if (b - mid > 1) spans.push([mid, b, level + 1]);
  }
  return levels;
}

export async function searchCapacities<R extends ProbeResult>(input: CapacityInput<R>): Promise<CapacityOutcome<R>> {
  const { designs, tolerance, minScale, maxScale } = input;
  const closed = (a: number, b: number): boolean => b <= a * (1 + tolerance) * (1 + 1e-12);
  const state: State<R>[] = designs.map(() => ({ lower: null, upper: null, floor: null, probes: 0 }));
  const paths = designs[0]?.ranks.length ?? 0;
  const levelsOf = Array.from({ length: paths }, (_, a) => bisectionLevels(Math.max(0, ...designs.map((d) => d.ranks[a]! + 1))));
  const level = designs.map((d) => Math.max(0, ...d.ranks.map((r, a) => levelsOf[a]![r]!)));
  const families = new Map<string, number[]>();
  for (const [d, place] of designs.entries()) families.set(place.family, [...(families.get(place.family) ?? []), d]);
  const familyOf = designs.map((place) => families.get(place.family)!);
  /** Design d is at or below design e on every numeric path (the same family). */
  const below = (d: number, e: number): boolean => d !== e && designs[d]!.ranks.every((r, a) => r <= designs[e]!.ranks[a]!);
  const violations: CapacityViolation[] = [];
  const seen = new Set<string>();

  /**
   * The design's bracket: its own edges narrowed by what the neighbours showed inside them (a
   * pass below, or a failure above), and the design whose probe the upper edge is.
   */
  const bracket = (d: number): { lo: number | undefined; hi: number | undefined; hiFrom: number } => {
    const s = state[d]!;
    const ownLo = s.lower?.scale;
    const ownHi = s.upper?.scale;
    let lo = ownLo;
    let hi = ownHi;
    let hiFrom = d;
    for (const e of familyOf[d]!) {
      const t = state[e]!;
      if (t.lower !== null && below(e, d) && t.lower.scale > (lo ?? 0) && (ownHi === undefined || t.lower.scale < ownHi)) lo = t.lower.scale;
      if (t.upper !== null && t.upper.result.refused !== true && below(d, e) && t.upper.scale < (hi ?? Infinity) && (ownLo === undefined || t.upper.scale > ownLo)) {
        hi = t.upper.scale;
        hiFrom = e;
      }
    }
    // neighbours that contradict each other: the design's own bracket decides
    if (lo !== undefined && hi !== undefined && hi <= lo) return { lo, hi: ownHi, hiFrom: d };
    return { lo, hi, hiFrom };
  };

  /**
   * The scale to probe next, or null when the design's capacity is settled. A capacity is a
   * load the design itself passed at; the load above it that does not pass may be another's
   * (a design above it in its family), as more never lowers the capacity.
   */
  const next = (d: number): number | null => {
    const s = state[d]!;
    const ownLo = s.lower?.scale;
    const { lo, hi } = bracket(d);
    if (lo !== undefined && hi !== undefined) {
      if (!closed(lo, hi)) return midpoint(lo, hi);
      return lo === ownLo ? null : lo;
    }
    if (lo !== undefined) {
      if (lo !== ownLo) return lo;
      return lo >= maxScale ? null : Math.min(maxScale, lo * 2);
    }
    if (hi !== undefined) {
      const bottom = s.floor === null ? hi <= minScale : closed(s.floor, hi);
      if (bottom) return null;
      return s.floor === null ? Math.max(minScale, hi / 2) : midpoint(s.floor, hi);
    }
    return Math.min(maxScale, Math.max(minScale, 1));
  };

  const record = (d: number, scale: number, result: R): void => {
    const s = state[d]!;
    s.probes++;
    if (result.passes) {
      if (s.lower === null || scale > s.lower.scale) s.lower = { scale, result };
    } else if (result.refused === true && scale < 1 && (s.lower === null || scale < s.lower.scale)) {
      // less load than the problem accepts (scale 1 is the problem as given, which it accepts)
      s.floor = Math.max(s.floor ?? 0, scale);
    } else if (s.upper === null || scale < s.upper.scale) {
      s.upper = { scale, result };
    }
  };

  // only decided probes contradict: an undecided one may yet pass
  const violated = (d: number, scale: number, result: R): void => {
    if (result.refused === true || result.decided === false) return;
    for (const e of familyOf[d]!) {
      const t = state[e]!;
      const contradicts = result.passes
        ? below(d, e) && t.upper !== null && t.upper.result.refused !== true && t.upper.result.decided !== false && t.upper.scale <= scale
        : below(e, d) && t.lower !== null && t.lower.scale >= scale;
      const key = `${d}:${e}:${result.passes}`;
      if (!contradicts || seen.has(key)) continue;
      seen.add(key);
      violations.push({ design: d, scale, passes: result.passes, because: e });
    }
  };

  const stopped = (): boolean => input.stop?.aborted === true;
  const probed = new Set<string>();
  let rounds = 0;
  let scales = designs.map((_, d) => next(d));
  for (;;) {
    // each family probes its lowest level that is not settled yet
    const active = new Map<string, number>();
    for (const [d, place] of designs.entries()) {
      if (scales[d] !== null) active.set(place.family, Math.min(active.get(place.family) ?? Infinity, level[d]!));
    }
    const probes: Probe[] = [];
    for (const [d, place] of designs.entries()) {
      const scale = scales[d] ?? null;
      if (scale === null || level[d] !== active.get(place.family)) continue;
      // every probe moves an edge of its design's bracket, so none repeats
      const key = `${d}@${scale}`;
      if (probed.has(key)) throw new Error(`capacity search: design ${d} probed twice at scale ${scale}`);
      probed.add(key);
      probes.push({ design: d, scale });
    }
    if (probes.length === 0 || stopped()) break;
    let results: readonly R[];
    try {
      results = await input.evaluate(probes);
    } catch (err) {
      if (stopped()) break;
      throw err;
    }
    rounds++;
    probes.forEach((p, i) => violated(p.design, p.scale, results[i]!));
    probes.forEach((p, i) => record(p.design, p.scale, results[i]!));
    scales = designs.map((_, d) => next(d));
    input.onRound?.(rounds, scales.filter((scale) => scale === null).length);
  }
  return {
    designs: state.map(({ lower, probes }, d) => {
      const { hi, hiFrom } = bracket(d);
      const upper = hi === undefined ? null : state[hiFrom]!.upper;
      return { lower, upper, upperFrom: hiFrom, probes };
    }),
    rounds,
    violations,
    unsettled: scales.flatMap((scale, d) => (scale === null ? [] : [d])),
  };
}

/**
 * Which designs are on the Pareto front of cost against capacity: one with a capacity that no
 * other matches or beats at the same or a lower cost, one of the two strictly.
 */
export function paretoFront(designs: readonly { readonly cost: number; readonly capacity: number | null }[]): boolean[] {
  return designs.map((d, i) =>
    d.capacity !== null &&
    !designs.some((o, j) => j !== i && o.capacity !== null && o.capacity >= d.capacity! && o.cost <= d.cost && (o.capacity > d.capacity! || o.cost < d.cost)),
  );
}
