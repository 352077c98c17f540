import { describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import type { Problem } from '../src/model/problem.js';
import { parseProblem, problemFromObject, selectCases } from '../src/problem/parse.js';

const s = (x: number): number => x * 1_000_000;
const ms = (x: number): number => x * 1_000;

/** The least a request problem may say: everything else is a default. */
const MINIMAL_REQUEST = `
id: tiny
goals: { success: 0.99, p99: 2s }
traffic: { rate: 5, duration: 30s }
workload: { kind: request }
lb: {}
app: { slots: 100, timeout: 10s }
router: { policy: least-loaded }
gpu: { replicas: 2, slots: 4 }
`;

const MINIMAL_TASK = `
id: agents
goals: { success: 95%, p99: 30s }
traffic: { rate: 1, duration: 60s }
workload: { kind: task }
lb: {}
app: { slots: 100, timeout: 120s }
orchestrator: { slots: 50, steps: 5 }
router: { policy: prefix-affinity }
gpu: { replicas: 3, slots: 2 }
tools: { slots: 10 }
`;

const MINIMAL_JOB = `
id: queue
goals: { success: 0.99, p99: 1s }
traffic: { rate: 10, duration: 60s }
workload: { kind: job }
server: { slots: 2, service: { dist: exponential, mean: 50ms } }
`;

describe('defaults', () => {
  const p = parseProblem(MINIMAL_REQUEST);

  it('fill the problem-level fields', () => {
    expect(p.title).toBe('tiny');
    expect(p.confidence).toBe(0.9);
    expect(p.seed).toBe(1);
    expect(p.traffic.warmup).toBe(s(10));
  });

  it('fill the per-hop overheads: lb 1ms, app 5ms, router 1ms', () => {
    expect(p.lb).toEqual({ overhead: ms(1) });
    expect(p.app).toEqual({ replicas: 1, slots: 100, timeout: s(10), overhead: ms(5) });
    expect(p.router).toEqual({
      policy: 'least-loaded',
      slots: 100_000,
      overhead: ms(1),
      boundedLoad: 1.25,
      alpha: 1,
      retries: 1,
      virtualNodes: 64,
      affinityBlocks: 2,
    });
  });

  it('fill the GPU pool: 400k KV tokens reserved at admission, the 8b-h100 profile', () => {
    expect(p.gpu).toEqual({
      replicas: 2,
      slots: 4,
      kvTokens: 400_000,
      kv: 'reserve',
      profile: { name: '8b-h100', base: 8000, perSeq: 250, prefillRate: 16, chunk: 2048 },
    });
  });

  it('fill the request workload from docs/model.md section 8', () => {
    expect(p.workload).toEqual({
      kind: 'request',
      prefixes: [],
      share: 0,
      suffix: { kind: 'fixed', value: 300 },
      unique: { kind: 'fixed', value: 2000 },
      output: { kind: 'fixed', value: 60 },
    });
  });

  it('run the four built-in cases', () => {
    expect(p.cases.map((c) => c.name)).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
  });

  it('for a task workload: 30s warm-up, 4000/1000/50 tokens, lognormal tools, orchestrator overhead 0', () => {
    const t = parseProblem(MINIMAL_TASK);
    expect(t.traffic.warmup).toBe(s(30));
    expect(t.goals.success).toBe(0.95);
    expect(t.workload).toEqual({
      kind: 'task',
      system: 4000,
      input: { kind: 'fixed', value: 1000 },
      output: { kind: 'fixed', value: 50 },
    });
    expect(t.tools).toEqual({ slots: 10, latency: { kind: 'lognormal', median: ms(250), p99: s(1) } });
    expect(t.orchestrator).toEqual({ slots: 50, steps: 5, overhead: 0, toolCalls: 'between-steps' });
  });

  it('for a job workload: one replica, no timeout, 10s warm-up; slow-dependency and server-dies hit the server', () => {
    const j = parseProblem(MINIMAL_JOB);
    expect(j.server).toEqual({ replicas: 1, slots: 2, service: { kind: 'exponential', mean: ms(50) }, timeout: 0 });
    expect(j.traffic.warmup).toBe(s(10));
    expect(j.cases.find((c) => c.name === 'slow-dependency')?.slowdown?.target).toBe('server');
    expect(j.cases.find((c) => c.name === 'server-dies')?.failures[0]?.target).toBe('server');
  });

  it('produce exactly the typed Problem: no stray keys', () => {
    const keys = Object.keys(p).sort();
    expect(keys).toEqual(
      ['app', 'cases', 'confidence', 'goals', 'gpu', 'id', 'lb', 'orchestrator', 'router', 'seed', 'server', 'title', 'tools', 'traffic', 'workload'].sort(),
    );
  });
});

describe('distributions', () => {
  const withSuffix = (suffix: string): Problem =>
    parseProblem(MINIMAL_REQUEST.replace('workload: { kind: request }', `workload: { kind: request, suffix: ${suffix} }`));

  it('take every form in token fields', () => {
    expect((withSuffix('{dist: fixed, value: 7}').workload as { suffix: unknown }).suffix).toEqual({ kind: 'fixed', value: 7 });
    expect((withSuffix('{dist: uniform, min: 100, max: 500}').workload as { suffix: unknown }).suffix).toEqual({
      kind: 'uniform',
      min: 100,
      max: 500,
    });
    expect((withSuffix('{dist: lognormal, median: 300, p99: 3000}').workload as { suffix: unknown }).suffix).toEqual({
      kind: 'lognormal',
      median: 300,
      p99: 3000,
    });
    expect((withSuffix('{dist: exponential, mean: 200}').workload as { suffix: unknown }).suffix).toEqual({
      kind: 'exponential',
      mean: 200,
    });
  });

  it('take durations with units in time fields', () => {
    const t = parseProblem(MINIMAL_TASK.replace('tools: { slots: 10 }', 'tools: { slots: 10, latency: { dist: uniform, min: 100ms, max: 1.5s } }'));
    expect(t.tools?.latency).toEqual({ kind: 'uniform', min: ms(100), max: ms(1500) });
    const fixed = parseProblem(MINIMAL_TASK.replace('tools: { slots: 10 }', 'tools: { slots: 10, latency: 300ms }'));
    expect(fixed.tools?.latency).toEqual({ kind: 'fixed', value: ms(300) });
  });
});

describe('cases', () => {
  const p = parseProblem(MINIMAL_REQUEST);
  const byName = (problem: Problem, name: string) => problem.cases.find((c) => c.name === name);

  it('as-given and peak-hour change only the rate', () => {
    expect(byName(p, 'as-given')).toEqual({ name: 'as-given', rateScale: 1, burst: null, slowdown: null, failures: [] });
    expect(byName(p, 'peak-hour')).toEqual({ name: 'peak-hour', rateScale: 1.25, burst: null, slowdown: null, failures: [] });
  });

  it('slow-dependency doubles GPU time in the middle third of the measured window, in run time', () => {
    // warmup 10s, duration 30s: the middle third is 20s..30s from the start of the run
    expect(byName(p, 'slow-dependency')?.slowdown).toEqual({ target: 'gpu', factor: 2, from: s(20), to: s(30) });
  });

  it('server-dies resets a GPU replica drawn per seed in the middle third (the GPU pool wins a tie with the app)', () => {
    const tie = parseProblem(MINIMAL_REQUEST.replace('app: { slots', 'app: { replicas: 2, slots'));
    expect(byName(tie, 'server-dies')?.failures).toEqual([
      { target: 'gpu', replica: 'random', mode: 'reset', detectAfter: s(5), from: s(20), to: s(30) },
    ]);
    const moreApps = parseProblem(MINIMAL_REQUEST.replace('app: { slots', 'app: { replicas: 3, slots'));
    expect(byName(moreApps, 'server-dies')?.failures[0]?.target).toBe('app');
  });

  it("every case carries the problem's own failures", () => {
    const f = parseProblem(
      `${MINIMAL_REQUEST}failures: [{ target: gpu, replica: 1, mode: hang, from: 5s, to: 15s }]\n`,
    );
    const own = { target: 'gpu', replica: 1, mode: 'hang', detectAfter: s(5), from: s(15), to: s(25) };
    for (const c of f.cases) expect(c.failures[0]).toEqual(own);
    expect(byName(f, 'server-dies')?.failures).toHaveLength(2);
  });

  it('scenarios add named cases (run after the built-in ones) and change built-in ones', () => {
    const f = parseProblem(`${MINIMAL_REQUEST}scenarios:
  flash-crowd: { burst: { scale: 3, from: 5s, to: 10s } }
  peak-hour: { rateScale: 1.5 }
  slow-dependency: { slowdown: { factor: 4 } }
  server-dies: { failures: [{ replica: 1, mode: hang, detectAfter: 2s }] }
`);
    expect(f.cases.map((c) => c.name)).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies', 'flash-crowd']);
    expect(byName(f, 'flash-crowd')).toEqual({
      name: 'flash-crowd',
      rateScale: 1,
      burst: { scale: 3, from: s(15), to: s(20) },
      slowdown: null,
      failures: [],
    });
    expect(byName(f, 'peak-hour')?.rateScale).toBe(1.5);
    expect(byName(f, 'slow-dependency')?.slowdown).toEqual({ target: 'gpu', factor: 4, from: s(20), to: s(30) });
    expect(byName(f, 'server-dies')?.failures).toEqual([
      { target: 'gpu', replica: 1, mode: 'hang', detectAfter: s(2), from: s(20), to: s(30) },
    ]);
  });

  it('cases lists the cases to run, in its order', () => {
    const f = parseProblem(`${MINIMAL_REQUEST}cases: [server-dies, as-given]\n`);
    expect(f.cases.map((c) => c.name)).toEqual(['server-dies', 'as-given']);
  });

  it('selectCases picks by name, in the order asked; all or nothing means every case', () => {
    expect(selectCases(p, ['server-dies', 'as-given']).map((c) => c.name)).toEqual(['server-dies', 'as-given']);
    expect(selectCases(p, 'all')).toHaveLength(4);
    expect(selectCases(p, ['all'])).toHaveLength(4);
    expect(selectCases(p, [])).toHaveLength(4);
  });

  it('selectCases refuses an unknown case, listing the known ones', () => {
    let err: unknown;
    try {
      selectCases(p, ['peek-hour']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ServesimError);
    expect((err as ServesimError).code).toBe('SERVESIM_CASE_UNKNOWN');
    expect((err as ServesimError).message).toBe(
      "unknown case 'peek-hour'; tiny has as-given, peak-hour, slow-dependency, server-dies",
    );
  });
});

describe('problemFromObject', () => {
  it('takes the same problem as JSON, with overrides', () => {
    const raw = {
      id: 'tiny',
      goals: { success: '99%', p99: '2s' },
      traffic: { rate: 5, duration: '30s' },
      workload: { kind: 'request' },
      lb: {},
      app: { slots: 100, timeout: '10s' },
      router: { policy: 'least-loaded' },
      gpu: { replicas: 2, slots: 4 },
    };
    expect(problemFromObject(raw)).toEqual(parseProblem(MINIMAL_REQUEST));
    expect(problemFromObject(raw, ['gpu.slots=8']).gpu?.slots).toBe(8);
    // the caller's object is left alone
    expect(raw.gpu.slots).toBe(4);
  });

  it('accepts a $schema key, as JSON files name their schema', () => {
    expect(() => parseProblem(`{"$schema": "./problem.schema.json", ${JSON.stringify({ id: 'x' }).slice(1, -1)}}`)).toThrow(/goals: required/);
  });

  it('reports every issue at once, not only the first', () => {
    let err: unknown;
    try {
      problemFromObject({ id: 'x', goals: { success: 2, p99: 3 }, traffic: { rate: -1, duration: '1s' }, workload: { kind: 'job' } });
    } catch (e) {
      err = e;
    }
    const issues = (err as { issues: { path: string }[] }).issues.map((i) => i.path);
    expect(issues).toEqual(expect.arrayContaining(['goals.success', 'goals.p99', 'traffic.rate', 'server']));
  });
});
