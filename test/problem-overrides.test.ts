import { describe, expect, it } from 'vitest';
import { loadProblem } from '../src/problem/parse.js';
import { applyOverrides, parseOverride, settablePaths } from '../src/problem/overrides.js';
import { thrown } from './support.js';

const HOT = 'problems/hot-prefix.yaml';
const AGENTS = 'problems/coding-agents.yaml';

describe('--set on fields the file gives', () => {
  it.each([
    ['gpu.slots=8', (p: ReturnType<typeof loadProblem>) => p.gpu?.slots, 8],
    ['gpu.replicas=12', (p: ReturnType<typeof loadProblem>) => p.gpu?.replicas, 12],
    ['router.policy=prefix-affinity', (p: ReturnType<typeof loadProblem>) => p.router?.policy, 'prefix-affinity'],
    ['router.policy=cache-aware', (p: ReturnType<typeof loadProblem>) => p.router?.policy, 'cache-aware'],
    ['app.timeout=20s', (p: ReturnType<typeof loadProblem>) => p.app?.timeout, 20_000_000],
    ['traffic.rate=40', (p: ReturnType<typeof loadProblem>) => p.traffic.rate, 40],
    ['workload.share=0.5', (p: ReturnType<typeof loadProblem>) => (p.workload as unknown as { share: number }).share, 0.5],
    ['goals.success=95%', (p: ReturnType<typeof loadProblem>) => p.goals.success, 0.95],
    ['workload.prefixes[0].tokens=8000', (p: ReturnType<typeof loadProblem>) => (p.workload as unknown as { prefixes: { tokens: number }[] }).prefixes[0]?.tokens, 8000],
    ['gpu.profile=70b-h100', (p: ReturnType<typeof loadProblem>) => p.gpu?.profile.name, '70b-h100'],
    // a field the file leaves to its default (reserve)
    ['gpu.kv=incremental', (p: ReturnType<typeof loadProblem>) => p.gpu?.kv, 'incremental'],
  ])('%s', (set, get, want) => {
    expect(get(loadProblem(HOT, [set]))).toEqual(want);
  });
});

describe('--set on fields the file leaves to their defaults', () => {
  it('router.alpha, router.boundedLoad, confidence, seed, traffic.warmup', () => {
    const p = loadProblem(HOT, ['router.alpha=2', 'router.boundedLoad=1.5', 'confidence=0.95', 'seed=7', 'traffic.warmup=20s']);
    expect(p.router?.alpha).toBe(2);
    expect(p.router?.boundedLoad).toBe(1.5);
    expect(p.confidence).toBe(0.95);
    expect(p.seed).toBe(7);
    expect(p.traffic.warmup).toBe(20_000_000);
    // the windows move with the warm-up: middle third of 30s after 20s of warm-up
    expect(p.cases.find((c) => c.name === 'slow-dependency')?.slowdown).toMatchObject({ from: 30_000_000, to: 40_000_000 });
  });

  it('one field of the built-in GPU profile, keeping the rest', () => {
    const p = loadProblem(HOT, ['gpu.profile.prefillRate=20']);
    expect(p.gpu?.profile).toEqual({ name: '8b-h100 (modified)', base: 8000, perSeq: 250, prefillRate: 20, chunk: 2048 });
  });

  it('a case under scenarios the file does not have', () => {
    const p = loadProblem(HOT, ['scenarios.peak-hour.rateScale=1.5']);
    expect(p.cases.find((c) => c.name === 'peak-hour')?.rateScale).toBe(1.5);
  });

  it('a whole distribution or list as a YAML flow value', () => {
    const p = loadProblem(AGENTS, ['tools.latency={dist: lognormal, median: 400ms, p99: 2s}', 'cases=[as-given]']);
    expect(p.tools?.latency).toEqual({ kind: 'lognormal', median: 400_000, p99: 2_000_000 });
    expect(p.cases.map((c) => c.name)).toEqual(['as-given']);
  });

  it('later --set wins over earlier', () => {
    expect(loadProblem(HOT, ['gpu.slots=8', 'gpu.slots=16']).gpu?.slots).toBe(16);
  });
});

