/**
 * BLIS's latency model as BLIS states it (issue 27; docs/model.md section 3): a call joins its
 * replica's queue alpha0 + alpha1 x its prompt tokens after the router sends it, and each token
 * it returns takes alpha2 after its step, counted in its time to first token and its end but in
 * no GPU step; every coefficient held to the nanosecond. So a request alone on a replica takes
 * BLIS's time per output token on every catalogue profile, but where the fit's whole token is
 * faster than the roofline floor, which `servesim profiles` flags. Profiles without alphas (the
 * built-in and inline ones) run as before (`npm run bench:reference` checks their records).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import type { Problem } from '../src/model/problem.js';
import type { InstanceResult } from '../src/model/result.js';
import { loadProblem, problemFromObject, selectCases } from '../src/problem/parse.js';
import { catalogueProfile, listProfiles, profileCatalogue } from '../src/problem/profiles.js';
import { decodeAll, requestProblemOn, sum } from './support.js';

/** blis.yaml's items as BLIS publishes them, read here rather than through the loader. */
const BLIS = (parseYaml(readFileSync('problems/profiles/blis.yaml', 'utf8')) as { models: { id: string; GPU: string; tensor_parallelism: number; alpha_coeffs: number[]; beta_coeffs: number[] }[] }).models;

/** A coefficient in whole nanoseconds, as the engines hold it. */
const ns = (us: number): number => Math.round(us * 1000);

/** Requests one at a time (an app of one slot) on one replica of `profile`, every hop free. */
function loneRequests(profile: string, prompt: number, output: number, timeout = '60s'): Problem {
  return problemFromObject({
    id: 'lone',
    goals: { success: 0.01, p99: '60s' },
    traffic: { rate: 0.2, duration: '60s', warmup: '1s' },
    workload: { kind: 'request', unique: prompt, output },
    lb: { overhead: '0ms' },
    app: { slots: 1, timeout, overhead: '0ms' },
    router: { policy: 'round-robin', overhead: '0ms' },
    gpu: { replicas: 1, slots: 8, profile },
    cases: ['as-given'],
  });
}

function run(config: EngineConfig, instances = 1): InstanceResult[] {
  return decodeAll(config, runReference(config, 1, 0, instances));
}

function configOf(problem: Problem): EngineConfig {
  return compile(problem, problem.cases[0]!);
}

