/**
 * What one simulation instance reports (docs/model.md section 5), decoded from the engines' flat
 * u32 result record. Sums that can pass 2^32 are carried as two u32 words by the engines and
 * arrive here as plain numbers (exact below 2^53).
 */
export interface InstanceResult {
  /** Arrivals in the measured window (requests, tasks or jobs). */
  readonly arrivals: number;
  readonly successes: number;
  /** No free slot at an app service or orchestrator: HTTP 503 at once. */
  readonly rejected: number;
  /** Not done by arrival + timeout. */
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
  /** End-to-end latency of each success, microseconds, bucketed as `model/histogram.ts`. */
  readonly latency: Uint32Array;
  /** Sum of successes' latencies, microseconds. */
  readonly latencySum: number;
  /** Sum over counted arrivals of the time from arrival to resolution, microseconds. */
  readonly sojournSum: number;
  /** Counted model calls (or jobs) that waited in a queue before their service began. */
  readonly waited: number;
  /** Counted model calls (or jobs) that reached a queue (the denominator of `waited`). */
  readonly queued: number;
  /** Sum of those waits, microseconds. */
  readonly waitSum: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** Busy time of the serving component (GPU replicas or servers) in the measured window. */
  readonly busyMicros: number;
  /** Integral of the batch size (running sequences) over busy time. */
  readonly batchArea: number;
  /** replicas x slots-free capacity basis: replicas (GPU) or servers x measured window. */
  readonly capacityMicros: number;
  /** Integral over the measured window of the number of arrivals in the system. */
  readonly inSystemArea: number;
  readonly measuredMicros: number;
  /** Longest queue seen at one replica or server queue. */
  readonly longestQueue: number;
  /** Counted model calls sent to each GPU replica (retries included). */
  readonly callsPerReplica: Uint32Array;
  /** Events the engine processed: work done, for benchmarks. */
  readonly events: number;
}
