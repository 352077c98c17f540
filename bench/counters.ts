/**
 * This checkout's reference engine against another, both in this one process: the other's src
 * (git revision BASE's, or this checkout's with a patch applied) is built (types unchecked) into a temporary folder under
 * node_modules/.cache, so its imports of npm packages resolve to this checkout's, and each
 * engine runs the same instances, alternating rounds, the better of each engine's rounds timed.
 *
 *   npm run bench:counters               what the metrics' counters (TTFT, TPOT, goodput, per
 *                                        component loads and waits: issue 13; KV in use:
 *                                        issue 25) cost per event:
 *                                        this checkout's engine against itself with
 *                                        bench/without-counters.patch applied (the counters'
 *                                        statements taken out), both built alike; the events
 *                                        must be the same (checked). Writes
 *                                        bench/results/counters.md.
 *   npm run bench:reference [-- BASE]    how much faster this checkout's reference engine is
 *                                        (issue 14); BASE defaults to HEAD. Twice: each engine
 *                                        alone in processes of its own, under the V8 settings
 *                                        its checkout makes (src/engine/inlining.ts), and both
 *                                        raced in one process, under the same settings (the
 *                                        code alone). The timed runs' and an equality matrix's
 *                                        records (problems, routing policies, cases, windows,
 *                                        capacities reached) must be identical, word for word,
 *                                        to BASE's, the result counters new since BASE
 *                                        (newCounters) and the events handled (ENGINE_WORK)
 *                                        left out: one that is not fails the run (exit 1)
 *                                        and writes nothing. Writes
 *                                        bench/results/reference-speed.md.
 *   npm run bench:reference -- BASE --per-request
 *                                        the same against a base whose records differ (the
 *                                        speed when an issue was filed, before a change of
 *                                        model): every work as one whose model changed
 *                                        (Work.changed), compared per simulated request, its
 *                                        arrivals checked equal; no equality matrix. Writes
 *                                        bench/results/reference-speed-per-request.md.
 *
 * Each is timed in PROCESSES fresh processes of its own (this script again, with --time): V8
 * compiles an engine differently from one process to the next, so one process's ratio moves
 * from run to run (the range column shows how far); the tables give the median ratio over the
 * processes, and its range. Asserts nothing else; the ratios are from one run of a noisy
 * machine (two cores, shared).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { layoutConstants } from '../src/engine/layout.js';
import type { EngineBuffers } from '../src/engine/simulate.js';
import { loadProblem, parseProblem, selectCases } from '../src/problem/parse.js';
import { hashOf, label, machine } from './measure.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Where a problem comes from: a file of problems/, or a problem's YAML text. */
type Source = { readonly file: string } | { readonly yaml: string; readonly name: string };

/** Problems, overrides and a case: one engine configuration; `patch` sets params words (P names). */
interface Work {
  readonly source: Source;
  readonly sets: readonly string[];
  readonly caseName: string;
  readonly patch?: Readonly<Record<string, number>>;
  /**
   * The model of this work changed since the base (as a trace's KV cache did, issue 26): its
   * records differ by design, so each engine runs its own compile's config, tables included, and
   * the engines are compared per simulated request, their arrivals checked equal instead.
   */
  readonly changed?: boolean;
}

/** The entry points of an engine's simulate.ts and result.ts. */
interface Simulate {
  readonly init: (buffers: EngineBuffers, slot: number, seed: number, instance: number) => void;
  readonly advance: (buffers: EngineBuffers, slot: number, until: number) => boolean;
  readonly extract: (config: EngineConfig, state: Uint32Array, base: number) => Uint32Array;
}

/** An engine: its reference engine, its compile of a problem, its layout's constants. */
interface Engine {
  readonly run: (config: EngineConfig, seed: number, first: number, count: number, windows?: number) => Uint32Array;
  readonly configOf: (work: Work) => EngineConfig;
  readonly constants: Record<string, number>;
  readonly simulate: Simulate;
  /** The `until` that runs an instance to its end. */
  readonly endOfTime: number;
}

/**
 * runReference's records, but each instance started with its insertion sequence (G.SEQ) `short`
 * pushes short of wrapping past 2^32, as after 2^32 - short heap pushes: ties between events
 * then order the other way round.
 */
function runWrapping(engine: Engine, config: EngineConfig, count: number, short: number): Uint32Array {
  const buffers: EngineBuffers = { params: config.params, tables: config.tables, state: new Uint32Array(config.stateWords) };
  const out = new Uint32Array(count * config.resultWords);
  for (let i = 0; i < count; i++) {
    engine.simulate.init(buffers, 0, 1, i);
    buffers.state[engine.constants.G_SEQ!] = 2 ** 32 - short;
    engine.simulate.advance(buffers, 0, engine.endOfTime);
    out.set(engine.simulate.extract(config, buffers.state, 0), i * config.resultWords);
  }
  return out;
}

