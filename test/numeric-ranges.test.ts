/**
 * Every numeric field of the problem schema, found by walking the schema, set to its extremes:
 * each value is either refused with a ServesimError naming the field, or gives a problem whose
 * compiled engine words hold the value's meaning (decoded back and compared: nothing wrapped,
 * was clamped or truncated on its way to a u32).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { FAILURE, FAILURE_WORDS, P, PICK, PREFIX_WORDS, TABLE_WORDS } from '../src/engine/layout.js';
import { tableMean } from '../src/engine/tables.js';
import { ServesimError } from '../src/errors.js';
import type { Distribution, Problem, Scenario } from '../src/model/problem.js';
import { parseDuration, parseFraction, problemFromObject, selectCases } from '../src/problem/index.js';
import { discriminatorOf, formatPath, nodeOf, unwrap, type PathSegment } from '../src/problem/schema-walk.js';
import { problemFileSchema } from '../src/problem/schema.js';
import { parseByteRate } from '../src/problem/units.js';

const TWO_31 = 0x80000000;
const TABLE_MAX = 0x7fffffff;
/** The case every scenario field is set on: a built-in case that runs, so its words are compiled. */
const CASE = 'slow-dependency';

const failure = (target: string) => ({ target, replica: 1, mode: 'hang', detectAfter: '2s', from: '5s', to: '20s' });
const scenarios = (target: string, failed: string) => ({
  [CASE]: {
    rateScale: 1.5,
    burst: { scale: 2, from: '10s', to: '15s' },
    slowdown: { target, factor: 2, from: '5s', to: '25s' },
    failures: [failure(failed)],
  },
});
const common = {
  goals: { success: 0.9, p99: '10s' },
  confidence: 0.9,
  seed: 7,
  title: 'ranges',
  cases: ['as-given', 'peak-hour', 'slow-dependency', 'server-dies'],
};

/** One problem of each workload kind, every field written out. */
const FIXTURES: Record<string, Record<string, unknown>> = {
  request: {
    id: 'request',
    ...common,
    goals: { ...common.goals, ttft_p99: '500ms', tpot_p99: '50ms' },
    traffic: { rate: 20, duration: '30s', warmup: '5s' },
    workload: {
      kind: 'request',
      prefixes: [{ tokens: 3000, weight: 3 }, { tokens: 1000, weight: 1 }],
      share: 0.5,
      suffix: { dist: 'lognormal', median: 300, p99: 1200 },
      unique: { dist: 'uniform', min: 500, max: 1500 },
      output: { dist: 'exponential', mean: 60 },
    },
    lb: { overhead: '1ms' },
    app: { replicas: 2, slots: 100, timeout: '20s', overhead: '5ms' },
    router: { policy: 'cache-aware', slots: 1000, overhead: '1ms', boundedLoad: 1.25, alpha: 1, retries: 1, virtualNodes: 16, affinityBlocks: 2 },
    gpu: { replicas: 4, slots: 8, kvTokens: 200000, kv: 'incremental', pricePerHour: 2.5, profile: { name: 'p', base: '8ms', perSeq: '250us', prefillRate: 16, chunk: 2048, tp: 2 }, offload: { tokens: 400000, bandwidth: '25GB/s', bytesPerToken: 131072 }, disaggregation: { prefill: 1, policy: 'cache-aware', latency: '2ms', bandwidth: '50GB/s', bytesPerToken: 131072, decode: { profile: { name: 'd', base: '10ms', perSeq: '300us', prefillRate: 12, chunk: 1024, tp: 1 }, slots: 16, kvTokens: 300000, pricePerHour: 1.5 } } },
    failures: [failure('gpu')],
    scenarios: scenarios('gpu', 'gpu'),
  },
  task: {
    id: 'task',
    ...common,
    goals: { ...common.goals, ttft_p99: '2s', tpot_p99: '40ms' },
    traffic: { rate: 1, duration: '30s', warmup: '10s' },
    workload: { kind: 'task', system: 2000, input: { dist: 'fixed', value: 500 }, output: { dist: 'fixed', value: 40 } },
    lb: { overhead: '1ms' },
    app: { replicas: 2, slots: 100, timeout: '120s', overhead: '5ms' },
    orchestrator: { slots: 100, steps: 5, overhead: '1ms', toolCalls: 'every-step' },
    router: { policy: 'bounded-affinity', slots: 1000, overhead: '1ms', boundedLoad: 1.5, alpha: 0, retries: 2, virtualNodes: 16, affinityBlocks: 2 },
    // a model described by its size (its roofline profile); the request problem writes a fitted one
    gpu: {
      replicas: 2,
      slots: 4,
      kvTokens: 200000,
      profile: { name: 'p', model: { params: 8e9, activeParams: 8e9, bytesPerWeight: 2, activationBytes: 2, kvBytesPerToken: 131072 }, gpu: 'H100', tp: 1, chunk: 2048 },
      // decode replicas of a model described by its size too, on another GPU type
      disaggregation: { prefill: 1, decode: { profile: { name: 'q', model: { params: 8e9, activeParams: 8e9, bytesPerWeight: 2, activationBytes: 2, kvBytesPerToken: 131072 }, gpu: 'A100-80', tp: 1, chunk: 2048 } } },
    },
    tools: { slots: 50, latency: { dist: 'lognormal', median: '250ms', p99: '1s' } },
    failures: [failure('gpu')],
    scenarios: scenarios('tools', 'gpu'),
  },
  // a replayed trace (a shipped one: an object may only name those), with traffic.rateScale
  trace: {
    id: 'trace',
    ...common,
    traffic: { trace: 'traces/mooncake-conversation.jsonl', rateScale: 2, duration: '30s', warmup: '5s' },
    workload: { kind: 'request' },
    lb: { overhead: '1ms' },
    app: { replicas: 2, slots: 100, timeout: '20s', overhead: '5ms' },
    router: { policy: 'prefix-affinity', slots: 1000, overhead: '1ms', boundedLoad: 1.25, alpha: 1, retries: 1, virtualNodes: 16, affinityBlocks: 2 },
    gpu: { replicas: 4, slots: 8, kvTokens: 200000, chunk: 1024, profile: '8b-h100' },
    failures: [failure('gpu')],
    // a trace's arrivals have no Poisson rate to burst
    scenarios: { [CASE]: { rateScale: 1.5, slowdown: { target: 'gpu', factor: 2, from: '5s', to: '25s' }, failures: [failure('gpu')] } },
  },
  job: {
    id: 'job',
    ...common,
    traffic: { rate: 30, duration: '60s', warmup: '10s' },
    workload: { kind: 'job' },
    server: { replicas: 2, slots: 4, service: { dist: 'exponential', mean: '100ms' }, timeout: '30s' },
    failures: [failure('server')],
    scenarios: scenarios('server', 'server'),
  },
};

