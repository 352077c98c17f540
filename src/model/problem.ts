/**
 * The typed problem: what a problem file means once parsed, with every default filled in.
 * Only `src/problem/` builds these from raw input; everything else reads these types.
 *
 * Times are integer microseconds, token counts integers (docs/model.md section 7).
 */
import type { Trace } from './trace.js';

/** A distribution of integer values (microseconds or tokens). */
export type Distribution =
  | { readonly kind: 'fixed'; readonly value: number }
  | { readonly kind: 'uniform'; readonly min: number; readonly max: number }
  /** Lognormal given by its median and 99th percentile. */
  | { readonly kind: 'lognormal'; readonly median: number; readonly p99: number }
  | { readonly kind: 'exponential'; readonly mean: number };

export type RouterPolicy =
  | 'round-robin'
  | 'random'
  | 'least-loaded'
  | 'prefix-affinity'
  | 'bounded-affinity'
  | 'cache-aware';

export const ROUTER_POLICIES: readonly RouterPolicy[] = [
  'round-robin',
  'random',
  'least-loaded',
  'prefix-affinity',
  'bounded-affinity',
  'cache-aware',
];

export interface Goals {
  /** Minimum success rate, 0..1. */
  readonly success: number;
  /** Maximum p99 end-to-end latency of successes, microseconds. */
  readonly p99: number;
  /** Maximum p99 time to first token of model calls, microseconds; null: no such goal. */
  readonly ttftP99: number | null;
  /** Maximum p99 time per output token after the first, microseconds; null: no such goal. */
  readonly tpotP99: number | null;
}

/** A set of alike GPU replicas: the whole pool, or under disaggregation each of its two. */
interface ReplicaSet {
  readonly replicas: number;
  readonly profile: GpuProfile;
  readonly pricePerHour?: number;
}

/** The pool's sets of alike replicas: under disaggregation its prefill and its decode replicas. */
function replicaSets(gpu: GpuPool): readonly ReplicaSet[] {
  const split = gpu.disaggregation;
  if (split === undefined) return [gpu];
  return [{ ...gpu, replicas: split.prefill }, { ...split.decode, replicas: gpu.replicas - split.prefill }];
}

/** GPUs a configuration uses: each replica's profile's tensor-parallel degree (1 where it says none), summed; null without a GPU pool. */
export function gpuCount(problem: Problem): number | null {
  return problem.gpu === null ? null : replicaSets(problem.gpu).reduce((n, s) => n + s.replicas * (s.profile.tp ?? 1), 0);
}

/** What a configuration's GPUs cost an hour (each replica's GPUs x its pricePerHour); null without a price for each. */
export function dollarsPerHour(problem: Problem): number | null {
  if (problem.gpu === null) return null;
  let dollars = 0;
  for (const s of replicaSets(problem.gpu)) {
    if (s.pricePerHour === undefined) return null;
    dollars += s.replicas * (s.profile.tp ?? 1) * s.pricePerHour;
  }
  return dollars;
}

/** The goals as outputs carry them (JSON, Arrow metadata, the API): milliseconds, and only those set. */
export interface GoalsInMilliseconds {
  readonly success: number;
  readonly p99_ms: number;
  readonly ttft_p99_ms?: number;
  readonly tpot_p99_ms?: number;
}

export function goalsInMilliseconds(goals: Goals): GoalsInMilliseconds {
  return {
    success: goals.success,
    p99_ms: goals.p99 / 1000,
    ...(goals.ttftP99 === null ? {} : { ttft_p99_ms: goals.ttftP99 / 1000 }),
    ...(goals.tpotP99 === null ? {} : { tpot_p99_ms: goals.tpotP99 / 1000 }),
  };
}

export interface Traffic {
  /**
   * Arrivals per second (Poisson); with a trace, its mean rate (requests / span x rateScale),
   * for the limits and for display: the trace's own times set the arrivals.
   */
  readonly rate: number;
  /** Measured window, microseconds. */
  readonly duration: number;
  /**
   * Warm-up before the measured window, microseconds. With `warmupAuto`, the most the run may
   * choose, and what the cases' windows and the limits were checked against.
   */
  readonly warmup: number;
  /** `traffic.warmup: auto`: the run chooses each case's warm-up by a pilot (src/run/warmup.ts). */
  readonly warmupAuto: boolean;
  /** The request trace replayed instead of Poisson arrivals, or null. */
  readonly trace: Trace | null;
  /** How much faster than recorded the trace is replayed (1: as recorded); 1 without a trace. */
  readonly rateScale: number;
}

/** A shared prompt prefix (system prompt and tool schemas). */
export interface Prefix {
  readonly tokens: number;
  /** Relative weight among the prefixes of prompts that share one. */
  readonly weight: number;
}

/** Single model calls (docs/model.md section 2): shared prefix + suffix, or unique prompt. */
export interface RequestWorkload {
  readonly kind: 'request';
  readonly prefixes: readonly Prefix[];
  /** Probability that a prompt starts with a shared prefix. */
  readonly share: number;
  /** Tokens after the shared prefix. */
  readonly suffix: Distribution;
  /** Prompt tokens of a prompt that shares no prefix. */
  readonly unique: Distribution;
  readonly output: Distribution;
}

