/**
 * Limits a problem must respect, each with the reason it exists; messages quote them.
 */

export const LIMITS = {
  /** Arrivals per second, after any case's scaling: keeps one instance's event count sane. */
  maxRate: 100_000,
  /** warmup + duration + timeout must stay under this: engines keep time in u32 microseconds. */
  horizonMicros: 4_000_000_000,
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
  /** Model calls per agent task. */
  steps: 1_000,
  /** Retries of a call failed by a dead replica. */
  retries: 10,
  /** Token counts: a prompt far past any context window is a typo. */
  tokens: 10_000_000,
  /** The seed feeds a counter-based generator keyed by u32 words. */
  seed: 0xffff_ffff,
} as const;

export const HORIZON_TEXT = '4000s';

/** The lab's public cases, in the lab's order (MODEL.md section 4). */
export const BUILTIN_CASE_NAMES = ['as-given', 'peak-hour', 'slow-dependency', 'server-dies'] as const;
export type BuiltinCaseName = (typeof BUILTIN_CASE_NAMES)[number];

/** A case name: lower-case words joined by '-', so it can sit in a dotted --set path. */
export const CASE_NAME_PATTERN = '^[a-z0-9][a-z0-9-]*$';
