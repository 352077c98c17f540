/**
 * Whether a measured window is in steady state (docs/model.md section 1): MSER (White 1997;
 * White, Cobb & Spratt 2000) on the window's intervals, each interval's mean sojourn pooled over
 * the seeds (Hoad, Robinson & Davies 2010 apply MSER-5 to the average of replications alike).
 */

/** Fewer intervals than this before a case's first event leave the window's start unjudged. */
export const MIN_JUDGED_INTERVALS = 8;
/** A truncation that moves the window's mean by at most this many standard errors is noise. */
const NOISE_ERRORS = 3;
/** Nor is one that moves it by at most this share of the steady mean: too small to matter. */
const MATERIAL_SHARE = 0.05;

/** What the test found: the window's start truncated (in intervals), and whether that matters. */
export interface SteadyTest {
  /** false when the start of the window biases its mean past noise and {@link MATERIAL_SHARE}. */
  readonly steady: boolean;
  /** MSER's truncation point, in intervals of the window: where its steady part begins. */
  readonly truncated: number;
  /** The truncation reached the middle of the judged intervals, MSER's limit: steady state may begin later still. */
  readonly atLimit: boolean;
}

/**
 * MSER's truncation point of a series of batch means: the d in 0..floor(n/2) that minimises
 * Σ_{i>=d} (z_i - mean_d)^2 / (n - d)^2, the squared standard error of the mean of what is kept
 * (the first d on a tie).
 */
export function mserTruncation(z: readonly number[]): number {
  const n = z.length;
  // suffix sums of z and z^2, for each d's mean and squared deviations
  let sum = 0;
  let squares = 0;
  const sums: number[] = new Array<number>(n + 1).fill(0);
  const sqs: number[] = new Array<number>(n + 1).fill(0);
  for (let i = n - 1; i >= 0; i--) {
    sum += z[i]!;
    squares += z[i]! * z[i]!;
    sums[i] = sum;
    sqs[i] = squares;
  }
  let best = 0;
  let bestStat = Infinity;
  for (let d = 0; d <= Math.floor(n / 2); d++) {
    const m = n - d;
    const stat = Math.max(0, sqs[d]! - (sums[d]! * sums[d]!) / m) / (m * m);
    if (stat < bestStat) {
      best = d;
      bestStat = stat;
    }
  }
  return best;
}

/** MSER's truncation of a window's pooled intervals, and how many it judged. */
export interface Truncation {
  /** MSER's truncation point, in intervals of the window: where its steady part begins. */
  readonly truncated: number;
  /** It reached the middle of the judged intervals, MSER's limit: steady state may begin later still. */
  readonly atLimit: boolean;
  /** The window's mean sojourn over the judged intervals, and over those from the truncation on. */
  readonly mean: number;
  readonly keptMean: number;
  /** The standard error of keptMean, from the spread of the kept intervals' means. */
  readonly keptError: number;
}

/**
 * MSER on a window cut into intervals: `resolved[k]` counted arrivals of interval k resolved,
 * `sojournSum[k]` their sojourns, pooled over seeds; only the first `judged` intervals count
 * (those before the case's first slowdown, failure or burst), and intervals nothing resolved in
 * are left out. Null with fewer than {@link MIN_JUDGED_INTERVALS} to judge.
 */
export function truncationOf(resolved: ArrayLike<number>, sojournSum: ArrayLike<number>, judged: number): Truncation | null {
  const at: number[] = [];
  const means: number[] = [];
  for (let k = 0; k < Math.min(judged, resolved.length); k++) {
    if (resolved[k]! > 0) {
      at.push(k);
      means.push(sojournSum[k]! / resolved[k]!);
    }
  }
  const n = means.length;
  if (n < MIN_JUDGED_INTERVALS) return null;
  const d = mserTruncation(means);
  const kept = means.slice(d);
  const keptMean = kept.reduce((s, x) => s + x, 0) / kept.length;
  const variance = kept.reduce((s, x) => s + (x - keptMean) ** 2, 0) / (kept.length - 1);
  return {
    truncated: d === 0 ? 0 : at[d]!,
    atLimit: d === Math.floor(n / 2),
    mean: means.reduce((s, x) => s + x, 0) / n,
    keptMean,
    keptError: Math.sqrt(variance / kept.length),
  };
}

/**
 * The steady-state test of a window's pooled intervals (as {@link truncationOf} takes them): not
 * steady when dropping what MSER truncates moves the mean sojourn by more than
 * {@link NOISE_ERRORS} standard errors of the kept intervals' mean and by more than
 * {@link MATERIAL_SHARE} of it. With too few intervals to judge, the window is taken as steady.
 */
export function steadyTest(resolved: ArrayLike<number>, sojournSum: ArrayLike<number>, judged: number): SteadyTest {
  const t = truncationOf(resolved, sojournSum, judged);
  if (t === null || t.truncated === 0) return { steady: true, truncated: 0, atLimit: false };
  const shift = Math.abs(t.mean - t.keptMean);
  const steady = shift <= NOISE_ERRORS * t.keptError || shift <= MATERIAL_SHARE * t.keptMean;
  return { steady, truncated: t.truncated, atLimit: t.atLimit };
}