describe('a request alone on a catalogue profile', () => {
  it('takes BLIS\'s time per output token within 1% on every profile but the one whose whole token is faster than its floor, which is flagged', () => {
    const listed = listProfiles().profiles.filter((p) => !p.assumption);
    expect(listed).toHaveLength(85);
    for (const p of listed) {
      // BLIS's own arithmetic on its published coefficients: int64(beta0 + beta2) a decode step, int64(alpha2) a token
      const m = BLIS.find((x) => x.id === p.model && x.GPU === p.gpu && x.tensor_parallelism === p.tp)!;
      expect(p.lone_tpot!.blis_us, p.id).toBe(Math.floor(m.beta_coeffs[0]! + m.beta_coeffs[2]!) + Math.floor(m.alpha_coeffs[2]!));
      if (!p.roofline!.token_faster_than_floor) expect(Math.abs(p.lone_tpot!.relative), p.id).toBeLessThanOrEqual(0.01);
    }
    const flagged = listed.filter((p) => p.roofline!.token_faster_than_floor);
    expect(flagged.map((p) => p.id)).toEqual(['mistral-small-24b-instruct-2501/h100/tp2']);
    // beta0 2464 us + beta2 0.5 us + alpha2 2542 us a lone token, under the 7036 us its 24B BF16 weights take to read over 2 x 3.35 TB/s
    const [mistral] = flagged;
    expect(mistral!.lone_tpot!.blis_us).toBeLessThan(mistral!.roofline!.weights_us);
    expect(mistral!.roofline!.floored).toContain('base');
  });

  it('runs what the listing says: the engines\' time per output token of a lone request is the listed servesim TPOT, on every profile', () => {
    const listed = new Map(listProfiles().profiles.map((p) => [p.id, p.lone_tpot]));
    for (const c of profileCatalogue().profiles) {
      // one-token prompts keep perSeq's roofline floor (a token's KV read) under every beta2;
      // 201 output tokens: 200 gaps between the first token and the last
      const results = run(configOf(loneRequests(c.id, 1, 201)));
      const calls = sum(results, 'tpotCalls');
      expect(calls, c.id).toBeGreaterThan(0);
      // each call's TPOT is floored to the microsecond, alpha2's tokens summed to the nanosecond first
      const tpot = sum(results, 'tpotSum') / calls;
      expect(Math.abs(tpot - listed.get(c.id)!.servesim_us), c.id).toBeLessThan(1);
    }
  });

  it('adds alpha0 + alpha1 x prompt tokens before its queue and alpha2 a token after its steps, as BLIS, to the microsecond', () => {
    const id = 'llama-3.1-8b-instruct/h100/tp1';
    const prompt = 3001;
    const output = 40;
    const [b0, b1, b2] = catalogueProfile(id)!.beta;
    const [a0, a1, a2] = catalogueProfile(id)!.alpha;
    const problem = loneRequests(id, prompt, output);
    // a decoding sequence reads its 3001 tokens of KV: 117.4 us over 3.35 TB/s, which the floor
    // makes perSeq (whole microseconds above) where beta2 is 6 us
    const perSeq = problem.gpu!.profile.perSeq;
    expect(perSeq).toBe(118);
    // the prompt is prefilled in a chunk of 2048 and one of 953; servesim rounds a step's
    // nanoseconds up once and floors the alphas' sums, BLIS truncates each to the microsecond
    const step = (prefill: number, decoding: number): number => Math.ceil((ns(b0) + prefill * ns(b1) + decoding * ns(perSeq)) / 1000);
    const queue = Math.floor((ns(a0) + prompt * ns(a1)) / 1000);
    const ttft = queue + step(2048, 0) + step(953, 0) + Math.floor(ns(a2) / 1000);
    const e2e = queue + step(2048, 0) + step(953, 0) + (output - 1) * step(0, 1) + Math.floor((output * ns(a2)) / 1000);
    const results = run(configOf(problem), 2);
    const calls = sum(results, 'callsDone');
    expect(calls).toBeGreaterThan(5);
    expect(sum(results, 'ttftSum')).toBe(ttft * calls);
    expect(sum(results, 'latencySum')).toBe(e2e * sum(results, 'successes'));
    // BLIS's own arithmetic (BlackboxLatencyModel; sim/simulator.go, Step)
    const blisTtft = Math.trunc(a0 + a1 * prompt) + Math.trunc(b0 + b1 * 2048) + Math.trunc(b0 + b1 * 953) + Math.trunc(a2);
    const blisE2e = blisTtft + (output - 1) * (Math.trunc(b0 + b2) + Math.trunc(a2));
    expect(Math.abs(ttft - blisTtft)).toBeLessThanOrEqual(3);
    // once the floor's perSeq is taken for BLIS's beta2: servesim rounds a step up where BLIS
    // truncates it, and floors alpha2's sum where BLIS truncates each token's, so at most 2 us a token apart
    expect(Math.abs(e2e - (blisE2e + (output - 1) * (perSeq - b2)))).toBeLessThanOrEqual(3 + 2 * output);
  });

  it('times out at the GPU when its deadline passes while it waits to join the queue, or while its tokens are processed', () => {
    // codellama's alpha0 is 13.45 ms: a deadline of 10 ms passes before any call joins the queue
    const early = run(configOf(loneRequests('codellama-34b-instruct-hf/h100/tp1', 100, 10, '10ms')), 3);
    expect(sum(early, 'arrivals')).toBeGreaterThan(10);
    expect(sum(early, 'timedOut')).toBe(sum(early, 'arrivals') - sum(early, 'rejected'));
    expect(early.reduce((n, r) => n + r.components.gpu!.timedOut, 0)).toBe(sum(early, 'timedOut'));
    expect(sum(early, 'busyMicros')).toBe(0);
    // llama at TP 1: its GPU is done with a 1-token prompt and 50 tokens out after about
    // 0.2 + 50 x 5.76 ms, its tokens' processing (50 x 3.36 ms) after about 0.46 s
    const late = run(configOf(loneRequests('llama-3.1-8b-instruct/h100/tp1', 1, 50, '400ms')), 3);
    expect(sum(late, 'successes')).toBe(0);
    expect(late.reduce((n, r) => n + r.components.gpu!.timedOut, 0)).toBe(sum(late, 'arrivals') - sum(late, 'rejected'));
    // each call's GPU work finished: 50 tokens in steps of 5.76 ms
    expect(sum(late, 'busyMicros')).toBeGreaterThan(sum(late, 'timedOut') * 50 * 5700);
  });
});

