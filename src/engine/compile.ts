/**
 * Compiles a typed problem and one scenario into the engines' flat input: a u32 parameter
 * block, the inverse-CDF tables, and the size of one instance's state. Every capacity the
 * engines use is sized here from the configuration; an instance that reaches one is overloaded,
 * and the requests it cannot serve count as failed (see `ERR` in layout.ts).
 */
import { expectedArrivals, type Distribution, type GpuPool, type HostTime, type Problem, type Scenario, type Target } from '../model/problem.js';
import { affinityKey, TRACE_BLOCK_TOKENS, type Trace } from '../model/trace.js';
import { HISTOGRAM_BUCKETS } from '../model/histogram.js';
import { ServesimError } from '../errors.js';
import {
  APP_WORDS, ENTRY_WORDS, FAILURE, FAILURE_WORDS, FAIL_MODE, HEADER_WORDS, HEAP_WORDS, INTERVALS, INTERVAL_WORDS, JOB_WORDS,
  KIND, OFFLOAD_WORDS, P, PARAM_SCALARS, PICK, POLICY, POOL_FIRST, POOL_WORDS, REPLICA_HEADER_WORDS, RESULT_SCALARS,
  TABLE_WORDS, TARGET, TN, TR, TRACE_WORDS, TREE_WORDS,
} from './layout.js';
import { cacheEntries, LIMITS, offloadEntries } from '../problem/limits.js';
import { pcg } from './rng.js';
import { buildTable } from './tables.js';

export interface EngineConfig {
  readonly params: Uint32Array;
  readonly tables: Uint32Array;
  /** Words of one instance's state record (result included). */
  readonly stateWords: number;
  /** Where the result record starts in the state, and its length. */
  readonly resultOffset: number;
  readonly resultWords: number;
  readonly gpuReplicas: number;
  /** Servers (or GPU replicas) x measured window, for utilisation. */
  readonly capacityMicros: number;
  /** Slots x measured window of the components a design has, for their utilisation. */
  readonly slotMicros: SlotMicros;
  /** Where each histogram starts in the result record; -1 where the design has none. */
  readonly histograms: Readonly<Record<HistogramName, number>>;
  readonly measuredMicros: number;
  readonly warmupMicros: number;
  /** Where the measured window's intervals start in the result record, and one interval's length. */
  readonly intervals: number;
  readonly intervalMicros: number;
  /** The intervals before the case's first slowdown, failure or burst, which the steady-state test judges. */
  readonly judgedIntervals: number;
  /** Arrivals end + deadline: when a run with a timeout has certainly resolved everything. */
  readonly horizonMicros: number;
  readonly scenario: string;
}

/** The whole intervals of the measured window before the case's first slowdown, failure or burst begins. */
function judgedIntervals(scenario: Scenario, warmup: number, interval: number): number {
  const starts = [scenario.burst?.from, scenario.slowdown?.from, ...scenario.failures.map((f) => f.from)].filter((t) => t !== undefined);
  if (starts.length === 0) return INTERVALS;
  return Math.min(INTERVALS, Math.floor(Math.max(0, Math.min(...starts) - warmup) / interval));
}

/** The histograms a result record may hold (model/histogram.ts buckets each). */
export type HistogramName = 'latency' | 'wait' | 'ttft' | 'tpot' | 'toolWait';

/** Slot-microseconds each slotted component offers in the measured window; 0 where absent. */
export interface SlotMicros {
  readonly app: number;
  readonly orchestrator: number;
  readonly router: number;
  readonly tools: number;
}

const TWO_31 = 0x80000000;
/**
 * A replica's KV in use is counted in units of ceil(kvTokens / KV_UNITS) tokens (P.KV_UNIT), so
 * at most KV_UNITS of them: its integral (R.KV_AREA) over 64 replicas and 2^32 us stays below
 * 2^52, exact in the reference engine's doubles, and a unit is at most 1/16,384 of the cache.
 */
