// The reference engine in WGSL: src/engine/simulate.ts line for line, same functions in the
// same order under the same section comments, each section calling only its own and earlier
// ones (test/engine-mirror.test.ts checks it), one invocation per instance. kernel-source.ts
// prepends the layout constants (P_KIND, J_GEN, EV_ARRIVAL, ...) generated from layout.ts.
//
// Where WGSL forces a difference: u32 operators wrap, so `>>> 0` disappears and
// Math.floor(a / b) is a / b; Math.clz32 is countLeadingZeros; JS's signed `score` in
// routePick is an i32; WGSL reserves `from` and `target`, which read `begin` and `tgt`; a
// ternary is a select (it evaluates both sides, so cacheBest keeps an if to skip a scan).
// Two differences are the GPU's, which runs a batch of many configurations at once:
// simulate.ts's st[i] is st[ix(i)] here, ix placing the word in the batch's state layout, and
// its pr[i] is param(i), word i of this instance's configuration in the params of the whole
// batch, one configuration after another. Section offsets (P_OFF_RING, ...) are relative to
// the configuration, so param(param(P_OFF_RING) + k) reads its ring; its table indices (P_T_*)
// are the batch's (src/engine/batch-params.ts), so sample() reads tb as simulate.ts does
// (docs/kernel-layout.md).
//
// The shader compiler inlines every call, so each call site is a copy of the callee's whole
// subtree: where simulate.ts calls the same function in branches that exclude each other and
// end alike (handleEvent's slowdown cases, failureStart's app and server cases, replicaPlan's
// two modes), this file calls it once after the branch.
//
// The configuration's shape, one for every configuration of a batch, is a set of pipeline
// constants, not params: simulate.ts's p[P.KIND] and p[P.SLOW_TARGET] read KIND and
// SLOW_TARGET here (its p[P.OFFLOAD_CAP] !== 0, OFFLOAD; p[P.KV_INCREMENTAL], KV_INCREMENTAL;
// p[P.PREFILL_REPLICAS] !== 0, DISAGGREGATED), and the handlers a shape can never
// reach (the M/M/c server for a GPU problem, the tools for plain requests, a failure's target
// that no failure has, the KV offload tier) sit behind guards on them that simulate.ts does not
// need. The compiler then leaves that code out, so a
// shape compiles in a fraction of the time, and on a Mesa before 24, whose llvmpipe runs both
// sides of every branch, each line compiled costs every event (docs/architecture.md).
//
// Mesa's llvmpipe ends every loop after 65,535 loop iterations in one invocation, all loops
// together, which would corrupt an instance silently. So advanceInstance stops after
// `evBudget` events (stopping between two events changes nothing, as time windows do not),
// and initInstance leaves zeroing the state to the host; entry.wgsl detects the cap.

// The buffers an instance runs on: state (all instances), its base, params and tables.
@group(0) @binding(BINDING_STATE) var<storage, read_write> st: array<u32>;
var<private> sb: u32;
// The instance's slot in the batch, and the batch's size (entry.wgsl's run.count).
var<private> batchSlot: u32;
var<private> batchSize: u32;
// Where this instance's results, jobs and heap start (fixed for a configuration).
var<private> rs: u32;
var<private> js: u32;
var<private> hs: u32;
// The params of every configuration in the batch, and where this instance's start.
@group(0) @binding(BINDING_PARAMS) var<storage, read> pr: array<u32>;
var<private> pb: u32;
@group(0) @binding(BINDING_TABLES) var<storage, read> tb: array<u32>;
// The event being handled.
var<private> evTime: u32;
var<private> evKind: u32;
var<private> evId: u32;
var<private> evTag: u32;
// Events this invocation may still handle: the host's budget for one dispatch (entry.wgsl).
var<private> evBudget: u32;

// src/engine/shape.ts gives these from the params (src/gpu/engine.ts sets them).
override KIND: u32;
override SLOW_TARGET: u32;
// A bit (1 << TARGET_x) for each target some failure of the scenario has.
override FAILURE_TARGETS: u32;
// Whether the GPU replicas have a KV offload tier: simulate.ts's p[P.OFFLOAD_CAP] != 0 (the
// tier's code sits behind it, so a shape without one compiles none of it).
override OFFLOAD: bool;
// Whether the GPU replicas take KV as sequences grow and preempt: simulate.ts's
// p[P.KV_INCREMENTAL] != 0 (its code, like the tier's, compiled only where a shape has it).
override KV_INCREMENTAL: bool;
// Whether the GPU replicas are split into a prefill and a decode pool: simulate.ts's
// p[P.PREFILL_REPLICAS] != 0 (the handoff and the transfer compiled only where a shape has it).
override DISAGGREGATED: bool;

// How the batch's records share the state buffer (src/gpu/engine.ts's stateLayout): one after
// another, or with INTERLEAVED word by word, word i of every instance side by side, so that
// the lanes of a GPU's SIMD group reading the same field would read adjacent words, in one
// memory transaction rather than one each.
override INTERLEAVED: bool;

// Where word i of the instance's record lies in the state buffer: simulate.ts indexes its
// records directly, so its st[i] is st[ix(i)] here.
fn ix(i: u32) -> u32 {
  if (INTERLEAVED) { return i * batchSize + batchSlot; }
  return i;
}

// Word i of the instance's configuration's params: simulate.ts's pr[i].
fn param(i: u32) -> u32 {
  return pr[pb + i];
}

fn failsAt(tgt: u32) -> bool {
  return (FAILURE_TARGETS & (1u << tgt)) != 0u;
}

const SESSION_KEY: u32 = 0x80000000u;
const NONE: u32 = 0xffffffffu;
const SUB_BITS: u32 = 6u;

// ---- results and arithmetic ----------------------------------------------------------------------------

fn result(field: u32) -> u32 {
  return rs + field;
}

fn count(field: u32) {
  st[ix(result(field))] = st[ix(result(field))] + 1u;
}

fn bucketOf(v: u32) -> u32 {
  if (v < (1u << SUB_BITS)) { return v; }
  let shift = 31u - countLeadingZeros(v) - SUB_BITS;
  return (shift + 1u) * (1u << SUB_BITS) + ((v >> shift) & ((1u << SUB_BITS) - 1u));
}

/** Counts a value in the histogram at param(offset) (a P_OFF_HIST_*). */
fn histCount(offset: u32, v: u32) {
  let h = sb + param(offset) + bucketOf(v);
  st[ix(h)] = st[ix(h)] + 1u;
}

// ---- arithmetic -------------------------------------------------------------------------

/** Adds a u32 to a two-word result counter. */
fn add64(field: u32, v: u32) {
  let at = result(field);
  let lo = st[ix(at)] + v;
  if (lo < st[ix(at)]) { st[ix(at + 1u)] = st[ix(at + 1u)] + 1u; }
  st[ix(at)] = lo;
}

/** Adds a x b (u32 x u32) to a two-word result counter, in 16-bit pieces. */
fn mulAdd64(field: u32, a: u32, b: u32) {
  if (((a | b) >> 16u) == 0u) {
    add64(field, a * b);
    return;
  }
  let al = a & 0xffffu;
  let ah = a >> 16u;
  let bl = b & 0xffffu;
  let bh = b >> 16u;
  let lh = al * bh;
  let hl = ah * bl;
  add64(field, al * bl);
  add64(field, lh << 16u);
  add64(field, hl << 16u);
  let hi = result(field) + 1u;
  st[ix(hi)] = st[ix(hi)] + (lh >> 16u) + (hl >> 16u) + ah * bh;
}

/** floor(a x milli / 1000) without passing 2^32 on the way. */
fn scaleMilli(a: u32, milli: u32) -> u32 {
  return (a / 1000u) * milli + ((a % 1000u) * milli) / 1000u;
}

/**
 * floor(a x milli / 1000), capped at cap (cap <= 2^30, milli <= 100,000), exact without passing
 * 2^32: scaleMilli would wrap before a min() could cap it. Past cap when a / 1000 > cap / milli.
 */
fn scaleMilliCapped(a: u32, milli: u32, cap: u32) -> u32 {
  if (milli != 0u && a / 1000u > cap / milli) { return cap; }
  return min(scaleMilli(a, milli), cap);
}

/**
 * ceil(m x t1 / b), bounded affinity's cap, exact in u32 while m x (b - 1) + b < 2^32 (a
 * problem's c and replicas give m, b <= 64,000): m x t1 can pass 2^32 (and wrap here).
 */
fn ceilMulDiv(m: u32, t1: u32, b: u32) -> u32 {
  return m * (t1 / b) + (m * (t1 % b) + b - 1u) / b;
}

/** Microseconds of [begin, to) inside the measured window. */
fn measured(begin: u32, to: u32) -> u32 {
  let lo = max(begin, param(P_WARMUP));
  let hi = min(to, param(P_MEASURE_END));
  return select(0u, hi - lo, hi > lo);
}

/** A full heap or cache: the instance cannot go on faithfully; the event loop stops it. */
fn fail(code: u32) {
  if (st[ix(sb + G_ERROR)] == ERR_NONE) { st[ix(sb + G_ERROR)] = code; }
}

/**
 * The time runs x dur microseconds from now, or NONE when it would pass NONE - 1, the last
 * time advance can reach (u32 microseconds end at 4,295 s): the instance then stops
 * (ERR_HORIZON). Checked on the room left, never on a sum that WGSL would wrap and TypeScript
 * would not. An event pushed at NONE never happens, and stopInstance drops it.
 */
fn later(runs: u32, dur: u32) -> u32 {
  let now = st[ix(sb + G_NOW)];
  if (dur != 0u && runs > (NONE - 1u - now) / dur) {
    fail(ERR_HORIZON);
    return NONE;
  }
  return now + runs * dur;
}

/** floor((n x perNs + baseNs) / 1000): n tokens' nanoseconds below their whole microseconds, in parts that stay inside u32 (n's thousands exactly). */
fn tokenMicros(n: u32, perNs: u32, baseNs: u32) -> u32 {
  return (n / 1000u) * perNs + ((n % 1000u) * perNs + baseNs) / 1000u;
}

/**
 * The time base + n x per from now, each a whole microseconds and nanoseconds below them (layout.ts
 * P), floored to the microsecond once: n tokens of BLIS's alphas, kept to the nanosecond. NONE past
 * the clock, as later. n x perNs is taken in parts that stay inside u32: n's thousands exactly,
 * its rest with the base's nanoseconds.
 */
fn laterTokens(baseUs: u32, baseNs: u32, n: u32, perUs: u32, perNs: u32) -> u32 {
  let whole = later(n, perUs);
  let ns = tokenMicros(n, perNs, baseNs);
  if (whole == NONE) { return NONE; }
  if (ns > NONE - 1u - whole || baseUs > NONE - 1u - whole - ns) {
    fail(ERR_HORIZON);
    return NONE;
  }
  return whole + ns + baseUs;
}

fn random(stream: u32, a: u32, b: u32) -> u32 {
  return draw(st[ix(sb + G_KEY)], stream, a, b);
}

fn sample(table: u32, u: u32) -> u32 {
  return sampleTable(param(table), u);
}

// ---- event heap: a binary min-heap on (time, insertion sequence) ------------------------

fn heapAt(i: u32) -> u32 {
  return hs + i * HEAP_WORDS;
}

fn heapBefore(a: u32, b: u32) -> bool {
  return st[ix(a)] < st[ix(b)] || (st[ix(a)] == st[ix(b)] && st[ix(a + 1u)] < st[ix(b + 1u)]);
}

fn heapPush(time: u32, kind: u32, id: u32, tag: u32) {
  let n = st[ix(sb + G_HEAP_LEN)];
  if (n >= param(P_HEAP_CAP)) {
    fail(ERR_HEAP_FULL);
    return;
  }
  let seq = st[ix(sb + G_SEQ)];
  st[ix(sb + G_SEQ)] = seq + 1u;
  var i = n;
  while (i > 0u) {
    let parent = (i - 1u) >> 1u;
    let pa = heapAt(parent);
    if (st[ix(pa)] < time || (st[ix(pa)] == time && st[ix(pa + 1u)] < seq)) { break; }
    let at = heapAt(i);
    st[ix(at)] = st[ix(pa)];
    st[ix(at + 1u)] = st[ix(pa + 1u)];
    st[ix(at + 2u)] = st[ix(pa + 2u)];
    st[ix(at + 3u)] = st[ix(pa + 3u)];
    i = parent;
  }
  let at = heapAt(i);
  st[ix(at)] = time;
  st[ix(at + 1u)] = seq;
  st[ix(at + 2u)] = (kind << 24u) | id;
  st[ix(at + 3u)] = tag;
  st[ix(sb + G_HEAP_LEN)] = n + 1u;
}

/** Removes the earliest event into evTime, evKind, evId, evTag. */
fn heapPop() {
  let top = heapAt(0u);
  evTime = st[ix(top)];
  evKind = st[ix(top + 2u)] >> 24u;
  evId = st[ix(top + 2u)] & 0xffffffu;
  evTag = st[ix(top + 3u)];
  let n = st[ix(sb + G_HEAP_LEN)] - 1u;
  st[ix(sb + G_HEAP_LEN)] = n;
  let last = heapAt(n);
  var i = 0u;
  loop {
    var child = 2u * i + 1u;
    if (child >= n) { break; }
    if (child + 1u < n && heapBefore(heapAt(child + 1u), heapAt(child))) { child += 1u; }
    let c = heapAt(child);
    if (!heapBefore(c, last)) { break; }
    let at = heapAt(i);
    st[ix(at)] = st[ix(c)];
    st[ix(at + 1u)] = st[ix(c + 1u)];
    st[ix(at + 2u)] = st[ix(c + 2u)];
    st[ix(at + 3u)] = st[ix(c + 3u)];
    i = child;
  }
  let at = heapAt(i);
  st[ix(at)] = st[ix(last)];
  st[ix(at + 1u)] = st[ix(last + 1u)];
  st[ix(at + 2u)] = st[ix(last + 2u)];
  st[ix(at + 3u)] = st[ix(last + 3u)];
}

// ---- jobs and FIFO queues ---------------------------------------------------------------