describe('applyOverrides', () => {
  it('leaves its input alone', () => {
    const raw = { gpu: { slots: 4 } };
    const out = applyOverrides(raw, ['gpu.slots=8']) as { gpu: { slots: number } };
    expect(out.gpu.slots).toBe(8);
    expect(raw.gpu.slots).toBe(4);
  });

  it('parses values as YAML scalars', () => {
    expect(parseOverride('gpu.slots=8').value).toBe(8);
    expect(parseOverride('router.boundedLoad=1.5').value).toBe(1.5);
    expect(parseOverride('router.policy=round-robin').value).toBe('round-robin');
    expect(parseOverride('app.timeout=20s').value).toBe('20s');
    expect(parseOverride('id="a=b"').value).toBe('a=b');
    expect(parseOverride('workload.prefixes[0].tokens=1').path).toEqual(['workload', 'prefixes', 0, 'tokens']);
  });

  it('lists every settable path, from the schema', () => {
    const paths = settablePaths();
    for (const p of [
      'gpu.slots',
      'gpu.replicas',
      'gpu.kvTokens',
      'gpu.profile',
      'gpu.profile.prefillRate',
      'router.policy',
      'router.alpha',
      'router.boundedLoad',
      'app.timeout',
      'traffic.rate',
      'traffic.warmup',
      'workload.share',
      'workload.system',
      'orchestrator.steps',
      'tools.latency',
      'server.service',
      'confidence',
      'cases',
    ]) {
      expect(paths).toContain(p);
    }
    expect(new Set(paths).size).toBe(paths.length);
    // every listed path is accepted by --set (on a problem that has the component)
    const sample = paths.filter((p) => p.startsWith('gpu.') || p.startsWith('router.'));
    for (const p of sample) expect(() => applyOverrides({ gpu: {}, router: {} }, [`${p}=1`])).not.toThrow();
  });
});

describe('bad --set', () => {
  it.each([
    ['gpu.slotz=8', 'gpu.slotz', 'unknown field (did you mean slots?); gpu takes replicas, slots, kvTokens, kv, profile'],
    ['router.fastest=1', 'router.fastest', 'router takes policy, slots, overhead, boundedLoad, alpha, retries, virtualNodes'],
    ['gpuu.slots=8', 'gpuu', 'unknown field (did you mean gpu?)'],
    ['tools.slots=8', 'tools.slots', 'the problem has no tools'],
    ['orchestrator.steps=8', 'orchestrator.steps', 'the problem has no orchestrator'],
    ['workload.system=100', 'workload.system', 'a request workload takes kind, prefixes, share'],
    ['gpu.slots', 'gpu.slots', 'expected PATH=VALUE'],
    ['=8', '=8', 'the path before = is empty'],
    ['gpu..slots=8', 'gpu..slots', 'not a field path'],
    ['gpu.slots=', 'gpu.slots', 'no value after ='],
    ['gpu.slots.max=3', 'gpu.slots.max', 'gpu.slots is a single value; it has no field max'],
    ['workload.prefixes[3].tokens=5', 'workload.prefixes[3]', 'workload.prefixes has 1 entry'],
    ['workload.suffix.median=5', 'workload.suffix.median', 'set the whole workload.suffix'],
    ['gpu.slots=[1, 2', 'gpu.slots', 'is not valid YAML'],
    ['title=!!js/function "f() {}"', 'title', 'is not valid YAML: Unresolved tag: tag:yaml.org,2002:js/function'],
  ])('%s → %s', (set, path, reason) => {
    const err = thrown(() => loadProblem(HOT, [set]));
    expect(err.code).toBe('SERVESIM_OVERRIDE_INVALID');
    expect(err.message).toContain(`${path}: `);
    expect(err.message).toContain(reason);
  });

  it('reports every bad --set at once', () => {
    const err = thrown(() => loadProblem(HOT, ['gpu.slotz=8', 'tools.slots=1']));
    expect((err as unknown as { issues: { path: string }[] }).issues.map((i) => i.path)).toEqual(['gpu.slotz', 'tools.slots']);
  });

  it.each([
    ['gpu.slots=-4', 'gpu.slots: must be a positive integer, got -4 (from --set gpu.slots=-4)'],
    ['gpu.slots=300', 'gpu.slots: must be at most 256 (sequences in one batch), got 300'],
    ['gpu.replicas=65', 'gpu.replicas: must be at most 64 (GPU replicas)'],
    ['app.timeout=20', 'app.timeout: needs a unit, e.g. 20s or 20ms; got 20'],
    ['router.policy=fastest', 'router.policy: must be one of round-robin, random, least-loaded, prefix-affinity, bounded-affinity, cache-aware; got "fastest"'],
    ['workload.share=1.5', 'workload.share: must be between 0 and 1'],
    ['router.boundedLoad=0.5', 'router.boundedLoad: must be a number 1 or more, got 0.5'],
    ['gpu.kv=sometimes', 'gpu.kv: must be one of reserve, incremental; got "sometimes" (from --set gpu.kv=sometimes)'],
  ])('ill-typed %s is a validation error naming the field', (set, message) => {
    const err = thrown(() => loadProblem(HOT, [set]));
    expect(err.code).toBe('SERVESIM_PROBLEM_INVALID');
    expect(err.message).toContain(message);
  });
});
