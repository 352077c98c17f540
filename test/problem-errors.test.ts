import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadProblem, parseProblem, problemFromObject } from '../src/problem/parse.js';
import { thrown } from './support.js';

/** A valid request problem; each bad case below changes one thing in it. */
const BASE = `id: base
goals: { success: 0.99, p99: 3s }
traffic: { rate: 30, duration: 30s, warmup: 10s }
workload:
  kind: request
  prefixes: [ { tokens: 12000, weight: 1 } ]
  share: 0.85
lb: { overhead: 1ms }
app: { replicas: 3, slots: 500, timeout: 30s }
router: { policy: prefix-affinity, slots: 100000 }
gpu: { replicas: 6, slots: 4, kvTokens: 400000, profile: 8b-h100 }
`;

const TASK = `id: task
goals: { success: 0.95, p99: 30s }
traffic: { rate: 1, duration: 45s }
workload: { kind: task }
lb: {}
app: { replicas: 3, slots: 500, timeout: 180s }
orchestrator: { slots: 400, steps: 20 }
router: { policy: round-robin }
gpu: { replicas: 8, slots: 2, kvTokens: 150000 }
tools: { slots: 2000 }
`;

function edit(text: string, from: string | RegExp, to: string): string {
  const out = text.replace(from, to);
  if (out === text) throw new Error(`fixture edit did not apply: ${String(from)}`);
  return out;
}

it('the base fixtures are valid', () => {
  expect(parseProblem(BASE).id).toBe('base');
  expect(parseProblem(TASK).id).toBe('task');
});