/** A copy of the config whose params have `patch` (P names) set, from the engine's own layout. */
function patched(config: EngineConfig, constants: Record<string, number>, patch: Readonly<Record<string, number>> = {}): EngineConfig {
  const params = config.params.slice();
  for (const [name, value] of Object.entries(patch)) {
    const word = constants[`P_${name}`];
    if (word === undefined) throw new Error(`no params word P.${name}`);
    params[word] = value;
  }
  return { ...config, params };
}

/**
 * This checkout's compile of a work, whose sampling tables every engine draws from. No engine
 * is imported here, this checkout's included (loadEngine loads each): loading one can set V8's
 * flags for the whole process (src/engine/inlining.ts), and a base timed alone runs under its own.
 */
const here = {
  constants: layoutConstants(),
  configOf: (work: Work): EngineConfig => {
    const problem = 'file' in work.source
      ? loadProblem(join(root, `problems/${work.source.file}.yaml`), work.sets)
      : parseProblem(work.source.yaml, work.source.name, work.sets);
    return patched(compile(problem, selectCases(problem, [work.caseName])[0]!), here.constants, work.patch);
  },
};

/** `--per-request`: every work compared per simulated request (perRequest), as a changed model's is. */
const PER_REQUEST = '--per-request';
const perRequest = process.argv.includes(PER_REQUEST);

/** Whether a work is compared per simulated request rather than record for record. */
function perSimulatedRequest(work: Work): boolean {
  return work.changed === true || perRequest;
}

/** Where the other engine's src comes from: a git revision, or this checkout's with a patch applied. */
type Origin = { readonly revision: string } | { readonly patch?: string };