fn jobAt(j: u32) -> u32 {
  return js + j * JOB_WORDS;
}

fn jobAlloc() -> u32 {
  let j = st[ix(sb + G_FREE_JOB)];
  if (j == NONE) {
    overload(ERR_JOBS_FULL);
    return NONE;
  }
  let jb = jobAt(j);
  st[ix(sb + G_FREE_JOB)] = st[ix(jb + J_NEXT)];
  st[ix(sb + G_LIVE)] = st[ix(sb + G_LIVE)] + 1u;
  return j;
}

/** Frees a job; its generation moves on, so its pending events go stale. */
fn jobFree(j: u32) {
  let jb = jobAt(j);
  st[ix(jb + J_GEN)] = st[ix(jb + J_GEN)] + 1u;
  st[ix(jb + J_STAGE)] = STAGE_FREE;
  st[ix(jb + J_NEXT)] = st[ix(sb + G_FREE_JOB)];
  st[ix(sb + G_FREE_JOB)] = j;
  st[ix(sb + G_LIVE)] = st[ix(sb + G_LIVE)] - 1u;
}

/**
 * A FIFO is three words (head, tail, length) linking jobs through J_NEXT and J_PREV. `at`:
 * the component it belongs to (a TARGET), for the longest queue.
 */
fn queuePush(q: u32, j: u32, at: u32) {
  let jb = jobAt(j);
  st[ix(jb + J_NEXT)] = NONE;
  if (st[ix(q + 2u)] == 0u) {
    st[ix(jb + J_PREV)] = NONE;
    st[ix(q)] = j;
  } else {
    st[ix(jb + J_PREV)] = st[ix(q + 1u)];
    st[ix(jobAt(st[ix(q + 1u)]) + J_NEXT)] = j;
  }
  st[ix(q + 1u)] = j;
  st[ix(q + 2u)] = st[ix(q + 2u)] + 1u;
  queueLonger(st[ix(q + 2u)], at);
}

/** Job j joins FIFO q at its head (a preempted call, which resumes first). */
fn queuePushFront(q: u32, j: u32, at: u32) {
  let jb = jobAt(j);
  st[ix(jb + J_PREV)] = NONE;
  if (st[ix(q + 2u)] == 0u) {
    st[ix(jb + J_NEXT)] = NONE;
    st[ix(q + 1u)] = j;
  } else {
    st[ix(jb + J_NEXT)] = st[ix(q)];
    st[ix(jobAt(st[ix(q)]) + J_PREV)] = j;
  }
  st[ix(q)] = j;
  st[ix(q + 2u)] = st[ix(q + 2u)] + 1u;
  queueLonger(st[ix(q + 2u)], at);
}

/** A queue of component `at` (a TARGET) is now `len` long: the longest so far? */
fn queueLonger(len: u32, at: u32) {
  if (len > st[ix(result(R_LONGEST_QUEUE))]) {
    st[ix(result(R_LONGEST_QUEUE))] = len;
    st[ix(result(R_LONGEST_QUEUE_AT))] = at;
  }
}

fn queueUnlink(q: u32, j: u32) {
  let jb = jobAt(j);
  let next = st[ix(jb + J_NEXT)];
  let prev = st[ix(jb + J_PREV)];
  if (prev == NONE) { st[ix(q)] = next; }
  else { st[ix(jobAt(prev) + J_NEXT)] = next; }
  if (next == NONE) { st[ix(q + 1u)] = prev; }
  else { st[ix(jobAt(next) + J_PREV)] = prev; }
  st[ix(q + 2u)] = st[ix(q + 2u)] - 1u;
}

/** Whether GPU replica r only decodes: it is past the prefill pool (gpu.disaggregation). */
fn decodeOnly(r: u32) -> bool {
  return DISAGGREGATED && r >= param(P_PREFILL_REPLICAS);
}

/** Where GPU replica r's pool's words are (layout.ts P): P's own, or the decode replicas' DECODE_SHIFT words on. */
fn poolOf(r: u32) -> u32 {
  return select(0u, param(P_DECODE_SHIFT), decodeOnly(r));
}

/** Where GPU replica r's words start: its queue (busiestQueue), its batch, its cache entries. */
fn replicaAt(r: u32) -> u32 {
  return sb + param(P_OFF_REPLICAS) + r * param(P_REPLICA_STRIDE);
}

/**
 * The component whose queue holds the most jobs (the GPU replicas' queues together): where an
 * overload shows. With every queue empty the jobs are in service, held by the app (or server).
 */
fn busiestQueue() -> u32 {
  var gpu = 0u;
  for (var r = 0u; r < param(P_GPU_REPLICAS); r++) { gpu += st[ix(replicaAt(r) + RP_Q_LEN)]; }
  var at = select(TARGET_APP, TARGET_SERVER, KIND == KIND_JOB);
  var most = 0u;
  if (gpu > most) {
    at = TARGET_GPU;
    most = gpu;
  }
  if (st[ix(sb + G_TOOL_Q_LEN)] > most) {
    at = TARGET_TOOLS;
    most = st[ix(sb + G_TOOL_Q_LEN)];
  }
  if (st[ix(sb + G_SERVER_Q_LEN)] > most) { at = TARGET_SERVER; }
  return at;
}

/** Records the first capacity (an ERR) the instance reached, and where it showed. */
fn overload(code: u32) {
  if (st[ix(result(R_OVERLOAD))] != ERR_NONE) { return; }
  st[ix(result(R_OVERLOAD))] = code;
  st[ix(result(R_OVERLOAD_AT))] = select(busiestQueue(), TARGET_GPU, code == ERR_CACHE_FULL);
}

fn noteBusy(begin: u32, to: u32, batch: u32) {
  let t = measured(begin, to);
  add64(R_BUSY, t);
  mulAdd64(R_BATCH_AREA, t, batch);
}

/** GPU replica r's busy time and batch since its step began, a decode replica's apart (gpu.disaggregation: decodeResult adds them). */
fn replicaBusy(r: u32) {
  let rb = replicaAt(r);
  let decode = decodeOnly(r);
  let t = measured(st[ix(rb + RP_START)], st[ix(sb + G_NOW)]);
  add64(select(R_BUSY, R_DECODE_BUSY, decode), t);
  mulAdd64(select(R_BATCH_AREA, R_DECODE_BATCH_AREA, decode), t, st[ix(rb + RP_BATCH)]);
}

/**
 * A counted arrival resolved after `sojourn` microseconds: counted in the interval of the
 * measured window it came in (P_OFF_INTERVALS), the steady-state test's series.
 */
fn noteSojourn(j: u32, sojourn: u32) {
  let k = (st[ix(jobAt(j) + J_ARRIVAL)] - param(P_WARMUP)) / param(P_INTERVAL_US);
  let at = sb + param(P_OFF_INTERVALS) + k * INTERVAL_WORDS;
  st[ix(at + IV_RESOLVED)] = st[ix(at + IV_RESOLVED)] + 1u;
  let lo = st[ix(at + IV_SOJOURN_SUM)] + sojourn;
  if (lo < st[ix(at + IV_SOJOURN_SUM)]) { st[ix(at + IV_SOJOURN_SUM_HI)] = st[ix(at + IV_SOJOURN_SUM_HI)] + 1u; }
  st[ix(at + IV_SOJOURN_SUM)] = lo;
}

/** A job leaves a queue for service: its wait, in the queue's counters (R_QUEUED or R_TOOL_QUEUED on) and histogram. */
fn noteWait(j: u32, counters: u32, hist: u32) {
  let jb = jobAt(j);
  if (st[ix(jb + J_COUNTED)] == 0u) { return; }
  let wait = st[ix(sb + G_NOW)] - st[ix(jb + J_ENQUEUED)];
  if (wait > 0u) { count(counters + QW_WAITED); }
  add64(counters + QW_WAIT_SUM, wait);
  histCount(hist, wait);
}

// ---- job lifecycle ------------------------------------------------------------------------

fn appAt(a: u32) -> u32 {
  return sb + param(P_OFF_APPS) + a * APP_WORDS;
}

fn serverAt(s: u32) -> u32 {
  return sb + param(P_OFF_SERVERS) + s * APP_WORDS;
}

/** Frees the slots a job holds at the app service and the orchestrator, then the job. */
fn jobRelease(j: u32) {
  let jb = jobAt(j);
  if (KIND != KIND_JOB) {
    let ab = appAt(st[ix(jb + J_APP)]);
    st[ix(ab + AP_BUSY)] = st[ix(ab + AP_BUSY)] - 1u;
  }
  if (KIND == KIND_TASK) { st[ix(sb + G_ORCH_BUSY)] = st[ix(sb + G_ORCH_BUSY)] - 1u; }
  // the integral of the number in system is each job's time in the measured window, summed
  add64(R_IN_SYSTEM_AREA, measured(st[ix(jb + J_ARRIVAL)], st[ix(sb + G_NOW)]));
  jobFree(j);
}

fn jobSucceed(j: u32) {
  let jb = jobAt(j);
  if (st[ix(jb + J_COUNTED)] != 0u) {
    let latency = st[ix(sb + G_NOW)] - st[ix(jb + J_ARRIVAL)];
    count(R_SUCCESSES);
    noteSojourn(j, latency);
    add64(R_LATENCY_SUM, latency);
    add64(R_SOJOURN_SUM, latency);
    histCount(P_OFF_HIST, latency);
    if (latency <= param(P_GOAL_LATENCY) && st[ix(jb + J_MISSED)] == 0u) { count(R_GOOD); }
  }
  jobRelease(j);
}

/** A job that failed: the caller has already detached it from queues and replicas. */
fn jobFail(j: u32, cause: u32) {
  let jb = jobAt(j);
  if (st[ix(jb + J_COUNTED)] != 0u) {
    count(cause);
    add64(R_SOJOURN_SUM, st[ix(sb + G_NOW)] - st[ix(jb + J_ARRIVAL)]);
    noteSojourn(j, st[ix(sb + G_NOW)] - st[ix(jb + J_ARRIVAL)]);
  }
  jobRelease(j);
}

// ---- tools (agent tasks) and plain queueing servers (M/M/c) ----------------------------------

/** A step's tool call: it takes a free tool slot, or waits in the tools' FIFO queue. */
fn toolStart(j: u32) {
  let jb = jobAt(j);
  st[ix(jb + J_ENQUEUED)] = st[ix(sb + G_NOW)];
  if (st[ix(jb + J_COUNTED)] != 0u) { count(R_TOOL_QUEUED); }
  if (st[ix(sb + G_TOOLS_BUSY)] < param(P_TOOL_SLOTS)) {
    toolRun(j);
    return;
  }
  st[ix(jb + J_STAGE)] = STAGE_TOOL_QUEUED;
  queuePush(sb + G_TOOL_Q_HEAD, j, TARGET_TOOLS);
}

fn toolRun(j: u32) {
  let jb = jobAt(j);
  st[ix(sb + G_TOOLS_BUSY)] = st[ix(sb + G_TOOLS_BUSY)] + 1u;
  noteWait(j, R_TOOL_QUEUED, P_OFF_HIST_TOOL_WAIT);
  st[ix(jb + J_STAGE)] = STAGE_TOOL_RUNNING;
  st[ix(jb + J_STARTED)] = st[ix(sb + G_NOW)];
  var latency = sample(P_T_TOOL, random(STREAM_STEP, st[ix(jb + J_INDEX)], st[ix(jb + J_STEP)] * 4u + 2u));
  if (st[ix(sb + G_SLOW)] != 0u && SLOW_TARGET == TARGET_TOOLS) { latency = scaleMilli(latency, param(P_SLOW_FACTOR_MILLI)); }
  heapPush(later(1u, latency), EV_TOOL_DONE, j, st[ix(jb + J_GEN)]);
}

/** Job j's tool call ends (done or cancelled): its slot frees, and the next queued call takes it. */
fn toolFreed(j: u32) {
  st[ix(sb + G_TOOLS_BUSY)] = st[ix(sb + G_TOOLS_BUSY)] - 1u;
  add64(R_TOOL_AREA, measured(st[ix(jobAt(j) + J_STARTED)], st[ix(sb + G_NOW)]));
  if (st[ix(sb + G_TOOL_Q_LEN)] > 0u) {
    let next = st[ix(sb + G_TOOL_Q_HEAD)];
    queueUnlink(sb + G_TOOL_Q_HEAD, next);
    toolRun(next);
  }
}

/** The step is over; the next model call sets out (with every-step tool calls the last step ends the task). */
fn toolDone(j: u32) {
  let jb = jobAt(j);
  toolFreed(j);
  st[ix(jb + J_STEP)] = st[ix(jb + J_STEP)] + 1u;
  if (st[ix(jb + J_STEP)] >= param(P_STEPS)) {
    jobSucceed(j);
    return;
  }
  st[ix(jb + J_STAGE)] = STAGE_AT_ROUTER;
  st[ix(jb + J_CALL_AT)] = st[ix(sb + G_NOW)];
  heapPush(later(1u, param(P_ROUTER_OVERHEAD)), EV_ROUTE, j, st[ix(jb + J_GEN)]);
}

/** The first live server replica with a free slot, or NONE. */
fn serverFree() -> u32 {
  for (var s = 0u; s < param(P_SERVER_REPLICAS); s++) {
    let b = serverAt(s);
    if (st[ix(b + AP_STATUS)] == STATUS_ALIVE && st[ix(b + AP_BUSY)] < param(P_SERVER_SLOTS)) { return s; }
  }
  return NONE;
}

fn serviceStart(j: u32, s: u32) {
  let jb = jobAt(j);
  let b = serverAt(s);
  st[ix(b + AP_BUSY)] = st[ix(b + AP_BUSY)] + 1u;
  noteWait(j, R_QUEUED, P_OFF_HIST_WAIT);
  st[ix(jb + J_STAGE)] = STAGE_SERVER_RUNNING;
  st[ix(jb + J_REPLICA)] = s;
  st[ix(jb + J_STARTED)] = st[ix(sb + G_NOW)];
  var service = sample(P_T_SERVICE, random(STREAM_SERVICE, st[ix(jb + J_INDEX)], 0u));
  if (st[ix(sb + G_SLOW)] != 0u && SLOW_TARGET == TARGET_SERVER) { service = scaleMilli(service, param(P_SLOW_FACTOR_MILLI)); }
  heapPush(later(1u, service), EV_SERVICE_DONE, j, st[ix(jb + J_GEN)]);
}

