/**
 * Many seeds of one case -> one output row (docs/model.md section 6).
 */
import { dollarsPerHour, gpuCount, type Goals, type Problem } from './problem.js';
import { COMPONENT_NAMES, QUEUED_COMPONENTS, type InstanceResult } from './result.js';
import type { CaseSummary, ComponentColumn } from './summary.js';
import { HISTOGRAM_BUCKETS, bucketMid, bucketOf, quantile } from './histogram.js';

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
 * - TTFT and TPOT quantiles and their per-seed p99 spread are computed as latency's, from their
 *   own histograms (NaN for a design without model calls).
 * - `pass_probability` is the share of all seeds (including those without arrivals, which do
 *   not pass) whose own success rate and own p99 (and TTFT and TPOT p99 where those goals are
 *   set) meet the goals; a seed without successes has no p99 and does not pass. `passes` needs
 *   the pooled values to meet every goal and `pass_probability >= confidence`. Quantiles are
 *   compared in microseconds (the bucket midpoint) against the goals.
 * - Rates per second divide by every seed's measured window. Per component: utilisation is
 *   pooled busy time over pooled capacity; waits pool the queue's calls over seeds.
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
  configuration: ConfigurationCost = NO_COST,
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
  let batchArea = 0;
  let good = 0;
  let outputTokens = 0;
  let measuredMicros = 0;
  let longestQueue = 0;
  let longestQueueAt = '';
  const ttft = new Pooled();
  const tpot = new Pooled();
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
    batchArea += r.batchArea;
    good += r.good;
    outputTokens += r.outputTokens;
    measuredMicros += r.measuredMicros;
    if (r.longestQueue > longestQueue) {
      longestQueue = r.longestQueue;
      longestQueueAt = r.longestQueueAt;
    }
    const seedTtft = ttft.add(r.ttft);
    const seedTpot = tpot.add(r.tpot);
    for (let i = 0; i < r.latency.length; i++) pooled[i]! += r.latency[i]!;
    let top = 0;
    for (const c of r.callsPerReplica) {
      totalCalls += c;
      top = Math.max(top, c);
    }
    topCalls += top;

    const p99 = quantile(r.latency, 0.99);
    if (!Number.isNaN(p99)) seedP99s.push(p99);
    if (r.arrivals > 0 && r.overload === '' && meetsGoals(r.successes / r.arrivals, p99, seedTtft, seedTpot, goals)) seedsPassing++;
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
  const ttftP99 = ttft.quantile(0.99);
  const tpotP99 = tpot.quantile(0.99);
  const passes = overloadedSeeds === 0 && meetsGoals(success, p99, ttftP99, tpotP99, goals) &&
    passProbability >= confidence - RATE_EPSILON;
  const hasCalls = results.some((r) => r.components.gpu !== undefined);
  const gpuReplicas = results[0]?.callsPerReplica.length ?? 0;
  const perSecond = (n: number): number => (measuredMicros > 0 ? (n * 1e6) / measuredMicros : Number.NaN);

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
    ttft_p50_ms: ttft.quantile(0.5) / 1000,
    ttft_p90_ms: ttft.quantile(0.9) / 1000,
    ttft_p99_ms: ttftP99 / 1000,
    ttft_p99_lo_ms: ttft.seedP99(0.025) / 1000,
    ttft_p99_hi_ms: ttft.seedP99(0.975) / 1000,
    tpot_p50_ms: tpot.quantile(0.5) / 1000,
    tpot_p90_ms: tpot.quantile(0.9) / 1000,
    tpot_p99_ms: tpotP99 / 1000,
    tpot_p99_lo_ms: tpot.seedP99(0.025) / 1000,
    tpot_p99_hi_ms: tpot.seedP99(0.975) / 1000,
    pass_probability: passProbability,
    passes,
    output_tokens_per_s: hasCalls ? perSecond(outputTokens) : Number.NaN,
    output_tokens_per_s_per_replica: hasCalls ? perSecond(outputTokens) / gpuReplicas : Number.NaN,
    goodput_per_s: perSecond(good),
    kv_hit_rate: ratio(cachedTokens, promptTokens),
    mean_batch: ratio(batchArea, busy),
    rejected,
    timed_out: timedOut,
    died,
    overloaded,
    top_replica_share: ratio(topCalls, totalCalls),
    longest_queue: longestQueue,
    longest_queue_at: longestQueueAt,
    gpus: configuration.gpus,
    dollars_per_hour: configuration.dollarsPerHour,
    ...componentColumns(results),
    overloaded_seeds: overloadedSeeds,
    overload_reason: overloadReason(overloads, seeds),
  };
}

