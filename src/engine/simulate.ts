/**
 * The reference engine: one simulation instance of docs/model.md, event by event, on a flat u32
 * state record. kernels/simulate.wgsl is the same program in WGSL: same functions, same
 * order, same names (a reader can put the two side by side), each section calling only its
 * own and earlier sections; test/engine-mirror.test.ts holds both to that, and lists where
 * they differ and why. Rules that keep them equal: only u32 arithmetic (`>>> 0`, Math.imul,
 * split multiplies), no allocation, no floats, and every capacity sized by compile.ts
 * (reaching one is an overload, recorded in the result: see ERR in layout.ts).
 *
 * For speed (issue 14; bench/results/reference-speed.md), this file alone runs the instance
 * in arrays of its own (copied in and back: bind, unbind), holds a few state words in module
 * variables while initInstance and advanceInstance run, the two-word result counters as
 * doubles (add64), and queues deadlines in a FIFO beside the heap (fifoPush, fifoPop,
 * fifoFlush: not in the kernel); all go back to the caller's state before they return, so
 * the records, and the state between calls, are the kernel's (the heap's entries, if not in
 * the same places of it). It reads the three flags of its configuration's shape that the kernel
 * has as pipeline constants from globals that bind sets (SERVESIM_OFFLOAD and the others), which
 * V8 compiles as constants. Loading it raises V8's inlining budget (inlining.ts), so that each
 * event handler compiles as one function with everything it calls. It alone can tell a
 * recorder of each counted call and arrival as it happens (RequestRecorder, `--requests-out`):
 * a test of a null module variable where none is asked for.
 *
 * Time is integer microseconds. Between two events a GPU replica runs identical decode
 * iterations, so a run of them is one event (docs/model.md: continuous batching, chunked prefill).
 */
import { HISTOGRAM_BUCKETS } from '../model/histogram.js';
import { LIMITS } from '../problem/limits.js';
// V8 inlines this file's hot path whole only with a larger budget than its default: set on load
import './inlining.js';
import * as layout from './layout.js';
import { AP, E, ERR, EV, FAILURE, FAIL_MODE, G, IV, J, KIND, MODE, OE, P, PHASE, PICK, POLICY, QW, R, RP, STAGE, STATUS, STREAM, TARGET, TN, TR } from './layout.js';
import * as rng from './rng.js';

// Imported bindings are loaded and checked at every use in V8's optimised code; module
// constants fold into it. So the engine reads the word counts (the const enums above are
// numbers already) and the random functions through these.
const APP_WORDS = layout.APP_WORDS;
const ENTRY_WORDS = layout.ENTRY_WORDS;
const FAILURE_WORDS = layout.FAILURE_WORDS;
const HEAP_WORDS = layout.HEAP_WORDS;
const INTERVAL_WORDS = layout.INTERVAL_WORDS;
const JOB_WORDS = layout.JOB_WORDS;
const OFFLOAD_WORDS = layout.OFFLOAD_WORDS;
const PREFIX_WORDS = layout.PREFIX_WORDS;
const REPLICA_HEADER_WORDS = layout.REPLICA_HEADER_WORDS;
const RING_WORDS = layout.RING_WORDS;
const TRACE_WORDS = layout.TRACE_WORDS;
const TREE_WORDS = layout.TREE_WORDS;
/** The result counters of two words (each R.X with an R.X_HI after it). */
const WIDE_RESULTS = Int32Array.from(
  Object.entries(layout.layoutConstants()).filter(([name]) => name.startsWith('R_') && name.endsWith('_HI')).map(([, hi]) => hi - 1),
);
const draw = rng.draw;
const instanceKey = rng.instanceKey;
const sampleTable = rng.sampleTable;

// Module variables are `var`, not `let`: V8's optimised code checks a `let` for its temporal
// dead zone at every read from a function, and this engine reads them on every line.
// The instance that init or advance runs: its state and its configuration's params, copied into
// arrays of their own while it runs (bind, unbind). Module constants, so V8 compiles each
// array's address and length into the engine's code, where a `var` array is loaded, with its
// length, at each use and holds registers (measured in
// bench/results/reference-speed-d1d8722.md). The tables are bound, not copied: they hold a
// trace's rows, which can be millions of words.
const st = new Uint32Array(LIMITS.stateWords);
const pr = new Uint32Array(LIMITS.paramsWords);
var tb: Uint32Array = new Uint32Array(0);
// The instance's base in st: one instance at a time (the kernel's is its slot's).
const sb = 0;
// Where init and advance copy the instance back: the caller's state array and the slot's base.
var home: Uint32Array = new Uint32Array(0);
var homeBase = 0;
// Where this instance's results, jobs and heap start (fixed for a configuration).
var rs = 0;
var js = 0;
var hs = 0;
// The event being handled.
var evTime = 0;
var evKind = 0;
var evId = 0;
var evTag = 0;
// The state words read on most events: the clock (G.NOW), the heap's length (G.HEAP_LEN) and
// insertion sequence (G.SEQ). initInstance and advanceInstance hold them here while they run
// and write them back to the state before they return.
var now = 0;
var heapLen = 0;
var heapSeq = 0;
// Events due a fixed delay after they are pushed come in (time, sequence) order: while init and
// advance run, those due P.TIMEOUT after now (each job's deadline, most of a long heap) queue in
// a FIFO ring of P.HEAP_CAP entries beside the heap, pushed and popped at no sift, and join the
// heap in the state before they return (fifoFlush). heapLen counts the heap's entries, fifoLen
// the FIFO's; G.HEAP_LEN is their sum.
var fifo: Uint32Array = new Uint32Array(0);
var fifoHead = 0;
var fifoLen = 0;
var fifoDelay = 0;
var heapCap = 0;
// The instance's random key (G.KEY), which never changes once initInstance has drawn it; as
// an i32 (draw only xors it), so that V8 never boxes it.
var randomKey = 0;
// The configuration's shape (shape.ts) where the kernel has it as pipeline constants: whether
// its replicas have a KV offload tier, take KV as sequences grow, split prefill from decode.
// Properties of the global object, which bind sets: V8 compiles a global that has kept one
// value as that constant (and deoptimises what read it if it changes), so a feature's code
// folds away where a configuration lacks it, as the kernel's does; a module variable is loaded
// and tested at each read. Every module of the thread sees them, hence the prefix.
declare global {
  var SERVESIM_OFFLOAD: boolean;
  var SERVESIM_KV_INCREMENTAL: boolean;
  var SERVESIM_DISAGGREGATED: boolean;
}
/** The two-word result counters while advanceInstance runs (add64). */
const sums = new Float64Array(layout.RESULT_SCALARS);
/** The measured window (P.WARMUP, P.MEASURE_END), read by every measured(). */
var warmupAt = 0;
var measureEndAt = 0;
// Where this instance's app replicas, server replicas and GPU replicas start, a replica's
// words, and where its cache entries start in it: replicaAt and entryAt run in every loop over
// a batch or a cache, and would read three or four params each time.
var appBase = 0;
var serverBase = 0;
var replicaBase = 0;
var replicaStride = 0;
var entryOffset = 0;
var offloadOffset = 0;

/**
 * What the engine tells a request recorder (`--requests-out`, src/run/request-records.ts) of
 * the counted arrivals of the instance it runs: `index` is an arrival's number in the instance
 * (J.INDEX). The kernel has none; null unless runReference was given one, so an instance run
 * without it pays a test at each place below and nothing else.
 */
export interface RequestRecorder {
  /** Job `index` left a queue for service after `wait` microseconds: the tools' (`atTools`), else a GPU replica's or the server's. */
  waited(index: number, atTools: boolean, wait: number): void;
  /**
   * A model call of job `index` (its step) finished at `end`: set out at `callAt`, its first
   * token at `firstAt`, `output` tokens, a prompt of `prompt` of which `cached` were cached, on
   * GPU replica `replica`, preempted `preemptions` times on the way (gpu.kv incremental).
   */
  called(index: number, step: number, callAt: number, firstAt: number, end: number, output: number, prompt: number, cached: number, replica: number, preemptions: number): void;
  /** Arrival `index`, come at `arrivalAt`, resolved at `at`: `outcome` is R.SUCCESSES, or the R counter its failure counts in. */
  resolved(index: number, arrivalAt: number, at: number, outcome: number): void;
}
var recorder: RequestRecorder | null = null;

const SESSION_KEY = 0x80000000;
const NONE = 0xffffffff;
const SUB_BITS = 6;

// ---- results and arithmetic ----------------------------------------------------------------------------

function result(field: number): number {
  return rs + field;
}

// written to stay within V8's small-function size (27 bytes of bytecode), which it inlines
// wherever it is called
function count(field: number): void {
  st[rs + field]!++;
}

function bucketOf(v: number): number {
  if (v < 1 << SUB_BITS) return v;
  const shift = 31 - Math.clz32(v) - SUB_BITS;
  return (shift + 1) * (1 << SUB_BITS) + ((v >>> shift) & ((1 << SUB_BITS) - 1));
}

/** Counts a value in the histogram at params[offset] (a P.OFF_HIST_*). */
function histCount(offset: number, v: number): void {
  const h = sb + pr[offset]! + bucketOf(v);
  st[h] = st[h]! + 1;
}

// ---- arithmetic -------------------------------------------------------------------------

/**
 * Adds a u32 to a two-word result counter. Here the counter is a double in `sums` while
 * advanceInstance runs (sumsLoad, sumsStore): exact to 2^53, far past any run's sums, and one
 * add where the kernel carries between two words.
 */
function add64(field: number, v: number): void {
  sums[field]! += v;
}

/** Adds a x b (u32 x u32) to a two-word result counter: a product below 2^53 (a is a time, b a batch of at most 2^21). */
function mulAdd64(field: number, a: number, b: number): void {
  sums[field]! += a * b;
}

/** The two-word result counters into `sums`, as doubles. */
function sumsLoad(): void {
  for (let k = 0; k < WIDE_RESULTS.length; k++) {
    const f = WIDE_RESULTS[k]!;
    sums[f] = st[rs + f]! + st[rs + f + 1]! * 0x100000000;
  }
}

/** `sums` back into their two words, low first (wrapping at 2^64, as the kernel's would). */
function sumsStore(): void {
  for (let k = 0; k < WIDE_RESULTS.length; k++) {
    const f = WIDE_RESULTS[k]!;
    const high = Math.floor(sums[f]! / 0x100000000);
    st[rs + f] = sums[f]! - high * 0x100000000;
    st[rs + f + 1] = high >>> 0;
  }
}

/** floor(a x milli / 1000) without passing 2^32 on the way. */
function scaleMilli(a: number, milli: number): number {
  return (Math.floor(a / 1000) * milli + Math.floor(((a % 1000) * milli) / 1000)) >>> 0;
}

/**
 * floor(a x milli / 1000), capped at cap (cap <= 2^30, milli <= 100,000), exact without passing
 * 2^32: scaleMilli would wrap before a min() could cap it. Past cap when a / 1000 > cap / milli.
 * (Exported for test/u32-overflow.test.ts, as is ceilMulDiv.)
 */
export function scaleMilliCapped(a: number, milli: number, cap: number): number {
  if (milli !== 0 && Math.floor(a / 1000) > Math.floor(cap / milli)) return cap;
  return Math.min(scaleMilli(a, milli), cap);
}

/**
 * ceil(m x t1 / b), bounded affinity's cap, exact in u32 while m x (b - 1) + b < 2^32 (a
 * problem's c and replicas give m, b <= 64,000): m x t1 can pass 2^32 (and wrap in WGSL).
 */
export function ceilMulDiv(m: number, t1: number, b: number): number {
  return (m * Math.floor(t1 / b) + Math.floor((m * (t1 % b) + b - 1) / b)) >>> 0;
}

/** Microseconds of [from, to) inside the measured window. */
function measured(from: number, to: number): number {
  // comparisons rather than Math.max and Math.min, which V8 compiles to float64 operations
  const lo = from > warmupAt ? from : warmupAt;
  const hi = to < measureEndAt ? to : measureEndAt;
  return hi > lo ? hi - lo : 0;
}

/** A full heap or cache: the instance cannot go on faithfully; the event loop stops it. */
function fail(code: number): void {
  if (st[sb + G.ERROR] === ERR.NONE) st[sb + G.ERROR] = code;
}

/**
 * The time runs x dur microseconds from now, or NONE when it would pass NONE - 1, the last
 * time advance can reach (u32 microseconds end at 4,295 s): the instance then stops
 * (ERR.HORIZON). Checked on the room left, never on a sum that WGSL would wrap and TypeScript
 * would not. An event pushed at NONE never happens, and stopInstance drops it.
 */
function later(runs: number, dur: number): number {
  // runs > floor(room / dur) exactly when runs x dur > room: the double product, rounded when
  // past 2^53, is then far past room all the same (and no division)
  if (runs * dur > NONE - 1 - now) {
    fail(ERR.HORIZON);
    return NONE;
  }
  return now + runs * dur;
}

/** floor((n x perNs + baseNs) / 1000): n tokens' nanoseconds below their whole microseconds, in parts that stay inside u32 (n's thousands exactly). */
function tokenMicros(n: number, perNs: number, baseNs: number): number {
  return Math.floor(n / 1000) * perNs + Math.floor(((n % 1000) * perNs + baseNs) / 1000);
}

/**
 * The time base + n x per from now, each a whole microseconds and nanoseconds below them (layout.ts
 * P), floored to the microsecond once: n tokens of BLIS's alphas, kept to the nanosecond. NONE past
 * the clock, as later. n x perNs is taken in parts that stay inside u32: n's thousands exactly,
 * its rest with the base's nanoseconds.
 */
function laterTokens(baseUs: number, baseNs: number, n: number, perUs: number, perNs: number): number {
  const whole = later(n, perUs);
  const ns = tokenMicros(n, perNs, baseNs);
  if (whole === NONE) return NONE;
  if (ns > NONE - 1 - whole || baseUs > NONE - 1 - whole - ns) {
    fail(ERR.HORIZON);
    return NONE;
  }
  return whole + ns + baseUs;
}

function random(stream: number, a: number, b: number): number {
  return draw(randomKey, stream, a, b) >>> 0;
}

