/**
 * Inverse-CDF tables, computed once on the CPU and shared by every engine (docs/model.md
 * section 7): a distribution becomes 1,025 nondecreasing u32 quantiles at q = i/1024. The last
 * point of an unbounded distribution is placed so that the top segment keeps the tail's
 * conditional mean, so table means match the distribution's mean (src/model/distribution.ts).
 */
import { distributionShape, TABLE_MAX, TABLE_SEGMENTS, tableTop } from '../model/distribution.js';
import type { Distribution } from '../model/problem.js';
import { TABLE_BITS, TABLE_WORDS } from './layout.js';

const SEGMENTS = 1 << TABLE_BITS;
// the problem layer refuses distributions by their top point at TABLE_SEGMENTS
if (SEGMENTS !== TABLE_SEGMENTS) throw new Error(`model/distribution.ts TABLE_SEGMENTS (${TABLE_SEGMENTS}) must be 2^TABLE_BITS (${SEGMENTS})`);

/** The 1,025 table words of a distribution. */
export function buildTable(dist: Distribution): Uint32Array {
  const table = new Uint32Array(TABLE_WORDS);
  const { quantile } = distributionShape(dist);
  for (let i = 0; i < SEGMENTS; i++) table[i] = word(quantile(i / SEGMENTS), dist);
  table[SEGMENTS] = word(tableTop(dist), dist);
  for (let i = 1; i <= SEGMENTS; i++) table[i] = Math.max(table[i]!, table[i - 1]!);
  return table;
}

/**
 * A quantile as a table word: rounded, but a uniform's floored. Sampling floors the
 * interpolation between two words, so the uniform's continuous [min, max + 1) floored gives each
 * whole number of min..max alike; its words rounded up would let max + 1 through.
 */
function word(v: number, dist: Distribution): number {
  const w = dist.kind === 'uniform' ? Math.floor(v) : Math.round(v);
  // the problem layer refuses distributions past TABLE_MAX: reaching this is a bug, not input
  if (!(w >= 0 && w <= TABLE_MAX)) throw new Error(`sampling table of ${JSON.stringify(dist)} reaches ${v}, past ${TABLE_MAX}`);
  return w;
}

/** Mean of the distribution a table samples (for tests and capacity sizing). */
export function tableMean(table: Uint32Array): number {
  let sum = 0;
  for (let i = 0; i < SEGMENTS; i++) sum += (table[i]! + table[i + 1]!) / 2;
  return sum / SEGMENTS;
}
