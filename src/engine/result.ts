/** Decodes an instance's result record (inside its state) into an InstanceResult. */
import type { InstanceResult } from '../model/result.js';
import { HISTOGRAM_BUCKETS } from '../model/histogram.js';
import type { EngineConfig } from './compile.js';
import { ERR, G, P, R } from './layout.js';
import { ServesimError } from '../errors.js';

const TWO_32 = 2 ** 32;

const CAPACITY: Record<number, string> = {
  [ERR.JOBS_FULL]: 'jobs in the system at once (params JOB_CAP, sized from app slots and arrivals within a timeout)',
  [ERR.HEAP_FULL]: 'pending events (params HEAP_CAP)',
  [ERR.CACHE_FULL]: 'KV cache entries per replica (params CACHE_CAP)',
};

/** Throws when the instance stopped on a capacity; the message names the capacity hit. */
export function checkInstance(config: EngineConfig, state: Uint32Array, base: number): void {
  const code = state[base + G.ERROR]!;
  if (code === ERR.NONE) return;
  const limit = code === ERR.JOBS_FULL ? config.params[P.JOB_CAP] : code === ERR.HEAP_FULL ? config.params[P.HEAP_CAP] : config.params[P.CACHE_CAP];
  throw new ServesimError(
    'SERVESIM_CAPACITY_EXCEEDED',
    `case ${config.scenario}: more than ${limit} ${CAPACITY[code] ?? `(error ${code})`}; the system is far past saturation or a capacity is sized too small`,
  );
}

/**
 * Copies an instance's result record out of a state buffer, so the (large) state can be
 * reused. `base` is the instance's first state word.
 */
export function extractResult(config: EngineConfig, state: Uint32Array, base: number): Uint32Array {
  checkInstance(config, state, base);
  return state.slice(base + config.resultOffset, base + config.resultOffset + config.resultWords);
}

/** Reads a result record (as extracted) into named fields. */
export function decodeResult(config: EngineConfig, record: Uint32Array): InstanceResult {
  const wide = (f: number): number => record[f]! + record[f + 1]! * TWO_32;
  const calls = R.COUNT;
  return {
    arrivals: record[R.ARRIVALS]!,
    successes: record[R.SUCCESSES]!,
    rejected: record[R.REJECTED]!,
    timedOut: record[R.TIMED_OUT]!,
    died: record[R.DIED]!,
    latency: record.slice(calls + config.gpuReplicas, calls + config.gpuReplicas + HISTOGRAM_BUCKETS),
    latencySum: wide(R.LATENCY_SUM),
    sojournSum: wide(R.SOJOURN_SUM),
    waited: record[R.WAITED]!,
    queued: record[R.QUEUED]!,
    waitSum: wide(R.WAIT_SUM),
    promptTokens: wide(R.PROMPT_TOKENS),
    cachedTokens: wide(R.CACHED_TOKENS),
    busyMicros: wide(R.BUSY),
    batchArea: wide(R.BATCH_AREA),
    capacityMicros: config.capacityMicros,
    inSystemArea: wide(R.IN_SYSTEM_AREA),
    measuredMicros: config.measuredMicros,
    longestQueue: record[R.LONGEST_QUEUE]!,
    callsPerReplica: record.slice(calls, calls + config.gpuReplicas),
    events: wide(R.EVENTS),
  };
}