// [what is wrong, the file, the field path the message must name, words the message must hold]
const BAD_FILES: readonly (readonly [string, string, string, string])[] = [
  ['unknown key', edit(BASE, 'kvTokens: 400000', 'kvTokenz: 400000'), 'gpu.kvTokenz', 'unknown field (did you mean kvTokens?); gpu takes replicas, slots, kvTokens, kv, profile'],
  ['unknown top-level key', `${BASE}routers: {}\n`, 'routers', 'unknown field (did you mean router?)'],
  ['wrong type', edit(BASE, 'slots: 500', 'slots: many'), 'app.slots', 'must be a positive integer, got "many"'],
  ['negative count', edit(BASE, 'slots: 4,', 'slots: -4,'), 'gpu.slots', 'must be a positive integer, got -4'],
  ['fractional count', edit(BASE, 'replicas: 6', 'replicas: 2.5'), 'gpu.replicas', 'must be a positive integer, got 2.5'],
  ['missing unit', edit(BASE, 'duration: 30s', 'duration: 30'), 'traffic.duration', 'needs a unit'],
  ['unknown unit', edit(BASE, 'timeout: 30s', 'timeout: 30sec'), 'app.timeout', 'unknown unit "sec"'],
  ['bad enum', edit(BASE, 'prefix-affinity', 'fastest'), 'router.policy', 'must be one of round-robin, random, least-loaded, prefix-affinity, bounded-affinity, cache-aware; got "fastest"'],
  ['bad workload kind', edit(BASE, 'kind: request', 'kind: chat'), 'workload.kind', 'must be one of request, task, job; got "chat"'],
  ['missing required component', edit(BASE, /^router:.*\n/m, ''), 'router', 'required: request workloads use lb, app, router, gpu'],
  ['missing task component', edit(TASK, /^tools:.*\n/m, ''), 'tools', 'required: task workloads use lb, app, orchestrator, router, gpu, tools'],
  ['component a job does not use', `id: j
goals: { success: 0.9, p99: 1s }
traffic: { rate: 1, duration: 10s }
workload: { kind: job }
server: { slots: 1, service: 10ms }
gpu: { replicas: 1, slots: 1 }
`, 'gpu', 'job workloads use only server'],
  ['missing required field', edit(BASE, ' p99: 3s ', ' '), 'goals.p99', 'required'],
  ['prefix with negative tokens', edit(BASE, 'tokens: 12000', 'tokens: -1'), 'workload.prefixes[0].tokens', 'must be a positive integer, got -1'],
  ['share without prefixes', edit(BASE, '  prefixes: [ { tokens: 12000, weight: 1 } ]\n', ''), 'workload.prefixes', 'needs 1 to 16 prefixes when share is above 0'],
  ['share over 1', edit(BASE, 'share: 0.85', 'share: 1.2'), 'workload.share', 'must be between 0 and 1'],
  ['too many prefixes', edit(BASE, 'prefixes: [ { tokens: 12000, weight: 1 } ]', `prefixes: [${Array(17).fill('{tokens: 10}').join(', ')}]`), 'workload.prefixes', 'at most 16'],
  ['lognormal p99 below median', edit(BASE, 'share: 0.85', 'share: 0.85\n  output: { dist: lognormal, median: 60, p99: 30 }'), 'workload.output.p99', 'must be greater than the median'],
  ['unknown distribution', edit(BASE, 'share: 0.85', 'share: 0.85\n  output: { dist: normal, mean: 60 }'), 'workload.output.dist', 'must be one of fixed, uniform, lognormal, exponential; got "normal"'],
  ['uniform max below min', edit(TASK, 'tools: { slots: 2000 }', 'tools: { slots: 2000, latency: { dist: uniform, min: 2s, max: 1s } }'), 'tools.latency.max', 'must not be below min'],
  ['confidence 0', `${BASE}confidence: 0\n`, 'confidence', 'greater than 0 and at most 1'],
  ['goal over 100%', edit(BASE, 'success: 0.99', 'success: 101%'), 'goals.success', 'must be greater than 0 and at most 1'],
  ['goal of no success at all', edit(BASE, 'success: 0.99', 'success: 0'), 'goals.success', 'must be greater than 0 and at most 1'],
  ['rate over the limit', edit(BASE, 'rate: 30', 'rate: 200000'), 'traffic.rate', 'must be at most 100000'],
  ['zero rate', edit(BASE, 'rate: 30', 'rate: 0'), 'traffic.rate', 'must be a number 0.01 or more'],
  ['a rate that gives one arrival', edit(BASE, 'rate: 30', 'rate: 0.04'), 'traffic.rate', 'expects 1.20 arrivals in the 30s measured window, fewer than 10'],
  ['too many arrivals for one instance', edit(BASE, 'rate: 30', 'rate: 2000'), 'traffic.rate', 'simulates 80,000 arrivals per instance, warm-up included, over the limit of 50,000'],
  ['a 5us measured window', edit(BASE, 'duration: 30s', 'duration: 5us'), 'traffic.duration', 'must be at least 1s'],
  ['prefix weights whose sum overflows', edit(BASE, 'weight: 1 }', 'weight: 1e308 }, { tokens: 8000, weight: 1e308 }'), 'workload.prefixes[0].weight', 'must be at most 1000'],
  ['a slowdown that would wrap a u32', `${BASE}scenarios: { slow-dependency: { slowdown: { factor: 4294968 } } }\n`, 'scenarios.slow-dependency.slowdown.factor', 'must be at most 1000'],
  ['a load bound finer than the engines hold', edit(BASE, 'policy: prefix-affinity', 'policy: bounded-affinity, boundedLoad: 1.0005'), 'router.boundedLoad', 'must be a whole number of thousandths'],
  ['horizon over the u32 limit', edit(BASE, 'duration: 30s', 'duration: 66m'), 'traffic.duration', 'must be under 4000s (engines keep time in u32 microseconds)'],
  ['GPU batch over its limit', edit(BASE, 'slots: 4,', 'slots: 512,'), 'gpu.slots', 'must be at most 256'],
  ['too many GPU replicas', edit(BASE, 'replicas: 6', 'replicas: 65'), 'gpu.replicas', 'must be at most 64'],
  ['virtual nodes over the limit', edit(BASE, 'slots: 100000 }', 'slots: 100000, virtualNodes: 300 }'), 'router.virtualNodes', 'must be at most 256'],
  ['steps over the limit', edit(TASK, 'steps: 20', 'steps: 1001'), 'orchestrator.steps', 'must be at most 1000'],
  ['bad KV allocation', edit(BASE, 'profile: 8b-h100 }', 'profile: 8b-h100, kv: sometimes }'), 'gpu.kv', 'must be one of reserve, incremental; got "sometimes"'],
  ['unknown profile', edit(BASE, 'profile: 8b-h100', 'profile: 405b-b200'), 'gpu.profile', 'unknown profile; built-in profiles are 8b-h100, 70b-h100'],
  ['inline profile without units', edit(BASE, 'profile: 8b-h100', 'profile: { base: 8, perSeq: 0.25ms, prefillRate: 16, chunk: 2048 }'), 'gpu.profile.base', 'needs a unit'],
  ['KV cache smaller than one request', edit(BASE, 'kvTokens: 400000', 'kvTokens: 2000'), 'gpu.kvTokens', '2000 tokens cannot hold the smallest request (prompt + output), 2060 tokens'],
  ['unknown case name', edit(BASE, 'id: base', 'id: base\ncases: [as-given, peak-hour, peek-hour]'), 'cases[2]', 'unknown case "peek-hour"'],
  ['case listed twice', edit(BASE, 'id: base', 'id: base\ncases: [as-given, as-given]'), 'cases[1]', 'listed twice'],
  ['scenario defined but not run', edit(BASE, 'id: base', 'id: base\ncases: [as-given]\nscenarios: { flash: { rateScale: 2 } }'), 'scenarios.flash', 'not listed in cases'],
  ['window outside the measured window', `${BASE}failures: [{ target: gpu, replica: 1, from: 20s, to: 40s }]\n`, 'failures[0].to', '40s is past the end of the measured window (30s)'],
  ['window backwards', `${BASE}scenarios: { flash: { burst: { scale: 2, from: 20s, to: 10s } } }\n`, 'scenarios.flash.burst.from', 'must be before to'],
  ['replica index out of range', `${BASE}failures: [{ target: gpu, replica: 6 }]\n`, 'failures[0].replica', 'gpu has 6 replicas (0 to 5), got 6'],
  ['target the problem lacks', `${BASE}scenarios: { slow-tools: { slowdown: { target: tools } } }\n`, 'scenarios.slow-tools.slowdown.target', 'the problem has no tools'],
  ['bad failure mode', `${BASE}failures: [{ mode: explode }]\n`, 'failures[0].mode', 'must be one of reset, hang; got "explode"'],
  ['YAML syntax error', edit(BASE, 'gpu: { replicas', 'gpu: {{ replicas'), 'line 12, column 1', 'YAML syntax error'],
  ['YAML duplicate key', `${BASE}seed: 1\nseed: 2\n`, 'line 13, column 1', 'YAML syntax error: Map keys must be unique'],
  ['YAML alias to no anchor', `${BASE}seed: *nowhere\n`, 'line 12, column 7', 'YAML syntax error: alias *nowhere refers to no anchor'],
  ['YAML tag it cannot resolve', `${BASE}title: !!js/function "f() {}"\n`, 'line 12, column 8', 'YAML: Unresolved tag: tag:yaml.org,2002:js/function'],
  ['an empty key', `${BASE}"": 0\n`, '""', 'unknown field; a problem takes id,'],
  ['a null key', `${BASE}: 1\n`, '""', 'unknown field; a problem takes id,'],
  ['a key that is not a name', edit(BASE, 'kvTokens: 400000', 'kvTokens: 400000, kv tokens: 1'), 'gpu."kv tokens"', 'unknown field (did you mean kvTokens?); gpu takes'],
  ['not a mapping', '- just\n- a list\n', '(problem)', 'must be a mapping'],
  ['component not a mapping', edit(BASE, /^lb:.*$/m, 'lb: fast'), 'lb', 'must be a mapping of fields, got "fast"'],
];