/** Agent sessions: `steps` model calls and their tool calls (`orchestrator.toolCalls`). */
export interface TaskWorkload {
  readonly kind: 'task';
  /** System prompt + tool schemas: the shared prefix of every step's prompt. */
  readonly system: number;
  /** New input tokens of each step (the last tool result and instructions). */
  readonly input: Distribution;
  readonly output: Distribution;
}

/** A plain queueing component's arrivals (M/M/c validation problems). */
export interface JobWorkload {
  readonly kind: 'job';
}

export type Workload = RequestWorkload | TaskWorkload | JobWorkload;

export interface LoadBalancer {
  readonly overhead: number;
}

/** App service / Agent API: holds a slot for the whole downstream call, rejects when full. */
export interface AppService {
  readonly replicas: number;
  readonly slots: number;
  /** The client's deadline, microseconds after arrival. */
  readonly timeout: number;
  readonly overhead: number;
}

/** Where an agent task calls its tools: between consecutive model calls, or after each one. */
export type ToolCalls = 'between-steps' | 'every-step';
export const TOOL_CALLS: readonly ToolCalls[] = ['between-steps', 'every-step'];

export interface Orchestrator {
  readonly slots: number;
  readonly steps: number;
  readonly overhead: number;
  readonly toolCalls: ToolCalls;
}

export interface ToolServers {
  readonly slots: number;
  readonly latency: Distribution;
}

export interface Router {
  readonly policy: RouterPolicy;
  readonly slots: number;
  readonly overhead: number;
  /** bounded-affinity: a replica may take at most ceil(c x (total + 1) / n) calls. */
  readonly boundedLoad: number;
  /** cache-aware: score = cachedTokens - alpha x queuedTokens. */
  readonly alpha: number;
  /** How many times a call failed by a dead replica is sent to another one. */
  readonly retries: number;
  /** Points per replica on the consistent-hashing ring. */
  readonly virtualNodes: number;
  /** Prefix affinity on a trace: the leading 512-token blocks a call's key hashes. */
  readonly affinityBlocks: number;
}

/**
 * Speed of one GPU replica: t = base + perSeq x B + prefillTokens / prefillRate. The engines
 * hold base and perSeq to the nanosecond: whole microseconds for the built-in and inline
 * profiles, a fit's fractions for the catalogue's.
 */
export interface GpuProfile {
  readonly name: string;
  /** Microseconds. */
  readonly base: number;
  /** Microseconds per decoding sequence in the batch. */
  readonly perSeq: number;
  /** Prompt tokens per millisecond. */
  readonly prefillRate: number;
  /** Most prompt tokens prefilled in one iteration (chunked prefill). */
  readonly chunk: number;
  /** GPUs one replica uses (tensor parallelism); absent where the profile does not say: one. */
  readonly tp?: number;
  /** The GPU type, a key of problems/profiles/prices.yaml (`H100`); absent where the profile does not say. */
  readonly gpuType?: string;
  /** KV cache of one replica, tokens, as the profile's source gives it: gpu.kvTokens's default. */
  readonly kvTokens?: number;
  /** What the hardware allows, where the profile knows its model and GPU (docs/model.md section 3, "The roofline floor"). */
  readonly roofline?: Roofline;
  /** Time a call spends at its replica outside the GPU's steps (BLIS's alphas); absent: none. */
  readonly host?: HostTime;
}

/**
 * BLIS's alphas (docs/model.md section 3), microseconds kept to the nanosecond: a call joins its
 * replica's queue `queueing + queueingPerToken x prompt tokens` after the router sends it
 * (alpha0, alpha1), and each token it returns takes `perOutputToken` (alpha2), added to its
 * time to first token and its end but to no GPU step.
 */
export interface HostTime {
  readonly queueing: number;
  readonly queueingPerToken: number;
  readonly perOutputToken: number;
}

/** The least time a step can take on a model and GPU: reading at peak bandwidth, computing at peak FLOPs. */
export interface Roofline {
  /** Microseconds to read, once, the weights a decode step uses (the active ones), split over the TP GPUs. */
  readonly weightsUs: number;
  /** Microseconds to read one token of a decoding sequence's KV context. */
  readonly kvUsPerToken: number;
  /** The model's KV cache bytes a token (gpu.offload.bytesPerToken's default). */
  readonly kvBytesPerToken: number;
  /** Nanoseconds a prompt token's 2 x active parameters FLOPs take. */
  readonly prefillNsPerToken: number;
  /**
   * The fitted numbers before the floor raised any (perOutputToken: alpha2, 0 without, which
   * gives the floor's raise of a lone decode step); absent where the profile is the floor itself.
   */
  readonly fitted?: { readonly base: number; readonly perSeq: number; readonly prefillRate: number; readonly perOutputToken: number };
}