function sample(table: number, u: number): number {
  // u's bits as an i32 (sampleTable reads only its bits): V8 boxes a u32 argument past 2^31
  return sampleTable(tb, pr[table]!, u | 0);
}

// ---- event heap: a binary min-heap on (time, insertion sequence) ------------------------

function heapAt(i: number): number {
  return hs + i * HEAP_WORDS;
}

function heapBefore(a: number, b: number): boolean {
  return st[a]! < st[b]! || (st[a] === st[b] && st[a + 1]! < st[b + 1]!);
}

function heapPush(time: number, kind: number, id: number, tag: number): void {
  // the sequence wraps (after 2^32 pushes): the FIFO's order would no longer be the heap's
  if (heapSeq === 0 && fifoLen > 0) fifoFlush();
  const n = heapLen;
  if (n + fifoLen >= heapCap) {
    fail(ERR.HEAP_FULL);
    return;
  }
  const seq = heapSeq;
  heapSeq = (seq + 1) >>> 0;
  if (time === now + fifoDelay) {
    fifoPush(time, seq, ((kind << 24) | id) >>> 0, tag);
    return;
  }
  const at = heapAt(heapSiftUp(n, time, seq));
  st[at] = time;
  st[at + 1] = seq;
  st[at + 2] = ((kind << 24) | id) >>> 0;
  st[at + 3] = tag;
  heapLen = n + 1;
}

/**
 * Moves the entries above slot `n` down until (time, seq) fits there; returns its slot.
 * (TypeScript only: heapPush and fifoFlush both insert; the kernel's heapPush has it inline.)
 */
function heapSiftUp(n: number, time: number, seq: number): number {
  let i = n;
  while (i > 0) {
    const parent = (i - 1) >>> 1;
    const pa = heapAt(parent);
    const t = st[pa]!;
    if (t < time || (t === time && st[pa + 1]! < seq)) break;
    const at = heapAt(i);
    st[at] = t;
    st[at + 1] = st[pa + 1]!;
    st[at + 2] = st[pa + 2]!;
    st[at + 3] = st[pa + 3]!;
    i = parent;
  }
  return i;
}

/** Removes the earliest event into evTime, evKind, evId, evTag. */
function heapPop(): void {
  const top = heapAt(0);
  if (fifoLen > 0 && fifoPop()) return;
  evTime = st[top]!;
  const kindId = st[top + 2]!;
  evKind = kindId >>> 24;
  evId = kindId & 0xffffff;
  evTag = st[top + 3]!;
  const n = heapLen - 1;
  heapLen = n;
  const last = heapAt(n);
  // The hot loop of a long heap: it walks word addresses rather than indices (heapAt(2i + 1)
  // is at + (at - top) + HEAP_WORDS for at = heapAt(i); child < n is c < last), and holds the
  // last entry's time and sequence, which each level compares with, in locals.
  const lastTime = st[last]!;
  const lastSeq = st[last + 1]!;
  let at = top;
  for (;;) {
    let c = at + (at - top) + HEAP_WORDS;
    if (c >= last) break;
    if (c + HEAP_WORDS < last && heapBefore(c + HEAP_WORDS, c)) c += HEAP_WORDS;
    // !heapBefore(c, last)
    const t = st[c]!;
    if (!(t < lastTime || (t === lastTime && st[c + 1]! < lastSeq))) break;
    st[at] = t;
    st[at + 1] = st[c + 1]!;
    st[at + 2] = st[c + 2]!;
    st[at + 3] = st[c + 3]!;
    at = c;
  }
  st[at] = lastTime;
  st[at + 1] = lastSeq;
  st[at + 2] = st[last + 2]!;
  st[at + 3] = st[last + 3]!;
}

/** Queues an entry (of a time now + fifoDelay) after every entry in the FIFO. */
function fifoPush(time: number, seq: number, kindId: number, tag: number): void {
  // it comes after them all: now has not gone back, and seq is the last
  const tail = fifoHead + fifoLen < heapCap ? fifoHead + fifoLen : fifoHead + fifoLen - heapCap;
  const at = tail * HEAP_WORDS;
  fifo[at] = time;
  fifo[at + 1] = seq;
  fifo[at + 2] = kindId;
  fifo[at + 3] = tag;
  fifoLen += 1;
}

/** Removes the FIFO's head into evTime, evKind, evId, evTag if it comes before the heap's top. */
function fifoPop(): boolean {
  const f = fifoHead * HEAP_WORDS;
  const t = fifo[f]!;
  if (heapLen > 0 && !(t < st[hs]! || (t === st[hs] && fifo[f + 1]! < st[hs + 1]!))) return false;
  evTime = t;
  const kindId = fifo[f + 2]!;
  evKind = kindId >>> 24;
  evId = kindId & 0xffffff;
  evTag = fifo[f + 3]!;
  fifoHead = fifoHead + 1 < heapCap ? fifoHead + 1 : 0;
  fifoLen -= 1;
  return true;
}

/** Moves the FIFO's entries into the heap (as heapPush sifts, with their own sequences). */
function fifoFlush(): void {
  for (; fifoLen > 0; fifoLen--) {
    const f = fifoHead * HEAP_WORDS;
    fifoHead = fifoHead + 1 < heapCap ? fifoHead + 1 : 0;
    const time = fifo[f]!;
    const seq = fifo[f + 1]!;
    const at = heapAt(heapSiftUp(heapLen, time, seq));
    st[at] = time;
    st[at + 1] = seq;
    st[at + 2] = fifo[f + 2]!;
    st[at + 3] = fifo[f + 3]!;
    heapLen += 1;
  }
  fifoHead = 0;
}

// ---- jobs and FIFO queues ---------------------------------------------------------------

function jobAt(j: number): number {
  return js + j * JOB_WORDS;
}

function jobAlloc(): number {
  const j = st[sb + G.FREE_JOB]!;
  if (j === NONE) {
    overload(ERR.JOBS_FULL);
    return NONE;
  }
  const jb = jobAt(j);
  st[sb + G.FREE_JOB] = st[jb + J.NEXT]!;
  st[sb + G.LIVE] = st[sb + G.LIVE]! + 1;
  return j;
}

/** Frees a job; its generation moves on, so its pending events go stale. */
function jobFree(j: number): void {
  const jb = jobAt(j);
  st[jb + J.GEN]!++;
  st[jb + J.STAGE] = STAGE.FREE;
  st[jb + J.NEXT] = st[sb + G.FREE_JOB]!;
  st[sb + G.FREE_JOB] = j;
  st[sb + G.LIVE]!--;
}

/**
 * A FIFO is three words (head, tail, length) linking jobs through J.NEXT and J.PREV. `at`:
 * the component it belongs to (a TARGET), for the longest queue.
 */
function queuePush(q: number, j: number, at: number): void {
  const jb = jobAt(j);
  const tail = st[q + 1]!;
  const len = st[q + 2]! + 1;
  st[jb + J.NEXT] = NONE;
  if (len === 1) {
    st[jb + J.PREV] = NONE;
    st[q] = j;
  } else {
    st[jb + J.PREV] = tail;
    st[jobAt(tail) + J.NEXT] = j;
  }
  st[q + 1] = j;
  st[q + 2] = len;
  queueLonger(len, at);
}

/** Job j joins FIFO q at its head (a preempted call, which resumes first). */
function queuePushFront(q: number, j: number, at: number): void {
  const jb = jobAt(j);
  const head = st[q]!;
  const len = st[q + 2]! + 1;
  st[jb + J.PREV] = NONE;
  if (len === 1) {
    st[jb + J.NEXT] = NONE;
    st[q + 1] = j;
  } else {
    st[jb + J.NEXT] = head;
    st[jobAt(head) + J.PREV] = j;
  }
  st[q] = j;
  st[q + 2] = len;
  queueLonger(len, at);
}

/** A queue of component `at` (a TARGET) is now `len` long: the longest so far? */
function queueLonger(len: number, at: number): void {
  if (len > st[result(R.LONGEST_QUEUE)]!) {
    st[result(R.LONGEST_QUEUE)] = len;
    st[result(R.LONGEST_QUEUE_AT)] = at;
  }
}

function queueUnlink(q: number, j: number): void {
  const jb = jobAt(j);
  const next = st[jb + J.NEXT]!;
  const prev = st[jb + J.PREV]!;
  if (prev === NONE) st[q] = next;
  else st[jobAt(prev) + J.NEXT] = next;
  if (next === NONE) st[q + 1] = prev;
  else st[jobAt(next) + J.PREV] = prev;
  st[q + 2]!--;
}

/** Whether GPU replica r only decodes: it is past the prefill pool (gpu.disaggregation). */
function decodeOnly(r: number): boolean {
  return SERVESIM_DISAGGREGATED && r >= pr[P.PREFILL_REPLICAS]!;
}

/** Where GPU replica r's pool's words are (layout.ts P): P's own, or the decode replicas' DECODE_SHIFT words on. */
function poolOf(r: number): number {
  return decodeOnly(r) ? pr[P.DECODE_SHIFT]! : 0;
}

/** Where GPU replica r's words start: its queue (busiestQueue), its batch, its cache entries. */
function replicaAt(r: number): number {
  return replicaBase + r * replicaStride;
}

/**
 * The component whose queue holds the most jobs (the GPU replicas' queues together): where an
 * overload shows. With every queue empty the jobs are in service, held by the app (or server).
 */
function busiestQueue(): number {
  let gpu = 0;
  for (let r = 0; r < pr[P.GPU_REPLICAS]!; r++) gpu += st[replicaAt(r) + RP.Q_LEN]!;
  let at = pr[P.KIND] === KIND.JOB ? TARGET.SERVER : TARGET.APP;
  let most = 0;
  if (gpu > most) {
    at = TARGET.GPU;
    most = gpu;
  }
  if (st[sb + G.TOOL_Q_LEN]! > most) {
    at = TARGET.TOOLS;
    most = st[sb + G.TOOL_Q_LEN]!;
  }
  if (st[sb + G.SERVER_Q_LEN]! > most) at = TARGET.SERVER;
  return at;
}

/** Records the first capacity (an ERR) the instance reached, and where it showed. */
function overload(code: number): void {
  if (st[result(R.OVERLOAD)] !== ERR.NONE) return;
  st[result(R.OVERLOAD)] = code;
  st[result(R.OVERLOAD_AT)] = code === ERR.CACHE_FULL ? TARGET.GPU : busiestQueue();
}

function noteBusy(from: number, to: number, batch: number): void {
  const t = measured(from, to);
  add64(R.BUSY, t);
  mulAdd64(R.BATCH_AREA, t, batch);
}

/** GPU replica r's busy time and batch since its step began, a decode replica's apart (gpu.disaggregation: decodeResult adds them). */
function replicaBusy(r: number): void {
  const rb = replicaAt(r);
  const decode = decodeOnly(r);
  const t = measured(st[rb + RP.START]!, now);
  add64(decode ? R.DECODE_BUSY : R.BUSY, t);
  mulAdd64(decode ? R.DECODE_BATCH_AREA : R.BATCH_AREA, t, st[rb + RP.BATCH]!);
}

/**
 * A counted arrival resolved after `sojourn` microseconds: counted in the interval of the
 * measured window it came in (P.OFF_INTERVALS), the steady-state test's series.
 */
function noteSojourn(j: number, sojourn: number): void {
  const k = Math.floor((st[jobAt(j) + J.ARRIVAL]! - pr[P.WARMUP]!) / pr[P.INTERVAL_US]!);
  const at = sb + pr[P.OFF_INTERVALS]! + k * INTERVAL_WORDS;
  st[at + IV.RESOLVED] = st[at + IV.RESOLVED]! + 1;
  const lo = (st[at + IV.SOJOURN_SUM]! + sojourn) >>> 0;
  if (lo < st[at + IV.SOJOURN_SUM]!) st[at + IV.SOJOURN_SUM_HI] = st[at + IV.SOJOURN_SUM_HI]! + 1;
  st[at + IV.SOJOURN_SUM] = lo;
}

/** A job leaves a queue for service: its wait, in the queue's counters (R.QUEUED or R.TOOL_QUEUED on) and histogram. */
function noteWait(j: number, counters: number, hist: number): void {
  const jb = jobAt(j);
  if (st[jb + J.COUNTED] === 0) return;
  const wait = now - st[jb + J.ENQUEUED]!;
  if (recorder !== null) recorder.waited(st[jb + J.INDEX]!, counters === R.TOOL_QUEUED, wait);
  if (wait > 0) count(counters + QW.WAITED);
  add64(counters + QW.WAIT_SUM, wait);
  histCount(hist, wait);
}

// ---- job lifecycle ------------------------------------------------------------------------

function appAt(a: number): number {
  return appBase + a * APP_WORDS;
}

function serverAt(s: number): number {
  return serverBase + s * APP_WORDS;
}

/** Frees the slots a job holds at the app service and the orchestrator, then the job. */
function jobRelease(j: number): void {
  const jb = jobAt(j);
  if (pr[P.KIND] !== KIND.JOB) {
    const ab = appAt(st[jb + J.APP]!);
    st[ab + AP.BUSY] = st[ab + AP.BUSY]! - 1;
  }
  if (pr[P.KIND] === KIND.TASK) st[sb + G.ORCH_BUSY] = st[sb + G.ORCH_BUSY]! - 1;
  // the integral of the number in system is each job's time in the measured window, summed
  add64(R.IN_SYSTEM_AREA, measured(st[jb + J.ARRIVAL]!, now));
  jobFree(j);
}

function jobSucceed(j: number): void {
  const jb = jobAt(j);
  if (st[jb + J.COUNTED] !== 0) {
    const latency = now - st[jb + J.ARRIVAL]!;
    count(R.SUCCESSES);
    noteSojourn(j, latency);
    add64(R.LATENCY_SUM, latency);
    add64(R.SOJOURN_SUM, latency);
    histCount(P.OFF_HIST, latency);
    if (latency <= pr[P.GOAL_LATENCY]! && st[jb + J.MISSED] === 0) count(R.GOOD);
    if (recorder !== null) recorder.resolved(st[jb + J.INDEX]!, st[jb + J.ARRIVAL]!, now, R.SUCCESSES);
  }
  jobRelease(j);
}