const KV_UNITS = 1 << 14;
const POLICY_CODE = {
  'round-robin': POLICY.ROUND_ROBIN,
  random: POLICY.RANDOM,
  'least-loaded': POLICY.LEAST_LOADED,
  'prefix-affinity': POLICY.PREFIX_AFFINITY,
  'bounded-affinity': POLICY.BOUNDED_AFFINITY,
  'cache-aware': POLICY.CACHE_AWARE,
} as const;
const TARGET_CODE: Record<Target, number> = {
  gpu: TARGET.GPU,
  server: TARGET.SERVER,
  tools: TARGET.TOOLS,
  app: TARGET.APP,
};
const U32_LIMIT = 0xffffffff;

/** A profile without BLIS's alphas spends no time outside the GPU's steps. */
const NO_HOST_TIME: HostTime = { queueing: 0, queueingPerToken: 0, perOutputToken: 0 };

/**
 * Microseconds kept to the nanosecond as the engines hold them: whole microseconds and the
 * nanoseconds below (layout.ts P). Inside u32: the parser holds such times under
 * LIMITS.stepMicros.
 */
function usAndNs(micros: number): [number, number] {
  const ns = Math.round(micros * 1000);
  return [Math.floor(ns / 1000), ns % 1000];
}

/** An upper bound on a Poisson count with this mean that is exceeded with negligible odds. */
function poissonBound(mean: number): number {
  return Math.ceil(mean + 8 * Math.sqrt(mean) + 16);
}

/** A trace at one replay speed: its rows for the engines' tables, and what sizes their capacities. */
interface TraceSection {
  readonly words: Uint32Array;
  /** Requests a window can start at: those with a whole window of the trace after them. */
  readonly starts: number;
  /** At most how many requests arrive within `micros` of one another. */
  readonly arrivalsWithin: (micros: number) => number;
}

/**
 * The trace's rows and its radix tree as the engines read them (layout.ts TR, then TN). Its
 * times are divided by `speed` (whole microseconds from the trace's first request, floored) and
 * kept as gaps, so a request arrives at its time after the window's first however long the whole
 * trace; a gap past the engines' u32 microseconds is held at the largest, which no window
 * reaches. The problem layer has checked that a window fits; this guard is for compile's other
 * callers.
 */
function traceSection(trace: Trace, speed: number, windowMicros: number, affinityBlocks: number): TraceSection {
  const n = trace.requests;
  const at = new Float64Array(n);
  for (let i = 0; i < n; i++) at[i] = Math.floor((trace.at[i]! - trace.at[0]!) / speed);
  const last = n === 0 ? 0 : at[n - 1]!;
  let starts = 0;
  while (starts < n && last - at[starts]! >= windowMicros) starts += 1;
  if (starts === 0) {
    throw new ServesimError('SERVESIM_PROBLEM_INVALID', `the trace spans ${last} us at ${speed}x, shorter than the window of ${windowMicros} us`, 'traffic.trace');
  }
  const tree = trace.tree;
  // padded to whole tables, as a batch rebases table indices in tables (batch-params.ts)
  const words = new Uint32Array(Math.ceil((n * TRACE_WORDS + tree.nodes * TREE_WORDS) / TABLE_WORDS) * TABLE_WORDS);
  for (let i = 0; i < n; i++) {
    const w = i * TRACE_WORDS;
    words[w + TR.GAP] = i === 0 ? 0 : Math.min(at[i]! - at[i - 1]!, U32_LIMIT - 1);
    words[w + TR.INPUT] = trace.input[i]!;
    words[w + TR.OUTPUT] = trace.output[i]!;
    words[w + TR.NODE] = trace.node[i]! + 1;
    words[w + TR.ROUTE] = affinityKey(trace, i, affinityBlocks);
  }
  for (let u = 0; u < tree.nodes; u++) {
    const w = n * TRACE_WORDS + u * TREE_WORDS;
    words[w + TN.PARENT] = tree.parent[u]! + 1;
    words[w + TN.END] = tree.end[u]!;
    words[w + TN.TOKENS] = tree.tokens[u]!;
    words[w + TN.DEPTH] = tree.depth[u]!;
  }
  const arrivalsWithin = (micros: number): number => {
    let most = 0;
    for (let lo = 0, hi = 0; hi < n; hi++) {
      while (at[hi]! - at[lo]! > micros) lo += 1;
      most = Math.max(most, hi - lo + 1);
    }
    return most;
  };
  return { words, starts, arrivalsWithin };
}

