/**
 * The field's metrics (docs/model.md section 5): time to first token, time per output token,
 * throughput and goodput, and each component's load and failures, as the engines count them.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { runHints } from '../src/hint/search.js';
import { bucketOf } from '../src/model/histogram.js';
import { problemFromObject } from '../src/problem/parse.js';
import { summarize } from '../src/model/summarize.js';
import { closePool, decodeAll, runCase, sum } from './support.js';

afterAll(closePool);

// fast-check's seed, fixed so that CI runs the same problems every time (as test/input-fuzz does)
const SEED = 20_261_201;

/** A request problem small enough to run a few seeds in milliseconds. */
function requestProblem(fields: {
  rate: number; replicas: number; slots: number; prompt: number; output: number; chunk: number; policy: string;
}) {
  return problemFromObject({
    id: 'metrics',
    goals: { success: 0.5, p99: '10s' },
    traffic: { rate: fields.rate, duration: '4s', warmup: '1s' },
    workload: { kind: 'request', unique: { dist: 'uniform', min: 1, max: fields.prompt }, output: { dist: 'uniform', min: 1, max: fields.output } },
    lb: {},
    app: { slots: 200, timeout: '3s' },
    router: { policy: fields.policy },
    gpu: { replicas: fields.replicas, slots: fields.slots, profile: { base: '8ms', perSeq: '0.25ms', prefillRate: 16, chunk: fields.chunk } },
    cases: ['as-given', 'server-dies'],
  });
}

describe('time to first token', () => {
  it('is never longer than the request it belongs to, on random request problems', () => {
    const problems = fc.record({
      rate: fc.integer({ min: 5, max: 120 }),
      replicas: fc.integer({ min: 1, max: 4 }),
      slots: fc.integer({ min: 1, max: 16 }),
      prompt: fc.integer({ min: 1, max: 6000 }),
      output: fc.integer({ min: 1, max: 300 }),
      chunk: fc.integer({ min: 64, max: 4096 }),
      policy: fc.constantFrom('round-robin', 'least-loaded', 'cache-aware'),
      caseIndex: fc.integer({ min: 0, max: 1 }),
    });
    fc.assert(fc.property(problems, ({ caseIndex, ...fields }) => {
      const problem = requestProblem(fields);
      const config = compile(problem, problem.cases[caseIndex]!);
      for (const r of decodeAll(config, runReference(config, 7, 0, 2))) {
        // a request's one call finishes as the request succeeds
        expect(r.callsDone).toBe(r.successes);
        expect(r.ttftSum).toBeLessThanOrEqual(r.latencySum);
        // each request's TTFT <= its latency, so at every bucket at least as many TTFTs as latencies lie at or below it
        let ttftBelow = 0;
        let latencyBelow = 0;
        for (let b = 0; b < r.latency.length; b++) {
          ttftBelow += r.ttft[b]!;
          latencyBelow += r.latency[b]!;
          expect(ttftBelow).toBeGreaterThanOrEqual(latencyBelow);
        }
      }
    }), { numRuns: 40, seed: SEED });
  });
});

describe('a request alone on its replica', () => {
  it('decodes at the profile time per token, and waits only for its hops and its prefill', () => {
    // one slot: no call ever shares an iteration, so every token after the first takes base + perSeq
    const problem = requestProblem({ rate: 5, replicas: 2, slots: 1, prompt: 1000, output: 20, chunk: 2048, policy: 'round-robin' });
    const config = compile(problem, problem.cases[0]!);
    const p = config.params;
    const results = decodeAll(config, runReference(config, 3, 0, 8));
    const perToken = p[P.ITER_BASE]! + p[P.ITER_PER_SEQ]!;
    expect(perToken).toBe(8250);
    expect(sum(results, 'tpotCalls')).toBeGreaterThan(100);
    expect(sum(results, 'tpotSum')).toBe(perToken * sum(results, 'tpotCalls'));
    // every gap between two tokens alike: the mean inter-token latency's sum over its gaps
    expect(sum(results, 'itlSum')).toBe(perToken * (sum(results, 'outputTokens') - sum(results, 'callsDone')));
    for (const r of results) expect(r.tpot[bucketOf(perToken)]).toBe(r.tpotCalls);
    // an unqueued call's TTFT: the three hops, then one prefill iteration of its whole prompt
    const hops = p[P.LB_OVERHEAD]! + p[P.APP_OVERHEAD]! + p[P.ROUTER_OVERHEAD]!;
    const shortest = hops + p[P.ITER_BASE]! + Math.ceil((1 * p[P.PREFILL_NS_PER_TOKEN]!) / 1000);
    const longest = hops + p[P.ITER_BASE]! + Math.ceil((1000 * p[P.PREFILL_NS_PER_TOKEN]!) / 1000);
    const first = results.map((r) => r.ttft.findIndex((c) => c > 0)).reduce((a, b) => Math.min(a, b));
    expect(first).toBeGreaterThanOrEqual(bucketOf(shortest));
    expect(first).toBeLessThanOrEqual(bucketOf(longest));
  });
});