/** A job that failed: the caller has already detached it from queues and replicas. */
function jobFail(j: number, cause: number): void {
  const jb = jobAt(j);
  if (st[jb + J.COUNTED] !== 0) {
    count(cause);
    add64(R.SOJOURN_SUM, now - st[jb + J.ARRIVAL]!);
    noteSojourn(j, now - st[jb + J.ARRIVAL]!);
    if (recorder !== null) recorder.resolved(st[jb + J.INDEX]!, st[jb + J.ARRIVAL]!, now, cause);
  }
  jobRelease(j);
}

// ---- tools (agent tasks) and plain queueing servers (M/M/c) ----------------------------------

/** A step's tool call: it takes a free tool slot, or waits in the tools' FIFO queue. */
function toolStart(j: number): void {
  const jb = jobAt(j);
  st[jb + J.ENQUEUED] = now;
  if (st[jb + J.COUNTED] !== 0) count(R.TOOL_QUEUED);
  if (st[sb + G.TOOLS_BUSY]! < pr[P.TOOL_SLOTS]!) {
    toolRun(j);
    return;
  }
  st[jb + J.STAGE] = STAGE.TOOL_QUEUED;
  queuePush(sb + G.TOOL_Q_HEAD, j, TARGET.TOOLS);
}

function toolRun(j: number): void {
  const jb = jobAt(j);
  st[sb + G.TOOLS_BUSY] = st[sb + G.TOOLS_BUSY]! + 1;
  noteWait(j, R.TOOL_QUEUED, P.OFF_HIST_TOOL_WAIT);
  st[jb + J.STAGE] = STAGE.TOOL_RUNNING;
  st[jb + J.STARTED] = now;
  let latency = sample(P.T_TOOL, random(STREAM.STEP, st[jb + J.INDEX]!, st[jb + J.STEP]! * 4 + 2));
  if (st[sb + G.SLOW] !== 0 && pr[P.SLOW_TARGET] === TARGET.TOOLS) latency = scaleMilli(latency, pr[P.SLOW_FACTOR_MILLI]!);
  heapPush(later(1, latency), EV.TOOL_DONE, j, st[jb + J.GEN]!);
}

/** Job j's tool call ends (done or cancelled): its slot frees, and the next queued call takes it. */
function toolFreed(j: number): void {
  st[sb + G.TOOLS_BUSY] = st[sb + G.TOOLS_BUSY]! - 1;
  add64(R.TOOL_AREA, measured(st[jobAt(j) + J.STARTED]!, now));
  if (st[sb + G.TOOL_Q_LEN]! > 0) {
    const next = st[sb + G.TOOL_Q_HEAD]!;
    queueUnlink(sb + G.TOOL_Q_HEAD, next);
    toolRun(next);
  }
}

/** The step is over; the next model call sets out (with every-step tool calls the last step ends the task). */
function toolDone(j: number): void {
  const jb = jobAt(j);
  toolFreed(j);
  st[jb + J.STEP] = st[jb + J.STEP]! + 1;
  if (st[jb + J.STEP]! >= pr[P.STEPS]!) {
    jobSucceed(j);
    return;
  }
  st[jb + J.STAGE] = STAGE.AT_ROUTER;
  st[jb + J.CALL_AT] = now;
  heapPush(later(1, pr[P.ROUTER_OVERHEAD]!), EV.ROUTE, j, st[jb + J.GEN]!);
}

/** The first live server replica with a free slot, or NONE. */
function serverFree(): number {
  for (let s = 0; s < pr[P.SERVER_REPLICAS]!; s++) {
    const b = serverAt(s);
    if (st[b + AP.STATUS] === STATUS.ALIVE && st[b + AP.BUSY]! < pr[P.SERVER_SLOTS]!) return s;
  }
  return NONE;
}

function serviceStart(j: number, s: number): void {
  const jb = jobAt(j);
  const b = serverAt(s);
  st[b + AP.BUSY] = st[b + AP.BUSY]! + 1;
  noteWait(j, R.QUEUED, P.OFF_HIST_WAIT);
  st[jb + J.STAGE] = STAGE.SERVER_RUNNING;
  st[jb + J.REPLICA] = s;
  st[jb + J.STARTED] = now;
  let service = sample(P.T_SERVICE, random(STREAM.SERVICE, st[jb + J.INDEX]!, 0));
  if (st[sb + G.SLOW] !== 0 && pr[P.SLOW_TARGET] === TARGET.SERVER) service = scaleMilli(service, pr[P.SLOW_FACTOR_MILLI]!);
  heapPush(later(1, service), EV.SERVICE_DONE, j, st[jb + J.GEN]!);
}

function serverArrive(j: number): void {
  const jb = jobAt(j);
  st[jb + J.ENQUEUED] = now;
  if (st[jb + J.COUNTED] !== 0) count(R.QUEUED);
  const s = serverFree();
  if (s !== NONE && st[sb + G.SERVER_Q_LEN] === 0) {
    serviceStart(j, s);
    return;
  }
  st[jb + J.STAGE] = STAGE.SERVER_QUEUED;
  queuePush(sb + G.SERVER_Q_HEAD, j, TARGET.SERVER);
}

/** A server slot came free (or came back): start queued jobs while slots allow. */
function serverDispatch(): void {
  while (st[sb + G.SERVER_Q_LEN]! > 0) {
    const s = serverFree();
    if (s === NONE) return;
    const j = st[sb + G.SERVER_Q_HEAD]!;
    queueUnlink(sb + G.SERVER_Q_HEAD, j);
    serviceStart(j, s);
  }
}

/** Ends a job's service early or on time: the slot frees and its busy time is counted. */
function serviceEnd(j: number): void {
  const jb = jobAt(j);
  const b = serverAt(st[jb + J.REPLICA]!);
  st[b + AP.BUSY] = st[b + AP.BUSY]! - 1;
  noteBusy(st[jb + J.STARTED]!, now, 1);
}

// ---- KV cache: entries keyed by prefix or session, LRU among unpinned; the offload tier ----

function runningAt(r: number, i: number): number {
  return replicaAt(r) + REPLICA_HEADER_WORDS + i;
}

function entryAt(r: number, e: number): number {
  return replicaAt(r) + entryOffset + e * ENTRY_WORDS;
}

function offloadAt(r: number, t: number): number {
  return replicaAt(r) + offloadOffset + t * OFFLOAD_WORDS;
}

/** The entries of replica r that may be in use: those below its high-water mark. */
function cacheUsed(r: number): number {
  return st[replicaAt(r) + RP.ENTRIES]!;
}

/** The first of `used` records of `words` words from `at` (a table of entries, by their keys) whose key is `key`, or NONE. */
function recordFind(at: number, used: number, words: number, key: number): number {
  for (let e = 0; e < used; e++) {
    if (st[at + e * words] === key) return e;
  }
  return NONE;
}

/**
 * An empty record (key 0) of the table from `at` whose high-water mark is word `mark`: the
 * lowest, raising the mark past it, or NONE when all `cap` are in use.
 */
function recordFree(at: number, mark: number, cap: number, words: number): number {
  const used = st[mark]!;
  const e = recordFind(at, used, words, 0);
  if (e !== NONE || used === cap) return e;
  st[mark] = used + 1;
  return used;
}

/** The entry of replica r with key `key` (not 0), or NONE. */
function cacheFind(r: number, key: number): number {
  return recordFind(entryAt(r, 0) + E.KEY, cacheUsed(r), ENTRY_WORDS, key);
}

/** An empty entry of replica r, the lowest (raising the high-water mark past it), or NONE when all are in use. */
function cacheFree(r: number): number {
  return recordFree(entryAt(r, 0) + E.KEY, replicaAt(r) + RP.ENTRIES, pr[P.CACHE_CAP]!, ENTRY_WORDS);
}

/** The prefix key of a job's prompt: its shared prefix (or system prompt, or trace request), 0 if none. */
function prefixKey(j: number): number {
  return st[jobAt(j) + J.PREFIX]!;
}

/** The tokens of shared prefix p (its row of the params' prefix table). */
function prefixTokens(p: number): number {
  return pr[pr[P.OFF_PREFIXES]! + p * PREFIX_WORDS + 1]!;
}

/** Word `field` (a TR) of trace request `row`. */
function traceWord(row: number, field: number): number {
  return tb[pr[P.OFF_TRACE]! + row * TRACE_WORDS + field]!;
}

/** The trace request a job replays: its index in this instance's window, from the window's start. */
function traceRow(j: number): number {
  return st[sb + G.TRACE_START]! + st[jobAt(j) + J.INDEX]!;
}

/** Word `field` (a TN) of node key `key` (node + 1) of the trace's radix tree. */
function treeWord(key: number, field: number): number {
  return tb[pr[P.OFF_TRACE]! + pr[P.TRACE_ROWS]! * TRACE_WORDS + (key - 1) * TREE_WORDS + field]!;
}

/**
 * The entry of replica r holding the deepest cached node on the path to trace node key `v`, or
 * NONE: keys number the nodes in preorder, so an ancestor's is at most v with v within its
 * subtree, and the deepest ancestor has the largest key. An entry's ancestors are cached with it.
 */
function cacheDeepest(r: number, v: number): number {
  const used = cacheUsed(r);
  let best = NONE;
  let bestKey = 0;
  let eb = entryAt(r, 0);
  for (let e = 0; e < used; e++, eb += ENTRY_WORDS) {
    const key = st[eb + E.KEY]!;
    if (key > bestKey && key <= v && v <= treeWord(key, TN.END)) {
      best = e;
      bestKey = key;
    }
  }
  return best;
}

/** The cached entry that covers the longest prefix of the job's prompt, or NONE. */
function cacheBest(r: number, j: number): number {
  if (pr[P.KIND] === KIND.TASK) {
    const session = cacheFind(r, (SESSION_KEY | st[jobAt(j) + J.INDEX]!) >>> 0);
    if (session !== NONE) return session;
  }
  const key = prefixKey(j);
  if (key === 0) return NONE;
  return pr[P.TRACE_ROWS] !== 0 ? cacheDeepest(r, key) : cacheFind(r, key);
}

/** The tokens of the job's prompt that entry e of replica r (or NONE) saves computing. */
function cachedTokens(r: number, e: number, j: number): number {
  if (e === NONE) return 0;
  // at least one prompt token is always computed
  return Math.min(st[entryAt(r, e) + E.DEPTH]!, st[jobAt(j) + J.PROMPT]! - 1);
}

function cacheDrop(r: number, e: number): void {
  const eb = entryAt(r, e);
  const rb = replicaAt(r);
  st[rb + RP.KV_USED] = st[rb + RP.KV_USED]! - st[eb + E.TOKENS]!;
  const parent = st[eb + E.PARENT]!;
  // (a parent already dropped only when a reset drops them all)
  if (parent !== NONE && st[entryAt(r, parent) + E.KEY] !== 0) {
    st[entryAt(r, parent) + E.CHILDREN] = st[entryAt(r, parent) + E.CHILDREN]! - 1;
  }
  st[eb + E.KEY] = 0;
  st[eb + E.TOKENS] = 0;
  st[eb + E.PINS] = 0;
  st[eb + E.PARENT] = NONE;
  st[eb + E.CHILDREN] = 0;
  st[eb + E.DEPTH] = 0;
}

/** The least recently used entry neither pinned nor a parent, or NONE. */
function cacheVictim(r: number): number {
  const used = cacheUsed(r);
  let victim = NONE;
  let oldest = NONE;
  let eb = entryAt(r, 0);
  for (let e = 0; e < used; e++, eb += ENTRY_WORDS) {
    if (st[eb + E.KEY] !== 0 && st[eb + E.PINS] === 0 && st[eb + E.CHILDREN] === 0 && (victim === NONE || st[eb + E.LAST]! < oldest)) {
      victim = e;
      oldest = st[eb + E.LAST]!;
    }
  }
  return victim;
}

/** The key of entry e of replica r, 0 for NONE. */
function cacheKey(r: number, e: number): number {
  return e === NONE ? 0 : st[entryAt(r, e) + E.KEY]!;
}

/** The offload entry of replica r with key `key` (not 0), or NONE. */
function offloadFind(r: number, key: number): number {
  return recordFind(offloadAt(r, 0) + OE.KEY, st[replicaAt(r) + RP.OFFLOAD_ENTRIES]!, OFFLOAD_WORDS, key);
}

function offloadDrop(r: number, t: number): void {
  const ob = offloadAt(r, t);
  const rb = replicaAt(r);
  st[rb + RP.OFFLOAD_USED] = st[rb + RP.OFFLOAD_USED]! - st[ob + OE.TOKENS]!;
  st[ob + OE.KEY] = 0;
  st[ob + OE.TOKENS] = 0;
  st[ob + OE.DEPTH] = 0;
  st[ob + OE.LAST] = 0;
  st[ob + OE.HELD] = 0;
}

