/**
 * The intervals the verdicts need (docs/model.md section 6) and their distributions: a pooled
 * ratio's across seeds (Student's t), a pass probability's (Clopper-Pearson, by the beta).
 * Exact to well below what any verdict reads; no dependency does these three small things.
 */

/**
 * The two-sided critical value of Student's t with `df` degrees of freedom: the t with
 * P(|T| > t) = alpha (alpha 0.05 gives the 95% interval's 1.96-ish factor), by bisection on
 * the exact CDF.
 */
export function studentT(df: number, alpha: number): number {
  const key = `${df}:${alpha}`;
  const known = tCache.get(key);
  if (known !== undefined) return known;
  // two-sided tail P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2)
  const tail = (t: number): number => incompleteBeta(df / (df + t * t), df / 2, 0.5);
  let lo = 0;
  let hi = 1;
  while (tail(hi) > alpha) hi *= 2;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (tail(mid) > alpha) lo = mid;
    else hi = mid;
  }
  const t = (lo + hi) / 2;
  tCache.set(key, t);
  return t;
}

/** Sweeps summarize thousands of cases with the same seed count and level. */
const tCache = new Map<string, number>();

/**
 * A pooled ratio (Σ num / Σ den over seeds) and its interval at 1 - alpha: Student's t
 * across seeds on the ratio estimator's residuals e_i = (num_i - r den_i) / mean(den), the
 * half-width t(n-1) x sd(e) / sqrt(n). With equal denominators this is the plain t-interval on
 * the per-seed ratios; the weighting keeps the pooled ratio inside its interval when seeds
 * differ in size. Seeds with a zero denominator carry no ratio and are left out; with fewer
 * than two left there is no spread to measure and the interval is the point. Clamped to [0, 1].
 */
export function ratioInterval(
  num: readonly number[],
  den: readonly number[],
  alpha: number,
): { readonly ratio: number; readonly lo: number; readonly hi: number; readonly seeds: number } {
  let sumNum = 0;
  let sumDen = 0;
  let n = 0;
  for (let i = 0; i < den.length; i++) {
    if (den[i]! <= 0) continue;
    sumNum += num[i]!;
    sumDen += den[i]!;
    n++;
  }
  const ratio = sumDen > 0 ? sumNum / sumDen : Number.NaN;
  if (n < 2 || Number.isNaN(ratio)) return { ratio, lo: ratio, hi: ratio, seeds: n };
  const meanDen = sumDen / n;
  let sumSq = 0;
  for (let i = 0; i < den.length; i++) {
    if (den[i]! <= 0) continue;
    const e = (num[i]! - ratio * den[i]!) / meanDen;
    sumSq += e * e;
  }
  const half = studentT(n - 1, alpha) * Math.sqrt(sumSq / (n - 1) / n);
  return { ratio, lo: Math.max(0, ratio - half), hi: Math.min(1, ratio + half), seeds: n };
}

/**
 * The Clopper-Pearson ("exact") interval of a binomial proportion: `k` successes of `n`
 * trials, coverage at least 1 - alpha for every true proportion. [0, 1] when n is 0.
 */
export function clopperPearson(k: number, n: number, alpha: number): [number, number] {
  if (n === 0) return [0, 1];
  const lo = k === 0 ? 0 : betaQuantile(alpha / 2, k, n - k + 1);
  const hi = k === n ? 1 : betaQuantile(1 - alpha / 2, k + 1, n - k);
  return [lo, hi];
}

/** The p-quantile of Beta(a, b), by bisection on the regularized incomplete beta. */
export function betaQuantile(p: number, a: number, b: number): number {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (incompleteBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Regularized incomplete beta I_x(a, b) (Numerical Recipes' continued fraction). */
export function incompleteBeta(x: number, a: number, b: number): number {
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
