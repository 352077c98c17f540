import { readdirSync, readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { RequestWorkload, TaskWorkload } from '../src/model/problem.js';
import { loadProblem } from '../src/problem/parse.js';
import { problemJsonSchema } from '../src/problem/schema-json.js';

const files = readdirSync('problems')
  .filter((f) => f.endsWith('.yaml'))
  .sort();

const s = (x: number): number => x * 1_000_000;
const ms = (x: number): number => x * 1_000;

describe('shipped problems', () => {
  it('include the two lab seeds, the M/M/c check and at least two more', () => {
    expect(files).toEqual(expect.arrayContaining(['hot-prefix.yaml', 'coding-agents.yaml', 'mmc.yaml']));
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  it.each(files)('%s parses, names its schema first, and has a title and a story', (file) => {
    const text = readFileSync(`problems/${file}`, 'utf8');
    expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=./problem.schema.json');
    const problem = loadProblem(`problems/${file}`);
    expect(problem.id).toBe(file.replace(/\.yaml$/, ''));
    expect(problem.title).not.toBe(problem.id);
    // a comment block after the schema line tells the story
    expect(text.split('\n').slice(1, 4).filter((l) => l.startsWith('#')).length).toBeGreaterThanOrEqual(2);
    expect(problem.cases.length).toBeGreaterThan(0);
  });

  it.each(files)('%s passes the editor JSON Schema too', (file) => {
    // ajv comes with fastify; the editor schema must not reject a file servesim accepts
    const ajv = new Ajv({ strict: false, allErrors: true });
    const validate = ajv.compile(problemJsonSchema());
    const ok = validate(parseYaml(readFileSync(`problems/${file}`, 'utf8')));
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it('are documented in problems/README.md', () => {
    const readme = readFileSync('problems/README.md', 'utf8');
    for (const f of files) expect(readme).toContain(f);
  });
});

describe('hot-prefix carries seed 000', () => {
  const p = loadProblem('problems/hot-prefix.yaml');
  const w = p.workload as RequestWorkload;

  it('traffic: 30 requests a second for 30 seconds, 30 s warm-up', () => {
    expect(p.traffic).toEqual({ rate: 30, duration: s(30), warmup: s(30), warmupAuto: false, trace: null, rateScale: 1 });
    expect(w.kind).toBe('request');
  });
  it('85% of requests share one 12,000-token prefix', () => {
    expect(w.share).toBe(0.85);
    expect(w.prefixes).toEqual([{ tokens: 12_000, weight: 1 }]);
  });
  it('docs/model.md default token counts: suffix 300, unique 2000, output 60', () => {
    expect(w.suffix).toEqual({ kind: 'fixed', value: 300 });
    expect(w.unique).toEqual({ kind: 'fixed', value: 2000 });
    expect(w.output).toEqual({ kind: 'fixed', value: 60 });
  });
  it('AI app: 3 replicas x 500 slots, timeout 30 s', () => {
    expect(p.app).toEqual({ replicas: 3, slots: 500, timeout: s(30), overhead: ms(5) });
    expect(p.lb).toEqual({ overhead: ms(1) });
  });
  it('prefix-aware router with 100000 slots', () => {
    expect(p.router?.policy).toBe('prefix-affinity');
    expect(p.router?.slots).toBe(100_000);
  });
  it('6 GPU replicas x 4 slots, 400k-token KV cache, 8b-h100', () => {
    expect(p.gpu?.replicas).toBe(6);
    expect(p.gpu?.slots).toBe(4);
    expect(p.gpu?.kvTokens).toBe(400_000);
    expect(p.gpu?.profile).toEqual({ name: '8b-h100', base: 8000, perSeq: 250, prefillRate: 16, chunk: 2048 });
  });
  it('goals: success 99%, p99 3 s', () => {
    expect(p.goals).toEqual({ success: 0.99, p99: s(3), ttftP99: null, tpotP99: null });
  });
  it('the four public cases', () => {
    expect(p.cases.map((c) => c.name)).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
    expect(p.orchestrator).toBeNull();
    expect(p.tools).toBeNull();
    expect(p.server).toBeNull();
  });
});

describe('coding-agents carries seed 001', () => {
  const p = loadProblem('problems/coding-agents.yaml');
  const w = p.workload as TaskWorkload;

  it('traffic: 1 task a second for 45 seconds, 30 s warm-up', () => {
    expect(p.traffic).toEqual({ rate: 1, duration: s(45), warmup: s(30), warmupAuto: false, trace: null, rateScale: 1 });
  });
  it('20-step tasks; orchestrator 400 slots', () => {
    expect(p.orchestrator).toEqual({ slots: 400, steps: 20, overhead: 0, toolCalls: 'between-steps' });
  });
  it('docs/model.md default tokens: system 4000, input 1000, output 50', () => {
    expect(w).toEqual({
      kind: 'task',
      system: 4000,
      input: { kind: 'fixed', value: 1000 },
      output: { kind: 'fixed', value: 50 },
    });
  });
  it('Agent API: 3 replicas x 500 slots, timeout 180 s', () => {
    expect(p.app).toEqual({ replicas: 3, slots: 500, timeout: s(180), overhead: ms(5) });
  });
  it('round-robin router with 100000 slots', () => {
    expect(p.router?.policy).toBe('round-robin');
    expect(p.router?.slots).toBe(100_000);
  });
  it('8 GPU replicas x 2 slots, KV cache 150k tokens', () => {
    expect(p.gpu?.replicas).toBe(8);
    expect(p.gpu?.slots).toBe(2);
    expect(p.gpu?.kvTokens).toBe(150_000);
  });
  it('MCP tool servers: 2000 slots, lognormal median 250 ms p99 1 s', () => {
    expect(p.tools).toEqual({ slots: 2000, latency: { kind: 'lognormal', median: ms(250), p99: s(1) } });
  });
  it('goals: success 95%, p99 30 s', () => {
    expect(p.goals).toEqual({ success: 0.95, p99: s(30), ttftP99: null, tpotP99: null });
  });
  it('the four public cases; the kill hits the GPU pool (8 replicas beat the app\'s 3)', () => {
    expect(p.cases.map((c) => c.name)).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
    const dies = p.cases.find((c) => c.name === 'server-dies');
    expect(dies?.failures).toEqual([
      { target: 'gpu', replica: 'random', mode: 'reset', detectAfter: s(5), from: s(30 + 15), to: s(30 + 30) },
    ]);
  });
});

describe('mmc is an M/M/4 at rho 0.8', () => {
  const p = loadProblem('problems/mmc.yaml');
  it('one server of 4 slots, exponential 100 ms service, 32 jobs a second', () => {
    expect(p.workload).toEqual({ kind: 'job' });
    expect(p.server).toEqual({ replicas: 1, slots: 4, service: { kind: 'exponential', mean: ms(100) }, timeout: 0 });
    const mu = 1_000_000 / ms(100);
    expect(p.traffic.rate / ((p.server?.slots ?? 0) * mu)).toBeCloseTo(0.8, 12);
    expect(p.traffic).toEqual({ rate: 32, duration: s(200), warmup: s(20), warmupAuto: false, trace: null, rateScale: 1 });
  });
  it('has no LLM components and only the as-given case', () => {
    expect([p.lb, p.app, p.router, p.gpu, p.orchestrator, p.tools]).toEqual([null, null, null, null, null, null]);
    expect(p.cases.map((c) => c.name)).toEqual(['as-given']);
  });
});
