/** Decodes an instance's result record (inside its state) into an InstanceResult. */
import type { InstanceResult } from '../model/result.js';
import { HISTOGRAM_BUCKETS } from '../model/histogram.js';
import type { EngineConfig } from './compile.js';
import { ERR, P, R, TARGET } from './layout.js';

const TWO_32 = 2 ** 32;

/** Components by the TARGET code in R.OVERLOAD_AT, as problem files name them. */
const COMPONENT: Record<number, string> = {
  [TARGET.GPU]: 'gpu',
  [TARGET.SERVER]: 'server',
  [TARGET.TOOLS]: 'tools',
  [TARGET.APP]: 'app',
};

/**
 * "queue at server passed its capacity (272 jobs)": the capacity an instance reached first
 * (R.OVERLOAD) and where (R.OVERLOAD_AT); '' when it reached none.
 */
function overloadReason(config: EngineConfig, record: Uint32Array): string {
  const code = record[R.OVERLOAD]!;
  const at = COMPONENT[record[R.OVERLOAD_AT]!];
  if (code === ERR.JOBS_FULL) return `queue at ${at} passed its capacity (${config.params[P.JOB_CAP]} jobs)`;
  if (code === ERR.HEAP_FULL) return `queue at ${at} passed the event heap's capacity (${config.params[P.HEAP_CAP]} events)`;
  if (code === ERR.CACHE_FULL) return `KV cache at ${at} passed its capacity (${config.params[P.CACHE_CAP]} entries a replica)`;
  if (code === ERR.HORIZON) return `jobs still in the system when simulated time ran out (4,295 s, the end of u32 microseconds; most queued at ${at})`;
  return '';
}

/**
 * Copies an instance's result record out of a state buffer, so the (large) state can be
 * reused. `base` is the instance's first state word.
 */
export function extractResult(config: EngineConfig, state: Uint32Array, base: number): Uint32Array {
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
    overloaded: record[R.OVERLOADED]!,
    overload: overloadReason(config, record),
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