describe('output processing holds no GPU step', () => {
  let dir: string | undefined;

  /** Pairs of requests arriving together, 10 s apart, at one replica of one slot of `profile`. */
  function pairs(profile: string): { problem: Problem; config: EngineConfig } {
    dir ??= mkdtempSync(join(tmpdir(), 'servesim-alphas-'));
    const lines = Array.from({ length: 60 }, (_, i) => ({ timestamp: Math.floor(i / 2) * 10_000, input_length: 100, output_length: 20 }));
    writeFileSync(join(dir, 'pairs.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    writeFileSync(join(dir, 'pairs.yaml'), `
id: pairs
title: Two requests at once on a replica of one slot
goals: { success: 0.9, p99: 30s }
traffic: { trace: pairs.jsonl, duration: 50s, warmup: 1s }
workload: { kind: request }
lb: { overhead: 0ms }
app: { slots: 100, timeout: 60s, overhead: 0ms }
router: { policy: round-robin, overhead: 0ms }
gpu: { replicas: 1, slots: 1, profile: ${profile} }
cases: [as-given]
`);
    const problem = loadProblem(join(dir, 'pairs.yaml'));
    return { problem, config: compile(problem, selectCases(problem, ['as-given'])[0]!) };
  }

  it('the second of two requests starts when the first\'s last step ends, not its last token\'s processing', () => {
    const id = 'llama-3.1-8b-instruct/h100/tp1';
    const [b0, b1, b2] = catalogueProfile(id)!.beta;
    const [a0, a1, a2] = catalogueProfile(id)!.alpha;
    const { config } = pairs(id);
    const results = run(config, 3);
    const queue = Math.floor((ns(a0) + 100 * ns(a1)) / 1000);
    const prefill = Math.ceil((ns(b0) + 100 * ns(b1)) / 1000);
    const decode = Math.ceil((ns(b0) + ns(b2)) / 1000);
    const gpu = prefill + 19 * decode;
    const first = queue + prefill + Math.floor(ns(a2) / 1000);
    // both join the queue together; the second's prefill starts when the first's GPU work ends
    const second = first + gpu;
    const calls = sum(results, 'callsDone');
    expect(calls % 2).toBe(0);
    expect(calls).toBeGreaterThanOrEqual(6);
    expect(sum(results, 'ttftSum')).toBe((calls / 2) * (first + second));
    // and the GPU is busy for their steps alone
    expect(sum(results, 'busyMicros')).toBe(calls * gpu);
  });

  it('while without the alphas the same pairs differ only by them', () => {
    const { config } = pairs('llama-3.1-8b-instruct/h100/tp1');
    const params = config.params.slice();
    for (const word of [P.QUEUE_DELAY_US, P.QUEUE_DELAY_NS, P.QUEUE_TOKEN_US, P.QUEUE_TOKEN_NS, P.OUTPUT_TOKEN_US, P.OUTPUT_TOKEN_NS]) params[word] = 0;
    const withAlphas = run(config, 3);
    const without = run({ ...config, params }, 3);
    expect(sum(without, 'busyMicros')).toBe(sum(withAlphas, 'busyMicros'));
    const [a0, a1, a2] = catalogueProfile('llama-3.1-8b-instruct/h100/tp1')!.alpha;
    const alphas = Math.floor((ns(a0) + 100 * ns(a1)) / 1000) + Math.floor((20 * ns(a2)) / 1000);
    expect(sum(withAlphas, 'latencySum') - sum(without, 'latencySum')).toBe(sum(withAlphas, 'successes') * alphas);
  });
});

describe('a replica that dies while calls are on their way into it', () => {
  it('refuses them when they arrive, and none waits in a dead replica\'s queue until its deadline', () => {
    // two replicas, one reset for the middle 3 s; every call spends 1 s between router and queue,
    // so about 10 are on their way in when it dies; a deadline of 2.5 s would pass for any that
    // joined its queue and waited there
    const problem = problemFromObject({
      id: 'dies-on-the-way',
      goals: { success: 0.5, p99: '60s' },
      traffic: { rate: 20, duration: '9s', warmup: '1s' },
      workload: { kind: 'request', unique: 200, output: 10 },
      lb: {},
      app: { replicas: 1, slots: 1000, timeout: '2500ms' },
      router: { policy: 'round-robin', retries: 0 },
      gpu: { replicas: 2, slots: 8, profile: 'llama-3.1-8b-instruct/h100/tp1' },
      cases: ['server-dies'],
    });
    const config = configOf(problem);
    config.params[P.QUEUE_DELAY_US] = 1_000_000;
    const results = run(config, 4);
    // far more than the one call or so each replica runs at a time
    expect(sum(results, 'died')).toBeGreaterThan(4 * 5);
    expect(sum(results, 'timedOut')).toBe(0);
    expect(sum(results, 'successes') + sum(results, 'died') + sum(results, 'rejected')).toBe(sum(results, 'arrivals'));
  });
});

describe('profiles without alphas', () => {
  it('compile to no time outside the GPU and whole microseconds: the built-in, fitted inline and model profiles', () => {
    for (const profile of ['8b-h100', '70b-h100', { base: '8ms', perSeq: '250us', prefillRate: 16, chunk: 2048 }, { model: { params: 8e9, bytesPerWeight: 2, kvBytesPerToken: 131072 }, gpu: 'H100' }]) {
      const params = configOf(requestProblemOn(profile, { kvTokens: 400_000 })).params;
      const words = [P.ITER_BASE_NS, P.ITER_PER_SEQ_NS, P.QUEUE_DELAY_US, P.QUEUE_DELAY_NS, P.QUEUE_TOKEN_US, P.QUEUE_TOKEN_NS, P.OUTPUT_TOKEN_US, P.OUTPUT_TOKEN_NS];
      expect(words.map((w) => params[w]), JSON.stringify(profile)).toEqual(words.map(() => 0));
    }
  });
});
