/**
 * What one simulation instance reports (docs/model.md section 5), decoded from the engines' flat
 * u32 result record. Sums that can pass 2^32 are carried as two u32 words by the engines and
 * arrive here as plain numbers (exact below 2^53).
 */
/**
 * The components that hold slots or queues, in call order. The load balancer is not one: in
 * the model it only adds its overhead.
 */
export const COMPONENT_NAMES = ['app', 'orchestrator', 'router', 'gpu', 'tools', 'server'] as const;
export type ComponentName = (typeof COMPONENT_NAMES)[number];
/** The components with a queue (the others reject when full). */
export const QUEUED_COMPONENTS = ['gpu', 'tools', 'server'] as const satisfies readonly ComponentName[];

/** Counted calls at a component's queue. */
export interface QueueCounts {
  /** Calls that reached the queue. */
  readonly reached: number;
  /** Those that waited before their service began. */
  readonly waited: number;
  /** Sum of their waits, microseconds. */
  readonly waitSum: number;
  /** Every reached call's wait (0 included), microseconds, bucketed as `model/histogram.ts`. */
  readonly waits: Uint32Array;
}

/** One component's load in the measured window, and the failures counted there. */
export interface ComponentLoad {
  /**
   * Busy slot-microseconds in the measured window: calls held (app, orchestrator: the whole
   * arrival; router: a call from its replica's queue to its end; tools, server: in service);
   * for the GPU, replica-microseconds spent iterating.
   */
  readonly busyMicros: number;
  /** Slots (GPU: replicas) x measured window: busyMicros / capacityMicros is utilisation. */
  readonly capacityMicros: number;
  /** Its queue; null for components without one. */
  readonly queue: QueueCounts | null;
  /** Counted arrivals or calls it refused (full slots, or a call the KV cache can never hold). */
  readonly rejected: number;
  /** Counted arrivals whose deadline passed while they were here (router: on the way to a GPU). */
  readonly timedOut: number;
}

export interface InstanceResult {
  /** Arrivals in the measured window (requests, tasks or jobs). */
  readonly arrivals: number;
  readonly successes: number;
  /** Refused at once, at any component (components[c].rejected says where). */
  readonly rejected: number;
  /** Not done by arrival + timeout (components[c].timedOut says where they were). */
  readonly timedOut: number;
  /** Its replica died and no retry could finish it. */
  readonly died: number;
  /**
   * Refused or failed because the instance reached a capacity of the engines: its job table
   * was full on arrival, or a full event heap or KV cache index stopped the instance.
   */
  readonly overloaded: number;
  /** The capacity reached first and where ("queue at server passed its capacity (272 jobs)"); '' if none. */
  readonly overload: string;
  /** Successes that met every goal set (end-to-end latency, and TTFT and TPOT of each call). */
  readonly good: number;
  /** End-to-end latency of each success, microseconds, bucketed as `model/histogram.ts`. */
  readonly latency: Uint32Array;
  /**
   * Model calls of counted arrivals that finished (TTFT is counted for each), their time to
   * first token (from when the call set out: the arrival, or its tool call's end), bucketed,
   * and its sum, microseconds. Empty histograms for job workloads.
   */
  readonly callsDone: number;
  readonly ttft: Uint32Array;
  readonly ttftSum: number;
  /** Of those, calls with more than one output token, and their time per output token after the first. */
  readonly tpotCalls: number;
  readonly tpot: Uint32Array;
  readonly tpotSum: number;
  /**
   * Of the calls with more than one output token, the sum of (end - first token), microseconds,
   * unfloored: over their gaps between tokens, outputTokens - callsDone (every call has at least
   * one token, so a call of one adds none), it is the mean inter-token latency.
   */
  readonly itlSum: number;
  /** Output tokens of the finished calls. */
  readonly outputTokens: number;
  /** Sum of successes' latencies, microseconds. */
  readonly latencySum: number;
  /** Sum over counted arrivals of the time from arrival to resolution, microseconds. */
  readonly sojournSum: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** The part of cachedTokens loaded back from the offload tier (the rest the GPU's cache held). */
  readonly offloadTokens: number;
  /** Counted calls' preemptions (gpu.kv incremental), and the tokens their resumptions computed again. */
  readonly preemptions: number;
  readonly recomputedTokens: number;
  /**
   * gpu.disaggregation: counted calls' KV transfers to a decode replica, their microseconds
   * waiting there for room, and on the link (0 without).
   */
  readonly transfers: number;
  readonly transferWaitSum: number;
  readonly transferSum: number;
  /** Busy time of the serving component (GPU replicas or servers) in the measured window. */
  readonly busyMicros: number;
  /** Integral of the batch size (running sequences) over busy time. */
  readonly batchArea: number;
  /** The decode pool's part of busyMicros and batchArea (gpu.disaggregation; 0 without). */
  readonly decodeBusyMicros: number;
  readonly decodeBatchArea: number;
  /**
   * KV in use, as a share of a GPU replica's KV capacity (its running sequences' reservations and
   * the cache entries they pin, with those entries' ancestors; not the entries cached for later),
   * integrated over the measured window and summed over replicas: replica-microseconds, so
   * / capacityMicros is the time-weighted mean share. Counted in 1/16,384ths of the capacity or
   * finer (compile.ts KV_UNITS), each value floored. 0 without GPUs.
   */
  readonly kvInUseArea: number;
  /** The largest share of its KV capacity one replica had in use in the measured window, counted alike. */
  readonly kvInUsePeak: number;
  /** replicas x slots-free capacity basis: replicas (GPU) or servers x measured window. */
  readonly capacityMicros: number;
  /** Integral over the measured window of the number of arrivals in the system. */
  readonly inSystemArea: number;
  readonly measuredMicros: number;
  /** Longest queue seen at one replica or server queue, and its component ('' when none formed). */
  readonly longestQueue: number;
  readonly longestQueueAt: string;
  /** The components the design has, each with its load and failures. */
  readonly components: Readonly<Partial<Record<ComponentName, ComponentLoad>>>;
  /** Counted model calls sent to each GPU replica (retries included). */
  readonly callsPerReplica: Uint32Array;
  /** The first callsPerReplica entries the router places calls on: the prefill pool (gpu.disaggregation), else all. */
  readonly routedReplicas: number;
  /** Events the engine processed: work done, for benchmarks. */
  readonly events: number;
  /** Warm-up before the measured window, microseconds. */
  readonly warmupMicros: number;
  /**
   * The measured window in equal intervals (the last may end past it), `intervalMicros` each,
   * by when counted arrivals came: those of each interval that resolved (succeeded or failed
   * after admission), and the sum of their sojourns, microseconds. The steady-state test's
   * series (model/steady.ts).
   */
  readonly intervalMicros: number;
  readonly intervalResolved: Uint32Array;
  readonly intervalSojourn: Float64Array;
  /** The intervals before the case's first slowdown, failure or burst: those the steady-state test judges. */
  readonly judgedIntervals: number;
}
