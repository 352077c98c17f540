// Counter-based random numbers (docs/model.md section 7): the mirror of src/engine/rng.ts, same
// functions in the same order. kernel-source.ts prepends STREAM_SALT (from rng.ts) and the
// layout constants. WGSL u32 arithmetic wraps, so rng.ts's `>>> 0` and Math.imul are plain
// operators here; sampleTable reads the `tb` binding where rng.ts takes the tables array.

/** PCG hash (Jarzynski and Olano, 2020), exact in 32 bits. */
fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

/** The key of one instance: its base seed and its index among the seeds. */
fn instanceKey(seed: u32, instance: u32) -> u32 {
  return pcg(seed ^ pcg(instance));
}

/** One uniform u32 for draw (a, b) of a stream. */
fn draw(key: u32, stream: u32, a: u32, b: u32) -> u32 {
  return pcg(pcg(pcg(b ^ STREAM_SALT[stream]) ^ a) ^ key);
}

/**
 * Sample an inverse-CDF table with a uniform u32: the top TABLE_BITS bits pick the segment,
 * the next 16 interpolate in it. Split multiplies keep every product below 2^32.
 */
fn sampleTable(table: u32, u: u32) -> u32 {
  let off = table * TABLE_WORDS + (u >> (32u - TABLE_BITS));
  let frac = (u >> (16u - TABLE_BITS)) & 0xffffu;
  let lo = tb[off];
  let diff = tb[off + 1u] - lo;
  return lo + (diff >> 16u) * frac + (((diff & 0xffffu) * frac) >> 16u);
}