/**
 * A replica's KV tier beyond its GPU's memory (docs/model.md section 3): entries its cache
 * evicts move there, and a prompt that finds its context there loads it back at `bandwidth`.
 */
export interface Offload {
  /** KV tokens the tier holds a replica (above 0: a pool without a tier has none). */
  readonly tokens: number;
  /** Bytes a second loading KV back into GPU memory. */
  readonly bandwidth: number;
  /** KV bytes a token. */
  readonly bytesPerToken: number;
}

export type KvAllocation = 'reserve' | 'incremental';

/** How the decode pool's router picks a replica for a call whose prompt is done (docs/model.md section 3). */
export type DecodePolicy = 'round-robin' | 'random' | 'least-loaded' | 'cache-aware';
export const DECODE_POLICIES: readonly DecodePolicy[] = ['round-robin', 'random', 'least-loaded', 'cache-aware'];

/** The decode replicas under disaggregation: their own profile, batch and KV (the pool's where the problem gives none). */
export interface DecodePool {
  readonly slots: number;
  readonly kvTokens: number;
  readonly profile: GpuProfile;
  /** Dollars per GPU-hour; absent when unknown. */
  readonly pricePerHour?: number;
}

/**
 * Prefill/decode disaggregation (docs/model.md section 3): the pool's first `prefill` replicas
 * only prefill, the rest only decode; a prompt's KV moves between them over a link.
 */
export interface Disaggregation {
  /** Replicas that only prefill, the first ones (at least 1); the other `replicas - prefill` only decode. */
  readonly prefill: number;
  readonly policy: DecodePolicy;
  /** Microseconds a transfer takes before its first byte. */
  readonly latency: number;
  /** Bytes a second over the link from a prefill replica to a decode replica. */
  readonly bandwidth: number;
  /** KV bytes a token. */
  readonly bytesPerToken: number;
  readonly decode: DecodePool;
}

export interface GpuPool {
  readonly replicas: number;
  /** Most sequences in one batch. */
  readonly slots: number;
  readonly kvTokens: number;
  /**
   * How a running sequence takes KV: `reserve`, its uncached prompt and whole output at admission;
   * `incremental`, its prompt at admission and a token each step, preempted when none is left.
   */
  readonly kv: KvAllocation;
  readonly profile: GpuProfile;
  /** The KV tier beyond GPU memory; absent: none. */
  readonly offload?: Offload;
  /** Prefill and decode on separate replicas; absent: every replica does both (co-located). */
  readonly disaggregation?: Disaggregation;
  /** Dollars per GPU-hour: gpu.pricePerHour, else the list price of the profile's GPU type; absent when neither is known. */
  readonly pricePerHour?: number;
}

/** A plain queueing component: `replicas x slots` servers, one FIFO queue, a service time. */
export interface QueueServer {
  readonly replicas: number;
  readonly slots: number;
  readonly service: Distribution;
  /** Client deadline, microseconds; 0 = none. */
  readonly timeout: number;
}

/** Which component a scenario's slowdown or failure hits. */
export type Target = 'gpu' | 'server' | 'tools' | 'app';

export interface Window {
  /** Microseconds from the start of the run (warm-up included). */
  readonly from: number;
  readonly to: number;
}

export interface Slowdown extends Window {
  readonly target: Target;
  /** Service time multiplier, e.g. 2. */
  readonly factor: number;
}

export interface ReplicaFailure extends Window {
  readonly target: Target;
  /** A replica index, one drawn per seed (`random`), or the one holding the most calls when it starts. */
  readonly replica: number | 'random' | 'busiest';
  /** reset: connections reset at once; hang: found by a health check after detectAfter. */
  readonly mode: 'reset' | 'hang';
  readonly detectAfter: number;
}

export interface Burst extends Window {
  readonly scale: number;
}

/** Arrivals a Poisson stream of `rate` a second is expected to bring in `micros`, the burst's window (inside them) at its scale. */
export function expectedArrivals(rate: number, micros: number, burst: Burst | null): number {
  const burstExtra = burst === null ? 0 : rate * (burst.scale - 1) * ((burst.to - burst.from) / 1e6);
  return (rate * micros) / 1e6 + burstExtra;
}

/** One test case: the problem's traffic and failures, changed as the case says. */
export interface Scenario {
  readonly name: string;
  readonly rateScale: number;
  readonly burst: Burst | null;
  readonly slowdown: Slowdown | null;
  readonly failures: readonly ReplicaFailure[];
}

export interface Problem {
  readonly id: string;
  readonly title: string;
  readonly goals: Goals;
  /** Share of seeds that must meet every goal for a case to pass. */
  readonly confidence: number;
  readonly seed: number;
  readonly traffic: Traffic;
  readonly workload: Workload;
  readonly lb: LoadBalancer | null;
  readonly app: AppService | null;
  readonly orchestrator: Orchestrator | null;
  readonly router: Router | null;
  readonly gpu: GpuPool | null;
  readonly tools: ToolServers | null;
  readonly server: QueueServer | null;
  /** The public cases, in order. */
  readonly cases: readonly Scenario[];
}