/** Each {dist: ...} field's siblings for the variant that has a key, by unit. */
const VARIANTS: Record<'time' | 'tokens', Record<string, Record<string, unknown>>> = {
  time: {
    value: { dist: 'fixed', value: '100ms' },
    min: { dist: 'uniform', min: '10ms', max: '20ms' },
    max: { dist: 'uniform', min: '10ms', max: '20ms' },
    median: { dist: 'lognormal', median: '100ms', p99: '400ms' },
    p99: { dist: 'lognormal', median: '100ms', p99: '400ms' },
    mean: { dist: 'exponential', mean: '100ms' },
  },
  tokens: {
    value: { dist: 'fixed', value: 100 },
    min: { dist: 'uniform', min: 100, max: 200 },
    max: { dist: 'uniform', min: 100, max: 200 },
    median: { dist: 'lognormal', median: 100, p99: 400 },
    p99: { dist: 'lognormal', median: 100, p99: 400 },
    mean: { dist: 'exponential', mean: 100 },
  },
};

/**
 * Every field path of the schema down to single values: lists by their first entry, the
 * scenario mapping by CASE, both branches of a value-or-mapping field.
 */
function leafPaths(): PathSegment[][] {
  const out: PathSegment[][] = [];
  const walk = (schema: z.ZodType, path: PathSegment[]): void => {
    const s = unwrap(schema);
    if (s instanceof z.ZodUnion && discriminatorOf(s) === undefined) {
      out.push(path);
      for (const opt of s.options as readonly z.ZodType[]) {
        const u = unwrap(opt);
        if (u instanceof z.ZodObject || u instanceof z.ZodUnion) walk(opt, path);
      }
      return;
    }
    const node = nodeOf(s, undefined);
    if (node.kind === 'object') for (const key of node.keys) walk(node.child(key), [...path, key]);
    else if (node.kind === 'array') walk(node.element, [...path, 0]);
    else if (node.kind === 'record') walk(node.value, [...path, CASE]);
    else out.push(path);
  };
  walk(problemFileSchema, []);
  const seen = new Set<string>();
  return out.filter((p) => {
    const key = formatPath(p);
    if (String(p[0]).startsWith('$') || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function isDistribution(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && 'dist' in x;
}

/**
 * A copy of the fixture in which `path` is written (a distribution swapped to the kind that
 * has that key), with a setter for it; undefined when the fixture has no such field.
 */
function fieldIn(fixture: Record<string, unknown>, path: readonly PathSegment[]): { root: Record<string, unknown>; set(value: unknown): void } | undefined {
  const root = structuredClone(fixture);
  let box: Record<PathSegment, unknown> = root;
  for (let i = 0; i < path.length - 1; i++) {
    const next = box[path[i]!];
    if (typeof next !== 'object' || next === null) return undefined;
    box = next as Record<PathSegment, unknown>;
  }
  const last = path[path.length - 1]!;
  if (isDistribution(box) && !(last in box)) {
    // another kind of distribution: swap in the variant that has this key
    const unit = Object.values(box).some((v) => typeof v === 'string' && v !== box['dist']) ? 'time' : 'tokens';
    const variant = VARIANTS[unit][String(last)];
    if (variant === undefined) return undefined;
    for (const k of Object.keys(box)) delete box[k];
    Object.assign(box, structuredClone(variant));
  }
  if (!(last in box)) return undefined;
  const at = box;
  return { root, set: (value) => { at[last] = value; } };
}

/** The fixture with `value` at `path`. */
function withValue(fixture: Record<string, unknown>, path: readonly PathSegment[], value: unknown): Record<string, unknown> {
  const field = fieldIn(fixture, path)!;
  field.set(value);
  return field.root;
}

function rawAt(root: unknown, path: readonly PathSegment[]): unknown {
  let x: unknown = root;
  for (const seg of path) x = typeof x === 'object' && x !== null ? (x as Record<PathSegment, unknown>)[seg] : undefined;
  return x;
}

/** What a field's text or number means: microseconds, a fraction, or the number itself. */
function meaning(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  const d = parseDuration(value);
  if (d.ok) return d.value;
  const f = parseFraction(value);
  if (f.ok) return f.value;
  const b = parseByteRate(value);
  return b.ok ? b.value : undefined;
}

/** The typed value the field at `path` became, windows back in the file's terms. */
function typedValue(problem: Problem, path: readonly PathSegment[]): unknown {
  const [head, ...rest] = path;
  const warmup = problem.traffic.warmup;
  const unshift = (key: PathSegment, v: unknown): unknown => (key === 'from' || key === 'to') && typeof v === 'number' ? v - warmup : v;
  if (head === 'scenarios') {
    const scenario = problem.cases.find((c) => c.name === rest[0]);
    const [, ...inside] = rest;
    // a case's own failures come after the problem's
    const at = inside[0] === 'failures' ? ['failures', (scenario?.failures.length ?? 0) - 1, ...inside.slice(2)] : inside;
    return unshift(at[at.length - 1]!, rawAt(scenario, at));
  }
  if (head === 'failures') return unshift(path[path.length - 1]!, rawAt(problem.cases[0], path));
  return rawAt(problem, path);
}

/** The 1,025 words of table `index`. */
function tableOf(config: EngineConfig, index: number): Uint32Array {
  return config.tables.subarray(index * TABLE_WORDS, (index + 1) * TABLE_WORDS);
}

/** A table samples the distribution it was built from: its defining points, within rounding. */
function expectTableOf(table: Uint32Array, d: Distribution, what: string): void {
  expect(table.findIndex((w, i) => i > 0 && w < table[i - 1]!), `${what} nondecreasing`).toBe(-1);
  expect(table[table.length - 1]!, `${what} top`).toBeLessThanOrEqual(TABLE_MAX);
  const near = (got: number, want: number, label: string): void => {
    expect(Math.abs(got - want), `${what} ${label}: ${got} for ${want}`).toBeLessThanOrEqual(Math.max(1, want * 0.01));
  };
  switch (d.kind) {
    case 'fixed':
      expect(new Set(table), `${what} fixed`).toEqual(new Set([d.value]));
      return;
    case 'uniform':
      expect([table[0], table[table.length - 1]], `${what} uniform ends`).toEqual([d.min, d.max + 1]);
      return;
    case 'lognormal':
      near(table[(table.length - 1) / 2]!, d.median, 'median');
      return;
    case 'exponential':
      near(tableMean(table), d.mean, 'mean');
  }
}

/** Decodes the compiled words back and compares them with the typed problem and case. */
function expectFaithful(problem: Problem, scenario: Scenario, config: EngineConfig): void {
  const p = config.params;
  const word = (i: number): number => p[i]!;
  const { traffic, workload } = problem;
  expect(word(P.WARMUP)).toBe(traffic.warmup);
  expect(word(P.MEASURE_END)).toBe(traffic.warmup + traffic.duration);
  expect(word(P.TIMEOUT)).toBe(problem.app?.timeout ?? problem.server?.timeout ?? 0);
  // a goal not set is the largest u32, which no time passes
  expect([word(P.GOAL_LATENCY), word(P.GOAL_TTFT), word(P.GOAL_TPOT)]).toEqual([
    problem.goals.p99, problem.goals.ttftP99 ?? 0xffffffff, problem.goals.tpotP99 ?? 0xffffffff,
  ]);
  const rate = traffic.rate * scenario.rateScale;
  expectTableOf(tableOf(config, word(P.T_INTERARRIVAL)), { kind: 'exponential', mean: 1e6 / rate }, 'arrival gaps');
  const burst = scenario.burst;
  if (burst !== null) {
    expectTableOf(tableOf(config, word(P.T_BURST_INTERARRIVAL)), { kind: 'exponential', mean: 1e6 / (rate * burst.scale) }, 'burst gaps');
    expect([word(P.BURST_FROM), word(P.BURST_TO)]).toEqual([burst.from, burst.to]);
  }
  if (workload.kind === 'request') {
    expect(Math.abs(word(P.SHARE) / TWO_31 - workload.share)).toBeLessThanOrEqual(1 / TWO_31);
    const total = workload.prefixes.reduce((s, x) => s + x.weight, 0);
    let before = 0;
    workload.prefixes.forEach((prefix, i) => {
      const at = word(P.OFF_PREFIXES) + i * PREFIX_WORDS;
      const share = (word(at) - before) / TWO_31;
      // every prefix keeps its share, none rounded away to nothing
      expect(share, `prefix ${i} share`).toBeGreaterThan(0);
      expect(Math.abs(share - prefix.weight / total), `prefix ${i} share`).toBeLessThanOrEqual(2 / TWO_31);
      expect(word(at + 1)).toBe(prefix.tokens);
      before = word(at);
    });
    expectTableOf(tableOf(config, word(P.T_SUFFIX)), workload.suffix, 'suffix');
    expectTableOf(tableOf(config, word(P.T_UNIQUE)), workload.unique, 'unique');
    expectTableOf(tableOf(config, word(P.T_OUTPUT)), workload.output, 'output');
  } else if (workload.kind === 'task') {
    expect(word(P.SYSTEM_TOKENS)).toBe(workload.system);
    expectTableOf(tableOf(config, word(P.T_INPUT)), workload.input, 'input');
    expectTableOf(tableOf(config, word(P.T_OUTPUT)), workload.output, 'output');
  }
  const { lb, app, orchestrator, router, gpu, tools, server } = problem;
  if (lb && app && router && gpu) {
    expect([word(P.LB_OVERHEAD), word(P.APP_REPLICAS), word(P.APP_SLOTS), word(P.APP_OVERHEAD)]).toEqual([lb.overhead, app.replicas, app.slots, app.overhead]);
    expect([word(P.ROUTER_SLOTS), word(P.ROUTER_OVERHEAD), word(P.RETRIES)]).toEqual([router.slots, router.overhead, router.retries]);
    expect(word(P.BOUNDED_LOAD_MILLI) / 1000).toBe(router.boundedLoad);
    expect(word(P.ALPHA_MILLI) / 1000).toBe(router.alpha);
    // the router's ring: the prefill pool's under disaggregation
    expect(word(P.RING_LEN)).toBe((gpu.disaggregation?.prefill ?? gpu.replicas) * router.virtualNodes);
    expect([word(P.GPU_REPLICAS), word(P.GPU_SLOTS), word(P.KV_TOKENS)]).toEqual([gpu.replicas, gpu.slots, gpu.kvTokens]);
    expect(word(P.KV_INCREMENTAL)).toBe(gpu.kv === 'incremental' ? 1 : 0);
    expect([word(P.ITER_BASE), word(P.ITER_PER_SEQ), word(P.CHUNK)]).toEqual([gpu.profile.base, gpu.profile.perSeq, gpu.profile.chunk]);
    expect(Math.abs(word(P.PREFILL_NS_PER_TOKEN) - 1e6 / gpu.profile.prefillRate)).toBeLessThanOrEqual(0.5);
    expect(word(P.PREFILL_NS_PER_TOKEN) * gpu.profile.chunk).toBeLessThan(2 ** 32);
    if (gpu.offload !== undefined) {
      expect(word(P.OFFLOAD_TOKENS)).toBe(gpu.offload.tokens);
      // a token's load to the nanosecond
      const loadNs = word(P.OFFLOAD_TOKEN_US) * 1000 + word(P.OFFLOAD_TOKEN_NS);
      expect(Math.abs(loadNs - (gpu.offload.bytesPerToken / gpu.offload.bandwidth) * 1e9)).toBeLessThanOrEqual(0.5);
    }
    const split = gpu.disaggregation;
    expect(word(P.PREFILL_REPLICAS)).toBe(split?.prefill ?? 0);
    if (split !== undefined) {
      // the decode replicas' own words, DECODE_SHIFT on
      const decode = (field: number) => word(word(P.DECODE_SHIFT) + field);
      expect([decode(P.GPU_SLOTS), decode(P.KV_TOKENS), decode(P.ITER_BASE), decode(P.ITER_PER_SEQ)]).toEqual([split.decode.slots, split.decode.kvTokens, split.decode.profile.base, split.decode.profile.perSeq]);
      expect(word(P.RUN_CAP)).toBe(Math.max(gpu.slots, split.decode.slots));
      expect(word(P.LINK_LATENCY)).toBe(split.latency);
      // a token's transfer to the nanosecond
      const tokenNs = word(P.LINK_TOKEN_US) * 1000 + word(P.LINK_TOKEN_NS);
      expect(Math.abs(tokenNs - (split.bytesPerToken / split.bandwidth) * 1e9)).toBeLessThanOrEqual(0.5);
    }
  }
  if (orchestrator && tools) {
    expect([word(P.ORCH_SLOTS), word(P.ORCH_OVERHEAD), word(P.STEPS), word(P.TOOL_SLOTS)]).toEqual([orchestrator.slots, orchestrator.overhead, orchestrator.steps, tools.slots]);
    expect(word(P.TOOL_EVERY_STEP)).toBe(orchestrator.toolCalls === 'every-step' ? 1 : 0);
    expectTableOf(tableOf(config, word(P.T_TOOL)), tools.latency, 'tool latency');
  }
  if (server) {
    expect([word(P.SERVER_REPLICAS), word(P.SERVER_SLOTS)]).toEqual([server.replicas, server.slots]);
    expectTableOf(tableOf(config, word(P.T_SERVICE)), server.service, 'service');
  }
  const slow = scenario.slowdown;
  if (slow !== null) {
    expect(word(P.SLOW_FACTOR_MILLI) / 1000).toBe(slow.factor);
    expect([word(P.SLOW_FROM), word(P.SLOW_TO)]).toEqual([slow.from, slow.to]);
  }
  expect(word(P.N_FAILURES)).toBe(scenario.failures.length);
  scenario.failures.forEach((f, i) => {
    const at = word(P.OFF_FAILURES) + i * FAILURE_WORDS;
    const replica = f.replica === 'random' ? PICK.RANDOM : f.replica === 'busiest' ? PICK.BUSIEST : f.replica;
    expect([word(at + FAILURE.REPLICA), word(at + FAILURE.FROM), word(at + FAILURE.TO)]).toEqual([replica, f.from, f.to]);
    expect(word(at + FAILURE.DETECT_AT)).toBe(f.mode === 'hang' ? Math.min(f.to, f.from + f.detectAfter) : f.from);
  });
}

/**
 * An issue names the field when it is the field, an ancestor or a sibling, or its message
 * names the field or a dotted ancestor (`tools.latency` for `tools.latency.max`).
 */
function names(issue: { path: string; message: string }, field: string): boolean {
  const parent = field.replace(/(\.[^.[\]]+|\[\d+\])$/, '');
  const ancestors = [field];
  for (let p = field; p.includes('.'); p = p.replace(/(\.[^.[\]]+|\[\d+\])$/, '')) ancestors.push(p);
  return (
    issue.path === field ||
    field.startsWith(`${issue.path}.`) ||
    field.startsWith(`${issue.path}[`) ||
    issue.path.startsWith(`${parent}.`) ||
    ancestors.some((a) => issue.message.includes(a))
  );
}

const NUMBERS = [
  0, -1, 1, 0.0005, 1.0005, 2 ** 32 / 1000 + 1, 4294968, 2 ** 31, 2 ** 32, 2 ** 32 + 1, Number.MAX_SAFE_INTEGER + 2,
  1e300, -1e300, 1e-300, Infinity, -Infinity, NaN,
];
const TEXTS = [
  'NaN', 'Infinity', '-Infinity', '1e300', '0s', '1us', '5us', '0.999999s', '1s', '10s', '10.000001s', '2147s', '2148s',
  '4000s', '4000.000001s', '4294968s', '1193h', '99999999999999h', '-1s', '0%', '100%', '100.1%', '1e300%',
  '0B/s', '1B/s', '1GB/s', '100TB/s', '100.1TB/s', '1e300GB/s', '-1GB/s',
];

/** For a number field: its least and greatest value and one step either side. */
function boundsOf(path: readonly PathSegment[]): number[] {
  let schema: z.ZodType = problemFileSchema;
  for (const seg of path) {
    const node = nodeOf(schema, undefined);
    if (node.kind === 'object' && typeof seg === 'string') schema = node.child(seg);
    else if (node.kind === 'array') schema = node.element;
    else if (node.kind === 'record') schema = node.value;
    else return [];
  }
  const s = unwrap(schema);
  if (!(s instanceof z.ZodNumber)) return [];
  const out: number[] = [];
  for (const b of [s.minValue, s.maxValue]) {
    if (b !== null && Number.isFinite(b)) out.push(b - 1, b - 0.001, b, b + 0.001, b + 1);
  }
  return out;
}

/** What is wrong with `value` at `path` of the fixture; undefined when it is refused naming the field or holds its meaning. */
function fault(fixture: Record<string, unknown>, path: readonly PathSegment[], value: unknown): string | undefined {
  const field = formatPath(path);
  let problem: Problem;
  try {
    problem = problemFromObject(withValue(fixture, path, value));
    // what holds of the cases that run is checked as they are picked (a trace's window)
    selectCases(problem, 'all');
  } catch (e) {
    if (!(e instanceof ServesimError)) return `threw ${String(e)}`;
    const issues = (e as ServesimError & { issues?: { path: string; message: string }[] }).issues ?? [];
    return issues.some((i) => names(i, field)) ? undefined : `refused without naming it: ${e.message}`;
  }
  try {
    const typed = typedValue(problem, path);
    if (typeof typed === 'number') expect(typed, 'typed value').toBe(meaning(value));
    for (const c of problem.cases) expectFaithful(problem, c, compile(problem, c));
  } catch (e) {
    return `accepted, but ${(e as Error).message.split('\n')[0]}`;
  }
  return undefined;
}

describe('every numeric field of the schema at its extremes', () => {
  const leaves = leafPaths();
  // a field no fixture writes would go unchecked
  const unwritten = leaves.filter((path) => !Object.values(FIXTURES).some((f) => fieldIn(f, path) !== undefined)).map((p) => formatPath(p));

  for (const [kind, fixture] of Object.entries(FIXTURES)) {
    it(`${kind} problem: each value is refused naming the field, or reaches the engines unchanged in meaning`, () => {
      expect(unwritten).toEqual([]);
      const numeric = leaves.flatMap((path) => {
        const field = fieldIn(fixture, path);
        const written = field === undefined ? undefined : rawAt(field.root, path);
        return meaning(written) === undefined ? [] : [{ path, written }];
      });
      expect(numeric.length).toBeGreaterThan(20);
      const faults: string[] = [];
      for (const { path, written } of numeric) {
        // the fixture's own value first: every field has its meaning checked at least once
        for (const value of [written, ...NUMBERS, ...boundsOf(path), ...TEXTS]) {
          const why = fault(fixture, path, value);
          if (why !== undefined) faults.push(`${formatPath(path)}=${String(value)}: ${why}`);
        }
      }
      expect(faults).toEqual([]);
    }, 120_000);
  }
});