describe('malformed problem files', () => {
  it('cover at least 15 distinct mistakes', () => {
    expect(new Set(BAD_FILES.map((b) => b[0])).size).toBe(BAD_FILES.length);
    expect(BAD_FILES.length).toBeGreaterThanOrEqual(15);
  });

  it.each(BAD_FILES.map(([what, text, path, reason]) => [what, path, reason, text] as const))('%s → %s', (_what, path, reason, text) => {
    const err = thrown(() => parseProblem(text, 'bad.yaml'));
    expect(err.code).toBe('SERVESIM_PROBLEM_INVALID');
    expect(err.statusCode).toBe(400);
    expect(err.message).toMatch(/^bad\.yaml: invalid problem: /);
    expect(err.message).toContain(`${path}: `);
    expect(err.message).toContain(reason);
    const issues = (err as unknown as { issues: { path: string }[] }).issues;
    expect(issues.map((i) => i.path)).toContain(path);
  });

  it('field errors carry the line they are on', () => {
    const err = thrown(() => parseProblem(edit(BASE, 'slots: 4,', 'slots: -4,')));
    expect(err.message).toContain('gpu.slots: must be a positive integer, got -4 (line 11)');
  });
});

describe('keys that are not field names', () => {
  const raw = parseYaml(BASE) as Record<string, unknown>;

  it.each([
    ['', '""'],
    ['two words', '"two words"'],
    ['gpu.slots', '"gpu.slots"'],
  ])('an object key %j is named %s, quoted as a path', (key, path) => {
    const err = thrown(() => problemFromObject({ ...raw, [key]: 0 }));
    expect((err as unknown as { issues: unknown[] }).issues).toEqual([{ path, message: expect.stringMatching(/^unknown field; a problem takes /) }]);
  });
});

describe('files that cannot be read', () => {
  it('a missing file is SERVESIM_FILE_UNREADABLE naming the path', () => {
    const err = thrown(() => loadProblem('problems/no-such-problem.yaml'));
    expect(err.code).toBe('SERVESIM_FILE_UNREADABLE');
    expect(err.message).toContain('problems/no-such-problem.yaml');
  });
  it('a directory is SERVESIM_FILE_UNREADABLE', () => {
    expect(thrown(() => loadProblem('problems')).code).toBe('SERVESIM_FILE_UNREADABLE');
  });
});
