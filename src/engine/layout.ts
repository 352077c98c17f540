/**
 * The engines' shared data layout: word indices into the parameter block (one per
 * configuration and scenario), into each instance's state record, and the names of event
 * kinds, job stages and result counters. The reference engine (`simulate.ts`) indexes typed
 * arrays with these names; the kernel loader (`gpu/kernel-source.ts`) prepends the same names
 * as WGSL constants, so the two engines read alike and cannot drift apart.
 *
 * See docs/kernel-layout.md for the picture.
 */
import * as layout from './layout.js';

/**
 * Parameter block: scalars, then variable sections whose offsets are scalars too. A time kept
 * to the nanosecond is two words, whole microseconds and the nanoseconds below them (ITER_BASE
 * and ITER_BASE_NS, 0-999): a GPU step's base and perSeq, and BLIS's alphas (docs/model.md
 * section 3), QUEUE_DELAY + QUEUE_TOKEN x prompt tokens before a call joins its replica's queue
 * and OUTPUT_TOKEN for each token it returns; OFFLOAD_TOKEN, loading one token of KV from the
 * offload tier. OFFLOAD_CAP: the offload tier's entries a replica (0: no tier), OFFLOAD_TOKENS its
 * size in tokens. KV_INCREMENTAL: 1 when a running sequence takes KV as its tokens grow and is
 * preempted when none is left (gpu.kv incremental), 0 when it reserves its whole output at admission.
 * PREFILL_REPLICAS: replicas 0 to PREFILL_REPLICAS - 1 only prefill and the rest only decode
 * (gpu.disaggregation; 0: every replica does both); DECODE_POLICY, the decode pool's router
 * policy (a POLICY); LINK_LATENCY + LINK_TOKEN x tokens, a KV transfer between them.
 *
 * A pool's words, GPU_SLOTS to OUTPUT_TOKEN_NS (POOL_WORDS of them from POOL_FIRST), are the
 * prefill pool's (or the whole pool's); the decode replicas read theirs DECODE_SHIFT words further
 * on, in a section of their own (0 where the pool is not split). RUN_CAP: the most slots of either,
 * a replica's running list's words.
 */
export const enum P {
  KIND, WARMUP, MEASURE_END, ARRIVAL_END, T_INTERARRIVAL, T_BURST_INTERARRIVAL, BURST_FROM,
  BURST_TO, SHARE, N_PREFIXES, OFF_PREFIXES, T_SUFFIX, T_UNIQUE, T_OUTPUT, SYSTEM_TOKENS,
  T_INPUT, STEPS, TOOL_EVERY_STEP, T_TOOL, TOOL_SLOTS, T_SERVICE, LB_OVERHEAD, APP_REPLICAS,
  APP_SLOTS, APP_OVERHEAD, TIMEOUT, GOAL_LATENCY, GOAL_TTFT, GOAL_TPOT, ORCH_SLOTS, ORCH_OVERHEAD, ROUTER_SLOTS, ROUTER_OVERHEAD, POLICY,
  BOUNDED_LOAD_MILLI, ALPHA_MILLI, RETRIES, RING_LEN, OFF_RING, GPU_REPLICAS, RUN_CAP,
  KV_INCREMENTAL, PREFILL_REPLICAS, DECODE_POLICY, LINK_LATENCY, LINK_TOKEN_US, LINK_TOKEN_NS, DECODE_SHIFT,
  GPU_SLOTS, KV_TOKENS, KV_UNIT, ITER_BASE, ITER_BASE_NS, ITER_PER_SEQ, ITER_PER_SEQ_NS, PREFILL_NS_PER_TOKEN, CHUNK,
  QUEUE_DELAY_US, QUEUE_DELAY_NS, QUEUE_TOKEN_US, QUEUE_TOKEN_NS, OUTPUT_TOKEN_US, OUTPUT_TOKEN_NS, CACHE_CAP,
  OFFLOAD_CAP, OFFLOAD_TOKENS, OFFLOAD_TOKEN_US, OFFLOAD_TOKEN_NS, SERVER_REPLICAS,
  SERVER_SLOTS, SLOW_TARGET, SLOW_FACTOR_MILLI, SLOW_FROM, SLOW_TO, N_FAILURES, OFF_FAILURES,
  JOB_CAP, HEAP_CAP, OFF_REPLICAS, REPLICA_STRIDE, OFF_APPS, OFF_SERVERS, OFF_JOBS, OFF_HEAP,
  OFF_FAILED, OFF_RESULT, OFF_CALLS, OFF_HIST, OFF_HIST_WAIT, OFF_HIST_TTFT, OFF_HIST_TPOT,
  OFF_HIST_TOOL_WAIT, OFF_INTERVALS, INTERVAL_US, STATE_WORDS, TRACE_ROWS, TRACE_STARTS, OFF_TRACE, COUNT,
}
export const PARAM_SCALARS = P.COUNT;
/** The first of a pool's words in the parameter block, and how many there are. */
export const POOL_FIRST: number = P.GPU_SLOTS;
export const POOL_WORDS: number = P.OUTPUT_TOKEN_NS + 1 - P.GPU_SLOTS;