describe('throughput and goodput', () => {
  it('count output tokens and the successes that met every goal', async () => {
    const { problem, results } = await runCase('hot-prefix', { seeds: 4, sets: ['router.policy=least-loaded', 'gpu.slots=16'] });
    const row = summarize('as-given', problem.goals, problem.confidence, results, problem.app!.timeout);
    const seconds = sum(results, 'measuredMicros') / 1e6;
    expect(row.output_tokens_per_s).toBeCloseTo(sum(results, 'outputTokens') / seconds, 9);
    expect(row.output_tokens_per_s_per_replica).toBeCloseTo(row.output_tokens_per_s / problem.gpu!.replicas, 9);
    // 60 output tokens a request, at the problem's rate
    expect(row.output_tokens_per_s / (60 * problem.traffic.rate)).toBeGreaterThan(0.9);
    expect(row.output_tokens_per_s / (60 * problem.traffic.rate)).toBeLessThan(1.1);
    // the latency goal alone: every success within p99's goal is good
    expect(row.goodput_per_s).toBeGreaterThan(0);
    expect(sum(results, 'good')).toBeLessThanOrEqual(sum(results, 'successes'));
    // a TTFT goal no call meets leaves no goodput, and fails the case
    const strict = await runCase('hot-prefix', { seeds: 4, sets: ['router.policy=least-loaded', 'gpu.slots=16', 'goals.ttft_p99=1ms'] });
    const strictRow = summarize('as-given', strict.problem.goals, strict.problem.confidence, strict.results, strict.problem.app!.timeout);
    expect(sum(strict.results, 'good')).toBe(0);
    expect(strictRow.goodput_per_s).toBe(0);
    expect(strictRow.passes).toBe(false);
  });
});

describe('components', () => {
  it('count rejections where they happen', async () => {
    const router = await runCase('hot-prefix', { seeds: 2, sets: ['router.slots=2'] });
    const app = await runCase('hot-prefix', { seeds: 2, sets: ['app.slots=2'] });
    for (const r of router.results) {
      expect(r.components.router!.rejected).toBeGreaterThan(0);
      expect(r.components.router!.rejected).toBe(r.rejected);
    }
    for (const r of app.results) {
      expect(r.components.app!.rejected).toBeGreaterThan(0);
      expect(r.components.app!.rejected).toBe(r.rejected);
    }
  });

  it('show scarce tool slots saturated, with their queue, and the hint names them', async () => {
    const { problem, results } = await runCase('coding-agents', { seeds: 4, sets: ['tools.slots=1', 'router.policy=least-loaded'] });
    const row = summarize('as-given', problem.goals, problem.confidence, results, problem.app!.timeout);
    expect(row.tools_utilization).toBeGreaterThan(0.95);
    expect(row.tools_wait_p99_ms).toBeGreaterThan(10_000);
    expect(row.tools_timed_out).toBeGreaterThan(0);
    expect(row.longest_queue_at).toBe('tools');
    expect(row.gpu_utilization).toBeLessThan(row.tools_utilization);

    // a hint over tool slots that are all too few says why, naming the tools
    const hint = await runHints({ problem: 'coding-agents', vary: { 'tools.slots': [1, 2] }, cases: ['as-given'], seeds: 2, engine: 'cpu' });
    expect(hint.hints).toHaveLength(0);
    expect(hint.failing[0]!.cases[0]!.why).toMatch(/; tools at (9\d|100)% utilization, p99 queue wait [\d.]+ s(; most failures at tools \(timed out \d+\))?$/);
  });

  it('every-step tool calls make one tool call a step, between-steps one fewer', async () => {
    const between = await runCase('coding-agents', { seeds: 2, sets: ['router.policy=least-loaded', 'gpu.slots=8'] });
    const every = await runCase('coding-agents', { seeds: 2, sets: ['router.policy=least-loaded', 'gpu.slots=8', 'orchestrator.toolCalls=every-step'] });
    const steps = between.problem.orchestrator!.steps;
    const toolCallsPerTask = (rs: typeof between.results): number =>
      rs.reduce((s, r) => s + r.components.tools!.queue!.reached, 0) / sum(rs, 'successes');
    // successes made all their calls; the few tasks still running at the window's edge add a little
    expect(toolCallsPerTask(between.results)).toBeGreaterThanOrEqual(steps - 1);
    expect(toolCallsPerTask(between.results)).toBeLessThan(steps - 0.5);
    expect(toolCallsPerTask(every.results)).toBeGreaterThanOrEqual(steps);
    expect(toolCallsPerTask(every.results)).toBeLessThan(steps + 0.5);
  });
});