/** What the configuration's GPUs are and cost an hour; NaN where unknown. */
export interface ConfigurationCost {
  readonly gpus: number;
  readonly dollarsPerHour: number;
}

const NO_COST: ConfigurationCost = { gpus: Number.NaN, dollarsPerHour: Number.NaN };

/** A problem's GPUs and their price, for its rows. */
export function configurationCost(problem: Problem): ConfigurationCost {
  return { gpus: gpuCount(problem) ?? Number.NaN, dollarsPerHour: dollarsPerHour(problem) ?? Number.NaN };
}

/** "overloaded: queue at server passed its capacity (272 jobs) in 64 of 64 seeds", most seeds first. */
function overloadReason(overloads: ReadonlyMap<string, number>, seeds: number): string {
  if (overloads.size === 0) return '';
  const parts = [...overloads].sort((a, b) => b[1] - a[1]).map(([where, k]) => `${where} in ${k} of ${seeds} seeds`);
  return `overloaded: ${parts.join('; ')}`;
}

/** NaN (an undefined rate or quantile) never meets a goal; a goal not set asks nothing. */
function meetsGoals(success: number, p99Micros: number, ttftP99: number, tpotP99: number, goals: Goals): boolean {
  return success >= goals.success - RATE_EPSILON && p99Micros <= goals.p99 &&
    (goals.ttftP99 === null || ttftP99 <= goals.ttftP99) && (goals.tpotP99 === null || tpotP99 <= goals.tpotP99);
}

/** A per-call time (TTFT, TPOT) pooled over seeds: the sum of their histograms, and each seed's p99. */
class Pooled {
  private counts = new Float64Array(0);
  private readonly seedP99s: number[] = [];
  private sorted = true;

  /** Adds a seed's histogram; returns the seed's own p99 (NaN if it counted nothing). */
  add(histogram: Uint32Array): number {
    if (this.counts.length < histogram.length) {
      const grown = new Float64Array(histogram.length);
      grown.set(this.counts);
      this.counts = grown;
    }
    for (let i = 0; i < histogram.length; i++) this.counts[i]! += histogram[i]!;
    const p99 = histogram.length === 0 ? Number.NaN : quantile(histogram, 0.99);
    if (!Number.isNaN(p99)) {
      this.seedP99s.push(p99);
      this.sorted = false;
    }
    return p99;
  }

  /** Quantile of the pooled histogram, microseconds; NaN when it is empty. */
  quantile(q: number): number {
    return this.counts.length === 0 ? Number.NaN : quantile(this.counts, q);
  }

  /** Nearest-rank quantile of the per-seed p99s, microseconds. */
  seedP99(q: number): number {
    if (!this.sorted) {
      this.seedP99s.sort((a, b) => a - b);
      this.sorted = true;
    }
    return nearestRank(this.seedP99s, q);
  }
}

/** The per-component columns; NaN for a component the design lacks. */
function componentColumns(results: readonly InstanceResult[]): Record<ComponentColumn, number> {
  const out = {} as Record<ComponentColumn, number>;
  for (const c of COMPONENT_NAMES) {
    const loads = results.flatMap((r) => r.components[c] ?? []);
    const has = loads.length > 0;
    const total = (f: (l: (typeof loads)[number]) => number): number => loads.reduce((s, l) => s + f(l), 0);
    out[`${c}_utilization`] = has ? ratio(total((l) => l.busyMicros), total((l) => l.capacityMicros)) : Number.NaN;
    out[`${c}_rejected`] = has ? total((l) => l.rejected) : Number.NaN;
    out[`${c}_timed_out`] = has ? total((l) => l.timedOut) : Number.NaN;
  }
  for (const c of QUEUED_COMPONENTS) {
    const queues = results.flatMap((r) => r.components[c]?.queue ?? []);
    const waits = new Pooled();
    for (const q of queues) waits.add(q.waits);
    const reached = queues.reduce((s, q) => s + q.reached, 0);
    const has = queues.length > 0;
    out[`${c}_wait_mean_ms`] = has ? ratio(queues.reduce((s, q) => s + q.waitSum, 0), reached) / 1000 : Number.NaN;
    out[`${c}_wait_p99_ms`] = has ? waits.quantile(0.99) / 1000 : Number.NaN;
    out[`${c}_wait_probability`] = has ? ratio(queues.reduce((s, q) => s + q.waited, 0), reached) : Number.NaN;
  }
  return out;
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
