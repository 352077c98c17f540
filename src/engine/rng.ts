/**
 * Counter-based random numbers (docs/model.md section 7): every draw is a pure function of
 * (instance key, stream, a, b), so a request's size or a tool's latency does not depend on
 * the order of other events, and grid points share their random numbers (common random
 * numbers make differences between designs less noisy). Mirrored by kernels/rng.wgsl.
 */
import { STREAM, TABLE_BITS, TABLE_WORDS } from './layout.js';

/** PCG hash (Jarzynski and Olano, 2020), exact in 32 bits. */
export function pcg(v: number): number {
  const state = (Math.imul(v, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The key of one instance: its base seed and its index among the seeds. */
export function instanceKey(seed: number, instance: number): number {
  return pcg((seed ^ pcg(instance >>> 0)) >>> 0);
}

const STREAM_SALT = [0x68e31da4, 0xb5297a4d, 0x1b56c4e9, 0x7feb352d, 0x846ca68b, 0x2c1b3c6d, 0x297a2d39];
if (STREAM_SALT.length !== STREAM.COUNT) throw new Error('a stream lacks a salt');
export const streamSalts: readonly number[] = STREAM_SALT;

/** One uniform u32 for draw (a, b) of a stream. */
export function draw(key: number, stream: number, a: number, b: number): number {
  return pcg((pcg((pcg((b ^ STREAM_SALT[stream]!) >>> 0) ^ a) >>> 0) ^ key) >>> 0);
}

/**
 * Sample an inverse-CDF table with a uniform u32: the top TABLE_BITS bits pick the segment,
 * the next 16 interpolate in it. Split multiplies keep every product below 2^32.
 */
export function sampleTable(tables: Uint32Array, table: number, u: number): number {
  const off = table * TABLE_WORDS + (u >>> (32 - TABLE_BITS));
  const frac = (u >>> (16 - TABLE_BITS)) & 0xffff;
  const lo = tables[off]!;
  const diff = (tables[off + 1]! - lo) >>> 0;
  return (lo + (diff >>> 16) * frac + (((diff & 0xffff) * frac) >>> 16)) >>> 0;
}