/** Per prefix in the parameter block: cumulative weight threshold (of 2^31), tokens. */
export const PREFIX_WORDS = 2;
/** Per ring point: hash point, replica. Sorted by point. */
export const RING_WORDS = 2;
/**
 * Per request of a replayed trace, in the tables from P.OFF_TRACE (P.TRACE_ROWS of them): the
 * microseconds since the request before it (at the case's replay speed), prompt and output
 * tokens, the radix-tree node its full blocks end at + 1 (0: none), and the key prefix-affinity
 * routing hashes (0: route as a unique prompt).
 */
export const enum TR {
  GAP, INPUT, OUTPUT, NODE, ROUTE, COUNT,
}
export const TRACE_WORDS = TR.COUNT;
/**
 * Per node of a trace's radix tree (model/trace.ts TraceTree), right after the trace's rows:
 * its parent + 1 (0: a top node), the end of its subtree + 1 (so node key k = node + 1 is an
 * ancestor of key v exactly when k <= v <= END), its own tokens, and its depth in tokens.
 */
export const enum TN {
  PARENT, END, TOKENS, DEPTH, COUNT,
}
export const TREE_WORDS = TN.COUNT;
/** Per scheduled failure: target, replica (an index or a PICK), mode, from, to, detect time. */
export const enum FAILURE {
  TARGET, REPLICA, MODE, FROM, TO, DETECT_AT, COUNT,
}
export const FAILURE_WORDS = FAILURE.COUNT;
/** A failure's replica when the problem names none: drawn per seed, or the busiest at its start. */
export const enum PICK {
  RANDOM = 0xffffffff, BUSIEST = 0xfffffffe,
}

/**
 * Instance state header. ERROR: a full heap or cache (an ERR); STOPPED: the instance stopped on
 * it; TRACE_START: the trace request this instance's window starts at (drawn per seed).
 */
export const enum G {
  ERROR, STOPPED, DONE, KEY, NOW, SEQ, HEAP_LEN, NEXT_INDEX, NEXT_ARRIVAL, FREE_JOB, LIVE, RR,
  RAND, APP_RR, SLOW, ORCH_BUSY, ROUTER_BUSY, TOOLS_BUSY, TOOL_Q_HEAD, TOOL_Q_TAIL, TOOL_Q_LEN,
  SERVER_Q_HEAD, SERVER_Q_TAIL, SERVER_Q_LEN, TRACE_START, DECODE_RR, COUNT,
}
export const HEADER_WORDS = G.COUNT;

