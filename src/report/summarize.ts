/**
 * Many seeds of one case -> one output row (docs/model.md section 6).
 */
import type { Goals } from '../model/problem.js';
import type { InstanceResult } from '../model/result.js';
import type { CaseSummary } from '../model/summary.js';
import { HISTOGRAM_BUCKETS, bucketMid, bucketOf, quantile } from '../model/histogram.js';

/**
 * Slack for comparing rates against goals: a rate and a goal that are equal as decimals may
 * differ in the last bit once computed (99.9 / 100 vs 0.999).
 */
const RATE_EPSILON = 1e-12;
const U32_MAX = 0xffffffff;

/**
 * Aggregates the per-seed results of one case into a {@link CaseSummary}.
 *
 * - `success` is pooled (Σ successes / Σ arrivals). Its interval `success_lo..success_hi` is a
 *   95% Student-t interval across seeds, on the per-seed success rates weighted by their
 *   arrivals (the ratio estimator's interval): with residuals e_i = a_i (p_i - p) / ā, the
 *   half-width is t(0.975, n-1) x sd(e) / sqrt(n). With equal arrivals per seed this is exactly
 *   the plain t-interval on the per-seed rates; the weighting keeps the pooled rate inside its
 *   interval when seeds differ in arrivals (Poisson traffic). Seeds with no arrivals carry no
 *   rate and are left out. With fewer than two such seeds there is no spread to measure:
 *   lo = hi = success. The interval is clamped to [0, 1].
 * - Quantiles come from the pooled histogram (the sum of the seeds'), in milliseconds; NaN when
 *   there are no successes.
 * - `p99_lo_ms`/`p99_hi_ms` are the nearest-rank 2.5% and 97.5% quantiles of the per-seed p99s
 *   (the same convention as the histogram's `quantile()`); seeds without successes are skipped.
 * - `p99_all_ms` counts every failure (arrivals - successes) at `timeoutMicros`. A
 *   `timeoutMicros` of 0 (or less) means the case has no deadline: failures then count as
 *   infinitely slow, and `p99_all_ms` is Infinity when they reach the top 1%.
 * - `pass_probability` is the share of all seeds (including those without arrivals, which do
 *   not pass) whose own success rate and own p99 meet the goals; a seed without successes has
 *   no p99 and does not pass. `passes` needs the pooled success and p99 to meet the goals and
 *   `pass_probability >= confidence`. p99 is compared in microseconds (the bucket midpoint)
 *   against `goals.p99`.
 * - A seed whose instance was overloaded (reached one of the engines' capacities) does not
 *   pass, and a case with any such seed fails: `overload_reason` says where and in how many
 *   seeds. Its unserved requests are failures already (`overloaded`), so success and p99 stay
 *   what the seeds measured.
 */
export function summarize(
  caseName: string,
  goals: Goals,
  confidence: number,
  results: readonly InstanceResult[],
  timeoutMicros: number,
): CaseSummary {
  const seeds = results.length;
  let buckets = HISTOGRAM_BUCKETS;
  for (const r of results) buckets = Math.max(buckets, r.latency.length);
  const hasDeadline = timeoutMicros > 0;
  const timeoutBucket = hasDeadline ? bucketOf(Math.min(Math.round(timeoutMicros), U32_MAX)) : 0;
  buckets = Math.max(buckets, timeoutBucket + 1);
  const pooled = new Float64Array(buckets);

  let arrivals = 0;
  let successes = 0;
  let rejected = 0;
  let timedOut = 0;
  let died = 0;
  let overloaded = 0;
  const overloads = new Map<string, number>();
  let promptTokens = 0;
  let cachedTokens = 0;
  let busy = 0;
  let capacity = 0;
  let batchArea = 0;
  let waitSum = 0;
  let queued = 0;
  let waited = 0;
  let longestQueue = 0;
  // each seed's busiest replica: placement is drawn per seed, so replica indexes differ between seeds
  let topCalls = 0;
  let totalCalls = 0;
  const seedP99s: number[] = [];
  let seedsPassing = 0;

  for (const r of results) {
    arrivals += r.arrivals;
    successes += r.successes;
    rejected += r.rejected;
    timedOut += r.timedOut;
    died += r.died;
    overloaded += r.overloaded;
    if (r.overload !== '') overloads.set(r.overload, (overloads.get(r.overload) ?? 0) + 1);
    promptTokens += r.promptTokens;
    cachedTokens += r.cachedTokens;
    busy += r.busyMicros;
    capacity += r.capacityMicros;
    batchArea += r.batchArea;
    waitSum += r.waitSum;
    queued += r.queued;
    waited += r.waited;
    longestQueue = Math.max(longestQueue, r.longestQueue);
    for (let i = 0; i < r.latency.length; i++) pooled[i]! += r.latency[i]!;
    let top = 0;
    for (const c of r.callsPerReplica) {
      totalCalls += c;
      top = Math.max(top, c);
    }
    topCalls += top;

    const p99 = quantile(r.latency, 0.99);
    if (!Number.isNaN(p99)) seedP99s.push(p99);
    if (r.arrivals > 0 && r.overload === '' && meetsGoals(r.successes / r.arrivals, p99, goals)) seedsPassing++;
  }

  const success = arrivals > 0 ? successes / arrivals : Number.NaN;
  const [successLo, successHi] = successInterval(results, success);

  const p50 = quantile(pooled, 0.5);
  const p90 = quantile(pooled, 0.9);
  const p99 = quantile(pooled, 0.99);

  seedP99s.sort((a, b) => a - b);
  const p99Lo = nearestRank(seedP99s, 0.025);
  const p99Hi = nearestRank(seedP99s, 0.975);

  const failures = Math.max(0, arrivals - successes);
  let p99All: number;
  if (hasDeadline) {
    pooled[timeoutBucket]! += failures;
    p99All = quantile(pooled, 0.99);
  } else {
    // failures sit above every success: the rank falls among the successes or among them
    const total = successes + failures;
    const rank = Math.max(1, Math.ceil(0.99 * total));
    p99All = total === 0 ? Number.NaN : rank <= successes ? quantileAtRank(pooled, rank) : Infinity;
  }

  const passProbability = seeds > 0 ? seedsPassing / seeds : Number.NaN;
  let overloadedSeeds = 0;
  for (const k of overloads.values()) overloadedSeeds += k;
  const passes =
    overloadedSeeds === 0 && meetsGoals(success, p99, goals) && passProbability >= confidence - RATE_EPSILON;

  return {
    case: caseName,
    seeds,
    requests: arrivals,
    success,
    success_lo: successLo,
    success_hi: successHi,
    p50_ms: p50 / 1000,
    p90_ms: p90 / 1000,
    p99_ms: p99 / 1000,
    p99_lo_ms: p99Lo / 1000,
    p99_hi_ms: p99Hi / 1000,
    p99_all_ms: p99All / 1000,
    pass_probability: passProbability,
    passes,
    kv_hit_rate: ratio(cachedTokens, promptTokens),
    gpu_utilization: ratio(busy, capacity),
    mean_batch: ratio(batchArea, busy),
    rejected,
    timed_out: timedOut,
    died,
    overloaded,
    top_replica_share: ratio(topCalls, totalCalls),
    mean_wait_ms: ratio(waitSum, queued) / 1000,
    wait_probability: ratio(waited, queued),
    longest_queue: longestQueue,
    overloaded_seeds: overloadedSeeds,
    overload_reason: overloadReason(overloads, seeds),
  };
}

