/**
 * Limits a problem must respect, each with the reason it exists; messages quote them.
 */

export const LIMITS = {
  /** Arrivals per second, after any case's scaling: keeps one instance's event count sane. */
  maxRate: 100_000,
  /**
   * Least arrivals per second, after any case's scaling: gaps between arrivals then average at
   * most 100s, and the sampling table of the gaps (its top is 8.9 x the mean) stays in u31.
   */
  minRate: 0.01,
  /**
   * Arrivals one instance may simulate (for a task workload: model calls, arrivals x steps),
   * warm-up included. At the reference engine's 10us (M/M/c job) to 80us (request) per
   * arrival and 50us per agent step on one core, 2 to 4 s of CPU; the shipped problems and
   * sweeps need at most 9,900 and a 3900s M/M/c run 157,000.
   */
  maxArrivals: { job: 200_000, request: 50_000, task: 50_000 },
  /** Arrivals the measured window must expect: fewer leave each seed's success and p99 to a handful. */
  minArrivals: 10,
  /** Shortest measured window: the lab's cases act on its thirds, and a rate needs seconds to mean anything. */
  minWindowMicros: 1_000_000,
  /** warmup + duration + timeout must stay under this: engines keep time in u32 microseconds. */
  horizonMicros: 4_000_000_000,
  /**
   * The longest warm-up `traffic.warmup: auto` may choose. Its pilot runs each case for this and
   * the measured window together from an empty system (src/run/warmup.ts), so this bounds what
   * the pilot costs: five minutes clears a start-up backlog that a 10s warm-up leaves draining
   * for minutes (a cold KV cache under load), at a few seconds of CPU a pilot seed.
   */
  autoWarmupMicros: 300_000_000,
  /** GPU replicas: the kernels keep per-replica state in fixed arrays. */
  gpuReplicas: 64,
  /** Sequences in one GPU batch. */
  gpuSlots: 256,
  /** Replicas of the app service or a plain server. */
  replicas: 256,
  /** Slots of any non-GPU component. */
  slots: 1_000_000,
  /** Shared prefixes of a request workload. */
  prefixes: 16,
  /** Points per replica on the consistent-hashing ring. */
  virtualNodes: 256,
  /** Leading blocks a prefix-affinity key hashes on a trace (2M tokens of prompt). */
  affinityBlocks: 4096,
  /** Model calls per agent task. */
  steps: 1_000,
  /**
   * Replica failures in one case (the file's and the case's together): each is three heap
   * events and six words of the params every instance reads, which the reference engine holds
   * in an array of fixed size (paramsWords).
   */
  failures: 1_000,
  /** Retries of a call failed by a dead replica. */
  retries: 10,
  /** Token counts: a prompt far past any context window is a typo. */
  tokens: 10_000_000,
  /**
   * Values the engines hold in thousandths (slowdown factor, bounded-affinity's c, alpha) must
   * be whole thousandths: 1.0005 would silently become 1 or 1.001.
   */
  milli: 1000,
  /** A case's rateScale or burst scale: a thousandfold is no longer the problem's traffic. */
  maxScale: 1000,
  /** Slowdown factor: 1000x slower is already a dead dependency. */
  maxSlowdown: 1000,
  /** Bounded-affinity's c: at c = replicas the bound already lets one replica take every call. */
  maxBoundedLoad: 64,
  /** Cache-aware's weight of queued tokens: beyond 100 cached tokens no longer count at all. */
  maxAlpha: 100,
  /**
   * Relative weight of a shared prefix: with 16 prefixes weighted 0.001 to 1000, the lightest
   * still gets a share the engines' 2^-31 steps can hold (about 6e-8).
   */
  weight: { min: 0.001, max: 1000 },
  /** A GPU profile's prompt tokens per millisecond: at most 10,000 keeps 100ns+ per token, rounded to the ns. */
  prefillRate: { min: 0.001, max: 10_000 },
  /**
   * One hop's overhead, or a GPU profile's base and perSeq: milliseconds in practice, so 10s is
   * a typo's worth, and sums of them stay far inside u32 microseconds.
   */
  stepMicros: 10_000_000,
  /** Cache entries one GPU replica indexes (compile.ts sizes CACHE_CAP with cacheEntries), checked at parse time. */
  cacheEntries: 4096,
  /**
   * Words of one instance's state and of its configuration's params: the reference engine runs
   * an instance in arrays of these sizes, fixed so that V8 compiles their addresses into its
   * code (src/engine/simulate.ts). The limits above keep every problem inside them
   * (test/engine-capacity.test.ts builds the largest); compile checks them all the same.
   */
  stateWords: 1 << 24,
  paramsWords: 1 << 16,
  /** The seed feeds a counter-based generator keyed by u32 words. */
  seed: 0xffff_ffff,
  /**
   * Bytes of a request trace (traffic.trace): read whole and parsed in memory. Mooncake's
   * conversation trace (12,031 requests, an hour) is 3 MB; an Azure CSV line is about 40 bytes,
   * so this holds millions of requests, far more than one instance simulates.
   */
  traceBytes: 256 * 1024 * 1024,
} as const;

export const HORIZON_TEXT = '4000s';

/**
 * Cache entries a GPU replica may need: as many of the smallest cached context as the KV cache
 * holds, plus one per batch slot and two spare (as src/engine/compile.ts sizes CACHE_CAP).
 */
export function cacheEntries(kvTokens: number, smallestEntry: number, slots: number): number {
  return Math.floor(kvTokens / Math.max(1, smallestEntry)) + slots + 2;
}

/**
 * Entries a replica's offload tier may need: as many of the smallest cached context as it holds,
 * and one spare (as src/engine/compile.ts sizes OFFLOAD_CAP).
 */
export function offloadEntries(tokens: number, smallestEntry: number): number {
  return Math.floor(tokens / Math.max(1, smallestEntry)) + 1;
}

/** The lab's public cases, in the lab's order (docs/model.md section 4). */
export const BUILTIN_CASE_NAMES = ['as-given', 'peak-hour', 'slow-dependency', 'server-dies'] as const;
export type BuiltinCaseName = (typeof BUILTIN_CASE_NAMES)[number];

/** A case name: lower-case words joined by '-', so it can sit in a dotted --set path. */
export const CASE_NAME_PATTERN = '^[a-z0-9][a-z0-9-]*$';

/**
 * Names no case may take: members every JavaScript object inherits, and `prototype`. A case
 * so named could read or write an inherited member wherever cases are looked up by name.
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype']);
