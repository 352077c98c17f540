/**
 * Log-bucketed latency histogram (docs/model.md section 5): values below 2^SUB_BITS microseconds are
 * exact; above, each octave splits into 2^SUB_BITS buckets, so a bucket's midpoint is within
 * 2^-(SUB_BITS+1) = 0.8% of any value in it. The kernels use the same bucket function.
 */
export const SUB_BITS = 6;
const SUB = 1 << SUB_BITS;
/** Buckets for any u32 value. */
export const HISTOGRAM_BUCKETS = (32 - SUB_BITS + 1) * SUB;

/** Bucket of a non-negative integer value (u32). */
export function bucketOf(value: number): number {
  const v = value >>> 0;
  if (v < SUB) return v;
  const msb = 31 - Math.clz32(v);
  const shift = msb - SUB_BITS;
  return (shift + 1) * SUB + ((v >>> shift) & (SUB - 1));
}

/** Lowest value that falls in a bucket. */
export function bucketLow(bucket: number): number {
  if (bucket < SUB) return bucket;
  const shift = Math.floor(bucket / SUB) - 1;
  return (SUB + (bucket % SUB)) * 2 ** shift;
}

/** Representative value of a bucket: its midpoint (exact below 2^SUB_BITS). */
export function bucketMid(bucket: number): number {
  if (bucket < SUB) return bucket;
  const shift = Math.floor(bucket / SUB) - 1;
  return bucketLow(bucket) + (2 ** shift - 1) / 2;
}

/**
 * The q-quantile (0 < q <= 1) of a histogram: the smallest bucket whose cumulative count
 * reaches ceil(q x total), reported at its midpoint. NaN when the histogram is empty.
 */
export function quantile(counts: ArrayLike<number>, q: number): number {
  let total = 0;
  for (let i = 0; i < counts.length; i++) total += counts[i]!;
  if (total === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i]!;
    if (seen >= rank) return bucketMid(i);
  }
  return bucketMid(counts.length - 1);
}