/** What a pool's words come from: the whole pool's fields, or the decode replicas'. */
type PoolConfig = Pick<GpuPool, 'slots' | 'kvTokens' | 'profile'>;

/**
 * A pool's words, P.GPU_SLOTS to P.OUTPUT_TOKEN_NS in their order, and the cache entries its
 * replicas index: at least the smallest cached context (`smallestEntry` tokens) each, within
 * kvTokens.
 */
function poolWords(pool: PoolConfig, smallestEntry: number): { words: number[]; cacheCap: number } {
  const { profile } = pool;
  const base = usAndNs(profile.base);
  const perSeq = usAndNs(profile.perSeq);
  const nsPerToken = Math.round(1e6 / profile.prefillRate);
  // a step's nanoseconds (iterationTime) are summed in one u32 before they round up to the us
  const stepNs = nsPerToken * profile.chunk + base[1] + perSeq[1] * pool.slots + 999;
  if (stepNs > U32_LIMIT) {
    throw new ServesimError('SERVESIM_PROBLEM_INVALID', `a step's nanoseconds, chunk x (1e6 / prefillRate) and the sub-microsecond parts of base and perSeq, must stay below 2^32 (got ${stepNs})`, 'gpu.profile');
  }
  const host = profile.host ?? NO_HOST_TIME;
  const w = new Array<number>(POOL_WORDS).fill(0);
  const at = (field: number): number => field - POOL_FIRST;
  w[at(P.GPU_SLOTS)] = pool.slots;
  w[at(P.KV_TOKENS)] = pool.kvTokens;
  w[at(P.KV_UNIT)] = Math.ceil(pool.kvTokens / KV_UNITS);
  [w[at(P.ITER_BASE)], w[at(P.ITER_BASE_NS)]] = base;
  [w[at(P.ITER_PER_SEQ)], w[at(P.ITER_PER_SEQ_NS)]] = perSeq;
  w[at(P.PREFILL_NS_PER_TOKEN)] = nsPerToken;
  w[at(P.CHUNK)] = profile.chunk;
  [w[at(P.QUEUE_DELAY_US)], w[at(P.QUEUE_DELAY_NS)]] = usAndNs(host.queueing);
  [w[at(P.QUEUE_TOKEN_US)], w[at(P.QUEUE_TOKEN_NS)]] = usAndNs(host.queueingPerToken);
  [w[at(P.OUTPUT_TOKEN_US)], w[at(P.OUTPUT_TOKEN_NS)]] = usAndNs(host.perOutputToken);
  const cacheCap = cacheEntries(pool.kvTokens, smallestEntry, pool.slots);
  // the parser refuses more (src/problem/build.ts); this guards compile's other callers
  if (cacheCap > LIMITS.cacheEntries) {
    throw new ServesimError('SERVESIM_CAPACITY_EXCEEDED', `kvTokens / smallest cached prefix allows ${cacheCap} cache entries per replica; the engines index at most ${LIMITS.cacheEntries}`, 'gpu.kvTokens');
  }
  return { words: w, cacheCap };
}

