/**
 * The shape of a Distribution as the engines sample it (docs/model.md section 7): its quantile
 * function and the top point of its 1,025-point inverse-CDF table. The engine builds tables
 * from this (src/engine/tables.ts); the problem layer refuses a distribution whose top point
 * a table cannot hold, so no table is ever clamped.
 */
import type { Distribution } from './problem.js';

/** Segments of a sampling table: src/engine/layout.ts's 2^TABLE_BITS (tables.ts checks). */
export const TABLE_SEGMENTS = 1024;
/** Tables stay below 2^31 so interpolation sums cannot wrap. */
export const TABLE_MAX = 0x7fffffff;

/** Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9). */
export function normalQuantile(p: number): number {
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const lowP = 0.02425;
  if (p < lowP) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) / ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  }
  if (p > 1 - lowP) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) / (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1);
}

/** Standard normal CDF (Abramowitz-Stegun 7.1.26 on erf, |error| < 1.5e-7). */
export function normalCdf(x: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(x) / Math.SQRT2);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-(x * x) / 2);
  return x >= 0 ? 0.5 * (1 + y) : 0.5 * (1 - y);
}

/** Z-score of the 99th percentile. */
const Z99 = normalQuantile(0.99);

/** Quantile function and, for unbounded tails, E[X | X > x]. */
export function distributionShape(dist: Distribution): { quantile: (q: number) => number; tailMean?: (x: number) => number } {
  switch (dist.kind) {
    case 'fixed':
      return { quantile: () => dist.value };
    case 'uniform':
      // integers min..max equally likely: the continuous uniform on [min, max + 1), floored
      return { quantile: (q) => dist.min + q * (dist.max + 1 - dist.min) };
    case 'exponential':
      return {
        quantile: (q) => -dist.mean * Math.log(1 - q),
        tailMean: (x) => x + dist.mean,
      };
    case 'lognormal': {
      const mu = Math.log(dist.median);
      const sigma = Math.log(dist.p99 / dist.median) / Z99;
      return {
        // at q = 0 the normal quantile is -Infinity (computed as NaN): the lognormal's is 0
        quantile: (q) => (q === 0 ? 0 : Math.exp(mu + sigma * normalQuantile(q))),
        tailMean: (x) => {
          const z = (Math.log(x) - mu) / sigma;
          return Math.exp(mu + (sigma * sigma) / 2) * (1 - normalCdf(z - sigma)) / (1 - normalCdf(z));
        },
      };
    }
  }
}

/**
 * The table's top point, the largest value the engines sample. For an unbounded distribution
 * it is placed so that the top segment keeps the tail's conditional mean: a linear segment
 * has mean (last + end) / 2.
 */
export function tableTop(dist: Distribution): number {
  const { quantile, tailMean } = distributionShape(dist);
  if (tailMean === undefined) return quantile(1);
  const last = quantile((TABLE_SEGMENTS - 1) / TABLE_SEGMENTS);
  return 2 * tailMean(last) - last;
}