/**
 * Per GPU replica; its running list and cache entries follow these words. ENTRIES: one past the
 * highest cache entry ever used (every entry from there on is empty), where scans of the
 * entries stop. KV_USED: its KV cache's tokens, reserved and cached; KV_HELD: those in use, what
 * its running sequences reserve and the entries they pin (with those entries' ancestors), since
 * KV_SINCE (R.KV_AREA). OFFLOAD_USED: the tokens its offload tier holds; OFFLOAD_ENTRIES: one past
 * the highest offload entry ever used, as ENTRIES. The offload tier's entries follow the cache's.
 */
export const enum RP {
  STATUS, DOWN, MODE, START, DUR, EVENT_AT, GEN, BATCH, N_RUN, Q_HEAD, Q_TAIL, Q_LEN, KV_USED,
  KV_HELD, KV_SINCE, LOAD, LOAD_TOKENS, ENTRIES, OFFLOAD_USED, OFFLOAD_ENTRIES, COUNT,
}
export const REPLICA_HEADER_WORDS = RP.COUNT;
/**
 * Per cache entry: key (0 = empty), its own tokens, last use, PINS (the running sequences whose
 * cached prefix runs through it: those that pin it or an entry below it), its PARENT entry (NONE
 * at a root), CHILDREN, and DEPTH, the prompt tokens it and its ancestors cover. Entries form a
 * radix tree (docs/model.md section 3): an entry holds only the tokens past its parent's, and
 * one with children is never evicted, so an entry's whole prefix is cached while it is.
 */
export const enum E {
  KEY, TOKENS, LAST, PINS, PARENT, CHILDREN, DEPTH, COUNT,
}
export const ENTRY_WORDS = E.COUNT;
/**
 * Per entry of a replica's offload tier (docs/model.md section 3): key (0 = empty), its own
 * tokens, DEPTH as a cache entry's, LAST its last use, and HELD (1 while a call being admitted
 * is about to load it, which the tier's eviction spares). No tree: a trace's node is of use only
 * while every node between it and the GPU's cache is in the tier too.
 */
export const enum OE {
  KEY, TOKENS, DEPTH, LAST, HELD, COUNT,
}
export const OFFLOAD_WORDS = OE.COUNT;

/** Per app replica (also per server replica): busy slots, status. */
export const enum AP {
  BUSY, STATUS,
}
export const APP_WORDS = 2;

/**
 * Per job: an admitted request, task or queueing job, with its current call. CALL_AT: when
 * the call set out (the arrival, or the tool call's end); FIRST_AT: its first token; MISSED:
 * a call of the job missed the TTFT or TPOT goal; LOAD: the microseconds its first prefill step
 * spends loading its prompt's KV from the offload tier; PREEMPTS: the times its call was
 * preempted (gpu.kv incremental); READY: when its prompt's KV is all at its decode replica.
 */
export const enum J {
  GEN, STAGE, ARRIVAL, DEADLINE, INDEX, COUNTED, APP, STEP, CONTEXT, PREFIX, PROMPT, OUTPUT,
  CACHED, PREFILL_LEFT, OUT_LEFT, PHASE, ALLOC, REPLICA, ENTRY, RESERVED, RETRIES, NEXT, PREV,
  ENQUEUED, STARTED, CALL_AT, FIRST_AT, MISSED, LOAD, PREEMPTS, READY, COUNT,
}
export const JOB_WORDS = J.COUNT;

/** Per heap entry: time, insertion sequence (ties), kind << 24 | id, tag (generation). */
export const HEAP_WORDS = 4;