export function compile(problem: Problem, scenario: Scenario): EngineConfig {
  const { traffic, workload } = problem;
  const tables: Uint32Array[] = [];
  const table = (dist: Distribution): number => {
    tables.push(buildTable(dist));
    return tables.length - 1;
  };
  const p = new Uint32Array(PARAM_SCALARS);
  const extra: number[] = [];
  const section = (words: readonly number[]): number => {
    const offset = PARAM_SCALARS + extra.length;
    extra.push(...words);
    return offset;
  };

  const kind = workload.kind === 'request' ? KIND.REQUEST : workload.kind === 'task' ? KIND.TASK : KIND.JOB;
  const measureEnd = traffic.warmup + traffic.duration;
  p[P.KIND] = kind;
  p[P.WARMUP] = traffic.warmup;
  p[P.MEASURE_END] = measureEnd;
  p[P.ARRIVAL_END] = measureEnd;

  const rate = traffic.rate * scenario.rateScale;
  const affinityBlocks = problem.router?.affinityBlocks ?? 1;
  const trace = traffic.trace === null ? null : traceSection(traffic.trace, traffic.rateScale * scenario.rateScale, measureEnd, affinityBlocks);
  p[P.TRACE_ROWS] = traffic.trace?.requests ?? 0;
  p[P.TRACE_STARTS] = trace?.starts ?? 0;
  const burstScale = scenario.burst?.scale ?? 1;
  p[P.T_INTERARRIVAL] = table({ kind: 'exponential', mean: 1e6 / rate });
  p[P.T_BURST_INTERARRIVAL] = table({ kind: 'exponential', mean: 1e6 / (rate * burstScale) });
  p[P.BURST_FROM] = scenario.burst?.from ?? 0;
  p[P.BURST_TO] = scenario.burst?.to ?? 0;
  const peakRatePerMicro = (rate * Math.max(1, burstScale)) / 1e6;
  // at most how many arrivals come within `micros` of one another: a trace's count, or a
  // Poisson count exceeded with negligible odds
  const arrivalsWithin = (micros: number): number => (trace !== null ? trace.arrivalsWithin(micros) : poissonBound(peakRatePerMicro * micros));
  // every arrival of the run: no more jobs than that are ever in the system, nor deadlines in the heap
  const allArrivals = trace !== null ? trace.arrivalsWithin(measureEnd) : poissonBound(expectedArrivals(rate, measureEnd, scenario.burst));

  const timeout = problem.app?.timeout ?? problem.server?.timeout ?? 0;
  p[P.TIMEOUT] = timeout;
  // a goal not set is one no value misses
  p[P.GOAL_LATENCY] = problem.goals.p99;
  p[P.GOAL_TTFT] = problem.goals.ttftP99 ?? U32_LIMIT;
  p[P.GOAL_TPOT] = problem.goals.tpotP99 ?? U32_LIMIT;
  let jobCap: number;
  let inflightMicros = timeout;

  if (workload.kind === 'request') {
    p[P.SHARE] = Math.round(workload.share * TWO_31);
    p[P.N_PREFIXES] = workload.prefixes.length;
    const totalWeight = workload.prefixes.reduce((s, x) => s + x.weight, 0);
    let cumulative = 0;
    const words: number[] = [];
    workload.prefixes.forEach((prefix, i) => {
      cumulative += prefix.weight;
      const last = i === workload.prefixes.length - 1;
      words.push(last ? TWO_31 : Math.round((cumulative / totalWeight) * TWO_31), prefix.tokens);
    });
    p[P.OFF_PREFIXES] = section(words);
    p[P.T_SUFFIX] = table(workload.suffix);
    p[P.T_UNIQUE] = table(workload.unique);
    p[P.T_OUTPUT] = table(workload.output);
  } else if (workload.kind === 'task') {
    p[P.SYSTEM_TOKENS] = workload.system;
    p[P.T_INPUT] = table(workload.input);
    p[P.T_OUTPUT] = table(workload.output);
  }

  const { lb, app, orchestrator, router, gpu, tools, server } = problem;
  if (kind !== KIND.JOB) {
    if (!lb || !app || !router || !gpu) throw new Error(`${problem.id}: a ${workload.kind} workload needs lb, app, router and gpu`);
    p[P.LB_OVERHEAD] = lb.overhead;
    p[P.APP_REPLICAS] = app.replicas;
    p[P.APP_SLOTS] = app.slots;
    p[P.APP_OVERHEAD] = app.overhead;
    p[P.ROUTER_SLOTS] = router.slots;
    p[P.ROUTER_OVERHEAD] = router.overhead;
    p[P.POLICY] = POLICY_CODE[router.policy];
    p[P.BOUNDED_LOAD_MILLI] = Math.round(router.boundedLoad * 1000);
    p[P.ALPHA_MILLI] = Math.round(router.alpha * 1000);
    p[P.RETRIES] = router.retries;
    const ring: [number, number][] = [];
    // the router sends new calls to the prefill pool only, where there is one
    const { disaggregation } = gpu;
    for (let r = 0; r < (disaggregation?.prefill ?? gpu.replicas); r++) {
      for (let v = 0; v < router.virtualNodes; v++) ring.push([pcg((pcg(r + 1) ^ Math.imul(v, 0x9e3779b9)) >>> 0), r]);
    }
    ring.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    p[P.RING_LEN] = ring.length;
    p[P.OFF_RING] = section(ring.flat());
    p[P.GPU_REPLICAS] = gpu.replicas;
    p[P.KV_INCREMENTAL] = gpu.kv === 'incremental' ? 1 : 0;
    if (disaggregation !== undefined) {
      p[P.PREFILL_REPLICAS] = disaggregation.prefill;
      p[P.DECODE_POLICY] = POLICY_CODE[disaggregation.policy];
      p[P.LINK_LATENCY] = disaggregation.latency;
      // a token's transfer, to the nanosecond as the offload tier's (the parser holds it to 1 ns and more)
      [p[P.LINK_TOKEN_US], p[P.LINK_TOKEN_NS]] = usAndNs((disaggregation.bytesPerToken / disaggregation.bandwidth) * 1e6);
    }
    const smallestEntry = workload.kind === 'request'
      ? Math.min(...workload.prefixes.map((x) => x.tokens))
      : workload.kind === 'task' ? workload.system : gpu.kvTokens;
    // the pool's words; the decode replicas' in a section of their own where they have one
    const pools: PoolConfig[] = [gpu, ...(disaggregation === undefined ? [] : [disaggregation.decode])];
    const words = pools.map((pool) => poolWords(pool, trace !== null ? TRACE_BLOCK_TOKENS : smallestEntry));
    for (let w = 0; w < POOL_WORDS; w++) p[POOL_FIRST + w] = words[0]!.words[w]!;
    if (disaggregation !== undefined) p[P.DECODE_SHIFT] = section(words[1]!.words) - POOL_FIRST;
    p[P.RUN_CAP] = Math.max(...pools.map((pool) => pool.slots));
    p[P.CACHE_CAP] = Math.max(...words.map((pool) => pool.cacheCap));
    const { offload } = gpu;
    if (offload !== undefined) {
      // as the cache's, each entry at least the smallest cached context (its table never fills)
      const offloadCap = offloadEntries(offload.tokens, trace !== null ? TRACE_BLOCK_TOKENS : smallestEntry);
      if (offloadCap > LIMITS.cacheEntries) {
        throw new ServesimError('SERVESIM_CAPACITY_EXCEEDED', `gpu.offload.tokens / smallest cached prefix allows ${offloadCap} offload entries per replica; the engines index at most ${LIMITS.cacheEntries}`, 'gpu.offload.tokens');
      }
      p[P.OFFLOAD_CAP] = offloadCap;
      p[P.OFFLOAD_TOKENS] = offload.tokens;
      // a token's load, to the nanosecond as BLIS's alphas (the parser holds it to 1 ns and more)
      [p[P.OFFLOAD_TOKEN_US], p[P.OFFLOAD_TOKEN_NS]] = usAndNs((offload.bytesPerToken / offload.bandwidth) * 1e6);
    }
    const overheads = lb.overhead + app.overhead + router.overhead + (orchestrator?.overhead ?? 0);
    inflightMicros = timeout + overheads;
    jobCap = Math.min(app.replicas * app.slots, arrivalsWithin(inflightMicros));
    if (kind === KIND.TASK) {
      if (!orchestrator || !tools) throw new Error(`${problem.id}: a task workload needs orchestrator and tools`);
      p[P.ORCH_SLOTS] = orchestrator.slots;
      p[P.ORCH_OVERHEAD] = orchestrator.overhead;
      p[P.STEPS] = orchestrator.steps;
      p[P.TOOL_EVERY_STEP] = orchestrator.toolCalls === 'every-step' ? 1 : 0;
      p[P.TOOL_SLOTS] = tools.slots;
      p[P.T_TOOL] = table(tools.latency);
      jobCap = Math.min(jobCap, orchestrator.slots);
    }
  } else {
    if (!server) throw new Error(`${problem.id}: a job workload needs server`);
    p[P.SERVER_REPLICAS] = server.replicas;
    p[P.SERVER_SLOTS] = server.slots;
    p[P.T_SERVICE] = table(server.service);
    // a stable queue rarely holds more than a few hundred; an unstable one reaches this bound
    // and refuses arrivals from then on, as overloaded
    jobCap = 8 * server.replicas * server.slots + 256;
    if (timeout > 0) jobCap = Math.min(jobCap, arrivalsWithin(timeout));
  }
  jobCap = Math.min(jobCap, allArrivals);
  p[P.JOB_CAP] = jobCap;

  const slow = scenario.slowdown;
  p[P.SLOW_TARGET] = slow ? TARGET_CODE[slow.target] : TARGET.NONE;
  p[P.SLOW_FACTOR_MILLI] = slow ? Math.round(slow.factor * 1000) : 1000;
  p[P.SLOW_FROM] = slow?.from ?? 0;
  p[P.SLOW_TO] = slow?.to ?? 0;

  p[P.N_FAILURES] = scenario.failures.length;
  const failureWords: number[] = [];
  for (const f of scenario.failures) {
    const w = new Array<number>(FAILURE_WORDS).fill(0);
    w[FAILURE.TARGET] = TARGET_CODE[f.target];
    w[FAILURE.REPLICA] = f.replica === 'random' ? PICK.RANDOM : f.replica === 'busiest' ? PICK.BUSIEST : f.replica;
    w[FAILURE.MODE] = f.mode === 'hang' ? FAIL_MODE.HANG : FAIL_MODE.RESET;
    w[FAILURE.FROM] = f.from;
    w[FAILURE.TO] = f.to;
    w[FAILURE.DETECT_AT] = f.mode === 'hang' ? Math.min(f.to, f.from + f.detectAfter) : f.from;
    failureWords.push(...w);
  }
  p[P.OFF_FAILURES] = section(failureWords);

  // Heap: one deadline per arrival still inside its timeout (stale ones included), at most
  // two more events per job, a boundary (and stale ones) per replica, the window events.
  const deadlines = timeout > 0 ? Math.min(arrivalsWithin(inflightMicros), allArrivals) : 0;
  const gpuReplicas = gpu?.replicas ?? 0;
  p[P.HEAP_CAP] = deadlines + 3 * jobCap + 4 * gpuReplicas + 3 * scenario.failures.length + 16;

  p[P.REPLICA_STRIDE] = gpuReplicas > 0 ? REPLICA_HEADER_WORDS + p[P.RUN_CAP]! + p[P.CACHE_CAP]! * ENTRY_WORDS + p[P.OFFLOAD_CAP]! * OFFLOAD_WORDS : 0;
  let offset = HEADER_WORDS;
  // the replica each failure took down, picked when it starts
  p[P.OFF_FAILED] = offset;
  offset += scenario.failures.length;
  p[P.OFF_REPLICAS] = offset;
  offset += gpuReplicas * p[P.REPLICA_STRIDE]!;
  p[P.OFF_APPS] = offset;
  offset += (app?.replicas ?? 0) * APP_WORDS;
  p[P.OFF_SERVERS] = offset;
  offset += (server?.replicas ?? 0) * APP_WORDS;
  p[P.OFF_JOBS] = offset;
  offset += jobCap * JOB_WORDS;
  p[P.OFF_HEAP] = offset;
  offset += p[P.HEAP_CAP]! * HEAP_WORDS;
  p[P.OFF_RESULT] = offset;
  p[P.OFF_CALLS] = offset + RESULT_SCALARS;
  // histograms follow, those of components and calls the design has
  let end = p[P.OFF_CALLS]! + gpuReplicas;
  const histogram = (param: number, present: boolean): number => {
    if (!present) return -1;
    p[param] = end;
    end += HISTOGRAM_BUCKETS;
    return p[param]! - offset;
  };
  const histograms: Record<HistogramName, number> = {
    latency: histogram(P.OFF_HIST, true),
    wait: histogram(P.OFF_HIST_WAIT, true),
    ttft: histogram(P.OFF_HIST_TTFT, kind !== KIND.JOB),
    tpot: histogram(P.OFF_HIST_TPOT, kind !== KIND.JOB),
    toolWait: histogram(P.OFF_HIST_TOOL_WAIT, kind === KIND.TASK),
  };
  // the measured window's intervals last, the steady-state test's series (layout.ts INTERVALS)
  p[P.OFF_INTERVALS] = end;
  end += INTERVALS * INTERVAL_WORDS;
  p[P.INTERVAL_US] = Math.ceil(traffic.duration / INTERVALS);
  const stateWords = end;
  p[P.STATE_WORDS] = stateWords;
  // the parser's limits keep every problem inside these; this guards compile's other callers
  const paramsWords = PARAM_SCALARS + extra.length;
  for (const [what, words, limit] of [['an instance\'s state', stateWords, LIMITS.stateWords], ['its params block', paramsWords, LIMITS.paramsWords]] as const) {
    if (words > limit) {
      throw new ServesimError('SERVESIM_CAPACITY_EXCEEDED', `case ${scenario.name}: ${what}, ${words.toLocaleString('en')} words, is over the engines' limit of ${limit.toLocaleString('en')}`);
    }
  }

  const params = new Uint32Array(paramsWords);
  params.set(p);
  params.set(extra, PARAM_SCALARS);
  const allTables = new Uint32Array(tables.length * TABLE_WORDS + (trace?.words.length ?? 0));
  tables.forEach((t, i) => allTables.set(t, i * TABLE_WORDS));
  // the trace follows the tables, indexed by word (P.OFF_TRACE)
  if (trace !== null) {
    params[P.OFF_TRACE] = tables.length * TABLE_WORDS;
    allTables.set(trace.words, tables.length * TABLE_WORDS);
  }
  const servers = server ? server.replicas * server.slots : gpuReplicas;
  return {
    params,
    tables: allTables,
    stateWords,
    resultOffset: p[P.OFF_RESULT]!,
    resultWords: stateWords - p[P.OFF_RESULT]!,
    gpuReplicas,
    capacityMicros: servers * traffic.duration,
    slotMicros: {
      app: app ? app.replicas * app.slots * traffic.duration : 0,
      orchestrator: orchestrator ? orchestrator.slots * traffic.duration : 0,
      router: router ? router.slots * traffic.duration : 0,
      tools: kind === KIND.TASK && tools ? tools.slots * traffic.duration : 0,
    },
    histograms,
    measuredMicros: traffic.duration,
    warmupMicros: traffic.warmup,
    intervals: p[P.OFF_INTERVALS]! - offset,
    intervalMicros: p[P.INTERVAL_US]!,
    judgedIntervals: judgedIntervals(scenario, traffic.warmup, p[P.INTERVAL_US]!),
    horizonMicros: measureEnd + inflightMicros,
    scenario: scenario.name,
  };
}