fn serverArrive(j: u32) {
  let jb = jobAt(j);
  st[ix(jb + J_ENQUEUED)] = st[ix(sb + G_NOW)];
  if (st[ix(jb + J_COUNTED)] != 0u) { count(R_QUEUED); }
  let s = serverFree();
  if (s != NONE && st[ix(sb + G_SERVER_Q_LEN)] == 0u) {
    serviceStart(j, s);
    return;
  }
  st[ix(jb + J_STAGE)] = STAGE_SERVER_QUEUED;
  queuePush(sb + G_SERVER_Q_HEAD, j, TARGET_SERVER);
}

/** A server slot came free (or came back): start queued jobs while slots allow. */
fn serverDispatch() {
  while (st[ix(sb + G_SERVER_Q_LEN)] > 0u) {
    let s = serverFree();
    if (s == NONE) { return; }
    let j = st[ix(sb + G_SERVER_Q_HEAD)];
    queueUnlink(sb + G_SERVER_Q_HEAD, j);
    serviceStart(j, s);
  }
}

/** Ends a job's service early or on time: the slot frees and its busy time is counted. */
fn serviceEnd(j: u32) {
  let jb = jobAt(j);
  let b = serverAt(st[ix(jb + J_REPLICA)]);
  st[ix(b + AP_BUSY)] = st[ix(b + AP_BUSY)] - 1u;
  noteBusy(st[ix(jb + J_STARTED)], st[ix(sb + G_NOW)], 1u);
}

// ---- KV cache: entries keyed by prefix or session, LRU among unpinned; the offload tier ----

fn runningAt(r: u32, i: u32) -> u32 {
  return replicaAt(r) + REPLICA_HEADER_WORDS + i;
}

fn entryAt(r: u32, e: u32) -> u32 {
  return replicaAt(r) + REPLICA_HEADER_WORDS + param(P_RUN_CAP) + e * ENTRY_WORDS;
}

fn offloadAt(r: u32, t: u32) -> u32 {
  return replicaAt(r) + REPLICA_HEADER_WORDS + param(P_RUN_CAP) + param(P_CACHE_CAP) * ENTRY_WORDS + t * OFFLOAD_WORDS;
}

/** The entries of replica r that may be in use: those below its high-water mark. */
fn cacheUsed(r: u32) -> u32 {
  return st[ix(replicaAt(r) + RP_ENTRIES)];
}

/** The first of `used` records of `words` words from `at` (a table of entries, by their keys) whose key is `key`, or NONE. */
fn recordFind(at: u32, used: u32, words: u32, key: u32) -> u32 {
  for (var e = 0u; e < used; e++) {
    if (st[ix(at + e * words)] == key) { return e; }
  }
  return NONE;
}

/**
 * An empty record (key 0) of the table from `at` whose high-water mark is word `mark`: the
 * lowest, raising the mark past it, or NONE when all `cap` are in use.
 */
fn recordFree(at: u32, mark: u32, cap: u32, words: u32) -> u32 {
  let used = st[ix(mark)];
  let e = recordFind(at, used, words, 0u);
  if (e != NONE || used == cap) { return e; }
  st[ix(mark)] = used + 1u;
  return used;
}

/** The entry of replica r with key `key` (not 0), or NONE. */
fn cacheFind(r: u32, key: u32) -> u32 {
  return recordFind(entryAt(r, 0u) + E_KEY, cacheUsed(r), ENTRY_WORDS, key);
}

/** An empty entry of replica r, the lowest (raising the high-water mark past it), or NONE when all are in use. */
fn cacheFree(r: u32) -> u32 {
  return recordFree(entryAt(r, 0u) + E_KEY, replicaAt(r) + RP_ENTRIES, param(P_CACHE_CAP), ENTRY_WORDS);
}

/** The prefix key of a job's prompt: its shared prefix (or system prompt, or trace request), 0 if none. */
fn prefixKey(j: u32) -> u32 {
  return st[ix(jobAt(j) + J_PREFIX)];
}

/** The tokens of shared prefix p (its row of the params' prefix table). */
fn prefixTokens(p: u32) -> u32 {
  return param(param(P_OFF_PREFIXES) + p * PREFIX_WORDS + 1u);
}

/** Word `field` (a TR) of trace request `row`. */
fn traceWord(row: u32, field: u32) -> u32 {
  return tb[param(P_OFF_TRACE) + row * TRACE_WORDS + field];
}

/** The trace request a job replays: its index in this instance's window, from the window's start. */
fn traceRow(j: u32) -> u32 {
  return st[ix(sb + G_TRACE_START)] + st[ix(jobAt(j) + J_INDEX)];
}

/** Word `field` (a TN) of node key `key` (node + 1) of the trace's radix tree. */
fn treeWord(key: u32, field: u32) -> u32 {
  return tb[param(P_OFF_TRACE) + param(P_TRACE_ROWS) * TRACE_WORDS + (key - 1u) * TREE_WORDS + field];
}

/**
 * The entry of replica r holding the deepest cached node on the path to trace node key `v`, or
 * NONE: keys number the nodes in preorder, so an ancestor's is at most v with v within its
 * subtree, and the deepest ancestor has the largest key. An entry's ancestors are cached with it.
 */
fn cacheDeepest(r: u32, v: u32) -> u32 {
  let used = cacheUsed(r);
  var best = NONE;
  var bestKey = 0u;
  for (var e = 0u; e < used; e++) {
    let key = st[ix(entryAt(r, e) + E_KEY)];
    // (&& short-circuits: an empty entry, key 0, reads no node)
    if (key > bestKey && key <= v && v <= treeWord(key, TN_END)) {
      best = e;
      bestKey = key;
    }
  }
  return best;
}

/** The cached entry that covers the longest prefix of the job's prompt, or NONE. */
fn cacheBest(r: u32, j: u32) -> u32 {
  if (KIND == KIND_TASK) {
    let session = cacheFind(r, SESSION_KEY | st[ix(jobAt(j) + J_INDEX)]);
    if (session != NONE) { return session; }
  }
  let key = prefixKey(j);
  if (key == 0u) { return NONE; }
  if (param(P_TRACE_ROWS) != 0u) { return cacheDeepest(r, key); }
  return cacheFind(r, key);
}

/** The tokens of the job's prompt that entry e of replica r (or NONE) saves computing. */
fn cachedTokens(r: u32, e: u32, j: u32) -> u32 {
  if (e == NONE) { return 0u; }
  // at least one prompt token is always computed
  return min(st[ix(entryAt(r, e) + E_DEPTH)], st[ix(jobAt(j) + J_PROMPT)] - 1u);
}

fn cacheDrop(r: u32, e: u32) {
  let eb = entryAt(r, e);
  let rb = replicaAt(r);
  st[ix(rb + RP_KV_USED)] = st[ix(rb + RP_KV_USED)] - st[ix(eb + E_TOKENS)];
  let parent = st[ix(eb + E_PARENT)];
  // (a parent already dropped only when a reset drops them all)
  if (parent != NONE && st[ix(entryAt(r, parent) + E_KEY)] != 0u) {
    st[ix(entryAt(r, parent) + E_CHILDREN)] = st[ix(entryAt(r, parent) + E_CHILDREN)] - 1u;
  }
  st[ix(eb + E_KEY)] = 0u;
  st[ix(eb + E_TOKENS)] = 0u;
  st[ix(eb + E_PINS)] = 0u;
  st[ix(eb + E_PARENT)] = NONE;
  st[ix(eb + E_CHILDREN)] = 0u;
  st[ix(eb + E_DEPTH)] = 0u;
}

/** The least recently used entry neither pinned nor a parent, or NONE. */
fn cacheVictim(r: u32) -> u32 {
  var victim = NONE;
  var oldest = NONE;
  let used = cacheUsed(r);
  for (var e = 0u; e < used; e++) {
    let eb = entryAt(r, e);
    if (st[ix(eb + E_KEY)] != 0u && st[ix(eb + E_PINS)] == 0u && st[ix(eb + E_CHILDREN)] == 0u && (victim == NONE || st[ix(eb + E_LAST)] < oldest)) {
      victim = e;
      oldest = st[ix(eb + E_LAST)];
    }
  }
  return victim;
}

/** The key of entry e of replica r, 0 for NONE. */
fn cacheKey(r: u32, e: u32) -> u32 {
  if (e == NONE) { return 0u; }
  return st[ix(entryAt(r, e) + E_KEY)];
}

/** The offload entry of replica r with key `key` (not 0), or NONE. */
fn offloadFind(r: u32, key: u32) -> u32 {
  return recordFind(offloadAt(r, 0u) + OE_KEY, st[ix(replicaAt(r) + RP_OFFLOAD_ENTRIES)], OFFLOAD_WORDS, key);
}

fn offloadDrop(r: u32, t: u32) {
  let ob = offloadAt(r, t);
  let rb = replicaAt(r);
  st[ix(rb + RP_OFFLOAD_USED)] = st[ix(rb + RP_OFFLOAD_USED)] - st[ix(ob + OE_TOKENS)];
  st[ix(ob + OE_KEY)] = 0u;
  st[ix(ob + OE_TOKENS)] = 0u;
  st[ix(ob + OE_DEPTH)] = 0u;
  st[ix(ob + OE_LAST)] = 0u;
  st[ix(ob + OE_HELD)] = 0u;
}

/** The offload tier's least recently used entry not held, or NONE. */
fn offloadVictim(r: u32) -> u32 {
  var victim = NONE;
  var oldest = NONE;
  let used = st[ix(replicaAt(r) + RP_OFFLOAD_ENTRIES)];
  for (var t = 0u; t < used; t++) {
    let ob = offloadAt(r, t);
    if (st[ix(ob + OE_KEY)] != 0u && st[ix(ob + OE_HELD)] == 0u && (victim == NONE || st[ix(ob + OE_LAST)] < oldest)) {
      victim = t;
      oldest = st[ix(ob + OE_LAST)];
    }
  }
  return victim;
}

/**
 * Entry e of replica r, evicted from its cache, moves whole to its offload tier with its last
 * use, the tier evicting its own least recently used entries to make room; an entry larger than
 * the tier (or than what it holds for calls being admitted) is dropped. Entries hold at least the
 * smallest cached context, so compile.ts sizes the tier's table to never fill.
 */
fn offloadStore(r: u32, e: u32) {
  let eb = entryAt(r, e);
  let rb = replicaAt(r);
  let tokens = st[ix(eb + E_TOKENS)];
  if (tokens > param(P_OFFLOAD_TOKENS)) { return; }
  while (param(P_OFFLOAD_TOKENS) - st[ix(rb + RP_OFFLOAD_USED)] < tokens) {
    let victim = offloadVictim(r);
    if (victim == NONE) { return; }
    offloadDrop(r, victim);
  }
  let t = recordFree(offloadAt(r, 0u) + OE_KEY, rb + RP_OFFLOAD_ENTRIES, param(P_OFFLOAD_CAP), OFFLOAD_WORDS);
  if (t == NONE) {
    fail(ERR_CACHE_FULL);
    return;
  }
  let ob = offloadAt(r, t);
  st[ix(rb + RP_OFFLOAD_USED)] = st[ix(rb + RP_OFFLOAD_USED)] + tokens;
  st[ix(ob + OE_KEY)] = st[ix(eb + E_KEY)];
  st[ix(ob + OE_TOKENS)] = tokens;
  st[ix(ob + OE_DEPTH)] = st[ix(eb + E_DEPTH)];
  st[ix(ob + OE_LAST)] = st[ix(eb + E_LAST)];
  st[ix(ob + OE_HELD)] = 0u;
}

/** Evicts least-recently-used unpinned entries until `need` tokens are free; each moves to the offload tier, if any. */
fn cacheMakeRoom(r: u32, need: u32) -> bool {
  let rb = replicaAt(r);
  let kv = param(poolOf(r) + P_KV_TOKENS);
  while (kv - st[ix(rb + RP_KV_USED)] < need) {
    let victim = cacheVictim(r);
    if (victim == NONE) { return false; }
    if (OFFLOAD) { offloadStore(r, victim); }
    cacheDrop(r, victim);
  }
  return true;
}

/**
 * A new entry of `tokens` tokens (covering `depth` prompt tokens with its ancestors') that the
 * caller has already counted in KV_USED. Entries hold at least the smallest cached context and
 * fit in kvTokens, so compile.ts sizes the table to never fill: a full one stops the instance.
 * Its key's copy in the offload tier, if any, goes.
 */
fn cacheInsert(r: u32, key: u32, tokens: u32, depth: u32, pins: u32) -> u32 {
  // held once: a context back in the cache leaves the offload tier
  if (OFFLOAD) {
    let t = offloadFind(r, key);
    if (t != NONE) { offloadDrop(r, t); }
  }
  let e = cacheFree(r);
  if (e == NONE) {
    fail(ERR_CACHE_FULL);
    return NONE;
  }
  let eb = entryAt(r, e);
  st[ix(eb + E_KEY)] = key;
  st[ix(eb + E_TOKENS)] = tokens;
  st[ix(eb + E_LAST)] = st[ix(sb + G_NOW)];
  st[ix(eb + E_PINS)] = pins;
  st[ix(eb + E_PARENT)] = NONE;
  st[ix(eb + E_CHILDREN)] = 0u;
  st[ix(eb + E_DEPTH)] = depth;
  return e;
}

/**
 * Replica r's KV in use (RP_KV_HELD) is about to change: the time it held its value since the
 * last change, inside the measured window, goes into R_KV_AREA and the value into R_KV_PEAK, in
 * P_KV_UNIT tokens (a change at the same microsecond adds nothing, so neither sees a passing value).
 */
