/**
 * Verdicts that know their own noise (docs/model.md section 6). Each goal of a case is a
 * quantity estimated from seeds, with an interval; a case PASSes when every interval lies on
 * the goal's side, FAILs when one lies wholly on the wrong side (or a seed overloaded), and is
 * UNDECIDED otherwise. With more seeds the intervals narrow: `--seeds auto` adds seeds to the
 * undecided configurations at the looks of {@link seedLooks}. A wrong verdict needs one goal's
 * interval to miss its true value on the side that matters at some look, so each such one-sided
 * bound gets an equal share of the allowed error over the looks and the goals (Bonferroni's
 * bound, the flat error-spending group-sequential design): the chance of a wrong verdict stays
 * under 1 - VERDICT_LEVEL however the looks went.
 */
export type Verdict = 'PASS' | 'FAIL' | 'UNDECIDED';

/** Confidence of a run's verdicts: the chance that none is wrong, per configuration. */
export const VERDICT_LEVEL = 0.95;
/** `--seeds auto`: the first look's seeds, doubling at each further look. */
export const AUTO_FIRST_SEEDS = 32;
/** `--seeds auto`'s default cap on a configuration's seeds. */
export const DEFAULT_MAX_SEEDS = 4096;

/**
 * The seed counts at which a configuration's verdict is looked at: `first`, doubled until
 * `max` (the last look, whether or not a doubling lands on it). One look when they are equal.
 */
export function seedLooks(first: number, max: number): number[] {
  const looks = [first];
  while (looks[looks.length - 1]! < max) looks.push(Math.min(max, looks[looks.length - 1]! * 2));
  return looks;
}

/**
 * The two-sided error of each interval when a run looks `looks` times at `goals` goals: each
 * end, a one-sided bound, may miss with probability (1 - VERDICT_LEVEL) / (looks x goals).
 */
export function intervalAlpha(looks: number, goals: number): number {
  return (2 * (1 - VERDICT_LEVEL)) / (looks * goals);
}

/** Where an estimate's interval lies against its goal. */
export type Side = 'meets' | 'misses' | 'straddles';

/**
 * An interval [lo, hi] against a goal that a value must reach (`atLeast`) or stay under: it
 * meets the goal when the whole interval does, misses it when none of it does.
 */
export function sideOf(lo: number, hi: number, goal: number, direction: 'atLeast' | 'atMost', epsilon = 0): Side {
  if (Number.isNaN(lo) || Number.isNaN(hi)) return 'misses';
  const good = (v: number): boolean => (direction === 'atLeast' ? v >= goal - epsilon : v <= goal + epsilon);
  if (good(lo) && good(hi)) return 'meets';
  if (!good(lo) && !good(hi)) return 'misses';
  return 'straddles';
}

/** The verdict of a case from its goals' sides: any miss (or an overloaded seed) fails it. */
export function verdictOf(sides: readonly Side[], overloaded: boolean): Verdict {
  if (overloaded || sides.includes('misses')) return 'FAIL';
  return sides.every((s) => s === 'meets') ? 'PASS' : 'UNDECIDED';
}

/** A grid point's verdict over its cases: any FAIL fails it, any UNDECIDED leaves it undecided. */
export function pointVerdict(verdicts: readonly Verdict[]): Verdict {
  if (verdicts.includes('FAIL')) return 'FAIL';
  return verdicts.includes('UNDECIDED') ? 'UNDECIDED' : 'PASS';
}

/** How many seeds configurations run: `seeds` first, up to `maxSeeds` for the undecided. */
export interface SeedRange {
  readonly seeds: number;
  readonly maxSeeds: number;
}

/**
 * `seeds` ('auto' or a count) and an optional cap as a range: 'auto' starts at
 * {@link AUTO_FIRST_SEEDS} (or the cap, if lower) up to the cap (default
 * {@link DEFAULT_MAX_SEEDS}); a count without a cap runs exactly that many. A message naming
 * `maxSeeds` when the cap is below the count.
 */
export function seedRange(seeds: number | 'auto', maxSeeds: number | undefined): SeedRange | string {
  if (seeds === 'auto') {
    const max = maxSeeds ?? DEFAULT_MAX_SEEDS;
    return { seeds: Math.min(AUTO_FIRST_SEEDS, max), maxSeeds: max };
  }
  if (maxSeeds !== undefined && maxSeeds < seeds) return `maxSeeds (${maxSeeds}) must be at least seeds (${seeds})`;
  return { seeds, maxSeeds: maxSeeds ?? seeds };
}
