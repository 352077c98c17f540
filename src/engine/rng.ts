/**
 * Counter-based random numbers (docs/model.md section 7): every draw is a pure function of
 * (instance key, stream, a, b), so a request's size or a tool's latency does not depend on
 * the order of other events, and grid points share their random numbers (common random
 * numbers make differences between designs less noisy). Mirrored by kernels/rng.wgsl.
 */
import * as layout from './layout.js';
import { STREAM } from './layout.js';

// Imported bindings are loaded and checked at every use in V8's optimised code; module
// constants fold into it (see simulate.ts).
const TABLE_BITS = layout.TABLE_BITS;
const TABLE_WORDS = layout.TABLE_WORDS;

const imul = Math.imul;

/**
 * PCG hash (Jarzynski and Olano, 2020), exact in 32 bits. Its words are i32s (`| 0`) and only
 * the result a u32: `>>>`, `^` and imul read the same bits either way, and the fewer steps
 * keep its bytecode small (V8 inlines a function by its bytecode's size, and draw holds two).
 */
export function pcg(v: number): number {
  const state = (imul(v, 747796405) + 2891336453) | 0;
  const word = imul((state >>> ((state >>> 28) + 4)) ^ state, 277803737);
  return ((word >>> 22) ^ word) >>> 0;
}

/** The key of one instance: its base seed and its index among the seeds. */
export function instanceKey(seed: number, instance: number): number {
  return pcg((seed ^ pcg(instance >>> 0)) >>> 0);
}

const STREAM_SALT = [0x68e31da4, 0xb5297a4d, 0x1b56c4e9, 0x7feb352d, 0x846ca68b, 0x2c1b3c6d, 0x297a2d39, 0x9e3779b9];
// the same bits as i32s, which draw xors with: an array of numbers past 2^31 holds doubles
const STREAM_SALT_I32 = Int32Array.from(STREAM_SALT);
if (STREAM_SALT.length !== STREAM.COUNT) throw new Error('a stream lacks a salt');
export const streamSalts: readonly number[] = STREAM_SALT;
// pcg(b ^ salt) of each stream for b = 0 .. FIRST_BS - 1 (a request's shape draws b = 0 .. 3)
const FIRST_BS = 4;
const FIRST_HASH = Int32Array.from({ length: STREAM.COUNT * FIRST_BS }, (_, i) => pcg((i % FIRST_BS) ^ STREAM_SALT_I32[Math.floor(i / FIRST_BS)]!));

/**
 * One uniform u32 for draw (a, b) of a stream, returned as its 32 bits in an i32 (take
 * `>>> 0` for the u32): V8 boxes a returned u32 past 2^31 in a heap number, an i32 never.
 */
export function draw(key: number, stream: number, a: number, b: number): number {
  // the first of the three hashes is a table's for the b of most draws (a third of the work);
  // pcg reads its argument's bits (imul), so the xors need no `>>> 0`
  const first = b < FIRST_BS ? FIRST_HASH[stream * FIRST_BS + b]! : pcg(b ^ STREAM_SALT_I32[stream]!);
  return pcg(pcg(first ^ a) ^ key) | 0;
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