/**
 * Result counters; two-word sums are low word first. Failures are counted where they happen
 * (REJECTED_AT_*, TIMED_OUT_AT_*: the stage a job was in at its deadline). QUEUED, WAITED,
 * WAIT_SUM: the GPU replicas' queues (or the plain server's); TOOL_*: the tool servers' queue,
 * in the same order. CALLS_DONE: model calls that finished (TTFT_SUM over them); TPOT_CALLS:
 * those with a second token, TPOT_SUM their floored TPOTs and ITL_SUM their (end - first token),
 * which over their output tokens less one (OUTPUT_TOKENS - CALLS_DONE) is the mean inter-token
 * latency. GOOD: successes that met every goal. ROUTER_AREA, TOOL_AREA:
 * busy slot-microseconds (the app's and orchestrator's are IN_SYSTEM_AREA). KV_AREA: each GPU
 * replica's KV in use (RP.KV_HELD) over the measured window, summed, in P.KV_UNIT tokens x
 * microseconds; KV_PEAK: the most KV_UNITs one replica held in it. OVERLOADED counts
 * arrivals failed for an overload; OVERLOAD is the first capacity reached (an ERR),
 * OVERLOAD_AT where; LONGEST_QUEUE_AT where LONGEST_QUEUE was (TARGETs). OFFLOAD_TOKENS: the
 * part of CACHED_TOKENS the offload tier gave (the rest the GPU's cache did). PREEMPTIONS: counted
 * calls' preemptions (gpu.kv incremental); RECOMPUTED_TOKENS: the tokens their resumptions
 * computed again. TRANSFERS: counted calls' KV transfers to a decode replica (gpu.disaggregation),
 * TRANSFER_WAIT_SUM their wait there for room, TRANSFER_SUM their time on the link;
 * DECODE_BUSY and DECODE_BATCH_AREA, the decode pool's part of BUSY and BATCH_AREA.
 */
export const enum R {
  ARRIVALS, SUCCESSES, REJECTED_AT_APP, REJECTED_AT_ORCH, REJECTED_AT_ROUTER, REJECTED_AT_GPU,
  TIMED_OUT_AT_ROUTER, TIMED_OUT_AT_GPU, TIMED_OUT_AT_TOOLS, TIMED_OUT_AT_SERVER, DIED, GOOD,
  LATENCY_SUM, LATENCY_SUM_HI, SOJOURN_SUM, SOJOURN_SUM_HI, QUEUED, WAITED, WAIT_SUM,
  WAIT_SUM_HI, TOOL_QUEUED, TOOL_WAITED, TOOL_WAIT_SUM, TOOL_WAIT_SUM_HI, PROMPT_TOKENS,
  PROMPT_TOKENS_HI, CACHED_TOKENS, CACHED_TOKENS_HI, OUTPUT_TOKENS, OUTPUT_TOKENS_HI,
  CALLS_DONE, TTFT_SUM, TTFT_SUM_HI, TPOT_CALLS, TPOT_SUM, TPOT_SUM_HI, ITL_SUM, ITL_SUM_HI, BUSY, BUSY_HI,
  BATCH_AREA, BATCH_AREA_HI, KV_AREA, KV_AREA_HI, KV_PEAK, IN_SYSTEM_AREA, IN_SYSTEM_AREA_HI,
  ROUTER_AREA, ROUTER_AREA_HI, TOOL_AREA, TOOL_AREA_HI, LONGEST_QUEUE, LONGEST_QUEUE_AT, EVENTS,
  EVENTS_HI, OVERLOADED, OVERLOAD, OVERLOAD_AT, OFFLOAD_TOKENS, OFFLOAD_TOKENS_HI,
  PREEMPTIONS, RECOMPUTED_TOKENS, RECOMPUTED_TOKENS_HI, TRANSFERS, TRANSFER_WAIT_SUM,
  TRANSFER_WAIT_SUM_HI, TRANSFER_SUM, TRANSFER_SUM_HI, DECODE_BUSY, DECODE_BUSY_HI,
  DECODE_BATCH_AREA, DECODE_BATCH_AREA_HI, COUNT,
}
/**
 * The measured window cut into INTERVALS equal intervals of P.INTERVAL_US (the last may end past
 * it), in the result record from P.OFF_INTERVALS: per interval, the counted arrivals that came in
 * it and resolved (succeeded or failed once admitted), and their sojourns' sum (two words, low
 * first). The steady-state test's series (docs/model.md section 1, src/model/steady.ts): 32
 * intervals give MSER a few tens of batches, each with arrivals enough to average.
 */