/** The other engine's src, compiled into `dir` (loadEngine loads it). */
function buildEngine(origin: Origin, dir: string): void {
  if ('revision' in origin) {
    // its problems too: a work whose model changed since (Work.changed) runs the base's own file
    const tar = execFileSync('git', ['-C', root, 'archive', origin.revision, 'src', 'problems'], { maxBuffer: 1 << 28 });
    execFileSync('tar', ['-x', '-C', dir], { input: tar });
  } else {
    cpSync(join(root, 'src'), join(dir, 'src'), { recursive: true });
  }
  if ('patch' in origin && origin.patch !== undefined) {
    // --forward: a patch that no longer applies fails here, naming the file, rather than half-applying
    execFileSync('patch', ['--forward', '--batch', '-p1', '-d', dir, '-i', join(root, origin.patch)], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const entries = readdirSync(join(dir, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => join(dir, 'src', f));
  execFileSync(join(root, 'node_modules/.bin/tsc'), [
    '--noCheck', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022',
    '--preserveConstEnums', '--skipLibCheck', '--outDir', join(dir, 'dist'), '--rootDir', dir, ...entries,
  ]);
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
}

/** The layout's constants of the engine in `dir` (as loadEngine finds it), without loading the engine. */
async function layoutOf(dir: string): Promise<Record<string, number>> {
  const layout = await import(pathToFileURL(join(dir, 'dist/src/engine/layout.js')).href);
  return layout.layoutConstants() as Record<string, number>;
}

/** The engine buildEngine compiled into `dir` (or this checkout's, `npm run build`'s, for `root`). */
async function loadEngine(dir: string): Promise<Engine> {
  const load = (module: string) => import(pathToFileURL(join(dir, 'dist/src', module)).href);
  const [reference, layout, compiler, parse, simulate, result] = await Promise.all([
    load('engine/reference.js'), load('engine/layout.js'), load('engine/compile.js'), load('problem/parse.js'), load('engine/simulate.js'), load('engine/result.js'),
  ]);
  const constants = layout.layoutConstants() as Record<string, number>;
  return {
    run: reference.runReference,
    constants,
    simulate: { init: simulate.init, advance: simulate.advance, extract: result.extractResult },
    endOfTime: reference.END_OF_TIME,
    configOf: (work) => {
      // the base engine reads the params as laid out then: its own compile lays them out; but
      // the sampling tables are this checkout's, so both engines draw the same numbers (a
      // fix to how a table is built is not the engine's speed, and would fail the equality)
      // a changed model's problem file is the base's own (it may lack fields added since)
      const from = work.changed === true && existsSync(join(dir, 'problems')) ? dir : root;
      const problem = 'file' in work.source
        ? parse.loadProblem(join(from, `problems/${work.source.file}.yaml`), work.sets)
        : parse.parseProblem(work.source.yaml, work.source.name, work.sets);
      const own = compiler.compile(problem, parse.selectCases(problem, [work.caseName])[0]) as EngineConfig;
      // a changed model's tables are its own (a trace's radix tree follows its rows): no sharing
      if (perSimulatedRequest(work)) return patched(own, constants, work.patch);
      const { tables } = here.configOf(work);
      if (tables.length !== own.tables.length) throw new Error(`${workLabel(work)}: the other engine's tables are laid out otherwise (${own.tables.length} words, ${tables.length} here)`);
      return patched({ ...own, tables }, constants, work.patch);
    },
  };
}

function seconds(run: () => void): number {
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Sums a two-word result field over records of `words` words each. */
function total(records: Uint32Array, words: number, field: number): number {
  let sum = 0;
  for (let i = field; i < records.length; i += words) sum += records[i]! + records[i + 1]! * 2 ** 32;
  return sum;
}

/**
 * The result counters (R_ names) this checkout's layout has and the base's has not. Records are
 * compared with their words left out (withoutCounters) and every other word in place, so a new
 * counter is no difference, and no old counter, per-replica count or histogram bucket can change
 * unseen.
 */
function newCounters(base: Record<string, number>, fresh: Record<string, number>): string[] {
  return Object.keys(fresh).filter((name) => name.startsWith('R_') && !(name in base));
}

/**
 * The engine's count of its own work, not the model's: a base's differs by design where this
 * engine takes fewer events for the same model (a run of alike prefill steps became one event,
 * docs/model.md section 3), so it is left out as a new counter is.
 */
const ENGINE_WORK = ['R_EVENTS', 'R_EVENTS_HI'];

/** The result counters left out of a comparison with the base: those new since it, and ENGINE_WORK. */
function leftOutCounters(base: Record<string, number>, fresh: Record<string, number>): string[] {
  return [...newCounters(base, fresh), ...ENGINE_WORK];
}

/** Records of `words` words each without the words of the counters `leftOut` that `constants` (their engine's layout) has. */
function withoutCounters(records: Uint32Array, words: number, constants: Record<string, number>, leftOut: readonly string[]): Uint32Array {
  const dropped = new Set(leftOut.map((name) => constants[name]).filter((word) => word !== undefined));
  if (dropped.size === 0) return records;
  const kept = Array.from({ length: words }, (_, k) => k).filter((k) => !dropped.has(k));
  const out = new Uint32Array((records.length / words) * kept.length);
  let o = 0;
  for (let i = 0; i < records.length; i += words) for (const k of kept) out[o++] = records[i + k]!;
  return out;
}

/** Two engines' records, equal once the counters new since the base are left out of this checkout's. */
function sameRecords(old: Engine, oldWords: number, before: Uint32Array, fresh: Engine, words: number, now: Uint32Array): boolean {
  const added = leftOutCounters(old.constants, fresh.constants);
  const a = withoutCounters(now, words, fresh.constants, added);
  const b = withoutCounters(before, oldWords, old.constants, added);
  return a.length === b.length && a.every((v, k) => v === b[k]);
}

/** The measured arrivals of records of `config`'s engine. */
function arrivals(config: EngineConfig, records: Uint32Array, constants: Record<string, number>): number {
  let sum = 0;
  for (let i = constants.R_ARRIVALS!; i < records.length; i += config.resultWords) sum += records[i]!;
  return sum;
}

/** Arrivals, warm-up included (as bench/measure.ts counts simulated requests): the measured ones scaled to the whole horizon. */
function requests(config: EngineConfig, records: Uint32Array, constants: Record<string, number>): number {
  return (arrivals(config, records, constants) * config.params[constants.P_MEASURE_END!]!) / config.measuredMicros;
}

/**
 * Fails unless the engines simulated the same: records equal word for word, or for a changed
 * model (Work.changed) the same arrivals, which makes its seconds a comparison per simulated
 * request (both engines replay the same windows of the trace, the window drawn per seed alike).
 */
function checkSame(work: Work, same: boolean, before: number, now: number): void {
  if (perSimulatedRequest(work)) {
    if (before !== now) throw new Error(`${workLabel(work)}: ${now} arrivals now, ${before} in the base's records: not the same requests`);
  } else if (!same) throw new Error(`${workLabel(work)}: records differ from the base's`);
}

function workLabel(work: Work): string {
  const name = 'file' in work.source ? work.source.file : work.source.name;
  const patch = Object.entries(work.patch ?? {}).map(([k, v]) => `P.${k}=${v}`);
  return [label(name, work.sets), work.caseName === 'as-given' ? '' : `(${work.caseName})`, ...patch].filter((s) => s !== '').join(' ');
}

/** Times both engines on the same instances, alternating which goes first; the better of each engine's rounds. */
function race(old: Engine, fresh: Engine, work: Work, instances: number, rounds: number) {
  const config = fresh.configOf(work);
  const oldConfig = old.configOf(work);
  // warm both engines' code on other instances first
  old.run(oldConfig, 1, 1000, 2);
  fresh.run(config, 1, 1000, 2);
  let before = Infinity;
  let now = Infinity;
  let oldRecords: Uint32Array = new Uint32Array(0);
  let newRecords: Uint32Array = new Uint32Array(0);
  const runOld = () => (before = Math.min(before, seconds(() => (oldRecords = old.run(oldConfig, 1, 0, instances)))));
  const runNew = () => (now = Math.min(now, seconds(() => (newRecords = fresh.run(config, 1, 0, instances)))));
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      runOld();
      runNew();
    } else {
      runNew();
      runOld();
    }
  }
  return { config, oldConfig, oldRecords, newRecords, before, now };
}

/** One work's race in one process: both engines' best seconds, and what the new engine simulated. */
interface Timing {
  readonly before: number;
  readonly now: number;
  readonly events: number;
  readonly requests: number;
  /** Each engine's first round, where each ran alone (Solo.first). */
  readonly first?: { readonly before: number; readonly now: number };
}

/** A work's timings over the processes: the median ratio (before / now) and the range. */
interface Timed extends Timing {
  readonly ratio: number;
  readonly low: number;
  readonly high: number;
}

/** Fresh processes each work is timed in. */
const PROCESSES = 7;
/** The flag before the counters (comma-separated) an engine timed alone leaves out of its records' hash (leftOutCounters). */
const LEFT_OUT = '--left-out';

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** `--time MODE DIRS [--left-out NAMES]` (timeIn below) in a fresh process: what it printed. */
function inProcess<T>(mode: string, dirs: readonly string[], leftOut: readonly string[] = []): T {
  const names = [...(perRequest ? [PER_REQUEST] : []), ...(leftOut.length === 0 ? [] : [LEFT_OUT, leftOut.join(',')])];
  // with this process's node options (V8 flags among them), so that a run under a flag times the engines under it
  const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--time', mode, ...dirs, ...names], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 });
  return JSON.parse(out) as T;
}

/** Runs `--time MODE DIRS` in PROCESSES fresh processes, one after another: overProcesses of their timings. */
function timeInProcesses(mode: string, dirs: readonly string[]): Timed[] {
  const runs: Timing[][] = [];
  for (let p = 0; p < PROCESSES; p++) {
    process.stderr.write(`bench: timing in process ${p + 1} of ${PROCESSES} ...\n`);
    runs.push(inProcess<Timing[]>(mode, dirs));
  }
  return overProcesses(runs);
}

/** Each work's timings over the processes: seconds and ratios are medians, with the ratio's range. */
function overProcesses(runs: readonly (readonly Timing[])[]): Timed[] {
  return runs[0]!.map((first, w) => {
    const ratios = runs.map((run) => run[w]!.before / run[w]!.now);
    const firsts = runs.map((run) => run[w]!.first);
    return {
      before: median(runs.map((run) => run[w]!.before)),
      now: median(runs.map((run) => run[w]!.now)),
      events: first.events,
      requests: first.requests,
      ratio: median(ratios),
      low: Math.min(...ratios),
      high: Math.max(...ratios),
      ...(first.first === undefined ? {} : { first: { before: median(firsts.map((f) => f!.before)), now: median(firsts.map((f) => f!.now)) } }),
    };
  });
}

/**
 * The command a report came from: its npm script, or, where this process ran under node
 * options (V8 flags: the processes it times ran under them too), node with them.
 */
function commandLine(npm: string, node: string): string {
  if (process.execArgv.length === 0) return `npm run ${npm}`;
  return `npm run build && node ${[...process.execArgv, 'dist/bench/counters.js', node].filter((word) => word !== '').join(' ')}`;
}

// ---- bench:counters -----------------------------------------------------------------------------

const WITHOUT_COUNTERS = 'bench/without-counters.patch';
const COUNTERS_WORK: { work: Work; instances: number }[] = [
  { work: { source: { file: 'mmc' }, sets: [], caseName: 'as-given' }, instances: 256 },
  { work: { source: { file: 'hot-prefix' }, sets: ['router.policy=least-loaded', 'gpu.slots=16'], caseName: 'as-given' }, instances: 128 },
  { work: { source: { file: 'coding-agents' }, sets: ['router.policy=prefix-affinity', 'gpu.slots=4'], caseName: 'as-given' }, instances: 128 },
];
const COUNTERS_ROUNDS = 9;

/** bench:counters in one process: each work raced, its events checked equal. */
function timeCounters(without: Engine, withCounters: Engine): Timing[] {
  return COUNTERS_WORK.map(({ work, instances }) => {
    const r = race(without, withCounters, work, instances, COUNTERS_ROUNDS);
    const oldEvents = total(r.oldRecords, r.oldConfig.resultWords, without.constants.R_EVENTS!);
    const events = total(r.newRecords, r.config.resultWords, withCounters.constants.R_EVENTS!);
    if (oldEvents !== events) throw new Error(`${workLabel(work)}: ${events} events with the counters, ${oldEvents} without: not the same simulation`);
    return { before: r.before, now: r.now, events, requests: requests(r.config, r.newRecords, withCounters.constants) };
  });
}

function countersReport(timed: readonly Timed[]): string {
  const lines = [
    '# What the metrics\' counters cost per event',
    '',
    `Command: \`${commandLine('bench:counters', '')}\`: this checkout's reference engine against itself with \`${WITHOUT_COUNTERS}\` applied (the statements of the metrics' counters taken out: issue 13's, and issue 25's KV in use), both built alike and run on one thread, in each of ${PROCESSES} fresh processes ${COUNTERS_ROUNDS} rounds alternating which goes first, the better of each engine's rounds; seconds and ratios are the medians over the processes, with the range of the ratio. The events are checked equal.`,
    '',
    `${machine()} · ${new Date().toISOString()}`,
    '',
    '| work | instances | events | without counters, s | with counters, s | with / without | range |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  COUNTERS_WORK.forEach(({ work, instances }, w) => {
    const t = timed[w]!;
    // the ratio here is with / without: the inverse of before / now
    lines.push(`| ${workLabel(work)} | ${instances} | ${t.events.toLocaleString('en')} | ${t.before.toFixed(3)} | ${t.now.toFixed(3)} | ${(1 / t.ratio).toFixed(3)} | ${(1 / t.high).toFixed(3)}-${(1 / t.low).toFixed(3)} |`);
  });
  return lines.join('\n') + '\n';
}

// ---- bench:reference ----------------------------------------------------------------------------

const ALL_CASES = ['as-given', 'peak-hour', 'slow-dependency', 'server-dies'];
const POLICIES = ['prefix-affinity', 'least-loaded', 'round-robin', 'random', 'cache-aware', 'bounded-affinity'];

/** test/support.ts's past-horizon problem: every instance stops at the end of u32 microseconds (ERR.HORIZON). */
const PAST_HORIZON = `
id: past-horizon
title: An overloaded queue still draining when u32 microseconds end
goals: { success: 0.5, p99: 1000s }
traffic: { rate: 0.24, duration: 3970s, warmup: 20s }
workload: { kind: job }
server: { replicas: 1, slots: 30, service: { dist: exponential, mean: 150s }, timeout: 0 }
cases: [as-given]
`;

/** What must give identical records: each (problem, overrides) in every listed case, in 1 and in 5 time windows. */
const EQUALITY: { source: Source; sets: string[]; cases: string[]; patch?: Record<string, number>; instances: number }[] = [
  { source: { file: 'mmc' }, sets: [], cases: ['as-given'], instances: 8 },
  ...POLICIES.map((policy) => ({ source: { file: 'hot-prefix' }, sets: [`router.policy=${policy}`], cases: ALL_CASES, instances: 4 })),
  { source: { file: 'hot-prefix' }, sets: ['router.policy=least-loaded', 'gpu.slots=16'], cases: ALL_CASES, instances: 4 },
  { source: { file: 'coding-agents' }, sets: [], cases: ALL_CASES, instances: 4 },
  { source: { file: 'coding-agents' }, sets: ['router.policy=prefix-affinity', 'gpu.slots=4'], cases: ALL_CASES, instances: 4 },
  { source: { file: 'multi-tenant-prefixes' }, sets: [], cases: ['as-given', 'tenant-burst'], instances: 4 },
  { source: { file: 'hung-replica' }, sets: [], cases: ['as-given'], instances: 4 },
  { source: { file: 'small-kv-cache' }, sets: [], cases: ['as-given'], instances: 4 },
  // the capacities an instance can reach (test/overload.test.ts, test/u32-overflow.test.ts)
  { source: { file: 'mmc' }, sets: ['server.slots=2', 'traffic.warmup=60s', 'traffic.rate=40'], cases: ['as-given'], instances: 4 },
  { source: { file: 'mmc' }, sets: ['server.timeout=1s'], cases: ['as-given'], patch: { HEAP_CAP: 60 }, instances: 4 },
  { source: { file: 'hot-prefix' }, sets: [], cases: ['as-given'], patch: { CACHE_CAP: 0 }, instances: 4 },
  { source: { yaml: PAST_HORIZON, name: 'past-horizon' }, sets: [], cases: ['as-given'], instances: 2 },
];
const WINDOWS = [1, 5];
/** Each of these also started its insertion sequence this many pushes short of wrapping. */
const WRAPPING: { source: Source; sets: string[]; caseName: string; instances: number }[] = [
  { source: { file: 'hot-prefix' }, sets: [], caseName: 'as-given', instances: 2 },
  { source: { file: 'coding-agents' }, sets: [], caseName: 'slow-dependency', instances: 2 },
  { source: { file: 'mmc' }, sets: ['server.timeout=1s'], caseName: 'as-given', instances: 2 },
];
const SHORT = [1, 100, 5000];

// Rounds of 0.04-0.2 s, many of them: a shared machine runs the same code slower for seconds at
// a time, and the best of many short alternating rounds finds both engines in a quiet spell
// where a few long ones may not
const SPEED_WORK: { work: Work; instances: number }[] = [
  { work: { source: { file: 'mmc' }, sets: [], caseName: 'as-given' }, instances: 64 },
  { work: { source: { file: 'hot-prefix' }, sets: ['router.policy=least-loaded', 'gpu.slots=16'], caseName: 'as-given' }, instances: 32 },
  { work: { source: { file: 'hot-prefix' }, sets: [], caseName: 'as-given' }, instances: 32 },
  { work: { source: { file: 'coding-agents' }, sets: [], caseName: 'as-given' }, instances: 32 },
  { work: { source: { file: 'coding-agents' }, sets: ['router.policy=prefix-affinity', 'gpu.slots=4'], caseName: 'as-given' }, instances: 32 },
  { work: { source: { file: 'multi-tenant-prefixes' }, sets: [], caseName: 'as-given' }, instances: 32 },
  // fewer instances: each replays three minutes of the trace; its catalogue profile runs BLIS's
  // alphas since issue 27, so its records differ from a base's before that by design
  { work: { source: { file: 'conversation-trace' }, sets: [], caseName: 'as-given', changed: true }, instances: 16 },
  { work: { source: { file: 'conversation-trace' }, sets: ['router.policy=cache-aware'], caseName: 'as-given', changed: true }, instances: 12 },
];
const SPEED_ROUNDS = 25;

/** Every record of the equality matrix from both engines; the rows of its table, or the first difference. */
function equality(old: Engine, fresh: Engine, base: string): { rows: string[]; records: number } {
  const added = leftOutCounters(old.constants, fresh.constants);
  const rows: string[] = [];
  let records = 0;
  for (const item of EQUALITY) {
    const hashes: string[] = [];
    for (const caseName of item.cases) {
      const work: Work = { source: item.source, sets: item.sets, caseName, ...(item.patch === undefined ? {} : { patch: item.patch }) };
      const config = fresh.configOf(work);
      const oldConfig = old.configOf(work);
      for (const windows of WINDOWS) {
        const now = fresh.run(config, 1, 0, item.instances, windows);
        const before = old.run(oldConfig, 1, 0, item.instances, windows);
        if (before.length / oldConfig.resultWords !== now.length / config.resultWords) throw new Error(`${workLabel(work)}, ${windows} windows: ${now.length / config.resultWords} records now, ${before.length / oldConfig.resultWords} at ${base}`);
        const shared = withoutCounters(now, config.resultWords, fresh.constants, added);
        const words = shared.length / item.instances;
        const based = withoutCounters(before, oldConfig.resultWords, old.constants, added);
        for (let i = 0; i < item.instances; i++) {
          const a = shared.subarray(i * words, (i + 1) * words);
          const b = based.subarray(i * words, (i + 1) * words);
          if (a.length !== b.length || a.some((v, k) => v !== b[k])) {
            const k = a.findIndex((v, w) => v !== b[w]);
            throw new Error(`${workLabel(work)}, ${windows} windows, instance ${i}: record word ${k} (counters new since ${base}, and the events, left out) is ${a[k]} now, ${b[k]} at ${base}`);
          }
        }
        records += item.instances;
        hashes.push(hashOf(now).toString(16).padStart(8, '0'));
      }
    }
    const name = workLabel({ source: item.source, sets: item.sets, caseName: 'as-given', ...(item.patch === undefined ? {} : { patch: item.patch }) });
    rows.push(`| ${name} | ${item.cases.join(', ')} | ${item.instances} | ${hashes.join(' ')} |`);
    process.stderr.write(`bench: ${name}: identical\n`);
  }
  for (const item of WRAPPING) {
    const work: Work = { source: item.source, sets: item.sets, caseName: item.caseName };
    const config = fresh.configOf(work);
    const oldConfig = old.configOf(work);
    const hashes: string[] = [];
    for (const short of SHORT) {
      const now = runWrapping(fresh, config, item.instances, short);
      const before = runWrapping(old, oldConfig, item.instances, short);
      if (!sameRecords(old, oldConfig.resultWords, before, fresh, config.resultWords, now)) throw new Error(`${workLabel(work)}, sequence ${short} short of wrapping: records differ from ${base}'s`);
      records += item.instances;
      hashes.push(hashOf(now).toString(16).padStart(8, '0'));
    }
    rows.push(`| ${workLabel(work)}, sequence ${SHORT.join(', ')} pushes short of wrapping | ${item.caseName} | ${item.instances} | ${hashes.join(' ')} |`);
    process.stderr.write(`bench: ${workLabel(work)} wrapping: identical\n`);
  }
  return { rows, records };
}

/** bench:reference's engines together in one process: each work raced, its records checked equal to the base's. */
function timeReference(old: Engine, fresh: Engine): Timing[] {
  return SPEED_WORK.map(({ work, instances }) => {
    const r = race(old, fresh, work, instances, SPEED_ROUNDS);
    const same = sameRecords(old, r.oldConfig.resultWords, r.oldRecords, fresh, r.config.resultWords, r.newRecords);
    checkSame(work, same, arrivals(r.oldConfig, r.oldRecords, old.constants), arrivals(r.config, r.newRecords, fresh.constants));
    const events = total(r.newRecords, r.config.resultWords, fresh.constants.R_EVENTS!);
    return { before: r.before, now: r.now, events, requests: requests(r.config, r.newRecords, fresh.constants) };
  });
}

/** One engine alone on a work: its best seconds, what it simulated, and its records' hash. */
interface Solo {
  readonly seconds: number;
  /** The first round's seconds: with the code still compiling (as `npm run bench` times the engine). */
  readonly first: number;
  readonly events: number;
  readonly requests: number;
  readonly arrivals: number;
  readonly hash: number;
}

/**
 * bench:reference's engine alone in one process: each work timed as race times it, on this
 * engine only; its records' hash leaves out the counters `leftOut` (those new since the base).
 */
function timeAlone(engine: Engine, leftOut: readonly string[]): Solo[] {
  return SPEED_WORK.map(({ work, instances }) => {
    const config = engine.configOf(work);
    engine.run(config, 1, 1000, 2);
    let records: Uint32Array = new Uint32Array(0);
    const rounds = Array.from({ length: SPEED_ROUNDS }, () => seconds(() => (records = engine.run(config, 1, 0, instances))));
    const events = total(records, config.resultWords, engine.constants.R_EVENTS!);
    const hash = hashOf(withoutCounters(records, config.resultWords, engine.constants, leftOut));
    return { seconds: Math.min(...rounds), first: rounds[0]!, events, requests: requests(config, records, engine.constants), arrivals: arrivals(config, records, engine.constants), hash };
  });
}

/**
 * Each engine alone in its own fresh processes, PROCESSES of each, alternating which runs
 * first: each under the V8 flags its own checkout sets when its engine loads. Pairs them up
 * (the k-th of each) into timings, checking the records equal.
 */
function timeApart(old: string, fresh: string, leftOut: readonly string[]): Timed[] {
  const alone = (dir: string) => inProcess<Solo[]>('alone', [dir], leftOut);
  const runs: Timing[][] = [];
  for (let p = 0; p < PROCESSES; p++) {
    process.stderr.write(`bench: timing each engine alone, processes ${2 * p + 1} and ${2 * p + 2} of ${2 * PROCESSES} ...\n`);
    let before: Solo[];
    let now: Solo[];
    if (p % 2 === 0) {
      before = alone(old);
      now = alone(fresh);
    } else {
      now = alone(fresh);
      before = alone(old);
    }
    runs.push(SPEED_WORK.map(({ work }, w) => {
      const [b, n] = [before[w]!, now[w]!];
      checkSame(work, b.hash === n.hash, b.arrivals, n.arrivals);
      return { before: b.seconds, now: n.seconds, events: n.events, requests: n.requests, first: { before: b.first, now: n.first } };
    }));
  }
  return overProcesses(runs);
}

/** A speed table's rows: each work's seconds, requests/s and speedup (and its first rounds' seconds, where timed). */
function speedRows(timed: readonly Timed[]): string[] {
  return SPEED_WORK.map(({ work, instances }, w) => {
    const t = timed[w]!;
    const rate = (s: number) => Math.round(t.requests / s).toLocaleString('en');
    const firstCells = t.first === undefined ? '' : ` ${t.first.before.toFixed(3)} | ${t.first.now.toFixed(3)} |`;
    const compared = work.changed === true ? 'model changed: per simulated request' : perRequest ? 'per simulated request' : 'identical';
    return `| ${workLabel(work)} | ${instances} | ${compared} | ${Math.round(t.requests).toLocaleString('en')} | ${t.events.toLocaleString('en')} | ${t.before.toFixed(3)} | ${t.now.toFixed(3)} | ${rate(t.before)} | ${rate(t.now)} | ${t.ratio.toFixed(2)}x | ${t.low.toFixed(2)}-${t.high.toFixed(2)}x |${firstCells}`;
  });
}

/** A speed table's header: with the first rounds' columns where they were timed. */
function speedHeader(timed: readonly Timed[]): string[] {
  const extra = timed[0]?.first !== undefined ? [' first round before, s | first round now, s |', ' ---: | ---: |'] : ['', ''];
  return [
    `| work | instances | records | simulated requests | events (now) | before, s | now, s | requests/s before | requests/s now | speedup (before / now) | range |${extra[0]}`,
    `| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${extra[1]}`,
  ];
}

function referenceReport(apart: readonly Timed[], together: readonly Timed[], old: Engine, fresh: Engine, base: string): string {
  // records that differ by design have no equality matrix
  const same = perRequest ? null : equality(old, fresh, base);
  const added = newCounters(old.constants, fresh.constants).map((name) => name.replace('R_', 'R.'));
  const since = added.length === 0 ? '' : `the result counters new since ${base}, ${added.join(', ')}, and `;
  const counters = `, but for ${since}the events handled (${ENGINE_WORK.map((name) => name.replace('R_', 'R.')).join(', ')}: the engine's own work, which a run of alike prefill steps taken as one event changed), left out of the comparison`;
  const changed = !SPEED_WORK.some(({ work }) => work.changed === true) ? '' : `, but where a work's model changed since ${base} (\`model changed: per simulated request\`): there each engine runs its own compile, tables included, its records differ by design, and the engines' arrivals are checked equal instead, so that the speedup is per simulated request`;
  const checked = perRequest
    ? `Records are not compared: ${base}'s differ from this checkout's by design (\`--per-request\`), so each engine runs its own compile, tables included, and the engines' arrivals are checked equal instead, so that the speedup is per simulated request.`
    : `Each run's records are checked equal (\`identical\`${counters})${changed}.`;
  const flag = perRequest ? ` ${PER_REQUEST}` : '';
  const tables = perRequest ? 'each engine drawing from its own sampling tables' : "both engines drawing from this checkout's sampling tables";
  const timing = `rounds, the best of each engine's (after two instances to compile the code), the works in the order listed, ${tables}; seconds and speedups are the medians over the processes, with the range of the speedup. Simulated requests are arrivals, warm-up included. ${checked}`;
  return [
    '# The reference engine\'s speed (issue 14)',
    '',
    `Command: \`${commandLine(`bench:reference -- ${base}${flag}`, `--reference ${base}${flag}`)}\`: the reference engine at ${base} against this checkout's, on one thread.`,
    '',
    `${machine()} · ${new Date().toISOString()}`,
    '',
    '## As each checkout runs it',
    '',
    `Each engine alone in fresh processes of its own, ${PROCESSES} of each, alternating which runs first, so each runs under the V8 settings its own checkout makes when its engine loads (this checkout's raises V8's inlining budget: src/engine/inlining.ts). In each process ${SPEED_ROUNDS} ${timing} The first round (medians too) is what \`npm run bench\` times: V8 is still compiling the engine then, more so for the first work.`,
    '',
    ...speedHeader(apart),
    ...speedRows(apart),
    '',
    '## The engine\'s code alone',
    '',
    `Both engines in one process, under the same V8 settings (this checkout's, as loading its engine sets them): ${PROCESSES} fresh processes, in each ${SPEED_ROUNDS} alternating ${timing}`,
    '',
    ...speedHeader(together),
    ...speedRows(together),
    ...(same === null ? [] : [
      '',
      `Records: ${same.records} records, each identical word for word to ${base}'s${counters} (below, per problem and overrides, the FNV-1a hash of each case's records in ${WINDOWS.join(' and in ')} time windows, in the order listed).`,
      '',
      '| problem | cases | instances | record hashes |',
      '| --- | --- | ---: | --- |',
      ...same.rows,
    ]),
  ].join('\n') + '\n';
}

/** A temporary folder under node_modules/.cache, so that built src resolves npm packages to this checkout's. */
function scratch(): string {
  mkdirSync(join(root, 'node_modules/.cache'), { recursive: true });
  return mkdtempSync(join(root, 'node_modules/.cache/servesim-base-'));
}

/** `--time MODE DIRS [--left-out NAMES]`: one process's timings, as JSON on stdout, of the engines in DIRS (loadEngine), and of no other. */
async function timeIn(mode: string, dirs: readonly string[], leftOut: readonly string[]): Promise<void> {
  const engines = await Promise.all(dirs.map(loadEngine));
  const timings = mode === 'alone' ? timeAlone(engines[0]!, leftOut) : mode === 'reference' ? timeReference(engines[0]!, engines[1]!) : timeCounters(engines[0]!, engines[1]!);
  process.stdout.write(JSON.stringify(timings));
}

async function main(): Promise<void> {
  const reference = process.argv.includes('--reference');
  const dirs = [scratch(), scratch()];
  try {
    let text: string;
    if (reference) {
      const base = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'HEAD';
      buildEngine({ revision: base }, dirs[0]!);
      // this checkout's engine is `npm run build`'s, in root's dist; the layouts load no engine
      const added = leftOutCounters(await layoutOf(dirs[0]!), await layoutOf(root));
      const apart = timeApart(dirs[0]!, root, added);
      const together = timeInProcesses('reference', [dirs[0]!, root]);
      text = referenceReport(apart, together, await loadEngine(dirs[0]!), await loadEngine(root), base);
    } else {
      buildEngine({ patch: WITHOUT_COUNTERS }, dirs[0]!);
      buildEngine({}, dirs[1]!);
      text = countersReport(timeInProcesses('counters', dirs));
    }
    mkdirSync(join(root, 'bench/results'), { recursive: true });
    writeFileSync(join(root, `bench/results/${reference ? `reference-speed${perRequest ? '-per-request' : ''}` : 'counters'}.md`), text);
    process.stdout.write(text);
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

const time = process.argv.indexOf('--time');
if (time >= 0) {
  const args = process.argv.slice(time + 2).filter((arg) => arg !== PER_REQUEST);
  const at = args.indexOf(LEFT_OUT);
  await timeIn(process.argv[time + 1]!, at < 0 ? args : args.slice(0, at), at < 0 ? [] : args[at + 1]!.split(','));
} else await main();