fn kvNote(r: u32) {
  let rb = replicaAt(r);
  let now = st[ix(sb + G_NOW)];
  let t = measured(st[ix(rb + RP_KV_SINCE)], now);
  st[ix(rb + RP_KV_SINCE)] = now;
  if (t == 0u) { return; }
  let units = st[ix(rb + RP_KV_HELD)] / param(poolOf(r) + P_KV_UNIT);
  mulAdd64(R_KV_AREA, t, units);
  if (units > st[ix(result(R_KV_PEAK))]) { st[ix(result(R_KV_PEAK))] = units; }
}

/**
 * Replica r's running sequences now hold `taken` tokens more of its KV and `freed` fewer: one
 * change, noted once, where a call's reservation and its entries change together.
 */
fn kvChange(r: u32, taken: u32, freed: u32) {
  kvNote(r);
  let rb = replicaAt(r);
  st[ix(rb + RP_KV_HELD)] = st[ix(rb + RP_KV_HELD)] + taken - freed;
}

/**
 * A running sequence pins entry e of replica r, and so holds it and every entry above it: each
 * one's PINS counts it. Returns the tokens of those no sequence held before, now in use.
 */
fn entryPin(r: u32, e: u32) -> u32 {
  var taken = 0u;
  var a = e;
  while (a != NONE) {
    let ab = entryAt(r, a);
    let pins = st[ix(ab + E_PINS)] + 1u;
    st[ix(ab + E_PINS)] = pins;
    if (pins == 1u) { taken += st[ix(ab + E_TOKENS)]; }
    a = st[ix(ab + E_PARENT)];
  }
  return taken;
}

/** The sequence lets go of entry e and the entries above it. Returns the tokens of those no sequence holds now. */
fn entryUnpin(r: u32, e: u32) -> u32 {
  var freed = 0u;
  var a = e;
  while (a != NONE) {
    let ab = entryAt(r, a);
    let pins = st[ix(ab + E_PINS)] - 1u;
    st[ix(ab + E_PINS)] = pins;
    if (pins == 0u) { freed += st[ix(ab + E_TOKENS)]; }
    a = st[ix(ab + E_PARENT)];
  }
  return freed;
}

/** Job j lets go of its entry, if any. Returns the tokens no sequence holds now (entryUnpin). */
fn cacheUnpin(r: u32, j: u32) -> u32 {
  let jb = jobAt(j);
  let e = st[ix(jb + J_ENTRY)];
  if (e == NONE) { return 0u; }
  let freed = entryUnpin(r, e);
  st[ix(entryAt(r, e) + E_LAST)] = st[ix(sb + G_NOW)];
  st[ix(jb + J_ENTRY)] = NONE;
  return freed;
}

/** A session's context including this call's output stays cached on the replica. */
fn cacheStoreSession(r: u32, j: u32) {
  let jb = jobAt(j);
  let key = SESSION_KEY | st[ix(jb + J_INDEX)];
  let tokens = st[ix(jb + J_PROMPT)] + st[ix(jb + J_OUTPUT)];
  let old = cacheFind(r, key);
  if (old != NONE) { cacheDrop(r, old); }
  if (!cacheMakeRoom(r, tokens)) { return; }
  let rb = replicaAt(r);
  st[ix(rb + RP_KV_USED)] = st[ix(rb + RP_KV_USED)] + tokens;
  cacheInsert(r, key, tokens, tokens, 0u);
}

/** Entry `child` of replica r hangs under entry `parent`. */
fn cacheLink(r: u32, child: u32, parent: u32) {
  st[ix(entryAt(r, child) + E_PARENT)] = parent;
  st[ix(entryAt(r, parent) + E_CHILDREN)] = st[ix(entryAt(r, parent) + E_CHILDREN)] + 1u;
}

/**
 * Entries for the trace's nodes from key `key` up to entry `above`'s (NONE: to the top), each
 * under the one above it and the highest under `above`, whose tokens the caller counts in
 * KV_USED: the deepest, or NONE when the table is full.
 */
fn cachePath(r: u32, key: u32, above: u32) -> u32 {
  let aboveKey = cacheKey(r, above);
  // from the node itself up to the cached one, each new entry the parent of the last
  var child = NONE;
  var deepest = NONE;
  var u = key;
  while (u != aboveKey) {
    let e = cacheInsert(r, u, treeWord(u, TN_TOKENS), treeWord(u, TN_DEPTH), 0u);
    if (e == NONE) { return NONE; }
    if (child == NONE) { deepest = e; }
    else { cacheLink(r, child, e); }
    child = e;
    u = treeWord(u, TN_PARENT);
  }
  if (above != NONE) { cacheLink(r, child, above); }
  return deepest;
}

/**
 * The offload entry of the deepest node on the path to trace node key `key` below key
 * `aboveKey` (the cache's deepest on it, 0: none) whose path up to it is all in the tier, or
 * NONE: a node past a gap would leave the gap's tokens to compute, so it counts for nothing.
 */
fn offloadPath(r: u32, key: u32, aboveKey: u32) -> u32 {
  var best = NONE;
  for (var u = key; u != aboveKey; u = treeWord(u, TN_PARENT)) {
    let t = offloadFind(r, u);
    if (t == NONE) { best = NONE; }
    else if (best == NONE) { best = t; }
  }
  return best;
}

/**
 * The offload entry that covers more of job j's prompt than its deepest cached entry e (or NONE)
 * does, or NONE: a task's session context unless e is it; else its shared prefix or system prompt
 * when the cache has none; on a trace, the deepest node below e's that the tier holds with the
 * path up to e's (offloadPath).
 */
fn offloadBest(r: u32, j: u32, e: u32) -> u32 {
  let cachedKey = cacheKey(r, e);
  if (KIND == KIND_TASK) {
    let session = SESSION_KEY | st[ix(jobAt(j) + J_INDEX)];
    if (cachedKey == session) { return NONE; }
    let t = offloadFind(r, session);
    if (t != NONE) { return t; }
  }
  let key = prefixKey(j);
  if (key == 0u) { return NONE; }
  if (param(P_TRACE_ROWS) != 0u) { return offloadPath(r, key, cachedKey); }
  if (cachedKey != 0u) { return NONE; }
  return offloadFind(r, key);
}

/**
 * The offload entries a load of entry t takes (on a trace, its path up to entry e of the cache)
 * are held (1) or let go (0): the tier's eviction spares them while the cache makes room.
 */
fn offloadHold(r: u32, t: u32, e: u32, held: u32) {
  if (param(P_TRACE_ROWS) == 0u) {
    st[ix(offloadAt(r, t) + OE_HELD)] = held;
    return;
  }
  let aboveKey = cacheKey(r, e);
  for (var u = st[ix(offloadAt(r, t) + OE_KEY)]; u != aboveKey; u = treeWord(u, TN_PARENT)) {
    st[ix(offloadAt(r, offloadFind(r, u)) + OE_HELD)] = held;
  }
}

/** The tokens a load of offload entry t brings into replica r's cache: on a trace its path below entry e, else its own (a root). */
fn offloadTokens(r: u32, t: u32, e: u32) -> u32 {
  // (an if, not a select: a select would read entry NONE's words)
  var above = 0u;
  if (param(P_TRACE_ROWS) != 0u && e != NONE) { above = st[ix(entryAt(r, e) + E_DEPTH)]; }
  return st[ix(offloadAt(r, t) + OE_DEPTH)] - above;
}

/**
 * Offload entry t (on a trace, with its path up to entry e) back in replica r's cache, out of the
 * tier (cacheInsert): the deepest new entry, or NONE when the table is full. The caller counts
 * its tokens (offloadTokens) in KV_USED.
 */
fn offloadLoad(r: u32, t: u32, e: u32) -> u32 {
  let ob = offloadAt(r, t);
  if (param(P_TRACE_ROWS) != 0u) { return cachePath(r, st[ix(ob + OE_KEY)], e); }
  return cacheInsert(r, st[ix(ob + OE_KEY)], st[ix(ob + OE_TOKENS)], st[ix(ob + OE_DEPTH)], 0u);
}

/** Microseconds loading n tokens of KV from the offload tier takes (P_OFFLOAD_TOKEN each, floored once). */
fn offloadTime(n: u32) -> u32 {
  return n * param(P_OFFLOAD_TOKEN_US) + tokenMicros(n, param(P_OFFLOAD_TOKEN_NS), 0u);
}

// ---- choosing a replica: the router's scan, for either pool ------------------------------

fn replicaUp(r: u32) -> bool {
  return st[ix(replicaAt(r) + RP_DOWN)] == 0u;
}

/**
 * Picks one of replicas first to first + n - 1 the router believes up, by `policy` (round-robin,
 * random, least-loaded or cache-aware), starting the rotation at header word `rr`; NONE when none is.
 */
fn routeScan(j: u32, first: u32, n: u32, policy: u32, rr: u32) -> u32 {
  var begin = st[ix(sb + rr)] % n;
  if (policy == POLICY_RANDOM) {
    begin = random(STREAM_ROUTE, st[ix(sb + G_RAND)], 0u) % n;
    st[ix(sb + G_RAND)] = st[ix(sb + G_RAND)] + 1u;
  }
  var best = NONE;
  var bestScore = 0i;
  for (var i = 0u; i < n; i++) {
    let r = first + (begin + i) % n;
    if (!replicaUp(r)) { continue; }
    if (policy == POLICY_ROUND_ROBIN || policy == POLICY_RANDOM) {
      best = r;
      break;
    }
    // higher is better; ties keep the earliest in rotation order
    var score = -i32(st[ix(replicaAt(r) + RP_LOAD)]);
    if (policy == POLICY_CACHE_AWARE) {
      score = i32(cachedTokens(r, cacheBest(r, j), j)) - i32(scaleMilliCapped(st[ix(replicaAt(r) + RP_LOAD_TOKENS)], param(P_ALPHA_MILLI), 0x3fffffffu));
    }
    if (best == NONE || score > bestScore) {
      best = r;
      bestScore = score;
    }
  }
  if (best != NONE) { st[ix(sb + rr)] = best - first + 1u; }
  return best;
}

// ---- GPU replicas: continuous batching ------------------------------------------------------

/** A call leaves replica r's batch: its KV reservation and its pin free. */
fn callFree(r: u32, j: u32) {
  let rb = replicaAt(r);
  let jb = jobAt(j);
  let reserved = st[ix(jb + J_RESERVED)];
  st[ix(rb + RP_KV_USED)] = st[ix(rb + RP_KV_USED)] - reserved;
  st[ix(jb + J_RESERVED)] = 0u;
  let freed = cacheUnpin(r, j);
  kvChange(r, 0u, reserved + freed);
}

/** Takes a job off a replica's batch, freeing its KV reservation and its pin. */
fn replicaRelease(r: u32, j: u32) {
  let rb = replicaAt(r);
  var w = 0u;
  for (var i = 0u; i < st[ix(rb + RP_N_RUN)]; i++) {
    let k = st[ix(runningAt(r, i))];
    if (k != j) {
      st[ix(runningAt(r, w))] = k;
      w += 1u;
    }
  }
  st[ix(rb + RP_N_RUN)] = w;
  callFree(r, j);
  replicaUnload(r, j);
}

fn replicaUnload(r: u32, j: u32) {
  let rb = replicaAt(r);
  let jb = jobAt(j);
  st[ix(rb + RP_LOAD)] = st[ix(rb + RP_LOAD)] - 1u;
  st[ix(rb + RP_LOAD_TOKENS)] = st[ix(rb + RP_LOAD_TOKENS)] - (st[ix(jb + J_PROMPT)] + st[ix(jb + J_OUTPUT)]);
  st[ix(sb + G_ROUTER_BUSY)] = st[ix(sb + G_ROUTER_BUSY)] - 1u;
  // the router holds the call from its replica's queue to its end
  add64(R_ROUTER_AREA, measured(st[ix(jb + J_ENQUEUED)], st[ix(sb + G_NOW)]));
}

/** Replica r's step's microseconds, with `load` microseconds of KV loaded from the offload tier, which a slowdown of the GPU does not stretch. */
fn iterationTime(r: u32, decoding: u32, prefill: u32, load: u32) -> u32 {
  let at = poolOf(r);
  // the prefill's nanoseconds and those below base's and perSeq's microseconds, rounded up once
  let ns = prefill * param(at + P_PREFILL_NS_PER_TOKEN) + param(at + P_ITER_BASE_NS) + param(at + P_ITER_PER_SEQ_NS) * decoding;
  var t = param(at + P_ITER_BASE) + param(at + P_ITER_PER_SEQ) * decoding + (ns + 999u) / 1000u;
  if (st[ix(sb + G_SLOW)] != 0u && SLOW_TARGET == TARGET_GPU) { t = scaleMilli(t, param(P_SLOW_FACTOR_MILLI)); }
  return t + load;
}

fn replicaSchedule(r: u32, at: u32) {
  let rb = replicaAt(r);
  st[ix(rb + RP_GEN)] = st[ix(rb + RP_GEN)] + 1u;
  st[ix(rb + RP_EVENT_AT)] = at;
  heapPush(at, EV_REPLICA, r, st[ix(rb + RP_GEN)]);
}

/**
 * The iteration that completes a prompt emits its first token, which reaches the caller once
 * processed (P_OUTPUT_TOKEN: one token's, floored to the microsecond); its prefix becomes
 * shareable. So does a prompt whose KV arrived at a decode replica (gpu.disaggregation).
 */
fn prefillDone(r: u32, j: u32) {
  let jb = jobAt(j);
  // a call whose KV arrived from its prefill replica emitted its token there
  if (!DISAGGREGATED || st[ix(jb + J_PHASE)] != PHASE_TRANSFER) {
    // a preempted call's recomputed prompt emits its next token: its first came before
    if (st[ix(jb + J_OUT_LEFT)] == st[ix(jb + J_OUTPUT)]) { st[ix(jb + J_FIRST_AT)] = st[ix(sb + G_NOW)] + param(poolOf(r) + P_OUTPUT_TOKEN_US); }
    st[ix(jb + J_OUT_LEFT)] = st[ix(jb + J_OUT_LEFT)] - 1u;
  }
  st[ix(jb + J_PHASE)] = PHASE_DECODE;
  let key = prefixKey(j);
  if (key == 0u) { return; }
  if (param(P_TRACE_ROWS) != 0u) {
    traceCacheInsert(r, j, key);
    return;
  }
  let tokens = select(prefixTokens(key - 1u), param(P_SYSTEM_TOKENS), KIND == KIND_TASK);
  if (st[ix(jb + J_CACHED)] >= tokens || cacheFind(r, key) != NONE) { return; }
  // the prefix's KV moves from this sequence's reservation into a shared entry it pins (a root:
  // the tokens it holds are the same)
  let e = cacheInsert(r, key, tokens, tokens, 1u);
  if (e == NONE) { return; }
  st[ix(jb + J_RESERVED)] = st[ix(jb + J_RESERVED)] - tokens;
  let freed = cacheUnpin(r, j);
  kvChange(r, 0u, freed);
  st[ix(jb + J_ENTRY)] = e;
}

