/**
 * A configuration's shape: which of the engines' handlers it can ever run (its workload kind,
 * its slowdown's target, its failures' targets, whether its replicas have a KV offload tier, whether they
 * take KV incrementally, whether they split prefill from decode). Configurations of one shape share a compiled
 * GPU pipeline, so a batch holds configurations of one shape (src/gpu/kernel-source.ts sets the
 * kernel's pipeline constants from it).
 */
import type { EngineConfig } from './compile.js';
import { FAILURE, FAILURE_WORDS, P } from './layout.js';

export interface Shape {
  readonly KIND: number;
  readonly SLOW_TARGET: number;
  /** A bit (1 << TARGET) for each target some failure of the case has. */
  readonly FAILURE_TARGETS: number;
  /** 1 when its GPU replicas have a KV offload tier (P.OFFLOAD_CAP above 0), else 0. */
  readonly OFFLOAD: number;
  /** 1 when its GPU replicas take KV as sequences grow and preempt (P.KV_INCREMENTAL), else 0. */
  readonly KV_INCREMENTAL: number;
  /** 1 when its GPU replicas are split into a prefill and a decode pool (P.PREFILL_REPLICAS above 0), else 0. */
  readonly DISAGGREGATED: number;
}

/**
 * @example
 * shapeOf(compile(mmc, asGiven)) // { KIND: 2, SLOW_TARGET: 0, FAILURE_TARGETS: 0, OFFLOAD: 0, KV_INCREMENTAL: 0, DISAGGREGATED: 0 }
 */
export function shapeOf(config: EngineConfig): Shape {
  const p = config.params;
  let failureTargets = 0;
  for (let f = 0; f < p[P.N_FAILURES]!; f++) {
    failureTargets |= 1 << p[p[P.OFF_FAILURES]! + f * FAILURE_WORDS + FAILURE.TARGET]!;
  }
  return { KIND: p[P.KIND]!, SLOW_TARGET: p[P.SLOW_TARGET]!, FAILURE_TARGETS: failureTargets, OFFLOAD: p[P.OFFLOAD_CAP]! > 0 ? 1 : 0, KV_INCREMENTAL: p[P.KV_INCREMENTAL]!, DISAGGREGATED: p[P.PREFILL_REPLICAS]! > 0 ? 1 : 0 };
}

/** Equal for configurations of one shape: a key to group them by. */
export function shapeKey(config: EngineConfig): string {
  const s = shapeOf(config);
  return `${s.KIND}/${s.SLOW_TARGET}/${s.FAILURE_TARGETS}/${s.OFFLOAD}/${s.KV_INCREMENTAL}/${s.DISAGGREGATED}`;
}
