/** Decodes an instance's result record (inside its state) into an InstanceResult. */
import type { ComponentLoad, ComponentName, InstanceResult, QueueCounts } from '../model/result.js';
import { HISTOGRAM_BUCKETS } from '../model/histogram.js';
import type { EngineConfig, HistogramName } from './compile.js';
import { ERR, INTERVALS, INTERVAL_WORDS, IV, KIND, P, QW, R, TARGET } from './layout.js';

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

/** The components each workload kind has (KIND order). */
const COMPONENTS_OF_KIND: Readonly<Record<number, readonly ComponentName[]>> = {
  [KIND.REQUEST]: ['app', 'router', 'gpu'],
  [KIND.TASK]: ['app', 'orchestrator', 'router', 'gpu', 'tools'],
  [KIND.JOB]: ['server'],
};

/** Reads a result record (as extracted) into named fields. */
export function decodeResult(config: EngineConfig, record: Uint32Array): InstanceResult {
  const wide = (f: number): number => record[f]! + record[f + 1]! * TWO_32;
  const histogram = (name: HistogramName): Uint32Array => {
    const at = config.histograms[name];
    return at < 0 ? new Uint32Array(0) : record.slice(at, at + HISTOGRAM_BUCKETS);
  };
  const queue = (counters: number, waits: HistogramName): QueueCounts => ({
    reached: record[counters + QW.QUEUED]!,
    waited: record[counters + QW.WAITED]!,
    waitSum: wide(counters + QW.WAIT_SUM),
    waits: histogram(waits),
  });
  // a decode replica's busy time and batch are counted apart (gpu.disaggregation)
  const busy = wide(R.BUSY) + wide(R.DECODE_BUSY);
  const inSystemArea = wide(R.IN_SYSTEM_AREA);
  const { slotMicros } = config;
  const loads: Record<ComponentName, () => ComponentLoad> = {
    app: () => ({ busyMicros: inSystemArea, capacityMicros: slotMicros.app, queue: null, rejected: record[R.REJECTED_AT_APP]!, timedOut: 0 }),
    orchestrator: () => ({ busyMicros: inSystemArea, capacityMicros: slotMicros.orchestrator, queue: null, rejected: record[R.REJECTED_AT_ORCH]!, timedOut: 0 }),
    router: () => ({ busyMicros: wide(R.ROUTER_AREA), capacityMicros: slotMicros.router, queue: null, rejected: record[R.REJECTED_AT_ROUTER]!, timedOut: record[R.TIMED_OUT_AT_ROUTER]! }),
    gpu: () => ({ busyMicros: busy, capacityMicros: config.capacityMicros, queue: queue(R.QUEUED, 'wait'), rejected: record[R.REJECTED_AT_GPU]!, timedOut: record[R.TIMED_OUT_AT_GPU]! }),
    tools: () => ({ busyMicros: wide(R.TOOL_AREA), capacityMicros: slotMicros.tools, queue: queue(R.TOOL_QUEUED, 'toolWait'), rejected: 0, timedOut: record[R.TIMED_OUT_AT_TOOLS]! }),
    server: () => ({ busyMicros: busy, capacityMicros: config.capacityMicros, queue: queue(R.QUEUED, 'wait'), rejected: 0, timedOut: record[R.TIMED_OUT_AT_SERVER]! }),
  };
  const components: Partial<Record<ComponentName, ComponentLoad>> = {};
  for (const c of COMPONENTS_OF_KIND[config.params[P.KIND]!]!) components[c] = loads[c]();
  // KV in use is counted in P.KV_UNIT tokens: a share of the replica's kvTokens
  const kvShare = config.params[P.KV_TOKENS]! > 0 ? config.params[P.KV_UNIT]! / config.params[P.KV_TOKENS]! : 0;
  const calls = R.COUNT;
  return {
    arrivals: record[R.ARRIVALS]!,
    successes: record[R.SUCCESSES]!,
    rejected: record[R.REJECTED_AT_APP]! + record[R.REJECTED_AT_ORCH]! + record[R.REJECTED_AT_ROUTER]! + record[R.REJECTED_AT_GPU]!,
    timedOut: record[R.TIMED_OUT_AT_ROUTER]! + record[R.TIMED_OUT_AT_GPU]! + record[R.TIMED_OUT_AT_TOOLS]! + record[R.TIMED_OUT_AT_SERVER]!,
    died: record[R.DIED]!,
    overloaded: record[R.OVERLOADED]!,
    overload: overloadReason(config, record),
    good: record[R.GOOD]!,
    latency: histogram('latency'),
    latencySum: wide(R.LATENCY_SUM),
    sojournSum: wide(R.SOJOURN_SUM),
    callsDone: record[R.CALLS_DONE]!,
    ttft: histogram('ttft'),
    ttftSum: wide(R.TTFT_SUM),
    tpotCalls: record[R.TPOT_CALLS]!,
    tpot: histogram('tpot'),
    tpotSum: wide(R.TPOT_SUM),
    itlSum: wide(R.ITL_SUM),
    outputTokens: wide(R.OUTPUT_TOKENS),
    promptTokens: wide(R.PROMPT_TOKENS),
    cachedTokens: wide(R.CACHED_TOKENS),
    offloadTokens: wide(R.OFFLOAD_TOKENS),
    preemptions: record[R.PREEMPTIONS]!,
    recomputedTokens: wide(R.RECOMPUTED_TOKENS),
    transfers: record[R.TRANSFERS]!,
    transferWaitSum: wide(R.TRANSFER_WAIT_SUM),
    transferSum: wide(R.TRANSFER_SUM),
    busyMicros: busy,
    batchArea: wide(R.BATCH_AREA) + wide(R.DECODE_BATCH_AREA),
    decodeBusyMicros: wide(R.DECODE_BUSY),
    decodeBatchArea: wide(R.DECODE_BATCH_AREA),
    kvInUseArea: wide(R.KV_AREA) * kvShare,
    kvInUsePeak: record[R.KV_PEAK]! * kvShare,
    capacityMicros: config.capacityMicros,
    inSystemArea,
    measuredMicros: config.measuredMicros,
    longestQueue: record[R.LONGEST_QUEUE]!,
    longestQueueAt: COMPONENT[record[R.LONGEST_QUEUE_AT]!] ?? '',
    components,
    callsPerReplica: record.slice(calls, calls + config.gpuReplicas),
    routedReplicas: config.params[P.PREFILL_REPLICAS]! > 0 ? config.params[P.PREFILL_REPLICAS]! : config.gpuReplicas,
    events: wide(R.EVENTS),
    warmupMicros: config.warmupMicros,
    intervalMicros: config.intervalMicros,
    intervalResolved: Uint32Array.from({ length: INTERVALS }, (_, k) => record[config.intervals + k * INTERVAL_WORDS + IV.RESOLVED]!),
    intervalSojourn: Float64Array.from({ length: INTERVALS }, (_, k) => wide(config.intervals + k * INTERVAL_WORDS + IV.SOJOURN_SUM)),
    judgedIntervals: config.judgedIntervals,
  };
}