/**
 * A trace request's full blocks become shareable: the nodes on its path below the deepest one
 * cached (another request may have cached more since it was admitted) become entries, each
 * under the one above, their tokens moved from its reservation; it pins the deepest, which
 * keeps the path above it.
 */
fn traceCacheInsert(r: u32, j: u32, key: u32) {
  let jb = jobAt(j);
  if (cacheFind(r, key) != NONE) { return; }
  let above = cacheDeepest(r, key);
  let deepest = cachePath(r, key, above);
  if (deepest == NONE) { return; }
  // (an if, not a select: a select would read entry NONE's words)
  var moved = treeWord(key, TN_DEPTH);
  if (above != NONE) { moved -= st[ix(entryAt(r, above) + E_DEPTH)]; }
  st[ix(jb + J_RESERVED)] = st[ix(jb + J_RESERVED)] - moved;
  // pinned before the entry it pinned is let go, so the entries above both stay held
  let taken = entryPin(r, deepest);
  let freed = cacheUnpin(r, j);
  kvChange(r, taken, moved + freed);
  st[ix(jb + J_ENTRY)] = deepest;
}

/**
 * A model call's time to first token (from when it set out) and time per output token after
 * the first, with its decode time unfloored for the mean inter-token latency; a call that
 * misses a goal marks its job.
 */
fn callTimes(j: u32) {
  let jb = jobAt(j);
  if (st[ix(jb + J_COUNTED)] == 0u) { return; }
  let now = st[ix(sb + G_NOW)];
  let ttft = st[ix(jb + J_FIRST_AT)] - st[ix(jb + J_CALL_AT)];
  count(R_CALLS_DONE);
  add64(R_OUTPUT_TOKENS, st[ix(jb + J_OUTPUT)]);
  add64(R_TTFT_SUM, ttft);
  histCount(P_OFF_HIST_TTFT, ttft);
  if (ttft > param(P_GOAL_TTFT)) { st[ix(jb + J_MISSED)] = 1u; }
  if (st[ix(jb + J_OUTPUT)] < 2u) { return; }
  let decode = now - st[ix(jb + J_FIRST_AT)];
  let tpot = decode / (st[ix(jb + J_OUTPUT)] - 1u);
  count(R_TPOT_CALLS);
  add64(R_TPOT_SUM, tpot);
  add64(R_ITL_SUM, decode);
  histCount(P_OFF_HIST_TPOT, tpot);
  if (tpot > param(P_GOAL_TPOT)) { st[ix(jb + J_MISSED)] = 1u; }
}

/** A model call's last token reached the caller: its times count, and the job moves on. */
fn callEnd(j: u32) {
  let jb = jobAt(j);
  callTimes(j);
  if (KIND == KIND_REQUEST || (param(P_TOOL_EVERY_STEP) == 0u && st[ix(jb + J_STEP)] + 1u >= param(P_STEPS))) {
    jobSucceed(j);
    return;
  }
  toolStart(j);
}

/**
 * A model call finished on replica r (or, on a prefill replica, its prompt): free it there. Its
 * tokens' processing (P_OUTPUT_TOKEN each) holds no GPU step, and its end waits for the last
 * (callEnd, at once without it).
 */
fn callDone(r: u32, j: u32) {
  let jb = jobAt(j);
  callFree(r, j);
  replicaUnload(r, j);
  // a prefill replica is done with a call at its first token (gpu.disaggregation)
  if (DISAGGREGATED && st[ix(jb + J_OUT_LEFT)] != 0u) {
    callHandoff(j);
    return;
  }
  if (KIND != KIND_REQUEST) {
    cacheStoreSession(r, j);
    st[ix(jb + J_CONTEXT)] = st[ix(jb + J_PROMPT)] + st[ix(jb + J_OUTPUT)];
  }
  let pool = poolOf(r);
  let at = laterTokens(0u, 0u, st[ix(jb + J_OUTPUT)], param(pool + P_OUTPUT_TOKEN_US), param(pool + P_OUTPUT_TOKEN_NS));
  if (at == st[ix(sb + G_NOW)]) {
    callEnd(j);
    return;
  }
  st[ix(jb + J_STAGE)] = STAGE_GPU_OUTPUT;
  heapPush(at, EV_OUTPUT_DONE, j, st[ix(jb + J_GEN)]);
}

/**
 * A prefill replica computed call j's prompt and first token (gpu.disaggregation), and freed its
 * KV (our position: the transfer takes the call's time, not the prefill replica's memory): it
 * goes to the decode replica the decode pool's router picks. With none up it goes to the first,
 * dead, which fails it as a replica dying under it would (retried from the start).
 */
fn callHandoff(j: u32) {
  let first = param(P_PREFILL_REPLICAS);
  let d = routeScan(j, first, param(P_GPU_REPLICAS) - first, param(P_DECODE_POLICY), G_DECODE_RR);
  replicaSend(select(d, first, d == NONE), j);
}

/**
 * At an iteration boundary: apply the iterations done since the last one, finish
 * sequences, admit queued calls while slots and KV allow, and plan the next iterations.
 */
fn replicaBoundary(r: u32) {
  let rb = replicaAt(r);
  let now = st[ix(sb + G_NOW)];
  let mode = st[ix(rb + RP_MODE)];
  // neither prefillDone nor callDone changes this replica's batch: its size is read once
  let running = st[ix(rb + RP_N_RUN)];
  let busy = mode == MODE_SINGLE || mode == MODE_RUN;
  if (busy) { replicaBusy(r); }
  // the steps done since the last boundary: none after a start or an idle wait, where only a
  // decode replica's arriving KV can have changed anything
  var n = 0u;
  if (busy) { n = (now - st[ix(rb + RP_START)]) / st[ix(rb + RP_DUR)]; }
  // gpu.kv incremental: each token decoded took a token of KV (room made when planned)
  var grown = 0u;
  // gpu.disaggregation: a prefill replica's calls leave once their prompt is done
  let prefillOnly = DISAGGREGATED && r < param(P_PREFILL_REPLICAS);
  // the first call to leave at this boundary: those before it stay where they are
  var w = running;
  let walked = select(0u, running, busy || decodeOnly(r));
  for (var i = 0u; i < walked; i++) {
    let jb = jobAt(st[ix(runningAt(r, i))]);
    if (st[ix(jb + J_PHASE)] == PHASE_DECODE) {
      st[ix(jb + J_OUT_LEFT)] = st[ix(jb + J_OUT_LEFT)] - n;
      if (KV_INCREMENTAL) {
        st[ix(jb + J_RESERVED)] = st[ix(jb + J_RESERVED)] + n;
        grown += n;
      }
    } else if ((busy && st[ix(jb + J_ALLOC)] > 0u) || (DISAGGREGATED && st[ix(jb + J_PHASE)] == PHASE_TRANSFER && st[ix(jb + J_READY)] <= now)) {
      // gpu.disaggregation: a call whose KV has all arrived has its prompt here as if prefilled
      // a prompt's tokens each of the steps done (prefillRun: alike steps)
      let alloc = select(0u, st[ix(jb + J_ALLOC)] * n, busy);
      st[ix(jb + J_PREFILL_LEFT)] = st[ix(jb + J_PREFILL_LEFT)] - alloc;
      st[ix(jb + J_ALLOC)] = 0u;
      // its first prefill step loaded what the offload tier held
      st[ix(jb + J_LOAD)] = 0u;
      if (st[ix(jb + J_PREFILL_LEFT)] == 0u) { prefillDone(r, st[ix(runningAt(r, i))]); }
    }
    if (w == running && st[ix(jb + J_PHASE)] == PHASE_DECODE && (st[ix(jb + J_OUT_LEFT)] == 0u || prefillOnly)) { w = i; }
  }
  if (KV_INCREMENTAL && grown > 0u) {
    st[ix(rb + RP_KV_USED)] = st[ix(rb + RP_KV_USED)] + grown;
    kvChange(r, grown, 0u);
  }
  for (var i = w; i < running; i++) {
    let j = st[ix(runningAt(r, i))];
    let jb = jobAt(j);
    if (st[ix(jb + J_PHASE)] == PHASE_DECODE && (st[ix(jb + J_OUT_LEFT)] == 0u || prefillOnly)) {
      callDone(r, j);
    } else {
      st[ix(runningAt(r, w))] = j;
      w += 1u;
    }
  }
  st[ix(rb + RP_N_RUN)] = w;
  var keep = 0u;
  if (KV_INCREMENTAL) { keep = replicaPreempt(r); }
  if (keep != NONE) { replicaAdmit(r, keep); }
  replicaPlan(r);
}

/**
 * gpu.kv incremental: room for each decoding sequence's next token, evicting cached entries,
 * else preempting the most recently admitted sequence (vLLM's recompute preemption) until there
 * is. Returns the tokens the next step takes, to keep free while calls are admitted, or NONE
 * when it preempted: then none is admitted at this boundary (vLLM admits none in a step that
 * preempted), so a preempted call does not come straight back.
 */
fn replicaPreempt(r: u32) -> u32 {
  let rb = replicaAt(r);
  var preempted = false;
  loop {
    let running = st[ix(rb + RP_N_RUN)];
    var decoding = 0u;
    for (var i = 0u; i < running; i++) {
      if (st[ix(jobAt(st[ix(runningAt(r, i))]) + J_PHASE)] == PHASE_DECODE) { decoding += 1u; }
    }
    // a sequence alone always fits: its prompt and output fit kvTokens, or it was refused
    if (decoding == 0u || cacheMakeRoom(r, decoding)) { return select(decoding, NONE, preempted); }
    st[ix(rb + RP_N_RUN)] = running - 1u;
    callPreempt(r, st[ix(runningAt(r, running - 1u))]);
    preempted = true;
  }
}

/**
 * Running call j leaves replica r's batch for the head of its queue: its KV freed (a prefix it
 * cached stays cached), to recompute its prompt and the tokens it had generated when it
 * resumes. Its wait counted once, when first admitted, it holds the router as before.
 */
fn callPreempt(r: u32, j: u32) {
  let jb = jobAt(j);
  callFree(r, j);
  st[ix(jb + J_PHASE)] = PHASE_PREEMPTED;
  st[ix(jb + J_STAGE)] = STAGE_GPU_QUEUED;
  st[ix(jb + J_PREEMPTS)] = st[ix(jb + J_PREEMPTS)] + 1u;
  if (st[ix(jb + J_COUNTED)] != 0u) { count(R_PREEMPTIONS); }
  queuePushFront(replicaAt(r) + RP_Q_HEAD, j, TARGET_GPU);
}

/**
 * Admits queued calls while slots and KV allow, keeping `keep` tokens free for the running
 * sequences' next step. A call reserves its uncached prompt and its output (gpu.kv reserve), or
 * its uncached prompt, the tokens it had generated if preempted, and its next token (incremental).
 */
