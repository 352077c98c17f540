/**
 * A run of alike prefill steps is one event (docs/model.md section 3): a long prompt's chunks
 * cost a few events, not one a chunk, and its first token comes where stepping one chunk at a
 * time puts it; a call that finds a free slot mid-run waits only for the step under way.
 */
import { describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import type { RequestRecorder } from '../src/engine/simulate.js';
import { problemFromObject } from '../src/problem/parse.js';
import { decodeAll, sum } from './support.js';

const PROMPT = 10_000;
const CHUNK = 512;

/** Requests of one fixed long prompt and one output token (so a call ends with its prefill), `rate` a second on two replicas of `slots` slots. */
function longPrompts(slots: number, rate: number) {
  return problemFromObject({
    id: 'prefill-runs',
    goals: { success: 0.5, p99: '60s' },
    traffic: { rate, duration: '60s', warmup: '1s' },
    workload: { kind: 'request', unique: PROMPT, output: 1 },
    lb: {},
    app: { slots: 200, timeout: '60s' },
    router: { policy: 'round-robin' },
    gpu: { replicas: 2, slots, profile: { base: '8ms', perSeq: '0.25ms', prefillRate: 16, chunk: CHUNK } },
    cases: ['as-given'],
  });
}

/** Each counted call's GPU queue wait and time to first token, by arrival index. */
function calls(config: ReturnType<typeof compile>, instances: number) {
  const seen: { wait: number; ttft: number }[] = [];
  const records = runReference(config, 5, 0, instances, 1, () => {
    const waits = new Map<number, number>();
    return {
      waited: (index, atTools, wait) => { if (!atTools) waits.set(index, wait); },
      called: (index, _step, callAt, firstAt) => { seen.push({ wait: waits.get(index)!, ttft: firstAt - callAt }); },
      resolved: () => {},
    } satisfies RequestRecorder;
  });
  return { seen, results: decodeAll(config, records) };
}

describe('a long prompt', () => {
  it('alone on its replica takes its chunks as one run, its first token after the last', () => {
    const problem = longPrompts(1, 2);
    const config = compile(problem, problem.cases[0]!);
    const p = config.params;
    // one step of `tokens` prompt tokens, no sequence decoding (docs/model.md section 3)
    const step = (tokens: number) => p[P.ITER_BASE]! + Math.ceil((tokens * p[P.PREFILL_NS_PER_TOKEN]! + p[P.ITER_BASE_NS]!) / 1000);
    const full = Math.floor(PROMPT / CHUNK);
    const prefill = full * step(CHUNK) + step(PROMPT - full * CHUNK);
    const hops = p[P.LB_OVERHEAD]! + p[P.APP_OVERHEAD]! + p[P.ROUTER_OVERHEAD]!;
    const { seen, results } = calls(config, 4);
    expect(seen.length).toBeGreaterThan(100);
    // some calls queued behind another, and each waited in the queue, then the steps of its prompt
    expect(seen.some((c) => c.wait > 0)).toBe(true);
    for (const c of seen) expect(c.ttft - c.wait).toBe(hops + prefill);
    // one step at a time would be 20 events a call for its prompt alone
    expect(sum(results, 'events') / sum(results, 'arrivals')).toBeLessThan(full / 2);
  });

  it('leaves a free slot to a call that reaches it mid-run at the end of the step under way', () => {
    const problem = longPrompts(2, 0.5);
    const config = compile(problem, problem.cases[0]!);
    const p = config.params;
    // the longest step: a whole chunk beside one decoding sequence at most (one output token: none decodes)
    const longest = p[P.ITER_BASE]! + Math.ceil((CHUNK * p[P.PREFILL_NS_PER_TOKEN]! + p[P.ITER_BASE_NS]!) / 1000);
    const { seen } = calls(config, 8);
    // two slots, a prompt of 20 steps every 4 s on each replica: most calls find it idle, some
    // mid-run of another's prompt, few both slots taken
    const midRun = seen.filter((c) => c.wait > 0 && c.wait < longest);
    expect(midRun.length).toBeGreaterThan(10);
    // a call that waited a step or more found both slots taken (a run not cut would hold the others too)
    expect(seen.filter((c) => c.wait >= longest).length).toBeLessThan(seen.length / 10);
  });
});