export const INTERVALS = 32;
export const enum IV {
  RESOLVED, SOJOURN_SUM, SOJOURN_SUM_HI, COUNT,
}
export const INTERVAL_WORDS = IV.COUNT;

/** A queue's counters from its first (QUEUED or TOOL_QUEUED): reached, waited, wait sum. */
export const enum QW {
  QUEUED, WAITED, WAIT_SUM,
}
export const RESULT_SCALARS = R.COUNT;

export const enum KIND {
  REQUEST, TASK, JOB,
}
export const enum EV {
  NONE, ARRIVAL, DEADLINE, ROUTE, REPLICA, TOOL_DONE, SERVICE_DONE, SLOW_START, SLOW_END,
  FAIL_START, FAIL_DETECT, FAIL_END, QUEUE_JOIN, OUTPUT_DONE,
}
/**
 * Where a job is. GPU_ARRIVING: sent to a replica, not yet in its queue (P.QUEUE_DELAY);
 * GPU_OUTPUT: its call done on the GPU, its output still being processed (P.OUTPUT_TOKEN).
 */
export const enum STAGE {
  FREE, AT_ROUTER, GPU_QUEUED, GPU_RUNNING, TOOL_QUEUED, TOOL_RUNNING, SERVER_QUEUED,
  SERVER_RUNNING, GPU_ARRIVING, GPU_OUTPUT,
}
/**
 * PREEMPTED: its KV freed and the call back at the head of its replica's queue, to be recomputed.
 * TRANSFER: at a decode replica (gpu.disaggregation), its prompt's KV on its way there: queued
 * for room, then admitted and arriving until J.READY.
 */
export const enum PHASE {
  PREFILL, DECODE, PREEMPTED, TRANSFER,
}
export const enum MODE {
  IDLE, SINGLE, RUN, STARTING,
}
export const enum STATUS {
  ALIVE, DEAD, HUNG,
}
export const enum TARGET {
  NONE, GPU, SERVER, TOOLS, APP,
}
export const enum FAIL_MODE {
  RESET, HANG,
}
export const enum POLICY {
  ROUND_ROBIN, RANDOM, LEAST_LOADED, PREFIX_AFFINITY, BOUNDED_AFFINITY, CACHE_AWARE,
}
/**
 * A capacity sized from the configuration that an instance reached (R.OVERLOAD, the first one;
 * R.OVERLOAD_AT says at which component's queue, as a TARGET). A full job table refuses the
 * arrival and the instance goes on; a full heap or cache stops it (G.ERROR), and so does an
 * event that would fall past the last microsecond u32 time holds (HORIZON: 2^32 us, 4,295 s).
 */
export const enum ERR {
  NONE, JOBS_FULL, HEAP_FULL, CACHE_FULL, HORIZON,
}
/** Random streams: each draw is keyed by (instance, stream, a, b). */
export const enum STREAM {
  ARRIVAL, SHAPE, STEP, ROUTE, SERVICE, PLACEMENT, FAILURE, TRACE, COUNT,
}

/** Inverse-CDF table: quantiles at i/1024, i = 0..1024. */
export const TABLE_BITS = 10;
export const TABLE_WORDS = (1 << TABLE_BITS) + 1;

/**
 * Every name above, as the WGSL kernel sees them: `const P_KIND: u32 = 0u;` etc. The groups
 * are const enums, so the engines' compiled code holds plain numbers (property loads on layout
 * objects cost the reference engine most of its time); `preserveConstEnums` keeps the objects
 * for this list.
 */
export function layoutConstants(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [group, value] of Object.entries(layout)) {
    if (typeof value === 'number') {
      out[group] = value;
    } else if (typeof value === 'object' && value !== null) {
      for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v === 'number') out[`${group}_${name}`] = v;
      }
    }
  }
  return out;
}