fn replicaAdmit(r: u32, keep: u32) {
  let rb = replicaAt(r);
  let q = rb + RP_Q_HEAD;
  let pool = poolOf(r);
  while (st[ix(rb + RP_N_RUN)] < param(pool + P_GPU_SLOTS) && st[ix(rb + RP_Q_LEN)] > 0u) {
    let j = st[ix(q)];
    let jb = jobAt(j);
    let prompt = st[ix(jb + J_PROMPT)];
    if (prompt + st[ix(jb + J_OUTPUT)] > param(pool + P_KV_TOKENS)) {
      // can never fit: the server refuses it rather than block the queue for ever
      queueUnlink(q, j);
      replicaUnload(r, j);
      jobFail(j, R_REJECTED_AT_GPU);
      continue;
    }
    var e = cacheBest(r, j);
    let cachedInGpu = cachedTokens(r, e, j);
    var cached = cachedInGpu;
    // pinned while room is made, so that eviction spares it; in use once the call is admitted
    var taken = 0u;
    if (e != NONE) { taken = entryPin(r, e); }
    // what the offload tier holds past it comes back: held while room is made for it too
    var t = NONE;
    var loaded = 0u;
    if (OFFLOAD) {
      t = offloadBest(r, j, e);
      if (t != NONE) {
        loaded = offloadTokens(r, t, e);
        cached = min(st[ix(offloadAt(r, t) + OE_DEPTH)], prompt - 1u);
        offloadHold(r, t, e, 1u);
      }
    }
    let resumed = KV_INCREMENTAL && st[ix(jb + J_PHASE)] == PHASE_PREEMPTED;
    // gpu.disaggregation: its prompt done on a prefill replica, its KV comes here over the link
    let arriving = DISAGGREGATED && st[ix(jb + J_PHASE)] == PHASE_TRANSFER;
    let generated = select(0u, st[ix(jb + J_OUTPUT)] - st[ix(jb + J_OUT_LEFT)], resumed || arriving);
    // a prefill replica holds a call's prompt and first token only
    var out = select(st[ix(jb + J_OUTPUT)], generated + 1u, KV_INCREMENTAL);
    if (DISAGGREGATED && r < param(P_PREFILL_REPLICAS)) { out = 1u; }
    let need = prompt - cached + out;
    if (!cacheMakeRoom(r, need + loaded + keep)) {
      if (e != NONE) { entryUnpin(r, e); }
      if (OFFLOAD && t != NONE) { offloadHold(r, t, e, 0u); }
      return;
    }
    queueUnlink(q, j);
    st[ix(rb + RP_KV_USED)] = st[ix(rb + RP_KV_USED)] + need;
    if (OFFLOAD && t != NONE) {
      let loadedEntry = offloadLoad(r, t, e);
      st[ix(rb + RP_KV_USED)] = st[ix(rb + RP_KV_USED)] + loaded;
      // the call pins what came back (on a trace, with the entry above it, which it pinned)
      if (loadedEntry != NONE) {
        taken += entryPin(r, loadedEntry);
        if (e != NONE) { taken -= entryUnpin(r, e); }
        e = loadedEntry;
      }
    }
    kvChange(r, taken + need, 0u);
    st[ix(jb + J_STAGE)] = STAGE_GPU_RUNNING;
    st[ix(jb + J_ENTRY)] = e;
    if (e != NONE) { st[ix(entryAt(r, e) + E_LAST)] = st[ix(sb + G_NOW)]; }
    st[ix(jb + J_RESERVED)] = need;
    st[ix(jb + J_CACHED)] = cached;
    if (resumed) {
      // what it prefills again, less the prompt it had not reached when preempted
      let prefill = prompt - cached + generated;
      let fresh = st[ix(jb + J_PREFILL_LEFT)];
      if (st[ix(jb + J_COUNTED)] != 0u && prefill > fresh) { add64(R_RECOMPUTED_TOKENS, prefill - fresh); }
      st[ix(jb + J_PREFILL_LEFT)] = prefill;
    } else if (arriving) {
      // the tokens this replica does not hold move over the link (what its tier holds loads)
      let ready = laterTokens(param(P_LINK_LATENCY) + offloadTime(loaded), 0u, prompt - cached + generated, param(P_LINK_TOKEN_US), param(P_LINK_TOKEN_NS));
      st[ix(jb + J_READY)] = ready;
      st[ix(jb + J_PREFILL_LEFT)] = 0u;
      if (st[ix(jb + J_COUNTED)] != 0u) {
        count(R_TRANSFERS);
        add64(R_TRANSFER_WAIT_SUM, st[ix(sb + G_NOW)] - st[ix(jb + J_ENQUEUED)]);
        add64(R_TRANSFER_SUM, ready - st[ix(sb + G_NOW)]);
      }
    } else {
      // its wait and its prompt count once, when first admitted
      noteWait(j, R_QUEUED, P_OFF_HIST_WAIT);
      st[ix(jb + J_PREFILL_LEFT)] = prompt - cached;
      st[ix(jb + J_OUT_LEFT)] = st[ix(jb + J_OUTPUT)];
      st[ix(jb + J_PREEMPTS)] = 0u;
      if (st[ix(jb + J_COUNTED)] != 0u) {
        add64(R_PROMPT_TOKENS, prompt);
        add64(R_CACHED_TOKENS, cached);
        add64(R_OFFLOAD_TOKENS, cached - cachedInGpu);
      }
    }
    st[ix(jb + J_PHASE)] = select(PHASE_PREFILL, PHASE_TRANSFER, arriving);
    st[ix(jb + J_ALLOC)] = 0u;
    st[ix(jb + J_LOAD)] = offloadTime(loaded);
    st[ix(runningAt(r, st[ix(rb + RP_N_RUN)]))] = j;
    st[ix(rb + RP_N_RUN)] = st[ix(rb + RP_N_RUN)] + 1u;
  }
}

/** gpu.kv incremental: how many steps of `decoding` sequences' tokens replica r's free KV holds. */
fn kvSteps(r: u32, decoding: u32) -> u32 {
  return (param(poolOf(r) + P_KV_TOKENS) - st[ix(replicaAt(r) + RP_KV_USED)]) / decoding;
}

/**
 * How many alike prefill steps replica r's batch runs as one (docs/model.md section 3): `first`,
 * the tokens left of the first prompt, which takes the whole chunk each step while it has a
 * chunk or more left, and none can join meanwhile (the batch is full, or none waits); the run
 * ends where a decoding sequence finishes (`shortest` tokens left) and (gpu.kv incremental)
 * where the `decoding` sequences' tokens would outgrow the free KV, as a run of decodes does.
 * One step when the first prompt has less than a chunk left or a call could join.
 */
fn prefillRun(r: u32, first: u32, shortest: u32, decoding: u32) -> u32 {
  let rb = replicaAt(r);
  let pool = poolOf(r);
  let chunk = param(pool + P_CHUNK);
  if (first < chunk || (st[ix(rb + RP_N_RUN)] < param(pool + P_GPU_SLOTS) && st[ix(rb + RP_Q_LEN)] != 0u)) { return 1u; }
  var runs = min(first / chunk, shortest);
  if (KV_INCREMENTAL && decoding > 0u) { runs = min(runs, kvSteps(r, decoding)); }
  return runs;
}

/** Prefill steps (chunk shared first come, first served), or a run of decodes. */
fn replicaPlan(r: u32) {
  let rb = replicaAt(r);
  let now = st[ix(sb + G_NOW)];
  let running = st[ix(rb + RP_N_RUN)];
  st[ix(rb + RP_START)] = now;
  st[ix(rb + RP_BATCH)] = running;
  if (running == 0u) {
    st[ix(rb + RP_MODE)] = MODE_IDLE;
    st[ix(rb + RP_GEN)] = st[ix(rb + RP_GEN)] + 1u;
    return;
  }
  let pool = poolOf(r);
  var budget = param(pool + P_CHUNK);
  var decoding = 0u;
  var shortest = NONE;
  var load = 0u;
  var arriving = 0u;
  var ready = NONE;
  var first = NONE;
  for (var i = 0u; i < running; i++) {
    let jb = jobAt(st[ix(runningAt(r, i))]);
    if (st[ix(jb + J_PHASE)] == PHASE_DECODE) {
      decoding += 1u;
      shortest = min(shortest, st[ix(jb + J_OUT_LEFT)]);
    } else if (DISAGGREGATED && st[ix(jb + J_PHASE)] == PHASE_TRANSFER) {
      arriving += 1u;
      ready = min(ready, st[ix(jb + J_READY)]);
    } else {
      if (first == NONE) { first = st[ix(jb + J_PREFILL_LEFT)]; }
      let alloc = min(budget, st[ix(jb + J_PREFILL_LEFT)]);
      st[ix(jb + J_ALLOC)] = alloc;
      budget -= alloc;
      if (alloc > 0u) { load += st[ix(jb + J_LOAD)]; }
    }
  }
  let prefill = param(pool + P_CHUNK) - budget;
  let single = decoding + arriving < running;
  if (DISAGGREGATED && !single && decoding == 0u) {
    // only KV arriving: idle until the first has, or until a call comes
    st[ix(rb + RP_MODE)] = MODE_IDLE;
    replicaSchedule(r, ready);
    return;
  }
  st[ix(rb + RP_MODE)] = select(MODE_RUN, MODE_SINGLE, single);
  st[ix(rb + RP_DUR)] = iterationTime(r, decoding, select(0u, prefill, single), select(0u, load, single));
  // gpu.kv incremental: the run ends where its tokens would outgrow the KV free (room for one
  // step was made), at a boundary that makes more
  var runs = shortest;
  if (KV_INCREMENTAL && !single) { runs = min(runs, kvSteps(r, decoding)); }
  // and at the first boundary once a call's KV has arrived, which joins it there
  if (DISAGGREGATED && !single && arriving > 0u) { runs = min(runs, (ready - now + st[ix(rb + RP_DUR)] - 1u) / st[ix(rb + RP_DUR)]); }
  // unlike the next: a step that shares the chunk, loads from the tier, or has KV arriving
  if (single) { runs = select(1u, prefillRun(r, first, shortest, decoding), budget == 0u && load == 0u && arriving == 0u); }
  replicaSchedule(r, later(runs, st[ix(rb + RP_DUR)]));
}

/**
 * The batch may change (a call arrived or left): act at the next iteration boundary. An idle
 * replica starts at this instant, as an event of its own after those already due now (so the
 * calls that reach it at one instant start in one batch); a prefill step is never cut short,
 * so a run of them acts at the end of the step under way. Why an event: the kernel inlines
 * every call, and replicaBoundary called from here too compiled once per caller
 * (docs/model.md section 3, test/kernel-inlining).
 */
fn replicaTouch(r: u32) {
  let rb = replicaAt(r);
  if (st[ix(rb + RP_STATUS)] != STATUS_ALIVE) { return; }
  let now = st[ix(sb + G_NOW)];
  let mode = st[ix(rb + RP_MODE)];
  if (mode == MODE_IDLE) {
    st[ix(rb + RP_MODE)] = MODE_STARTING;
    replicaSchedule(r, now);
    return;
  }
  if (mode != MODE_RUN && mode != MODE_SINGLE) { return; }
  let start = st[ix(rb + RP_START)];
  let dur = st[ix(rb + RP_DUR)];
  var steps = (now - start + dur - 1u) / dur;
  if (mode == MODE_SINGLE && steps == 0u) { steps = 1u; }
  let next = start + steps * dur;
  if (next < st[ix(rb + RP_EVENT_AT)]) { replicaSchedule(r, next); }
}

/** The call joins replica r's queue; the replica starts it at once if it has a free slot. */
fn replicaEnqueue(r: u32, j: u32) {
  let rb = replicaAt(r);
  let jb = jobAt(j);
  st[ix(jb + J_STAGE)] = STAGE_GPU_QUEUED;
  st[ix(jb + J_ENQUEUED)] = st[ix(sb + G_NOW)];
  // a call sent anew (a retry too) starts over, not as a preempted call's resumption; at a
  // decode replica it waits for room for the KV its prefill replica computed
  let decode = decodeOnly(r);
  st[ix(jb + J_PHASE)] = select(PHASE_PREFILL, PHASE_TRANSFER, decode);
  if (st[ix(jb + J_COUNTED)] != 0u) {
    // the GPU queue's wait is the router's queue's: a decode replica's is the transfer's
    if (!decode) { count(R_QUEUED); }
    let calls = sb + param(P_OFF_CALLS) + r;
    st[ix(calls)] = st[ix(calls)] + 1u;
  }
  queuePush(rb + RP_Q_HEAD, j, TARGET_GPU);
  if (st[ix(rb + RP_N_RUN)] < param(poolOf(r) + P_GPU_SLOTS)) { replicaTouch(r); }
}

/**
 * The router sends a call to replica r, which counts it in its load from here. It joins the
 * queue after the replica's queueing time (P_QUEUE_DELAY + P_QUEUE_TOKEN x its prompt tokens:
 * BLIS's alpha0 and alpha1), at once without one.
 */
fn replicaSend(r: u32, j: u32) {
  let rb = replicaAt(r);
  let jb = jobAt(j);
  st[ix(jb + J_REPLICA)] = r;
  st[ix(jb + J_ENQUEUED)] = st[ix(sb + G_NOW)];
  st[ix(rb + RP_LOAD)] = st[ix(rb + RP_LOAD)] + 1u;
  st[ix(rb + RP_LOAD_TOKENS)] = st[ix(rb + RP_LOAD_TOKENS)] + st[ix(jb + J_PROMPT)] + st[ix(jb + J_OUTPUT)];
  st[ix(sb + G_ROUTER_BUSY)] = st[ix(sb + G_ROUTER_BUSY)] + 1u;
  let pool = poolOf(r);
  let at = laterTokens(param(pool + P_QUEUE_DELAY_US), param(pool + P_QUEUE_DELAY_NS), st[ix(jb + J_PROMPT)], param(pool + P_QUEUE_TOKEN_US), param(pool + P_QUEUE_TOKEN_NS));
  // a dead replica refuses it when it would join the queue (replicaJoin)
  if (at == st[ix(sb + G_NOW)] && st[ix(rb + RP_STATUS)] != STATUS_DEAD) {
    replicaEnqueue(r, j);
    return;
  }
  st[ix(jb + J_STAGE)] = STAGE_GPU_ARRIVING;
  heapPush(at, EV_QUEUE_JOIN, j, st[ix(jb + J_GEN)]);
}

/** Its replica died under a call: retry once elsewhere if the deadline allows. */
fn callFailed(j: u32) {
  let jb = jobAt(j);
  let at = later(1u, param(P_ROUTER_OVERHEAD));
  // past the horizon: the instance stops, and the call fails with it as overloaded
  if (at == NONE) { return; }
  if (st[ix(jb + J_RETRIES)] > 0u && at < st[ix(jb + J_DEADLINE)]) {
    st[ix(jb + J_RETRIES)] = st[ix(jb + J_RETRIES)] - 1u;
    st[ix(jb + J_STAGE)] = STAGE_AT_ROUTER;
    heapPush(at, EV_ROUTE, j, st[ix(jb + J_GEN)]);
    return;
  }
  jobFail(j, R_DIED);
}

/**
 * A call's queueing time is over: it joins its replica's queue. Our position: a replica that
 * died meanwhile refuses it then, and the router retries it elsewhere (callFailed).
 */
fn replicaJoin(j: u32) {
  let jb = jobAt(j);
  let r = st[ix(jb + J_REPLICA)];
  let rb = replicaAt(r);
  if (st[ix(rb + RP_STATUS)] == STATUS_DEAD) {
    st[ix(rb + RP_DOWN)] = 1u;
    replicaUnload(r, j);
    callFailed(j);
    return;
  }
  // the router has held it since it was sent: counted here, as the queue restarts J_ENQUEUED
  add64(R_ROUTER_AREA, measured(st[ix(jb + J_ENQUEUED)], st[ix(sb + G_NOW)]));
  replicaEnqueue(r, j);
}

/**
 * A replica's connections reset: its calls fail at once (each retried once elsewhere if the
 * deadline allows) and its KV cache is lost, its offload tier with it.
 */