/** The offload tier's least recently used entry not held, or NONE. */
function offloadVictim(r: number): number {
  const used = st[replicaAt(r) + RP.OFFLOAD_ENTRIES]!;
  let victim = NONE;
  let oldest = NONE;
  let ob = offloadAt(r, 0);
  for (let t = 0; t < used; t++, ob += OFFLOAD_WORDS) {
    if (st[ob + OE.KEY] !== 0 && st[ob + OE.HELD] === 0 && (victim === NONE || st[ob + OE.LAST]! < oldest)) {
      victim = t;
      oldest = st[ob + OE.LAST]!;
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
function offloadStore(r: number, e: number): void {
  const eb = entryAt(r, e);
  const rb = replicaAt(r);
  const tokens = st[eb + E.TOKENS]!;
  if (tokens > pr[P.OFFLOAD_TOKENS]!) return;
  while (pr[P.OFFLOAD_TOKENS]! - st[rb + RP.OFFLOAD_USED]! < tokens) {
    const victim = offloadVictim(r);
    if (victim === NONE) return;
    offloadDrop(r, victim);
  }
  const t = recordFree(offloadAt(r, 0) + OE.KEY, rb + RP.OFFLOAD_ENTRIES, pr[P.OFFLOAD_CAP]!, OFFLOAD_WORDS);
  if (t === NONE) {
    fail(ERR.CACHE_FULL);
    return;
  }
  const ob = offloadAt(r, t);
  st[rb + RP.OFFLOAD_USED] = st[rb + RP.OFFLOAD_USED]! + tokens;
  st[ob + OE.KEY] = st[eb + E.KEY]!;
  st[ob + OE.TOKENS] = tokens;
  st[ob + OE.DEPTH] = st[eb + E.DEPTH]!;
  st[ob + OE.LAST] = st[eb + E.LAST]!;
  st[ob + OE.HELD] = 0;
}

/** Evicts least-recently-used unpinned entries until `need` tokens are free; each moves to the offload tier, if any. */
function cacheMakeRoom(r: number, need: number): boolean {
  const rb = replicaAt(r);
  const kv = pr[poolOf(r) + P.KV_TOKENS]!;
  while (kv - st[rb + RP.KV_USED]! < need) {
    const victim = cacheVictim(r);
    if (victim === NONE) return false;
    if (SERVESIM_OFFLOAD) offloadStore(r, victim);
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
function cacheInsert(r: number, key: number, tokens: number, depth: number, pins: number): number {
  // held once: a context back in the cache leaves the offload tier
  if (SERVESIM_OFFLOAD) {
    const t = offloadFind(r, key);
    if (t !== NONE) offloadDrop(r, t);
  }
  const e = cacheFree(r);
  if (e === NONE) {
    fail(ERR.CACHE_FULL);
    return NONE;
  }
  const eb = entryAt(r, e);
  st[eb + E.KEY] = key;
  st[eb + E.TOKENS] = tokens;
  st[eb + E.LAST] = now;
  st[eb + E.PINS] = pins;
  st[eb + E.PARENT] = NONE;
  st[eb + E.CHILDREN] = 0;
  st[eb + E.DEPTH] = depth;
  return e;
}

/**
 * Replica r's KV in use (RP.KV_HELD) is about to change: the time it held its value since the
 * last change, inside the measured window, goes into R.KV_AREA and the value into R.KV_PEAK, in
 * P.KV_UNIT tokens (a change at the same microsecond adds nothing, so neither sees a passing value).
 */
function kvNote(r: number): void {
  const rb = replicaAt(r);
  const t = measured(st[rb + RP.KV_SINCE]!, now);
  st[rb + RP.KV_SINCE] = now;
  if (t === 0) return;
  const units = Math.floor(st[rb + RP.KV_HELD]! / pr[poolOf(r) + P.KV_UNIT]!);
  mulAdd64(R.KV_AREA, t, units);
  if (units > st[result(R.KV_PEAK)]!) st[result(R.KV_PEAK)] = units;
}

/**
 * Replica r's running sequences now hold `taken` tokens more of its KV and `freed` fewer: one
 * change, noted once, where a call's reservation and its entries change together.
 */
function kvChange(r: number, taken: number, freed: number): void {
  kvNote(r);
  const rb = replicaAt(r);
  st[rb + RP.KV_HELD] = st[rb + RP.KV_HELD]! + taken - freed;
}

/**
 * A running sequence pins entry e of replica r, and so holds it and every entry above it: each
 * one's PINS counts it. Returns the tokens of those no sequence held before, now in use.
 */
function entryPin(r: number, e: number): number {
  let taken = 0;
  for (let a = e; a !== NONE; a = st[entryAt(r, a) + E.PARENT]!) {
    const ab = entryAt(r, a);
    const pins = st[ab + E.PINS]! + 1;
    st[ab + E.PINS] = pins;
    if (pins === 1) taken += st[ab + E.TOKENS]!;
  }
  return taken;
}

/** The sequence lets go of entry e and the entries above it. Returns the tokens of those no sequence holds now. */
function entryUnpin(r: number, e: number): number {
  let freed = 0;
  for (let a = e; a !== NONE; a = st[entryAt(r, a) + E.PARENT]!) {
    const ab = entryAt(r, a);
    const pins = st[ab + E.PINS]! - 1;
    st[ab + E.PINS] = pins;
    if (pins === 0) freed += st[ab + E.TOKENS]!;
  }
  return freed;
}

/** Job j lets go of its entry, if any. Returns the tokens no sequence holds now (entryUnpin). */
function cacheUnpin(r: number, j: number): number {
  const jb = jobAt(j);
  const e = st[jb + J.ENTRY]!;
  if (e === NONE) return 0;
  const freed = entryUnpin(r, e);
  st[entryAt(r, e) + E.LAST] = now;
  st[jb + J.ENTRY] = NONE;
  return freed;
}

/** A session's context including this call's output stays cached on the replica. */
function cacheStoreSession(r: number, j: number): void {
  const jb = jobAt(j);
  const key = (SESSION_KEY | st[jb + J.INDEX]!) >>> 0;
  const tokens = st[jb + J.PROMPT]! + st[jb + J.OUTPUT]!;
  const old = cacheFind(r, key);
  if (old !== NONE) cacheDrop(r, old);
  if (!cacheMakeRoom(r, tokens)) return;
  const rb = replicaAt(r);
  st[rb + RP.KV_USED] = st[rb + RP.KV_USED]! + tokens;
  cacheInsert(r, key, tokens, tokens, 0);
}

/** Entry `child` of replica r hangs under entry `parent`. */
function cacheLink(r: number, child: number, parent: number): void {
  st[entryAt(r, child) + E.PARENT] = parent;
  st[entryAt(r, parent) + E.CHILDREN] = st[entryAt(r, parent) + E.CHILDREN]! + 1;
}

/**
 * Entries for the trace's nodes from key `key` up to entry `above`'s (NONE: to the top), each
 * under the one above it and the highest under `above`, whose tokens the caller counts in
 * KV_USED: the deepest, or NONE when the table is full.
 */
function cachePath(r: number, key: number, above: number): number {
  const aboveKey = cacheKey(r, above);
  // from the node itself up to the cached one, each new entry the parent of the last
  let child = NONE;
  let deepest = NONE;
  let u = key;
  while (u !== aboveKey) {
    const e = cacheInsert(r, u, treeWord(u, TN.TOKENS), treeWord(u, TN.DEPTH), 0);
    if (e === NONE) return NONE;
    if (child === NONE) deepest = e;
    else cacheLink(r, child, e);
    child = e;
    u = treeWord(u, TN.PARENT);
  }
  if (above !== NONE) cacheLink(r, child, above);
  return deepest;
}

/**
 * The offload entry of the deepest node on the path to trace node key `key` below key
 * `aboveKey` (the cache's deepest on it, 0: none) whose path up to it is all in the tier, or
 * NONE: a node past a gap would leave the gap's tokens to compute, so it counts for nothing.
 */
function offloadPath(r: number, key: number, aboveKey: number): number {
  let best = NONE;
  for (let u = key; u !== aboveKey; u = treeWord(u, TN.PARENT)) {
    const t = offloadFind(r, u);
    if (t === NONE) best = NONE;
    else if (best === NONE) best = t;
  }
  return best;
}

/**
 * The offload entry that covers more of job j's prompt than its deepest cached entry e (or NONE)
 * does, or NONE: a task's session context unless e is it; else its shared prefix or system prompt
 * when the cache has none; on a trace, the deepest node below e's that the tier holds with the
 * path up to e's (offloadPath).
 */
function offloadBest(r: number, j: number, e: number): number {
  const cachedKey = cacheKey(r, e);
  if (pr[P.KIND] === KIND.TASK) {
    const session = (SESSION_KEY | st[jobAt(j) + J.INDEX]!) >>> 0;
    if (cachedKey === session) return NONE;
    const t = offloadFind(r, session);
    if (t !== NONE) return t;
  }
  const key = prefixKey(j);
  if (key === 0) return NONE;
  if (pr[P.TRACE_ROWS] !== 0) return offloadPath(r, key, cachedKey);
  return cachedKey !== 0 ? NONE : offloadFind(r, key);
}

/**
 * The offload entries a load of entry t takes (on a trace, its path up to entry e of the cache)
 * are held (1) or let go (0): the tier's eviction spares them while the cache makes room.
 */
function offloadHold(r: number, t: number, e: number, held: number): void {
  if (pr[P.TRACE_ROWS] === 0) {
    st[offloadAt(r, t) + OE.HELD] = held;
    return;
  }
  const aboveKey = cacheKey(r, e);
  for (let u = st[offloadAt(r, t) + OE.KEY]!; u !== aboveKey; u = treeWord(u, TN.PARENT)) {
    st[offloadAt(r, offloadFind(r, u)) + OE.HELD] = held;
  }
}

/** The tokens a load of offload entry t brings into replica r's cache: on a trace its path below entry e, else its own (a root). */
function offloadTokens(r: number, t: number, e: number): number {
  const above = pr[P.TRACE_ROWS] !== 0 && e !== NONE ? st[entryAt(r, e) + E.DEPTH]! : 0;
  return st[offloadAt(r, t) + OE.DEPTH]! - above;
}

/**
 * Offload entry t (on a trace, with its path up to entry e) back in replica r's cache, out of the
 * tier (cacheInsert): the deepest new entry, or NONE when the table is full. The caller counts
 * its tokens (offloadTokens) in KV_USED.
 */
function offloadLoad(r: number, t: number, e: number): number {
  const ob = offloadAt(r, t);
  if (pr[P.TRACE_ROWS] !== 0) return cachePath(r, st[ob + OE.KEY]!, e);
  return cacheInsert(r, st[ob + OE.KEY]!, st[ob + OE.TOKENS]!, st[ob + OE.DEPTH]!, 0);
}

/** Microseconds loading n tokens of KV from the offload tier takes (P.OFFLOAD_TOKEN each, floored once). */
function offloadTime(n: number): number {
  return n * pr[P.OFFLOAD_TOKEN_US]! + tokenMicros(n, pr[P.OFFLOAD_TOKEN_NS]!, 0);
}

// ---- choosing a replica: the router's scan, for either pool ------------------------------

function replicaUp(r: number): boolean {
  return st[replicaAt(r) + RP.DOWN] === 0;
}

/**
 * Picks one of replicas first to first + n - 1 the router believes up, by `policy` (round-robin,
 * random, least-loaded or cache-aware), starting the rotation at header word `rr`; NONE when none is.
 */
function routeScan(j: number, first: number, n: number, policy: number, rr: number): number {
  let from = st[sb + rr]! % n;
  if (policy === POLICY.RANDOM) {
    from = random(STREAM.ROUTE, st[sb + G.RAND]!, 0) % n;
    st[sb + G.RAND] = st[sb + G.RAND]! + 1;
  }
  let best = NONE;
  let bestScore = 0;
  for (let i = 0; i < n; i++) {
    // (from + i) % n, as from and i are below n (and a division takes tens of cycles)
    const r = first + (from + i < n ? from + i : from + i - n);
    if (!replicaUp(r)) continue;
    if (policy === POLICY.ROUND_ROBIN || policy === POLICY.RANDOM) {
      best = r;
      break;
    }
    // higher is better; ties keep the earliest in rotation order
    let score = -st[replicaAt(r) + RP.LOAD]!;
    if (policy === POLICY.CACHE_AWARE) {
      score = cachedTokens(r, cacheBest(r, j), j) - scaleMilliCapped(st[replicaAt(r) + RP.LOAD_TOKENS]!, pr[P.ALPHA_MILLI]!, 0x3fffffff);
    }
    if (best === NONE || score > bestScore) {
      best = r;
      bestScore = score;
    }
  }
  if (best !== NONE) st[sb + rr] = best - first + 1;
  return best;
}

// ---- GPU replicas: continuous batching ------------------------------------------------------

/** A call leaves replica r's batch: its KV reservation and its pin free. */
function callFree(r: number, j: number): void {
  const rb = replicaAt(r);
  const jb = jobAt(j);
  const reserved = st[jb + J.RESERVED]!;
  st[rb + RP.KV_USED] = st[rb + RP.KV_USED]! - reserved;
  st[jb + J.RESERVED] = 0;
  const freed = cacheUnpin(r, j);
  kvChange(r, 0, reserved + freed);
}

/** Takes a job off a replica's batch, freeing its KV reservation and its pin. */
function replicaRelease(r: number, j: number): void {
  const rb = replicaAt(r);
  const run = runningAt(r, 0);
  const running = st[rb + RP.N_RUN]!;
  let w = 0;
  for (let i = 0; i < running; i++) {
    const k = st[run + i]!;
    if (k !== j) {
      st[run + w] = k;
      w += 1;
    }
  }
  st[rb + RP.N_RUN] = w;
  callFree(r, j);
  replicaUnload(r, j);
}

function replicaUnload(r: number, j: number): void {
  const rb = replicaAt(r);
  const jb = jobAt(j);
  st[rb + RP.LOAD] = st[rb + RP.LOAD]! - 1;
  st[rb + RP.LOAD_TOKENS] = st[rb + RP.LOAD_TOKENS]! - (st[jb + J.PROMPT]! + st[jb + J.OUTPUT]!);
  st[sb + G.ROUTER_BUSY] = st[sb + G.ROUTER_BUSY]! - 1;
  // the router holds the call from its replica's queue to its end
  add64(R.ROUTER_AREA, measured(st[jb + J.ENQUEUED]!, now));
}

/** Replica r's step's microseconds, with `load` microseconds of KV loaded from the offload tier, which a slowdown of the GPU does not stretch. */
function iterationTime(r: number, decoding: number, prefill: number, load: number): number {
  const at = poolOf(r);
  // the prefill's nanoseconds and those below base's and perSeq's microseconds, rounded up once
  const ns = prefill * pr[at + P.PREFILL_NS_PER_TOKEN]! + pr[at + P.ITER_BASE_NS]! + pr[at + P.ITER_PER_SEQ_NS]! * decoding;
  let t = pr[at + P.ITER_BASE]! + pr[at + P.ITER_PER_SEQ]! * decoding + Math.floor((ns + 999) / 1000);
  if (st[sb + G.SLOW] !== 0 && pr[P.SLOW_TARGET] === TARGET.GPU) t = scaleMilli(t, pr[P.SLOW_FACTOR_MILLI]!);
  return (t + load) >>> 0;
}

function replicaSchedule(r: number, at: number): void {
  const rb = replicaAt(r);
  st[rb + RP.GEN] = (st[rb + RP.GEN]! + 1) >>> 0;
  st[rb + RP.EVENT_AT] = at;
  heapPush(at, EV.REPLICA, r, st[rb + RP.GEN]!);
}

/**
 * The iteration that completes a prompt emits its first token, which reaches the caller once
 * processed (P.OUTPUT_TOKEN: one token's, floored to the microsecond); its prefix becomes
 * shareable. So does a prompt whose KV arrived at a decode replica (gpu.disaggregation).
 */
function prefillDone(r: number, j: number): void {
  const jb = jobAt(j);
  // a call whose KV arrived from its prefill replica emitted its token there
  if (!SERVESIM_DISAGGREGATED || st[jb + J.PHASE] !== PHASE.TRANSFER) {
    // a preempted call's recomputed prompt emits its next token: its first came before
    if (st[jb + J.OUT_LEFT] === st[jb + J.OUTPUT]) st[jb + J.FIRST_AT] = now + pr[poolOf(r) + P.OUTPUT_TOKEN_US]!;
    st[jb + J.OUT_LEFT] = st[jb + J.OUT_LEFT]! - 1;
  }
  st[jb + J.PHASE] = PHASE.DECODE;
  const key = prefixKey(j);
  if (key === 0) return;
  if (pr[P.TRACE_ROWS] !== 0) {
    traceCacheInsert(r, j, key);
    return;
  }
  const tokens = pr[P.KIND] === KIND.TASK ? pr[P.SYSTEM_TOKENS]! : prefixTokens(key - 1);
  if (st[jb + J.CACHED]! >= tokens || cacheFind(r, key) !== NONE) return;
  // the prefix's KV moves from this sequence's reservation into a shared entry it pins (a root:
  // the tokens it holds are the same)
  const e = cacheInsert(r, key, tokens, tokens, 1);
  if (e === NONE) return;
  st[jb + J.RESERVED] = st[jb + J.RESERVED]! - tokens;
  const freed = cacheUnpin(r, j);
  kvChange(r, 0, freed);
  st[jb + J.ENTRY] = e;
}

/**
 * A trace request's full blocks become shareable: the nodes on its path below the deepest one
 * cached (another request may have cached more since it was admitted) become entries, each
 * under the one above, their tokens moved from its reservation; it pins the deepest, which
 * keeps the path above it.
 */
function traceCacheInsert(r: number, j: number, key: number): void {
  const jb = jobAt(j);
  if (cacheFind(r, key) !== NONE) return;
  const above = cacheDeepest(r, key);
  const deepest = cachePath(r, key, above);
  if (deepest === NONE) return;
  const moved = treeWord(key, TN.DEPTH) - (above === NONE ? 0 : st[entryAt(r, above) + E.DEPTH]!);
  st[jb + J.RESERVED] = st[jb + J.RESERVED]! - moved;
  // pinned before the entry it pinned is let go, so the entries above both stay held
  const taken = entryPin(r, deepest);
  const freed = cacheUnpin(r, j);
  kvChange(r, taken, moved + freed);
  st[jb + J.ENTRY] = deepest;
}

/**
 * A model call's time to first token (from when it set out) and time per output token after
 * the first, with its decode time unfloored for the mean inter-token latency; a call that
 * misses a goal marks its job.
 */
function callTimes(j: number): void {
  const jb = jobAt(j);
  if (st[jb + J.COUNTED] === 0) return;
  const ttft = st[jb + J.FIRST_AT]! - st[jb + J.CALL_AT]!;
  if (recorder !== null) {
    recorder.called(st[jb + J.INDEX]!, st[jb + J.STEP]!, st[jb + J.CALL_AT]!, st[jb + J.FIRST_AT]!, now, st[jb + J.OUTPUT]!, st[jb + J.PROMPT]!, st[jb + J.CACHED]!, st[jb + J.REPLICA]!, st[jb + J.PREEMPTS]!);
  }
  count(R.CALLS_DONE);
  add64(R.OUTPUT_TOKENS, st[jb + J.OUTPUT]!);
  add64(R.TTFT_SUM, ttft);
  histCount(P.OFF_HIST_TTFT, ttft);
  if (ttft > pr[P.GOAL_TTFT]!) st[jb + J.MISSED] = 1;
  if (st[jb + J.OUTPUT]! < 2) return;
  const decode = now - st[jb + J.FIRST_AT]!;
  const tpot = Math.floor(decode / (st[jb + J.OUTPUT]! - 1));
  count(R.TPOT_CALLS);
  add64(R.TPOT_SUM, tpot);
  add64(R.ITL_SUM, decode);
  histCount(P.OFF_HIST_TPOT, tpot);
  if (tpot > pr[P.GOAL_TPOT]!) st[jb + J.MISSED] = 1;
}

/** A model call's last token reached the caller: its times count, and the job moves on. */
function callEnd(j: number): void {
  const jb = jobAt(j);
  callTimes(j);
  if (pr[P.KIND] === KIND.REQUEST || (pr[P.TOOL_EVERY_STEP] === 0 && st[jb + J.STEP]! + 1 >= pr[P.STEPS]!)) {
    jobSucceed(j);
    return;
  }
  toolStart(j);
}

/**
 * A model call finished on replica r (or, on a prefill replica, its prompt): free it there. Its
 * tokens' processing (P.OUTPUT_TOKEN each) holds no GPU step, and its end waits for the last
 * (callEnd, at once without it).
 */
function callDone(r: number, j: number): void {
  const jb = jobAt(j);
  callFree(r, j);
  replicaUnload(r, j);
  // a prefill replica is done with a call at its first token (gpu.disaggregation)
  if (SERVESIM_DISAGGREGATED && st[jb + J.OUT_LEFT] !== 0) {
    callHandoff(j);
    return;
  }
  if (pr[P.KIND] !== KIND.REQUEST) {
    cacheStoreSession(r, j);
    st[jb + J.CONTEXT] = st[jb + J.PROMPT]! + st[jb + J.OUTPUT]!;
  }
  const pool = poolOf(r);
  const at = laterTokens(0, 0, st[jb + J.OUTPUT]!, pr[pool + P.OUTPUT_TOKEN_US]!, pr[pool + P.OUTPUT_TOKEN_NS]!);
  if (at === now) {
    callEnd(j);
    return;
  }
  st[jb + J.STAGE] = STAGE.GPU_OUTPUT;
  heapPush(at, EV.OUTPUT_DONE, j, st[jb + J.GEN]!);
}

/**
 * A prefill replica computed call j's prompt and first token (gpu.disaggregation), and freed its
 * KV (our position: the transfer takes the call's time, not the prefill replica's memory): it
 * goes to the decode replica the decode pool's router picks. With none up it goes to the first,
 * dead, which fails it as a replica dying under it would (retried from the start).
 */
function callHandoff(j: number): void {
  const first = pr[P.PREFILL_REPLICAS]!;
  const d = routeScan(j, first, pr[P.GPU_REPLICAS]! - first, pr[P.DECODE_POLICY]!, G.DECODE_RR);
  replicaSend(d === NONE ? first : d, j);
}

/**
 * At an iteration boundary: apply the iterations done since the last one, finish
 * sequences, admit queued calls while slots and KV allow, and plan the next iterations.
 */
function replicaBoundary(r: number): void {
  const rb = replicaAt(r);
  const run = runningAt(r, 0);
  const mode = st[rb + RP.MODE]!;
  // neither prefillDone nor callDone changes this replica's batch: its size is read once
  const running = st[rb + RP.N_RUN]!;
  const busy = mode === MODE.SINGLE || mode === MODE.RUN;
  if (busy) replicaBusy(r);
  // the steps done since the last boundary: none after a start or an idle wait, where only a
  // decode replica's arriving KV can have changed anything
  const n = busy ? Math.floor((now - st[rb + RP.START]!) / st[rb + RP.DUR]!) : 0;
  // gpu.kv incremental: each token decoded took a token of KV (room made when planned)
  let grown = 0;
  // gpu.disaggregation: a prefill replica's calls leave once their prompt is done
  const prefillOnly = SERVESIM_DISAGGREGATED && r < pr[P.PREFILL_REPLICAS]!;
  // the first call to leave at this boundary: those before it stay where they are
  let w = running;
  const walked = busy || decodeOnly(r) ? running : 0;
  for (let i = 0; i < walked; i++) {
    const jb = jobAt(st[run + i]!);
    if (st[jb + J.PHASE] === PHASE.DECODE) {
      st[jb + J.OUT_LEFT] = st[jb + J.OUT_LEFT]! - n;
      if (SERVESIM_KV_INCREMENTAL) {
        st[jb + J.RESERVED] = st[jb + J.RESERVED]! + n;
        grown += n;
      }
    } else {
      // a prompt's tokens each of the steps done (prefillRun: alike steps)
      const alloc = busy ? st[jb + J.ALLOC]! * n : 0;
      // gpu.disaggregation: a call whose KV has all arrived has its prompt here as if prefilled
      if (alloc > 0 || (SERVESIM_DISAGGREGATED && st[jb + J.PHASE] === PHASE.TRANSFER && st[jb + J.READY]! <= now)) {
        const left = st[jb + J.PREFILL_LEFT]! - alloc;
        st[jb + J.PREFILL_LEFT] = left;
        st[jb + J.ALLOC] = 0;
        // its first prefill step loaded what the offload tier held
        st[jb + J.LOAD] = 0;
        if (left === 0) prefillDone(r, st[run + i]!);
      }
    }
    if (w === running && st[jb + J.PHASE] === PHASE.DECODE && (st[jb + J.OUT_LEFT] === 0 || prefillOnly)) w = i;
  }
  if (grown > 0) {
    st[rb + RP.KV_USED] = st[rb + RP.KV_USED]! + grown;
    kvChange(r, grown, 0);
  }
  for (let i = w; i < running; i++) {
    const j = st[run + i]!;
    const jb = jobAt(j);
    if (st[jb + J.PHASE] === PHASE.DECODE && (st[jb + J.OUT_LEFT] === 0 || prefillOnly)) {
      callDone(r, j);
    } else {
      st[run + w] = j;
      w += 1;
    }
  }
  st[rb + RP.N_RUN] = w;
  const keep = SERVESIM_KV_INCREMENTAL ? replicaPreempt(r) : 0;
  if (keep !== NONE) replicaAdmit(r, keep);
  replicaPlan(r);
}

/**
 * gpu.kv incremental: room for each decoding sequence's next token, evicting cached entries,
 * else preempting the most recently admitted sequence (vLLM's recompute preemption) until there
 * is. Returns the tokens the next step takes, to keep free while calls are admitted, or NONE
 * when it preempted: then none is admitted at this boundary (vLLM admits none in a step that
 * preempted), so a preempted call does not come straight back.
 */
function replicaPreempt(r: number): number {
  const rb = replicaAt(r);
  const run = runningAt(r, 0);
  let preempted = false;
  for (;;) {
    const running = st[rb + RP.N_RUN]!;
    let decoding = 0;
    for (let i = 0; i < running; i++) {
      if (st[jobAt(st[run + i]!) + J.PHASE] === PHASE.DECODE) decoding += 1;
    }
    // a sequence alone always fits: its prompt and output fit kvTokens, or it was refused
    if (decoding === 0 || cacheMakeRoom(r, decoding)) return preempted ? NONE : decoding;
    st[rb + RP.N_RUN] = running - 1;
    callPreempt(r, st[run + running - 1]!);
    preempted = true;
  }
}

/**
 * Running call j leaves replica r's batch for the head of its queue: its KV freed (a prefix it
 * cached stays cached), to recompute its prompt and the tokens it had generated when it
 * resumes. Its wait counted once, when first admitted, it holds the router as before.
 */
function callPreempt(r: number, j: number): void {
  const jb = jobAt(j);
  callFree(r, j);
  st[jb + J.PHASE] = PHASE.PREEMPTED;
  st[jb + J.STAGE] = STAGE.GPU_QUEUED;
  st[jb + J.PREEMPTS] = st[jb + J.PREEMPTS]! + 1;
  if (st[jb + J.COUNTED] !== 0) count(R.PREEMPTIONS);
  queuePushFront(replicaAt(r) + RP.Q_HEAD, j, TARGET.GPU);
}

/**
 * Admits queued calls while slots and KV allow, keeping `keep` tokens free for the running
 * sequences' next step. A call reserves its uncached prompt and its output (gpu.kv reserve), or
 * its uncached prompt, the tokens it had generated if preempted, and its next token (incremental).
 */
function replicaAdmit(r: number, keep: number): void {
  const rb = replicaAt(r);
  const q = rb + RP.Q_HEAD;
  const pool = poolOf(r);
  while (st[rb + RP.N_RUN]! < pr[pool + P.GPU_SLOTS]! && st[rb + RP.Q_LEN]! > 0) {
    const j = st[q]!;
    const jb = jobAt(j);
    const prompt = st[jb + J.PROMPT]!;
    if (prompt + st[jb + J.OUTPUT]! > pr[pool + P.KV_TOKENS]!) {
      // can never fit: the server refuses it rather than block the queue for ever
      queueUnlink(q, j);
      replicaUnload(r, j);
      jobFail(j, R.REJECTED_AT_GPU);
      continue;
    }
    let e = cacheBest(r, j);
    const cachedInGpu = cachedTokens(r, e, j);
    let cached = cachedInGpu;
    // pinned while room is made, so that eviction spares it; in use once the call is admitted
    let taken = e !== NONE ? entryPin(r, e) : 0;
    // what the offload tier holds past it comes back: held while room is made for it too
    let t = NONE;
    let loaded = 0;
    if (SERVESIM_OFFLOAD) {
      t = offloadBest(r, j, e);
      if (t !== NONE) {
        loaded = offloadTokens(r, t, e);
        cached = Math.min(st[offloadAt(r, t) + OE.DEPTH]!, prompt - 1);
        offloadHold(r, t, e, 1);
      }
    }
    const resumed = SERVESIM_KV_INCREMENTAL && st[jb + J.PHASE] === PHASE.PREEMPTED;
    // gpu.disaggregation: its prompt done on a prefill replica, its KV comes here over the link
    const arriving = SERVESIM_DISAGGREGATED && st[jb + J.PHASE] === PHASE.TRANSFER;
    const generated = resumed || arriving ? st[jb + J.OUTPUT]! - st[jb + J.OUT_LEFT]! : 0;
    // a prefill replica holds a call's prompt and first token only
    let out = SERVESIM_KV_INCREMENTAL ? generated + 1 : st[jb + J.OUTPUT]!;
    if (SERVESIM_DISAGGREGATED && r < pr[P.PREFILL_REPLICAS]!) out = 1;
    const need = prompt - cached + out;
    if (!cacheMakeRoom(r, need + loaded + keep)) {
      if (e !== NONE) entryUnpin(r, e);
      if (t !== NONE) offloadHold(r, t, e, 0);
      return;
    }
    queueUnlink(q, j);
    st[rb + RP.KV_USED] = st[rb + RP.KV_USED]! + need;
    if (t !== NONE) {
      const loadedEntry = offloadLoad(r, t, e);
      st[rb + RP.KV_USED] = st[rb + RP.KV_USED]! + loaded;
      // the call pins what came back (on a trace, with the entry above it, which it pinned)
      if (loadedEntry !== NONE) {
        taken += entryPin(r, loadedEntry);
        if (e !== NONE) taken -= entryUnpin(r, e);
        e = loadedEntry;
      }
    }
    kvChange(r, taken + need, 0);
    st[jb + J.STAGE] = STAGE.GPU_RUNNING;
    st[jb + J.ENTRY] = e;
    if (e !== NONE) st[entryAt(r, e) + E.LAST] = now;
    st[jb + J.RESERVED] = need;
    st[jb + J.CACHED] = cached;
    if (resumed) {
      // what it prefills again, less the prompt it had not reached when preempted
      const prefill = prompt - cached + generated;
      const fresh = st[jb + J.PREFILL_LEFT]!;
      if (st[jb + J.COUNTED] !== 0 && prefill > fresh) add64(R.RECOMPUTED_TOKENS, prefill - fresh);
      st[jb + J.PREFILL_LEFT] = prefill;
    } else if (arriving) {
      // the tokens this replica does not hold move over the link (what its tier holds loads)
      const ready = laterTokens(pr[P.LINK_LATENCY]! + offloadTime(loaded), 0, prompt - cached + generated, pr[P.LINK_TOKEN_US]!, pr[P.LINK_TOKEN_NS]!);
      st[jb + J.READY] = ready;
      st[jb + J.PREFILL_LEFT] = 0;
      if (st[jb + J.COUNTED] !== 0) {
        count(R.TRANSFERS);
        add64(R.TRANSFER_WAIT_SUM, now - st[jb + J.ENQUEUED]!);
        add64(R.TRANSFER_SUM, ready - now);
      }
    } else {
      // its wait and its prompt count once, when first admitted
      noteWait(j, R.QUEUED, P.OFF_HIST_WAIT);
      st[jb + J.PREFILL_LEFT] = prompt - cached;
      st[jb + J.OUT_LEFT] = st[jb + J.OUTPUT]!;
      st[jb + J.PREEMPTS] = 0;
      if (st[jb + J.COUNTED] !== 0) {
        add64(R.PROMPT_TOKENS, prompt);
        add64(R.CACHED_TOKENS, cached);
        add64(R.OFFLOAD_TOKENS, cached - cachedInGpu);
      }
    }
    st[jb + J.PHASE] = arriving ? PHASE.TRANSFER : PHASE.PREFILL;
    st[jb + J.ALLOC] = 0;
    st[jb + J.LOAD] = offloadTime(loaded);
    st[runningAt(r, st[rb + RP.N_RUN]!)] = j;
    st[rb + RP.N_RUN] = st[rb + RP.N_RUN]! + 1;
  }
}

/** gpu.kv incremental: how many steps of `decoding` sequences' tokens replica r's free KV holds. */
function kvSteps(r: number, decoding: number): number {
  return Math.floor((pr[poolOf(r) + P.KV_TOKENS]! - st[replicaAt(r) + RP.KV_USED]!) / decoding);
}

/**
 * How many alike prefill steps replica r's batch runs as one (docs/model.md section 3): `first`,
 * the tokens left of the first prompt, which takes the whole chunk each step while it has a
 * chunk or more left, and none can join meanwhile (the batch is full, or none waits); the run
 * ends where a decoding sequence finishes (`shortest` tokens left) and (gpu.kv incremental)
 * where the `decoding` sequences' tokens would outgrow the free KV, as a run of decodes does.
 * One step when the first prompt has less than a chunk left or a call could join.
 */
function prefillRun(r: number, first: number, shortest: number, decoding: number): number {
  const rb = replicaAt(r);
  const pool = poolOf(r);
  const chunk = pr[pool + P.CHUNK]!;
  if (first < chunk || (st[rb + RP.N_RUN]! < pr[pool + P.GPU_SLOTS]! && st[rb + RP.Q_LEN] !== 0)) return 1;
  let runs = Math.floor(first / chunk);
  if (shortest < runs) runs = shortest;
  if (SERVESIM_KV_INCREMENTAL && decoding > 0) runs = Math.min(runs, kvSteps(r, decoding));
  return runs;
}

/** Prefill steps (chunk shared first come, first served), or a run of decodes. */
function replicaPlan(r: number): void {
  const rb = replicaAt(r);
  const run = runningAt(r, 0);
  const running = st[rb + RP.N_RUN]!;
  st[rb + RP.START] = now;
  st[rb + RP.BATCH] = running;
  if (running === 0) {
    st[rb + RP.MODE] = MODE.IDLE;
    st[rb + RP.GEN] = (st[rb + RP.GEN]! + 1) >>> 0;
    return;
  }
  const pool = poolOf(r);
  const chunk = pr[pool + P.CHUNK]!;
  let budget = chunk;
  let decoding = 0;
  let shortest = NONE;
  let load = 0;
  let arriving = 0;
  let ready = NONE;
  let first = NONE;
  for (let i = 0; i < running; i++) {
    const jb = jobAt(st[run + i]!);
    if (st[jb + J.PHASE] === PHASE.DECODE) {
      decoding += 1;
      const left = st[jb + J.OUT_LEFT]!;
      if (left < shortest) shortest = left;
    } else if (SERVESIM_DISAGGREGATED && st[jb + J.PHASE] === PHASE.TRANSFER) {
      arriving += 1;
      if (st[jb + J.READY]! < ready) ready = st[jb + J.READY]!;
    } else {
      const left = st[jb + J.PREFILL_LEFT]!;
      if (first === NONE) first = left;
      const alloc = left < budget ? left : budget;
      st[jb + J.ALLOC] = alloc;
      budget -= alloc;
      if (alloc > 0) load += st[jb + J.LOAD]!;
    }
  }
  const prefill = chunk - budget;
  if (decoding + arriving < running) {
    const dur = iterationTime(r, decoding, prefill, load);
    st[rb + RP.MODE] = MODE.SINGLE;
    st[rb + RP.DUR] = dur;
    // unlike the next: a step that shares the chunk, loads from the tier, or has KV arriving
    replicaSchedule(r, later(budget === 0 && load === 0 && arriving === 0 ? prefillRun(r, first, shortest, decoding) : 1, dur));
    return;
  }
  if (SERVESIM_DISAGGREGATED && decoding === 0) {
    // only KV arriving: idle until the first has, or until a call comes
    st[rb + RP.MODE] = MODE.IDLE;
    replicaSchedule(r, ready);
    return;
  }
  const dur = iterationTime(r, decoding, 0, 0);
  st[rb + RP.MODE] = MODE.RUN;
  st[rb + RP.DUR] = dur;
  // gpu.kv incremental: the run ends where its tokens would outgrow the KV free (room for one
  // step was made), at a boundary that makes more
  let runs = shortest;
  if (SERVESIM_KV_INCREMENTAL) runs = Math.min(runs, kvSteps(r, decoding));
  // and at the first boundary once a call's KV has arrived, which joins it there
  if (SERVESIM_DISAGGREGATED && arriving > 0) runs = Math.min(runs, Math.floor((ready - now + dur - 1) / dur));
  replicaSchedule(r, later(runs, dur));
}

/**
 * The batch may change (a call arrived or left): act at the next iteration boundary. An idle
 * replica starts at this instant, as an event of its own after those already due now (so the
 * calls that reach it at one instant start in one batch); a prefill step is never cut short,
 * so a run of them acts at the end of the step under way. Why an event: the kernel inlines
 * every call, and replicaBoundary called from here too compiled once per caller
 * (docs/model.md section 3, test/kernel-inlining).
 */
function replicaTouch(r: number): void {
  const rb = replicaAt(r);
  if (st[rb + RP.STATUS] !== STATUS.ALIVE) return;
  const mode = st[rb + RP.MODE]!;
  if (mode === MODE.IDLE) {
    st[rb + RP.MODE] = MODE.STARTING;
    replicaSchedule(r, now);
    return;
  }
  if (mode !== MODE.RUN && mode !== MODE.SINGLE) return;
  const start = st[rb + RP.START]!;
  const dur = st[rb + RP.DUR]!;
  let steps = Math.floor((now - start + dur - 1) / dur);
  if (mode === MODE.SINGLE && steps === 0) steps = 1;
  const next = start + steps * dur;
  if (next < st[rb + RP.EVENT_AT]!) replicaSchedule(r, next);
}

/** The call joins replica r's queue; the replica starts it at once if it has a free slot. */
function replicaEnqueue(r: number, j: number): void {
  const rb = replicaAt(r);
  const jb = jobAt(j);
  st[jb + J.STAGE] = STAGE.GPU_QUEUED;
  st[jb + J.ENQUEUED] = now;
  // a call sent anew (a retry too) starts over, not as a preempted call's resumption; at a
  // decode replica it waits for room for the KV its prefill replica computed
  const decode = decodeOnly(r);
  st[jb + J.PHASE] = decode ? PHASE.TRANSFER : PHASE.PREFILL;
  if (st[jb + J.COUNTED] !== 0) {
    // the GPU queue's wait is the router's queue's: a decode replica's is the transfer's
    if (!decode) count(R.QUEUED);
    const calls = sb + pr[P.OFF_CALLS]! + r;
    st[calls] = st[calls]! + 1;
  }
  queuePush(rb + RP.Q_HEAD, j, TARGET.GPU);
  if (st[rb + RP.N_RUN]! < pr[poolOf(r) + P.GPU_SLOTS]!) replicaTouch(r);
}

/**
 * The router sends a call to replica r, which counts it in its load from here. It joins the
 * queue after the replica's queueing time (P.QUEUE_DELAY + P.QUEUE_TOKEN x its prompt tokens:
 * BLIS's alpha0 and alpha1), at once without one.
 */
function replicaSend(r: number, j: number): void {
  const rb = replicaAt(r);
  const jb = jobAt(j);
  st[jb + J.REPLICA] = r;
  st[jb + J.ENQUEUED] = now;
  st[rb + RP.LOAD] = st[rb + RP.LOAD]! + 1;
  st[rb + RP.LOAD_TOKENS] = st[rb + RP.LOAD_TOKENS]! + st[jb + J.PROMPT]! + st[jb + J.OUTPUT]!;
  st[sb + G.ROUTER_BUSY] = st[sb + G.ROUTER_BUSY]! + 1;
  const pool = poolOf(r);
  const at = laterTokens(pr[pool + P.QUEUE_DELAY_US]!, pr[pool + P.QUEUE_DELAY_NS]!, st[jb + J.PROMPT]!, pr[pool + P.QUEUE_TOKEN_US]!, pr[pool + P.QUEUE_TOKEN_NS]!);
  // a dead replica refuses it when it would join the queue (replicaJoin)
  if (at === now && st[rb + RP.STATUS] !== STATUS.DEAD) {
    replicaEnqueue(r, j);
    return;
  }
  st[jb + J.STAGE] = STAGE.GPU_ARRIVING;
  heapPush(at, EV.QUEUE_JOIN, j, st[jb + J.GEN]!);
}

/** Its replica died under a call: retry once elsewhere if the deadline allows. */
function callFailed(j: number): void {
  const jb = jobAt(j);
  const at = later(1, pr[P.ROUTER_OVERHEAD]!);
  // past the horizon: the instance stops, and the call fails with it as overloaded
  if (at === NONE) return;
  if (st[jb + J.RETRIES]! > 0 && at < st[jb + J.DEADLINE]!) {
    st[jb + J.RETRIES] = st[jb + J.RETRIES]! - 1;
    st[jb + J.STAGE] = STAGE.AT_ROUTER;
    heapPush(at, EV.ROUTE, j, st[jb + J.GEN]!);
    return;
  }
  jobFail(j, R.DIED);
}

/**
 * A call's queueing time is over: it joins its replica's queue. Our position: a replica that
 * died meanwhile refuses it then, and the router retries it elsewhere (callFailed).
 */
function replicaJoin(j: number): void {
  const jb = jobAt(j);
  const r = st[jb + J.REPLICA]!;
  const rb = replicaAt(r);
  if (st[rb + RP.STATUS] === STATUS.DEAD) {
    st[rb + RP.DOWN] = 1;
    replicaUnload(r, j);
    callFailed(j);
    return;
  }
  // the router has held it since it was sent: counted here, as the queue restarts J.ENQUEUED
  add64(R.ROUTER_AREA, measured(st[jb + J.ENQUEUED]!, now));
  replicaEnqueue(r, j);
}

/**
 * A replica's connections reset: its calls fail at once (each retried once elsewhere if the
 * deadline allows) and its KV cache is lost, its offload tier with it.
 */
function replicaReset(r: number): void {
  const rb = replicaAt(r);
  if (st[rb + RP.MODE] === MODE.SINGLE || st[rb + RP.MODE] === MODE.RUN) replicaBusy(r);
  st[rb + RP.MODE] = MODE.IDLE;
  st[rb + RP.GEN] = (st[rb + RP.GEN]! + 1) >>> 0;
  if (st[rb + RP.N_RUN]! + st[rb + RP.Q_LEN]! > 0) st[rb + RP.DOWN] = 1;
  while (st[rb + RP.N_RUN]! > 0) {
    const j = st[runningAt(r, 0)]!;
    replicaRelease(r, j);
    callFailed(j);
  }
  while (st[rb + RP.Q_LEN]! > 0) {
    const j = st[rb + RP.Q_HEAD]!;
    queueUnlink(rb + RP.Q_HEAD, j);
    replicaUnload(r, j);
    callFailed(j);
  }
  const used = cacheUsed(r);
  for (let e = 0; e < used; e++) {
    if (st[entryAt(r, e) + E.KEY] !== 0) cacheDrop(r, e);
  }
  const offloaded = st[rb + RP.OFFLOAD_ENTRIES]!;
  for (let t = 0; t < offloaded; t++) {
    if (st[offloadAt(r, t) + OE.KEY] !== 0) offloadDrop(r, t);
  }
}

/** A hung replica stops iterating; its calls wait until the health check finds it. */
function replicaHang(r: number): void {
  const rb = replicaAt(r);
  if (st[rb + RP.MODE] === MODE.SINGLE || st[rb + RP.MODE] === MODE.RUN) replicaBusy(r);
  st[rb + RP.MODE] = MODE.IDLE;
  st[rb + RP.GEN] = (st[rb + RP.GEN]! + 1) >>> 0;
}

// ---- router ---------------------------------------------------------------------------------

/** Index of the first ring point at or after hash h (wrapping). */
function ringStart(h: number): number {
  let lo = 0;
  let hi = pr[P.RING_LEN]!;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (pr[pr[P.OFF_RING]! + mid * RING_WORDS]! < h) lo = mid + 1;
    else hi = mid;
  }
  return lo === pr[P.RING_LEN] ? 0 : lo;
}

function ringReplica(i: number): number {
  return pr[pr[P.OFF_RING]! + (i % pr[P.RING_LEN]!) * RING_WORDS + 1]!;
}

/** The key a call is routed by: its session, its shared prefix, or itself. */
function routeKey(j: number): number {
  const jb = jobAt(j);
  if (pr[P.KIND] === KIND.TASK) return (SESSION_KEY | st[jb + J.INDEX]!) >>> 0;
  if (pr[P.TRACE_ROWS] !== 0) {
    const key = traceWord(traceRow(j), TR.ROUTE);
    return key !== 0 ? key : (SESSION_KEY | st[jb + J.INDEX]!) >>> 0;
  }
  if (st[jb + J.PREFIX] !== 0) return st[jb + J.PREFIX]!;
  return (SESSION_KEY | st[jb + J.INDEX]!) >>> 0;
}

/** Picks a replica the router believes up, by the configured policy; NONE when none is. */
function routePick(j: number): number {
  // with gpu.disaggregation, new calls go to the prefill pool, replicas 0 to its size - 1
  const n = SERVESIM_DISAGGREGATED ? pr[P.PREFILL_REPLICAS]! : pr[P.GPU_REPLICAS]!;
  const policy = pr[P.POLICY]!;
  if (policy === POLICY.PREFIX_AFFINITY || policy === POLICY.BOUNDED_AFFINITY) {
    // each seed draws where a session or prefix lands, as real session ids and hashes are random
    const start = ringStart(random(STREAM.PLACEMENT, routeKey(j), 0));
    // consistent hashing with bounded loads: at most ceil(c x (total + 1) / up) calls each (plain
    // affinity takes the first replica up on the ring, and needs no load)
    let cap = NONE;
    if (policy === POLICY.BOUNDED_AFFINITY) {
      let total = 0;
      let up = 0;
      for (let r = 0; r < n; r++) {
        if (replicaUp(r)) {
          total += st[replicaAt(r) + RP.LOAD]!;
          up += 1;
        }
      }
      if (up === 0) return NONE;
      cap = ceilMulDiv(pr[P.BOUNDED_LOAD_MILLI]!, total + 1, 1000 * up);
    }
    let first = NONE;
    for (let i = 0; i < pr[P.RING_LEN]!; i++) {
      const r = ringReplica(start + i);
      if (!replicaUp(r)) continue;
      if (policy === POLICY.PREFIX_AFFINITY) return r;
      if (first === NONE) first = r;
      if (st[replicaAt(r) + RP.LOAD]! + 1 <= cap) return r;
    }
    return first;
  }
  return routeScan(j, 0, n, policy, G.RR);
}

/** The call reaches the router: shape it, pick a replica, send it. */
function routeCall(j: number): void {
  const jb = jobAt(j);
  if (pr[P.KIND] === KIND.TASK) {
    const step = st[jb + J.STEP]!;
    const input = sample(P.T_INPUT, random(STREAM.STEP, st[jb + J.INDEX]!, step * 4));
    st[jb + J.PROMPT] = st[jb + J.CONTEXT]! + input;
    st[jb + J.OUTPUT] = Math.max(1, sample(P.T_OUTPUT, random(STREAM.STEP, st[jb + J.INDEX]!, step * 4 + 1)));
  }
  if (st[sb + G.ROUTER_BUSY]! >= pr[P.ROUTER_SLOTS]!) {
    jobFail(j, R.REJECTED_AT_ROUTER);
    return;
  }
  for (;;) {
    const r = routePick(j);
    if (r === NONE) {
      jobFail(j, R.DIED);
      return;
    }
    const rb = replicaAt(r);
    if (st[rb + RP.STATUS] !== STATUS.DEAD) {
      replicaSend(r, j);
      return;
    }
    // refused: the router learns the replica is down, and this counts as the retry
    st[rb + RP.DOWN] = 1;
    if (st[jb + J.RETRIES] === 0) {
      jobFail(j, R.DIED);
      return;
    }
    st[jb + J.RETRIES] = st[jb + J.RETRIES]! - 1;
  }
}

// ---- arrivals and deadlines -------------------------------------------------------------------

function arrivalNext(): void {
  const index = st[sb + G.NEXT_INDEX]!;
  if (pr[P.TRACE_ROWS] !== 0) {
    traceArrivalNext(index);
    return;
  }
  const burst = now >= pr[P.BURST_FROM]! && now < pr[P.BURST_TO]!;
  const gap = sample(burst ? P.T_BURST_INTERARRIVAL : P.T_INTERARRIVAL, random(STREAM.ARRIVAL, index, 0));
  // the next arrival waits beside the heap, not in it: one push and pop fewer per arrival;
  // compared on the room left, as now + gap can pass 2^32 (and wrap in WGSL)
  const end = pr[P.ARRIVAL_END]!;
  st[sb + G.NEXT_ARRIVAL] = now < end && gap < end - now ? now + gap : NONE;
}

/**
 * The trace's next request: the window's first at once, each later one its gap after the one
 * before (now); compared on the room left, as now + gap can pass 2^32 (and wrap in WGSL).
 */
function traceArrivalNext(index: number): void {
  const row = st[sb + G.TRACE_START]! + index;
  const end = pr[P.ARRIVAL_END]!;
  let gap = 0;
  if (index !== 0 && row < pr[P.TRACE_ROWS]!) gap = traceWord(row, TR.GAP);
  st[sb + G.NEXT_ARRIVAL] = row < pr[P.TRACE_ROWS]! && now < end && gap < end - now ? now + gap : NONE;
}

/** A new arrival: admitted by an app replica (and the orchestrator) or rejected at once. */
function arrival(): void {
  const index = st[sb + G.NEXT_INDEX]!;
  st[sb + G.NEXT_INDEX] = index + 1;
  const counted = now >= warmupAt && now < measureEndAt ? 1 : 0;
  if (counted !== 0) count(R.ARRIVALS);
  arrivalNext();
  let app = 0;
  if (pr[P.KIND] !== KIND.JOB) {
    app = NONE;
    for (let i = 0; i < pr[P.APP_REPLICAS]!; i++) {
      const a = (st[sb + G.APP_RR]! + i) % pr[P.APP_REPLICAS]!;
      if (st[appAt(a) + AP.STATUS] === STATUS.ALIVE) {
        app = a;
        break;
      }
    }
    if (app !== NONE) st[sb + G.APP_RR] = app + 1;
    if (app === NONE || st[appAt(app) + AP.BUSY]! >= pr[P.APP_SLOTS]!) {
      if (counted !== 0) {
        count(R.REJECTED_AT_APP);
        if (recorder !== null) recorder.resolved(index, now, now, R.REJECTED_AT_APP);
      }
      return;
    }
    if (pr[P.KIND] === KIND.TASK && st[sb + G.ORCH_BUSY]! >= pr[P.ORCH_SLOTS]!) {
      if (counted !== 0) {
        count(R.REJECTED_AT_ORCH);
        if (recorder !== null) recorder.resolved(index, now, now, R.REJECTED_AT_ORCH);
      }
      return;
    }
  }
  // a stopped instance (stopInstance) or a full job table refuses it: it fails as overloaded
  let j = NONE;
  if (st[sb + G.STOPPED] === 0) j = jobAlloc();
  if (j === NONE) {
    if (counted !== 0) {
      count(R.OVERLOADED);
      if (recorder !== null) recorder.resolved(index, now, now, R.OVERLOADED);
    }
    return;
  }
  const jb = jobAt(j);
  st[jb + J.STAGE] = STAGE.AT_ROUTER;
  st[jb + J.ARRIVAL] = now;
  st[jb + J.CALL_AT] = now;
  st[jb + J.MISSED] = 0;
  st[jb + J.INDEX] = index;
  st[jb + J.COUNTED] = counted;
  st[jb + J.APP] = app;
  st[jb + J.STEP] = 0;
  st[jb + J.ENTRY] = NONE;
  st[jb + J.RESERVED] = 0;
  st[jb + J.RETRIES] = pr[P.RETRIES]!;
  st[jb + J.PREFIX] = 0;
  st[jb + J.DEADLINE] = pr[P.TIMEOUT]! > 0 ? now + pr[P.TIMEOUT]! : NONE;
  if (pr[P.TIMEOUT]! > 0) heapPush(later(1, pr[P.TIMEOUT]!), EV.DEADLINE, j, st[jb + J.GEN]!);
  if (pr[P.KIND] === KIND.JOB) {
    serverArrive(j);
    return;
  }
  st[appAt(app) + AP.BUSY] = st[appAt(app) + AP.BUSY]! + 1;
  let hops = pr[P.LB_OVERHEAD]! + pr[P.APP_OVERHEAD]! + pr[P.ROUTER_OVERHEAD]!;
  if (pr[P.KIND] === KIND.TASK) {
    st[sb + G.ORCH_BUSY] = st[sb + G.ORCH_BUSY]! + 1;
    st[jb + J.CONTEXT] = pr[P.SYSTEM_TOKENS]!;
    st[jb + J.PREFIX] = 1;
    hops += pr[P.ORCH_OVERHEAD]!;
  } else {
    requestShape(j);
  }
  heapPush(later(1, hops), EV.ROUTE, j, st[jb + J.GEN]!);
}

/** A single call's prompt: a shared prefix and a suffix, or a unique prompt. */
function requestShape(j: number): void {
  const jb = jobAt(j);
  const index = st[jb + J.INDEX]!;
  if (pr[P.TRACE_ROWS] !== 0) {
    // as recorded (the trace's parser holds both at 1 or more), its prefix the tree node its full blocks end at
    const row = traceRow(j);
    st[jb + J.PREFIX] = traceWord(row, TR.NODE);
    st[jb + J.PROMPT] = traceWord(row, TR.INPUT);
    st[jb + J.OUTPUT] = traceWord(row, TR.OUTPUT);
    return;
  }
  const shares = random(STREAM.SHAPE, index, 0) >>> 1 < pr[P.SHARE]!;
  if (shares) {
    const pick = random(STREAM.SHAPE, index, 1) >>> 1;
    let p = 0;
    while (p + 1 < pr[P.N_PREFIXES]! && pick >= pr[pr[P.OFF_PREFIXES]! + p * PREFIX_WORDS]!) p += 1;
    st[jb + J.PREFIX] = p + 1;
    st[jb + J.PROMPT] = prefixTokens(p) + sample(P.T_SUFFIX, random(STREAM.SHAPE, index, 2));
  } else {
    st[jb + J.PROMPT] = sample(P.T_UNIQUE, random(STREAM.SHAPE, index, 2));
  }
  st[jb + J.PROMPT] = Math.max(1, st[jb + J.PROMPT]!);
  st[jb + J.OUTPUT] = Math.max(1, sample(P.T_OUTPUT, random(STREAM.SHAPE, index, 3)));
}

/** Detaches a job from wherever it waits or runs; its downstream work is cancelled. */
function jobDetach(j: number): void {
  const jb = jobAt(j);
  const stage = st[jb + J.STAGE]!;
  const r = st[jb + J.REPLICA]!;
  if (stage === STAGE.GPU_QUEUED) {
    queueUnlink(replicaAt(r) + RP.Q_HEAD, j);
    replicaUnload(r, j);
  } else if (stage === STAGE.GPU_ARRIVING) {
    replicaUnload(r, j);
  } else if (stage === STAGE.GPU_RUNNING) {
    replicaRelease(r, j);
    replicaTouch(r);
  } else if (stage === STAGE.TOOL_QUEUED) {
    queueUnlink(sb + G.TOOL_Q_HEAD, j);
  } else if (stage === STAGE.TOOL_RUNNING) {
    toolFreed(j);
  } else if (stage === STAGE.SERVER_QUEUED) {
    queueUnlink(sb + G.SERVER_Q_HEAD, j);
  } else if (stage === STAGE.SERVER_RUNNING) {
    serviceEnd(j);
    serverDispatch();
  }
}

// ---- scenario windows ---------------------------------------------------------------------------

function failureWord(f: number, field: number): number {
  return pr[pr[P.OFF_FAILURES]! + f * FAILURE_WORDS + field]!;
}

/** Every job held by a dead app replica (or server replica) fails: its connections reset. */
function failHeldJobs(target: number, replica: number): void {
  for (let j = 0; j < pr[P.JOB_CAP]!; j++) {
    const jb = jobAt(j);
    const stage = st[jb + J.STAGE]!;
    if (stage === STAGE.FREE) continue;
    const held = target === TARGET.APP
      ? st[jb + J.APP] === replica
      : stage === STAGE.SERVER_RUNNING && st[jb + J.REPLICA] === replica;
    if (held) {
      jobDetach(j);
      jobFail(j, R.DIED);
    }
  }
}

/** The replica failure f took down (picked when it started). */
function failedReplica(f: number): number {
  return st[sb + pr[P.OFF_FAILED]! + f]!;
}

/** The replica of `target` with the most calls held, then the most KV in use; the first on a tie. */
function busiestReplica(target: number): number {
  let best = 0;
  if (target === TARGET.GPU) {
    for (let r = 1; r < pr[P.GPU_REPLICAS]!; r++) {
      const rb = replicaAt(r);
      const bb = replicaAt(best);
      if (st[rb + RP.LOAD]! > st[bb + RP.LOAD]! || (st[rb + RP.LOAD] === st[bb + RP.LOAD] && st[rb + RP.KV_USED]! > st[bb + RP.KV_USED]!)) best = r;
    }
  } else if (target === TARGET.APP) {
    for (let a = 1; a < pr[P.APP_REPLICAS]!; a++) if (st[appAt(a) + AP.BUSY]! > st[appAt(best) + AP.BUSY]!) best = a;
  } else if (target === TARGET.SERVER) {
    for (let s = 1; s < pr[P.SERVER_REPLICAS]!; s++) if (st[serverAt(s) + AP.BUSY]! > st[serverAt(best) + AP.BUSY]!) best = s;
  }
  return best;
}

/** The replica a failure takes down: the problem's, one drawn from the seed, or the busiest now. */
function failurePick(f: number, target: number): number {
  const replica = failureWord(f, FAILURE.REPLICA);
  if (replica === PICK.BUSIEST) return busiestReplica(target);
  if (replica !== PICK.RANDOM) return replica;
  const n = target === TARGET.GPU ? pr[P.GPU_REPLICAS]! : target === TARGET.APP ? pr[P.APP_REPLICAS]! : target === TARGET.SERVER ? pr[P.SERVER_REPLICAS]! : 1;
  return random(STREAM.FAILURE, f, 0) % n;
}

function failureStart(f: number): void {
  const target = failureWord(f, FAILURE.TARGET);
  const replica = failurePick(f, target);
  st[sb + pr[P.OFF_FAILED]! + f] = replica;
  const hang = failureWord(f, FAILURE.MODE) === FAIL_MODE.HANG;
  if (target === TARGET.GPU) {
    st[replicaAt(replica) + RP.STATUS] = hang ? STATUS.HUNG : STATUS.DEAD;
    if (hang) replicaHang(replica);
    else replicaReset(replica);
  } else if (target === TARGET.APP) {
    st[appAt(replica) + AP.STATUS] = STATUS.DEAD;
    failHeldJobs(target, replica);
  } else if (target === TARGET.SERVER) {
    st[serverAt(replica) + AP.STATUS] = STATUS.DEAD;
    failHeldJobs(target, replica);
  }
}

/** The health check finds a hung replica: the router marks it down and its calls fail. */
function failureDetect(f: number): void {
  const replica = failedReplica(f);
  const rb = replicaAt(replica);
  if (st[rb + RP.STATUS] !== STATUS.HUNG) return;
  st[rb + RP.STATUS] = STATUS.DEAD;
  st[rb + RP.DOWN] = 1;
  replicaReset(replica);
}

/** The replica comes back, empty, and the router sends to it again. */
function failureEnd(f: number): void {
  const target = failureWord(f, FAILURE.TARGET);
  const replica = failedReplica(f);
  if (target === TARGET.GPU) {
    const rb = replicaAt(replica);
    st[rb + RP.STATUS] = STATUS.ALIVE;
    st[rb + RP.DOWN] = 0;
  } else if (target === TARGET.APP) {
    st[appAt(replica) + AP.STATUS] = STATUS.ALIVE;
  } else if (target === TARGET.SERVER) {
    st[serverAt(replica) + AP.STATUS] = STATUS.ALIVE;
    serverDispatch();
  }
}

/** The slowdown starts or ends: running GPU batches re-plan at their next boundary. */
function slowChange(on: number): void {
  st[sb + G.SLOW] = on;
  if (pr[P.SLOW_TARGET] !== TARGET.GPU) return;
  for (let r = 0; r < pr[P.GPU_REPLICAS]!; r++) replicaTouch(r);
}

// ---- the event loop ---------------------------------------------------------------------------

function jobEventLive(): boolean {
  return st[jobAt(evId) + J.GEN] === evTag && st[jobAt(evId) + J.STAGE] !== STAGE.FREE;
}

/** Where a job was when its deadline passed: on its way to a GPU, at one, at the tools, at a server. */
function timeoutCause(stage: number): number {
  if (stage === STAGE.GPU_QUEUED || stage === STAGE.GPU_RUNNING || stage === STAGE.GPU_ARRIVING || stage === STAGE.GPU_OUTPUT) return R.TIMED_OUT_AT_GPU;
  if (stage === STAGE.TOOL_QUEUED || stage === STAGE.TOOL_RUNNING) return R.TIMED_OUT_AT_TOOLS;
  if (stage === STAGE.SERVER_QUEUED || stage === STAGE.SERVER_RUNNING) return R.TIMED_OUT_AT_SERVER;
  return R.TIMED_OUT_AT_ROUTER;
}

function handleEvent(): void {
  switch (evKind) {
    case EV.ARRIVAL:
      arrival();
      break;
    case EV.DEADLINE:
      if (jobEventLive()) {
        const cause = timeoutCause(st[jobAt(evId) + J.STAGE]!);
        jobDetach(evId);
        jobFail(evId, cause);
      }
      break;
    case EV.ROUTE:
      if (jobEventLive()) routeCall(evId);
      break;
    case EV.REPLICA:
      if (st[replicaAt(evId) + RP.GEN] === evTag) replicaBoundary(evId);
      break;
    case EV.TOOL_DONE:
      if (jobEventLive()) toolDone(evId);
      break;
    case EV.SERVICE_DONE:
      if (jobEventLive()) {
        serviceEnd(evId);
        jobSucceed(evId);
        serverDispatch();
      }
      break;
    case EV.SLOW_START:
      slowChange(1);
      break;
    case EV.SLOW_END:
      slowChange(0);
      break;
    case EV.FAIL_START:
      failureStart(evId);
      break;
    case EV.FAIL_DETECT:
      failureDetect(evId);
      break;
    case EV.FAIL_END:
      failureEnd(evId);
      break;
    case EV.QUEUE_JOIN:
      if (jobEventLive()) replicaJoin(evId);
      break;
    case EV.OUTPUT_DONE:
      if (jobEventLive()) callEnd(evId);
      break;
  }
}

/**
 * Takes the earliest event before `until` into evTime, evKind, evId, evTag: the next arrival
 * (first on a tie) or the top of the heap. False when there is none.
 */
function nextEvent(until: number): boolean {
  const arrivalAt = st[sb + G.NEXT_ARRIVAL]!;
  let heapAt0 = heapLen > 0 ? st[hs]! : NONE;
  if (fifoLen > 0 && fifo[fifoHead * HEAP_WORDS]! < heapAt0) heapAt0 = fifo[fifoHead * HEAP_WORDS]!;
  if (arrivalAt <= heapAt0 && arrivalAt !== NONE) {
    if (arrivalAt >= until) return false;
    evTime = arrivalAt;
    evKind = EV.ARRIVAL;
    return true;
  }
  if (heapAt0 === NONE || heapAt0 >= until) return false;
  heapPop();
  return true;
}

/**
 * After a full heap or cache (fail): every job in the system fails as overloaded and pending
 * events are dropped; arrivals still come, to the end of the window, and are refused (arrival),
 * so the success rate counts every request the instance could not serve.
 */
function stopInstance(): void {
  st[sb + G.STOPPED] = 1;
  overload(st[sb + G.ERROR]!);
  // the replicas' KV in use counts to the stop (their sequences fail here without leaving them)
  for (let r = 0; r < pr[P.GPU_REPLICAS]!; r++) kvNote(r);
  for (let j = 0; j < pr[P.JOB_CAP]!; j++) {
    if (st[jobAt(j) + J.STAGE] !== STAGE.FREE) jobFail(j, R.OVERLOADED);
  }
  heapLen = 0;
  fifoHead = 0;
  fifoLen = 0;
}

/** Processes every event before `until` (microseconds); returns whether the instance is done. */
function advanceInstance(until: number): boolean {
  now = st[sb + G.NOW]!;
  heapLen = st[sb + G.HEAP_LEN]!;
  heapSeq = st[sb + G.SEQ]!;
  fifoHead = 0;
  fifoLen = 0;
  sumsLoad();
  // counted here, added to R.EVENTS once
  let events = 0;
  while (st[sb + G.DONE] === 0 && nextEvent(until)) {
    now = evTime;
    events += 1;
    // an arrival (every other event in a queue) skips handleEvent's switch: one call fewer
    if (evKind === EV.ARRIVAL) arrival();
    else handleEvent();
    if (st[sb + G.ERROR] !== ERR.NONE && st[sb + G.STOPPED] === 0) stopInstance();
    if (st[sb + G.NEXT_ARRIVAL] === NONE && st[sb + G.LIVE] === 0) st[sb + G.DONE] = 1;
  }
  sums[R.EVENTS]! += events;
  sumsStore();
  fifoFlush();
  st[sb + G.NOW] = now;
  st[sb + G.HEAP_LEN] = heapLen;
  st[sb + G.SEQ] = heapSeq;
  if (st[sb + G.NEXT_ARRIVAL] === NONE && heapLen === 0) st[sb + G.DONE] = 1;
  return st[sb + G.DONE] !== 0;
}

/** An empty system at time 0: free lists, replicas up, the first arrival and the windows. */
function initInstance(seed: number, instance: number): void {
  st.fill(0, sb, sb + pr[P.STATE_WORDS]!);
  now = 0;
  heapLen = 0;
  heapSeq = 0;
  fifoHead = 0;
  fifoLen = 0;
  st[sb + G.KEY] = instanceKey(seed, instance);
  randomKey = st[sb + G.KEY]! | 0;
  for (let j = 0; j < pr[P.JOB_CAP]!; j++) {
    st[jobAt(j) + J.NEXT] = j + 1 < pr[P.JOB_CAP]! ? j + 1 : NONE;
  }
  st[sb + G.FREE_JOB] = pr[P.JOB_CAP]! > 0 ? 0 : NONE;
  for (let r = 0; r < pr[P.GPU_REPLICAS]!; r++) st[replicaAt(r) + RP.EVENT_AT] = NONE;
  // each seed replays the window that starts at a request of its own
  if (pr[P.TRACE_ROWS] !== 0) st[sb + G.TRACE_START] = random(STREAM.TRACE, 0, 0) % pr[P.TRACE_STARTS]!;
  arrivalNext();
  if (pr[P.SLOW_TARGET] !== TARGET.NONE) {
    heapPush(pr[P.SLOW_FROM]!, EV.SLOW_START, 0, 0);
    heapPush(pr[P.SLOW_TO]!, EV.SLOW_END, 0, 0);
  }
  for (let f = 0; f < pr[P.N_FAILURES]!; f++) {
    heapPush(failureWord(f, FAILURE.FROM), EV.FAIL_START, f, 0);
    if (failureWord(f, FAILURE.MODE) === FAIL_MODE.HANG) heapPush(failureWord(f, FAILURE.DETECT_AT), EV.FAIL_DETECT, f, 0);
    heapPush(failureWord(f, FAILURE.TO), EV.FAIL_END, f, 0);
  }
  fifoFlush();
  st[sb + G.HEAP_LEN] = heapLen;
  st[sb + G.SEQ] = heapSeq;
}

// ---- entry points ---------------------------------------------------------------------------------

/** The buffers one or many instances run on, laid out as the kernel's bindings. */
export interface EngineBuffers {
  readonly params: Uint32Array;
  readonly tables: Uint32Array;
  /** `count` state records of params[P.STATE_WORDS] words each. */
  readonly state: Uint32Array;
}

/** Copies the params in and binds the tables; `copyState`: the instance's state too (advance, not init). */
function bind(buffers: EngineBuffers, slot: number, copyState: boolean): void {
  // a batch's params block holds other configurations' after this one's (compile keeps each within the limit)
  pr.set(buffers.params.length > pr.length ? buffers.params.subarray(0, pr.length) : buffers.params);
  tb = buffers.tables;
  home = buffers.state;
  homeBase = slot * pr[P.STATE_WORDS]!;
  if (copyState) st.set(home.subarray(homeBase, homeBase + pr[P.STATE_WORDS]!));
  rs = sb + pr[P.OFF_RESULT]!;
  js = sb + pr[P.OFF_JOBS]!;
  hs = sb + pr[P.OFF_HEAP]!;
  randomKey = st[sb + G.KEY]! | 0;
  appBase = sb + pr[P.OFF_APPS]!;
  serverBase = sb + pr[P.OFF_SERVERS]!;
  replicaBase = sb + pr[P.OFF_REPLICAS]!;
  replicaStride = pr[P.REPLICA_STRIDE]!;
  entryOffset = REPLICA_HEADER_WORDS + pr[P.RUN_CAP]!;
  offloadOffset = entryOffset + pr[P.CACHE_CAP]! * ENTRY_WORDS;
  heapCap = pr[P.HEAP_CAP]!;
  warmupAt = pr[P.WARMUP]!;
  measureEndAt = pr[P.MEASURE_END]!;
  fifoDelay = pr[P.TIMEOUT]!;
  globalThis.SERVESIM_OFFLOAD = pr[P.OFFLOAD_CAP] !== 0;
  globalThis.SERVESIM_KV_INCREMENTAL = pr[P.KV_INCREMENTAL] !== 0;
  globalThis.SERVESIM_DISAGGREGATED = pr[P.PREFILL_REPLICAS] !== 0;
  if (fifo.length < heapCap * HEAP_WORDS) fifo = new Uint32Array(heapCap * HEAP_WORDS);
}

/** The instance's state back into the caller's state array, at its slot. */
function unbind(): void {
  home.set(st.subarray(0, pr[P.STATE_WORDS]!), homeBase);
}

/** The recorder that init and advance tell of counted arrivals from now on (null: none). */
export function recordRequests(to: RequestRecorder | null): void {
  recorder = to;
}

/** Starts the instance stored at slot `slot` as instance `instance` of base seed `seed`. */
export function init(buffers: EngineBuffers, slot: number, seed: number, instance: number): void {
  bind(buffers, slot, false);
  initInstance(seed >>> 0, instance >>> 0);
  unbind();
}

/** Advances the instance at `slot` through every event before `until`; true when it is done. */
export function advance(buffers: EngineBuffers, slot: number, until: number): boolean {
  bind(buffers, slot, true);
  const done = advanceInstance(until >>> 0);
  unbind();
  return done;
}

export { HISTOGRAM_BUCKETS };