/** "overloaded: queue at server passed its capacity (272 jobs) in 64 of 64 seeds", most seeds first. */
function overloadReason(overloads: ReadonlyMap<string, number>, seeds: number): string {
  if (overloads.size === 0) return '';
  const parts = [...overloads].sort((a, b) => b[1] - a[1]).map(([where, k]) => `${where} in ${k} of ${seeds} seeds`);
  return `overloaded: ${parts.join('; ')}`;
}

/** NaN (an undefined rate or p99) never meets a goal. */
function meetsGoals(success: number, p99Micros: number, goals: Goals): boolean {
  return success >= goals.success - RATE_EPSILON && p99Micros <= goals.p99;
}

/** 0 rather than NaN: these are "none of it" when nothing happened (no tokens, no calls). */
function ratio(num: number, den: number): number {
  return den > 0 ? num / den : 0;
}

/** The smallest value whose rank reaches ceil(q x n), as `quantile()` does on a histogram. */
function nearestRank(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** The histogram value at an absolute rank (1-based), reported at its bucket's midpoint. */
function quantileAtRank(counts: ArrayLike<number>, rank: number): number {
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i]!;
    if (seen >= rank) return bucketMid(i);
  }
  return Number.NaN;
}

function successInterval(
  results: readonly InstanceResult[],
  success: number,
): [number, number] {
  const counted = results.filter((r) => r.arrivals > 0);
  const n = counted.length;
  if (n < 2 || Number.isNaN(success)) return [success, success];
  let meanArrivals = 0;
  for (const r of counted) meanArrivals += r.arrivals;
  meanArrivals /= n;
  let sumSq = 0;
  for (const r of counted) {
    const e = (r.successes - success * r.arrivals) / meanArrivals;
    sumSq += e * e;
  }
  const halfWidth = studentT975(n - 1) * Math.sqrt(sumSq / (n - 1) / n);
  return [Math.max(0, success - halfWidth), Math.min(1, success + halfWidth)];
}

/**
 * The 97.5% quantile of Student's t with `df` degrees of freedom (the two-sided 95%
 * critical value), by bisection on the exact CDF.
 */
export function studentT975(df: number): number {
  const known = tCache.get(df);
  if (known !== undefined) return known;
  // two-sided tail P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2)
  const tail = (t: number): number => incompleteBeta(df / (df + t * t), df / 2, 0.5);
  let lo = 0;
  let hi = 1;
  while (tail(hi) > 0.05) hi *= 2;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (tail(mid) > 0.05) lo = mid;
    else hi = mid;
  }
  const t = (lo + hi) / 2;
  tCache.set(df, t);
  return t;
}

/** Sweeps summarize thousands of cases with the same seed count. */
const tCache = new Map<number, number>();

/** Regularized incomplete beta I_x(a, b) (Numerical Recipes' continued fraction). */
function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(
    logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x),
  );
  // the fraction converges fast only on this side of the mean
  if (x < (a + 1) / (a + b + 2)) return (front * betaFraction(x, a, b)) / a;
  return 1 - (front * betaFraction(1 - x, b, a)) / b;
}

function betaFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a - 1 + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + 1 + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return h;
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7). */
function logGamma(x: number): number {
  const g = 7;
  const coef = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const y = x - 1;
  let s = coef[0]!;
  for (let i = 1; i < g + 2; i++) s += coef[i]! / (y + i);
  const t = y + g + 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(s);
}