fn replicaReset(r: u32) {
  let rb = replicaAt(r);
  let now = st[ix(sb + G_NOW)];
  if (st[ix(rb + RP_MODE)] == MODE_SINGLE || st[ix(rb + RP_MODE)] == MODE_RUN) { replicaBusy(r); }
  st[ix(rb + RP_MODE)] = MODE_IDLE;
  st[ix(rb + RP_GEN)] = st[ix(rb + RP_GEN)] + 1u;
  if (st[ix(rb + RP_N_RUN)] + st[ix(rb + RP_Q_LEN)] > 0u) { st[ix(rb + RP_DOWN)] = 1u; }
  while (st[ix(rb + RP_N_RUN)] > 0u) {
    let j = st[ix(runningAt(r, 0u))];
    replicaRelease(r, j);
    callFailed(j);
  }
  while (st[ix(rb + RP_Q_LEN)] > 0u) {
    let j = st[ix(rb + RP_Q_HEAD)];
    queueUnlink(rb + RP_Q_HEAD, j);
    replicaUnload(r, j);
    callFailed(j);
  }
  let used = cacheUsed(r);
  for (var e = 0u; e < used; e++) {
    if (st[ix(entryAt(r, e) + E_KEY)] != 0u) { cacheDrop(r, e); }
  }
  if (OFFLOAD) {
    let offloaded = st[ix(rb + RP_OFFLOAD_ENTRIES)];
    for (var t = 0u; t < offloaded; t++) {
      if (st[ix(offloadAt(r, t) + OE_KEY)] != 0u) { offloadDrop(r, t); }
    }
  }
}

/** A hung replica stops iterating; its calls wait until the health check finds it. */
fn replicaHang(r: u32) {
  let rb = replicaAt(r);
  if (st[ix(rb + RP_MODE)] == MODE_SINGLE || st[ix(rb + RP_MODE)] == MODE_RUN) { replicaBusy(r); }
  st[ix(rb + RP_MODE)] = MODE_IDLE;
  st[ix(rb + RP_GEN)] = st[ix(rb + RP_GEN)] + 1u;
}

// ---- router ---------------------------------------------------------------------------------

/** Index of the first ring point at or after hash h (wrapping). */
fn ringStart(h: u32) -> u32 {
  var lo = 0u;
  var hi = param(P_RING_LEN);
  while (lo < hi) {
    let mid = (lo + hi) >> 1u;
    if (param(param(P_OFF_RING) + mid * RING_WORDS) < h) { lo = mid + 1u; }
    else { hi = mid; }
  }
  return select(lo, 0u, lo == param(P_RING_LEN));
}

fn ringReplica(i: u32) -> u32 {
  return param(param(P_OFF_RING) + (i % param(P_RING_LEN)) * RING_WORDS + 1u);
}

/** The key a call is routed by: its session, its shared prefix, or itself. */
fn routeKey(j: u32) -> u32 {
  let jb = jobAt(j);
  if (KIND == KIND_TASK) { return SESSION_KEY | st[ix(jb + J_INDEX)]; }
  if (param(P_TRACE_ROWS) != 0u) {
    let key = traceWord(traceRow(j), TR_ROUTE);
    return select(SESSION_KEY | st[ix(jb + J_INDEX)], key, key != 0u);
  }
  if (st[ix(jb + J_PREFIX)] != 0u) { return st[ix(jb + J_PREFIX)]; }
  return SESSION_KEY | st[ix(jb + J_INDEX)];
}

/** Picks a replica the router believes up, by the configured policy; NONE when none is. */
fn routePick(j: u32) -> u32 {
  // with gpu.disaggregation, new calls go to the prefill pool, replicas 0 to its size - 1
  let n = select(param(P_GPU_REPLICAS), param(P_PREFILL_REPLICAS), DISAGGREGATED);
  let policy = param(P_POLICY);
  if (policy == POLICY_PREFIX_AFFINITY || policy == POLICY_BOUNDED_AFFINITY) {
    // each seed draws where a session or prefix lands, as real session ids and hashes are random
    let start = ringStart(random(STREAM_PLACEMENT, routeKey(j), 0u));
    // consistent hashing with bounded loads: at most ceil(c x (total + 1) / up) calls each (plain
    // affinity takes the first replica up on the ring, and needs no load)
    var cap = NONE;
    if (policy == POLICY_BOUNDED_AFFINITY) {
      var total = 0u;
      var up = 0u;
      for (var r = 0u; r < n; r++) {
        if (replicaUp(r)) {
          total += st[ix(replicaAt(r) + RP_LOAD)];
          up += 1u;
        }
      }
      if (up == 0u) { return NONE; }
      cap = ceilMulDiv(param(P_BOUNDED_LOAD_MILLI), total + 1u, 1000u * up);
    }
    var first = NONE;
    for (var i = 0u; i < param(P_RING_LEN); i++) {
      let r = ringReplica(start + i);
      if (!replicaUp(r)) { continue; }
      if (policy == POLICY_PREFIX_AFFINITY) { return r; }
      if (first == NONE) { first = r; }
      if (st[ix(replicaAt(r) + RP_LOAD)] + 1u <= cap) { return r; }
    }
    return first;
  }
  return routeScan(j, 0u, n, policy, G_RR);
}

/** The call reaches the router: shape it, pick a replica, send it. */
fn routeCall(j: u32) {
  let jb = jobAt(j);
  if (KIND == KIND_TASK) {
    let step = st[ix(jb + J_STEP)];
    let input = sample(P_T_INPUT, random(STREAM_STEP, st[ix(jb + J_INDEX)], step * 4u));
    st[ix(jb + J_PROMPT)] = st[ix(jb + J_CONTEXT)] + input;
    st[ix(jb + J_OUTPUT)] = max(1u, sample(P_T_OUTPUT, random(STREAM_STEP, st[ix(jb + J_INDEX)], step * 4u + 1u)));
  }
  if (st[ix(sb + G_ROUTER_BUSY)] >= param(P_ROUTER_SLOTS)) {
    jobFail(j, R_REJECTED_AT_ROUTER);
    return;
  }
  loop {
    let r = routePick(j);
    if (r == NONE) {
      jobFail(j, R_DIED);
      return;
    }
    let rb = replicaAt(r);
    if (st[ix(rb + RP_STATUS)] != STATUS_DEAD) {
      replicaSend(r, j);
      return;
    }
    // refused: the router learns the replica is down, and this counts as the retry
    st[ix(rb + RP_DOWN)] = 1u;
    if (st[ix(jb + J_RETRIES)] == 0u) {
      jobFail(j, R_DIED);
      return;
    }
    st[ix(jb + J_RETRIES)] = st[ix(jb + J_RETRIES)] - 1u;
  }
}

// ---- arrivals and deadlines -------------------------------------------------------------------

fn arrivalNext() {
  let now = st[ix(sb + G_NOW)];
  let index = st[ix(sb + G_NEXT_INDEX)];
  if (param(P_TRACE_ROWS) != 0u) {
    traceArrivalNext(index);
    return;
  }
  let burst = now >= param(P_BURST_FROM) && now < param(P_BURST_TO);
  let gap = sample(select(P_T_INTERARRIVAL, P_T_BURST_INTERARRIVAL, burst), random(STREAM_ARRIVAL, index, 0u));
  // the next arrival waits beside the heap, not in it: one push and pop fewer per arrival;
  // compared on the room left, as now + gap can pass 2^32 (and wrap here)
  let end = param(P_ARRIVAL_END);
  st[ix(sb + G_NEXT_ARRIVAL)] = select(NONE, now + gap, now < end && gap < end - now);
}

/**
 * The trace's next request: the window's first at once, each later one its gap after the one
 * before (now); compared on the room left, as now + gap can pass 2^32 (and wrap here).
 */
fn traceArrivalNext(index: u32) {
  let now = st[ix(sb + G_NOW)];
  let row = st[ix(sb + G_TRACE_START)] + index;
  let end = param(P_ARRIVAL_END);
  var gap = 0u;
  if (index != 0u && row < param(P_TRACE_ROWS)) { gap = traceWord(row, TR_GAP); }
  st[ix(sb + G_NEXT_ARRIVAL)] = select(NONE, now + gap, row < param(P_TRACE_ROWS) && now < end && gap < end - now);
}

/** A new arrival: admitted by an app replica (and the orchestrator) or rejected at once. */
fn arrival() {
  let now = st[ix(sb + G_NOW)];
  let index = st[ix(sb + G_NEXT_INDEX)];
  st[ix(sb + G_NEXT_INDEX)] = index + 1u;
  let counted = select(0u, 1u, now >= param(P_WARMUP) && now < param(P_MEASURE_END));
  if (counted != 0u) { count(R_ARRIVALS); }
  arrivalNext();
  var app = 0u;
  if (KIND != KIND_JOB) {
    app = NONE;
    for (var i = 0u; i < param(P_APP_REPLICAS); i++) {
      let a = (st[ix(sb + G_APP_RR)] + i) % param(P_APP_REPLICAS);
      if (st[ix(appAt(a) + AP_STATUS)] == STATUS_ALIVE) {
        app = a;
        break;
      }
    }
    if (app != NONE) { st[ix(sb + G_APP_RR)] = app + 1u; }
    if (app == NONE || st[ix(appAt(app) + AP_BUSY)] >= param(P_APP_SLOTS)) {
      if (counted != 0u) { count(R_REJECTED_AT_APP); }
      return;
    }
    if (KIND == KIND_TASK && st[ix(sb + G_ORCH_BUSY)] >= param(P_ORCH_SLOTS)) {
      if (counted != 0u) { count(R_REJECTED_AT_ORCH); }
      return;
    }
  }
  // a stopped instance (stopInstance) or a full job table refuses it: it fails as overloaded
  var j = NONE;
  if (st[ix(sb + G_STOPPED)] == 0u) { j = jobAlloc(); }
  if (j == NONE) {
    if (counted != 0u) { count(R_OVERLOADED); }
    return;
  }
  let jb = jobAt(j);
  st[ix(jb + J_STAGE)] = STAGE_AT_ROUTER;
  st[ix(jb + J_ARRIVAL)] = now;
  st[ix(jb + J_CALL_AT)] = now;
  st[ix(jb + J_MISSED)] = 0u;
  st[ix(jb + J_INDEX)] = index;
  st[ix(jb + J_COUNTED)] = counted;
  st[ix(jb + J_APP)] = app;
  st[ix(jb + J_STEP)] = 0u;
  st[ix(jb + J_ENTRY)] = NONE;
  st[ix(jb + J_RESERVED)] = 0u;
  st[ix(jb + J_RETRIES)] = param(P_RETRIES);
  st[ix(jb + J_PREFIX)] = 0u;
  st[ix(jb + J_DEADLINE)] = select(NONE, now + param(P_TIMEOUT), param(P_TIMEOUT) > 0u);
  if (param(P_TIMEOUT) > 0u) { heapPush(later(1u, param(P_TIMEOUT)), EV_DEADLINE, j, st[ix(jb + J_GEN)]); }
  if (KIND == KIND_JOB) {
    serverArrive(j);
    return;
  }
  st[ix(appAt(app) + AP_BUSY)] = st[ix(appAt(app) + AP_BUSY)] + 1u;
  var hops = param(P_LB_OVERHEAD) + param(P_APP_OVERHEAD) + param(P_ROUTER_OVERHEAD);
  if (KIND == KIND_TASK) {
    st[ix(sb + G_ORCH_BUSY)] = st[ix(sb + G_ORCH_BUSY)] + 1u;
    st[ix(jb + J_CONTEXT)] = param(P_SYSTEM_TOKENS);
    st[ix(jb + J_PREFIX)] = 1u;
    hops += param(P_ORCH_OVERHEAD);
  } else {
    requestShape(j);
  }
  heapPush(later(1u, hops), EV_ROUTE, j, st[ix(jb + J_GEN)]);
}

/** A single call's prompt: a shared prefix and a suffix, or a unique prompt. */
fn requestShape(j: u32) {
  let jb = jobAt(j);
  let index = st[ix(jb + J_INDEX)];
  if (param(P_TRACE_ROWS) != 0u) {
    // as recorded (the trace's parser holds both at 1 or more), its prefix the tree node its full blocks end at
    let row = traceRow(j);
    st[ix(jb + J_PREFIX)] = traceWord(row, TR_NODE);
    st[ix(jb + J_PROMPT)] = traceWord(row, TR_INPUT);
    st[ix(jb + J_OUTPUT)] = traceWord(row, TR_OUTPUT);
    return;
  }
  let shares = (random(STREAM_SHAPE, index, 0u) >> 1u) < param(P_SHARE);
  if (shares) {
    let pick = random(STREAM_SHAPE, index, 1u) >> 1u;
    var p = 0u;
    while (p + 1u < param(P_N_PREFIXES) && pick >= param(param(P_OFF_PREFIXES) + p * PREFIX_WORDS)) { p += 1u; }
    st[ix(jb + J_PREFIX)] = p + 1u;
    st[ix(jb + J_PROMPT)] = prefixTokens(p) + sample(P_T_SUFFIX, random(STREAM_SHAPE, index, 2u));
  } else {
    st[ix(jb + J_PROMPT)] = sample(P_T_UNIQUE, random(STREAM_SHAPE, index, 2u));
  }
  st[ix(jb + J_PROMPT)] = max(1u, st[ix(jb + J_PROMPT)]);
  st[ix(jb + J_OUTPUT)] = max(1u, sample(P_T_OUTPUT, random(STREAM_SHAPE, index, 3u)));
}

/** Detaches a job from wherever it waits or runs; its downstream work is cancelled. */
fn jobDetach(j: u32) {
  let jb = jobAt(j);
  let stage = st[ix(jb + J_STAGE)];
  let r = st[ix(jb + J_REPLICA)];
  if (KIND != KIND_JOB && stage == STAGE_GPU_QUEUED) {
    queueUnlink(replicaAt(r) + RP_Q_HEAD, j);
    replicaUnload(r, j);
  } else if (KIND != KIND_JOB && stage == STAGE_GPU_ARRIVING) {
    replicaUnload(r, j);
  } else if (KIND != KIND_JOB && stage == STAGE_GPU_RUNNING) {
    replicaRelease(r, j);
    replicaTouch(r);
  } else if (KIND == KIND_TASK && stage == STAGE_TOOL_QUEUED) {
    queueUnlink(sb + G_TOOL_Q_HEAD, j);
  } else if (KIND == KIND_TASK && stage == STAGE_TOOL_RUNNING) {
    toolFreed(j);
  } else if (KIND == KIND_JOB && stage == STAGE_SERVER_QUEUED) {
    queueUnlink(sb + G_SERVER_Q_HEAD, j);
  } else if (KIND == KIND_JOB && stage == STAGE_SERVER_RUNNING) {
    serviceEnd(j);
    serverDispatch();
  }
}

// ---- scenario windows ---------------------------------------------------------------------------

fn failureWord(f: u32, field: u32) -> u32 {
  return param(param(P_OFF_FAILURES) + f * FAILURE_WORDS + field);
}

/** Every job held by a dead app replica (or server replica) fails: its connections reset. */
fn failHeldJobs(tgt: u32, replica: u32) {
  for (var j = 0u; j < param(P_JOB_CAP); j++) {
    let jb = jobAt(j);
    let stage = st[ix(jb + J_STAGE)];
    if (stage == STAGE_FREE) { continue; }
    let held = select(
      stage == STAGE_SERVER_RUNNING && st[ix(jb + J_REPLICA)] == replica,
      st[ix(jb + J_APP)] == replica,
      tgt == TARGET_APP,
    );
    if (held) {
      jobDetach(j);
      jobFail(j, R_DIED);
    }
  }
}

/** The replica failure f took down (picked when it started). */
fn failedReplica(f: u32) -> u32 {
  return st[ix(sb + param(P_OFF_FAILED) + f)];
}

/** The replica of `tgt` with the most calls held, then the most KV in use; the first on a tie. */
fn busiestReplica(tgt: u32) -> u32 {
  var best = 0u;
  if (tgt == TARGET_GPU) {
    for (var r = 1u; r < param(P_GPU_REPLICAS); r++) {
      let rb = replicaAt(r);
      let bb = replicaAt(best);
      if (st[ix(rb + RP_LOAD)] > st[ix(bb + RP_LOAD)] || (st[ix(rb + RP_LOAD)] == st[ix(bb + RP_LOAD)] && st[ix(rb + RP_KV_USED)] > st[ix(bb + RP_KV_USED)])) { best = r; }
    }
  } else if (tgt == TARGET_APP) {
    for (var a = 1u; a < param(P_APP_REPLICAS); a++) { if (st[ix(appAt(a) + AP_BUSY)] > st[ix(appAt(best) + AP_BUSY)]) { best = a; } }
  } else if (tgt == TARGET_SERVER) {
    for (var s = 1u; s < param(P_SERVER_REPLICAS); s++) { if (st[ix(serverAt(s) + AP_BUSY)] > st[ix(serverAt(best) + AP_BUSY)]) { best = s; } }
  }
  return best;
}

/** The replica a failure takes down: the problem's, one drawn from the seed, or the busiest now. */
fn failurePick(f: u32, tgt: u32) -> u32 {
  let replica = failureWord(f, FAILURE_REPLICA);
  if (replica == PICK_BUSIEST) { return busiestReplica(tgt); }
  if (replica != PICK_RANDOM) { return replica; }
  var n = 1u;
  if (tgt == TARGET_GPU) { n = param(P_GPU_REPLICAS); }
  else if (tgt == TARGET_APP) { n = param(P_APP_REPLICAS); }
  else if (tgt == TARGET_SERVER) { n = param(P_SERVER_REPLICAS); }
  return random(STREAM_FAILURE, f, 0u) % n;
}

fn failureStart(f: u32) {
  let tgt = failureWord(f, FAILURE_TARGET);
  let replica = failurePick(f, tgt);
  st[ix(sb + param(P_OFF_FAILED) + f)] = replica;
  let hang = failureWord(f, FAILURE_MODE) == FAIL_MODE_HANG;
  if (failsAt(TARGET_GPU) && tgt == TARGET_GPU) {
    st[ix(replicaAt(replica) + RP_STATUS)] = select(STATUS_DEAD, STATUS_HUNG, hang);
    if (hang) { replicaHang(replica); }
    else { replicaReset(replica); }
  } else if ((failsAt(TARGET_APP) && tgt == TARGET_APP) || (failsAt(TARGET_SERVER) && tgt == TARGET_SERVER)) {
    if (tgt == TARGET_APP) { st[ix(appAt(replica) + AP_STATUS)] = STATUS_DEAD; }
    else { st[ix(serverAt(replica) + AP_STATUS)] = STATUS_DEAD; }
    failHeldJobs(tgt, replica);
  }
}

/** The health check finds a hung replica: the router marks it down and its calls fail. */
fn failureDetect(f: u32) {
  let replica = failedReplica(f);
  let rb = replicaAt(replica);
  if (st[ix(rb + RP_STATUS)] != STATUS_HUNG) { return; }
  st[ix(rb + RP_STATUS)] = STATUS_DEAD;
  st[ix(rb + RP_DOWN)] = 1u;
  replicaReset(replica);
}

/** The replica comes back, empty, and the router sends to it again. */
fn failureEnd(f: u32) {
  let tgt = failureWord(f, FAILURE_TARGET);
  let replica = failedReplica(f);
  if (failsAt(TARGET_GPU) && tgt == TARGET_GPU) {
    let rb = replicaAt(replica);
    st[ix(rb + RP_STATUS)] = STATUS_ALIVE;
    st[ix(rb + RP_DOWN)] = 0u;
  } else if (failsAt(TARGET_APP) && tgt == TARGET_APP) {
    st[ix(appAt(replica) + AP_STATUS)] = STATUS_ALIVE;
  } else if (failsAt(TARGET_SERVER) && tgt == TARGET_SERVER) {
    st[ix(serverAt(replica) + AP_STATUS)] = STATUS_ALIVE;
    serverDispatch();
  }
}

/** The slowdown starts or ends: running GPU batches re-plan at their next boundary. */
fn slowChange(on: u32) {
  st[ix(sb + G_SLOW)] = on;
  if (SLOW_TARGET != TARGET_GPU) { return; }
  for (var r = 0u; r < param(P_GPU_REPLICAS); r++) { replicaTouch(r); }
}

// ---- the event loop ---------------------------------------------------------------------------

fn jobEventLive() -> bool {
  return st[ix(jobAt(evId) + J_GEN)] == evTag && st[ix(jobAt(evId) + J_STAGE)] != STAGE_FREE;
}

/** Where a job was when its deadline passed: on its way to a GPU, at one, at the tools, at a server. */
fn timeoutCause(stage: u32) -> u32 {
  if (stage == STAGE_GPU_QUEUED || stage == STAGE_GPU_RUNNING || stage == STAGE_GPU_ARRIVING || stage == STAGE_GPU_OUTPUT) { return R_TIMED_OUT_AT_GPU; }
  if (stage == STAGE_TOOL_QUEUED || stage == STAGE_TOOL_RUNNING) { return R_TIMED_OUT_AT_TOOLS; }
  if (stage == STAGE_SERVER_QUEUED || stage == STAGE_SERVER_RUNNING) { return R_TIMED_OUT_AT_SERVER; }
  return R_TIMED_OUT_AT_ROUTER;
}

fn handleEvent() {
  switch (evKind) {
    case EV_ARRIVAL: {
      arrival();
    }
    case EV_DEADLINE: {
      if (jobEventLive()) {
        let cause = timeoutCause(st[ix(jobAt(evId) + J_STAGE)]);
        jobDetach(evId);
        jobFail(evId, cause);
      }
    }
    case EV_ROUTE: {
      if (KIND != KIND_JOB && jobEventLive()) { routeCall(evId); }
    }
    case EV_REPLICA: {
      if (KIND != KIND_JOB && st[ix(replicaAt(evId) + RP_GEN)] == evTag) { replicaBoundary(evId); }
    }
    case EV_TOOL_DONE: {
      if (KIND == KIND_TASK && jobEventLive()) { toolDone(evId); }
    }
    case EV_SERVICE_DONE: {
      if (KIND == KIND_JOB && jobEventLive()) {
        serviceEnd(evId);
        jobSucceed(evId);
        serverDispatch();
      }
    }
    case EV_SLOW_START, EV_SLOW_END: {
      slowChange(select(0u, 1u, evKind == EV_SLOW_START));
    }
    case EV_FAIL_START: {
      failureStart(evId);
    }
    case EV_FAIL_DETECT: {
      if (failsAt(TARGET_GPU)) { failureDetect(evId); }
    }
    case EV_FAIL_END: {
      failureEnd(evId);
    }
    case EV_QUEUE_JOIN: {
      if (KIND != KIND_JOB && jobEventLive()) { replicaJoin(evId); }
    }
    case EV_OUTPUT_DONE: {
      if (KIND != KIND_JOB && jobEventLive()) { callEnd(evId); }
    }
    // WGSL's switch must have one; simulate.ts ignores any other kind too
    default: {}
  }
}

/**
 * Takes the earliest event before `until` into evTime, evKind, evId, evTag: the next arrival
 * (first on a tie) or the top of the heap. False when there is none.
 */
fn nextEvent(until: u32) -> bool {
  let arrivalAt = st[ix(sb + G_NEXT_ARRIVAL)];
  let heapAt0 = select(NONE, st[ix(hs)], st[ix(sb + G_HEAP_LEN)] > 0u);
  if (arrivalAt <= heapAt0 && arrivalAt != NONE) {
    if (arrivalAt >= until) { return false; }
    evTime = arrivalAt;
    evKind = EV_ARRIVAL;
    return true;
  }
  if (heapAt0 == NONE || heapAt0 >= until) { return false; }
  heapPop();
  return true;
}

/**
 * After a full heap or cache (fail): every job in the system fails as overloaded and pending
 * events are dropped; arrivals still come, to the end of the window, and are refused (arrival),
 * so the success rate counts every request the instance could not serve.
 */
fn stopInstance() {
  st[ix(sb + G_STOPPED)] = 1u;
  overload(st[ix(sb + G_ERROR)]);
  // the replicas' KV in use counts to the stop (their sequences fail here without leaving them)
  if (KIND != KIND_JOB) {
    for (var r = 0u; r < param(P_GPU_REPLICAS); r++) { kvNote(r); }
  }
  for (var j = 0u; j < param(P_JOB_CAP); j++) {
    if (st[ix(jobAt(j) + J_STAGE)] != STAGE_FREE) { jobFail(j, R_OVERLOADED); }
  }
  st[ix(sb + G_HEAP_LEN)] = 0u;
}

/** Processes every event before `until` (microseconds); returns whether the instance is done. */
fn advanceInstance(until: u32) -> bool {
  // evBudget first: an event taken must be handled (simulate.ts has no budget)
  while (evBudget > 0u && st[ix(sb + G_DONE)] == 0u && nextEvent(until)) {
    evBudget -= 1u;
    st[ix(sb + G_NOW)] = evTime;
    add64(R_EVENTS, 1u);
    handleEvent();
    if (st[ix(sb + G_ERROR)] != ERR_NONE && st[ix(sb + G_STOPPED)] == 0u) { stopInstance(); }
    if (st[ix(sb + G_NEXT_ARRIVAL)] == NONE && st[ix(sb + G_LIVE)] == 0u) { st[ix(sb + G_DONE)] = 1u; }
  }
  if (st[ix(sb + G_NEXT_ARRIVAL)] == NONE && st[ix(sb + G_HEAP_LEN)] == 0u) { st[ix(sb + G_DONE)] = 1u; }
  return st[ix(sb + G_DONE)] != 0u;
}

/** An empty system at time 0: free lists, replicas up, the first arrival and the windows. */
fn initInstance(seed: u32, instance: u32) {
  // st.fill(0, ...): the host clears the state buffer (a loop would spend llvmpipe's budget)
  st[ix(sb + G_KEY)] = instanceKey(seed, instance);
  for (var j = 0u; j < param(P_JOB_CAP); j++) {
    st[ix(jobAt(j) + J_NEXT)] = select(NONE, j + 1u, j + 1u < param(P_JOB_CAP));
  }
  st[ix(sb + G_FREE_JOB)] = select(NONE, 0u, param(P_JOB_CAP) > 0u);
  for (var r = 0u; r < param(P_GPU_REPLICAS); r++) { st[ix(replicaAt(r) + RP_EVENT_AT)] = NONE; }
  // each seed replays the window that starts at a request of its own
  if (param(P_TRACE_ROWS) != 0u) { st[ix(sb + G_TRACE_START)] = random(STREAM_TRACE, 0u, 0u) % param(P_TRACE_STARTS); }
  arrivalNext();
  if (SLOW_TARGET != TARGET_NONE) {
    heapPush(param(P_SLOW_FROM), EV_SLOW_START, 0u, 0u);
    heapPush(param(P_SLOW_TO), EV_SLOW_END, 0u, 0u);
  }
  for (var f = 0u; f < param(P_N_FAILURES); f++) {
    heapPush(failureWord(f, FAILURE_FROM), EV_FAIL_START, f, 0u);
    if (failureWord(f, FAILURE_MODE) == FAIL_MODE_HANG) { heapPush(failureWord(f, FAILURE_DETECT_AT), EV_FAIL_DETECT, f, 0u); }
    heapPush(failureWord(f, FAILURE_TO), EV_FAIL_END, f, 0u);
  }
}

// ---- entry points ---------------------------------------------------------------------------------

// The bindings above are simulate.ts's EngineBuffers: `params` (where the configuration's
// params start) stands for its buffers, and an instance's slot picks its state base, at the
// batch's stride (entry.wgsl's run.stride: its largest configuration's state words).
fn bind(params: u32, slot: u32) {
  pb = params;
  batchSlot = slot;
  batchSize = run.count;
  // interleaved, the record's words are numbered from 0 and ix spreads them
  sb = select(slot * run.stride, 0u, INTERLEAVED);
  rs = sb + param(P_OFF_RESULT);
  js = sb + param(P_OFF_JOBS);
  hs = sb + param(P_OFF_HEAP);
}

/** Starts the instance stored at slot `slot` as instance `instance` of base seed `seed`. */
fn init(params: u32, slot: u32, seed: u32, instance: u32) {
  bind(params, slot);
  initInstance(seed, instance);
}

/** Advances the instance at `slot` through every event before `until`; true when it is done. */
fn advance(params: u32, slot: u32, until: u32) -> bool {
  bind(params, slot);
  return advanceInstance(until);
}
