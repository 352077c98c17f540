/**
 * The GPU profile catalogue (problems/profiles/): BLIS's fits carried over item for item, each
 * mapped onto the engines' iteration time with its rounding stated, selected by its id, listed
 * by `servesim profiles` and GET /v1/profiles; and the GPU types' prices.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { ServesimError } from '../src/errors.js';
import { loadProblem, problemFromObject } from '../src/problem/parse.js';
import { BUILTIN_PROFILES, catalogueProfile, gpuPrices, listProfiles, profileCatalogue, type ProfilesDocument } from '../src/problem/profiles.js';
import { buildServer } from '../src/service/server.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { runReference } from '../src/engine/reference.js';
import { decodeAll, requestProblemOn } from './support.js';
import { runCli } from './cli-support.js';

interface SourceItem {
  id: string;
  GPU: string;
  tensor_parallelism: number;
  vllm_version: string;
  beta_coeffs: number[];
  alpha_coeffs: number[];
  total_kv_blocks: number;
  best_loss: number;
}
const blis = parseYaml(readFileSync('problems/profiles/blis.yaml', 'utf8')) as { blockSize: number; chunk: number; models: SourceItem[] };

function thrown(f: () => unknown): ServesimError & { issues: { path: string; message: string }[] } {
  try {
    f();
  } catch (e) {
    if (e instanceof ServesimError) return e as ServesimError & { issues: { path: string; message: string }[] };
    throw e;
  }
  throw new Error('expected an error');
}

afterAll(closeEngines);

describe('the BLIS catalogue', () => {
  const { profiles, shadowed } = profileCatalogue();
  const key = (m: SourceItem): string => `${m.id} ${m.GPU} ${m.tensor_parallelism} ${m.vllm_version}`;

  it('carries every item of the source: the first of each key is a profile, later ones repeat it or are listed as shadowed', () => {
    expect(blis.models).toHaveLength(109);
    const first = new Map<string, SourceItem>();
    const repeats: SourceItem[] = [];
    for (const m of blis.models) {
      if (first.has(key(m))) repeats.push(m);
      else first.set(key(m), m);
    }
    expect(profiles).toHaveLength(first.size);
    expect(first.size).toBe(85);
    // a repeat is either the first item again, number for number, or a shadowed one
    const differing = repeats.filter((m) => JSON.stringify(m) !== JSON.stringify(first.get(key(m))));
    expect(repeats.length - differing.length).toBe(19);
    expect(shadowed.map((s) => s.id)).toEqual([
      'phi-4-fp8-dynamic/h100/tp1',
      'phi-4-fp8-dynamic/h100/tp2',
      'phi-4-quantized.w4a16/h100/tp1',
      'phi-4-quantized.w8a8/h100/tp1',
      'phi-4-quantized.w8a8/h100/tp2',
    ]);
    for (const p of profiles) {
      const m = [...first.values()].find((x) => x.id === p.model && x.GPU === p.gpu && x.tensor_parallelism === p.tp)!;
      expect([p.beta, p.alpha, p.totalKvBlocks, p.bestLoss, p.vllm]).toEqual([m.beta_coeffs, m.alpha_coeffs, m.total_kv_blocks, m.best_loss, m.vllm_version]);
    }
    expect(new Set(profiles.map((p) => p.id)).size).toBe(profiles.length);
  });

  it('keeps the numbers as BLIS publishes them, with their source and commit', () => {
    // the same fit BLIS's own experiment scripts pass as --beta-coeffs and --total-kv-blocks
    const p = catalogueProfile('llama-3.1-8b-instruct/h100/tp2')!;
    expect(p.model).toBe('meta-llama/llama-3.1-8b-instruct');
    expect(p.beta).toEqual([6910.420479880494, 17.67057489844186, 2.8377471109943855]);
    expect(p.alpha).toEqual([1601.350510688092, 3.512476196805965, 1805.5430360826988]);
    expect(p.totalKvBlocks).toBe(132139);
    expect(p.vllm).toBe('vllm/vllm-openai:v0.8.4');
    expect(p.source).toMatchObject({ commit: '1a6eb353412e981dba604fccd5096da4e8aee6da', licence: expect.stringMatching(/^Apache-2\.0/), file: 'problems/profiles/blis.yaml' });
    expect(p.source.url).toContain(p.source.commit);
  });

  // the roofline floor raises some fits (test/profiles-roofline.test.ts); the words are the fit
  // where it is not raised, and the rounding stated is always the fit's
  it('maps every entry onto engine words to the nanosecond: base = beta0, perSeq = beta2, prefill = beta1 a token, the alphas, KV = blocks x 16, unless the floor raises them', () => {
    const ns = (us: number): number => Math.round(us * 1000);
    let kept = 0;
    for (const c of profiles) {
      // one-token prompts: perSeq's floor is one token's KV read (under 0.1 us), under every beta2
      const problem = requestProblemOn(c.id, {}, 1);
      const params = compile(problem, problem.cases[0]!).params;
      // a time the engines hold to the nanosecond: whole microseconds, and the nanoseconds below
      const held = (us: number, below: number): number => params[us]! * 1000 + params[below]!;
      const [b0, b1, b2] = c.beta;
      const [a0, a1, a2] = c.alpha;
      const fit = [ns(b0), ns(b2), Math.round(b1 * 1000)];
      const words = [held(P.ITER_BASE, P.ITER_BASE_NS), held(P.ITER_PER_SEQ, P.ITER_PER_SEQ_NS), params[P.PREFILL_NS_PER_TOKEN]!];
      expect(words[1], c.id).toBe(fit[1]);
      const { fitted } = c.profile.roofline!;
      expect([ns(fitted!.base), ns(fitted!.perSeq), Math.round(1e6 / fitted!.prefillRate), ns(fitted!.perOutputToken)], c.id).toEqual([...fit, ns(a2)]);
      if (words[0] === fit[0] && words[2] === fit[2]) kept++;
      expect(words[0]!, c.id).toBeGreaterThanOrEqual(fit[0]!);
      expect(words[2]!, c.id).toBeGreaterThanOrEqual(fit[2]!);
      // alpha0 and alpha1 as published; alpha2 less what the floor added to a lone decode step
      expect([held(P.QUEUE_DELAY_US, P.QUEUE_DELAY_NS), held(P.QUEUE_TOKEN_US, P.QUEUE_TOKEN_NS)], c.id).toEqual([ns(a0), ns(a1)]);
      expect(held(P.OUTPUT_TOKEN_US, P.OUTPUT_TOKEN_NS), c.id).toBe(Math.max(0, ns(a2) - (words[0]! - fit[0]!)));
      expect([params[P.CHUNK], params[P.KV_TOKENS]], c.id).toEqual([blis.chunk, c.totalKvBlocks * blis.blockSize]);
      // the stated rounding is what the fit's words differ from the source by
      for (const [held, source] of [[c.rounding.beta0, b0], [c.rounding.beta1, b1], [c.rounding.beta2, b2], [c.rounding.alpha0, a0], [c.rounding.alpha1, a1], [c.rounding.alpha2, a2]] as const) {
        expect(held.source, c.id).toBe(source);
        expect(Math.abs(held.engine - source), c.id).toBeLessThanOrEqual(0.0005 + 1e-9);
      }
      expect(c.rounding.beta0.engine * 1000, c.id).toBeCloseTo(fit[0]!, 6);
      expect(c.rounding.beta2.engine * 1000, c.id).toBeCloseTo(fit[1]!, 6);
      expect(c.rounding.beta1.engine * 1000, c.id).toBeCloseTo(fit[2]!, 6);
    }
    // 85 entries, of which the floor raises the base or prefill of 34
    expect(kept).toBe(85 - 34);
  });

  it('states the rounding: every coefficient held to the nanosecond, at worst 1.2% of an alpha1 of 0.035 us a prompt token', () => {
    const worst = profiles
      .flatMap((p) => Object.entries(p.rounding).map(([coefficient, h]) => ({ id: p.id, coefficient, relative: Math.abs(h.relative) })))
      .sort((a, b) => b.relative - a.relative);
    expect(worst[0]).toEqual({ id: 'mistral-small-3.1-24b-instruct-2503-fp8-dynamic/h100/tp8', coefficient: 'alpha1', relative: expect.closeTo(0.0122, 4) });
    // past 0.3% only alphas under 0.06 us a prompt token (half a nanosecond is 1% of 0.05 us)
    expect(worst.filter((w) => w.relative > 0.003).map((w) => w.coefficient)).toEqual(['alpha1', 'alpha1', 'alpha1', 'alpha1']);
    // a beta2 of 0.38 us a decoding sequence, which whole microseconds made 0 (decoding for nothing)
    const w8a8 = catalogueProfile('qwen2.5-7b-instruct-quantized.w8a8/h100/tp4')!;
    expect(w8a8.rounding.beta2.engine).toBe(Math.round(w8a8.beta[2] * 1000) / 1000);
    expect(w8a8.rounding.beta2.engine).toBeGreaterThan(0.3);
    expect(Math.abs(w8a8.rounding.beta2.relative)).toBeLessThan(0.002);
  });
});

describe('gpu.profile by catalogue id', () => {
  it('selects the entry: its tp, GPU type, KV capacity as the default kvTokens, and its list price', () => {
    const gpu = requestProblemOn('llama-3.1-8b-instruct/h100/tp2').gpu!;
    expect(gpu.profile).toEqual({
      name: 'llama-3.1-8b-instruct/h100/tp2',
      base: 6910.42,
      // beta2 is 2.838 us; the KV of the problem's 1000-token prompts takes 19.6 us to read
      // (1000 x 128 KiB over 2 x 3.35 TB/s), so the roofline floor raises it to 20 (whole us above)
      perSeq: 20,
      prefillRate: 1000 / 17.67057489844186,
      chunk: 2048,
      tp: 2,
      gpuType: 'H100',
      kvTokens: 132139 * 16,
      // BLIS's alphas to the nanosecond (perSeq's floor is a decoding sequence's, and alpha2 gives none of it)
      host: { queueing: 1601.351, queueingPerToken: 3.512, perOutputToken: 1805.543 },
      roofline: expect.objectContaining({ fitted: { base: 6910.42, perSeq: 2.838, prefillRate: 1000 / 17.67057489844186, perOutputToken: 1805.543 } }),
    });
    expect(gpu.kvTokens).toBe(132139 * 16);
    expect(gpu.pricePerHour).toBe(55.04 / 8);
    expect(requestProblemOn('llama-3.1-8b-instruct/a100-80/tp2').gpu!.pricePerHour).toBe(27.44705 / 8);
  });

  it('lets the problem set kvTokens and pricePerHour', () => {
    const gpu = requestProblemOn('llama-3.1-8b-instruct/h100/tp2', { kvTokens: 300_000, pricePerHour: 2.49 }).gpu!;
    expect([gpu.kvTokens, gpu.pricePerHour]).toEqual([300_000, 2.49]);
  });

  it('keeps the built-in profiles as they were: no GPU type, tp or price unless the problem gives one', () => {
    const gpu = requestProblemOn('8b-h100').gpu!;
    expect(gpu).toEqual({ replicas: 2, slots: 8, kvTokens: 400_000, kv: 'reserve', profile: BUILTIN_PROFILES['8b-h100'] });
    expect(gpu.pricePerHour).toBeUndefined();
    expect(requestProblemOn('70b-h100', { pricePerHour: 20 }).gpu!.pricePerHour).toBe(20);
    expect(requestProblemOn({ base: '8ms', perSeq: '250us', prefillRate: 16, chunk: 2048, tp: 4 }).gpu!.profile.tp).toBe(4);
  });

  it('takes the deployment\'s chunk (gpu.chunk) over the profile\'s, as the engines run it; one past u32 nanoseconds is refused naming gpu.chunk', () => {
    const p = requestProblemOn('llama-3.1-8b-instruct/h100/tp1', { chunk: 4096 });
    expect(p.gpu!.profile).toMatchObject({ name: 'llama-3.1-8b-instruct/h100/tp1', chunk: 4096 });
    expect(compile(p, p.cases[0]!).params[P.CHUNK]).toBe(4096);
    expect(requestProblemOn('llama-3.1-8b-instruct/h100/tp1').gpu!.profile.chunk).toBe(2048);
    const slow = { base: '8ms', perSeq: '250us', prefillRate: 0.001, chunk: 1 };
    expect(thrown(() => requestProblemOn(slow, { chunk: 5000 })).issues.map((i) => i.path)).toEqual(['gpu.chunk']);
  });

  it('works from a file and through --set, as any profile name does', () => {
    const p = loadProblem('problems/hot-prefix.yaml', ['gpu.profile=qwen2.5-7b-instruct/a100-80/tp4']);
    expect(p.gpu?.profile.name).toBe('qwen2.5-7b-instruct/a100-80/tp4');
    expect(p.gpu?.profile.tp).toBe(4);
  });

  it('runs its coefficients: a call alone on its replica decodes at beta0 + beta2 a step, and alpha2 more a token', async () => {
    // BLIS, llama-3.1-8b-instruct on H100 at TP 1: beta0 5752.705 us, beta2 5.999 us a decoding
    // sequence, alpha2 3357.440 us an output token; 100-token unique prompts keep perSeq's
    // roofline floor (their KV read, 3.9 us) under beta2
    const problem = loadProblem('problems/hot-prefix.yaml', [
      'gpu.profile=llama-3.1-8b-instruct/h100/tp1', 'gpu.slots=1', 'traffic.rate=2', 'traffic.duration=10s', 'traffic.warmup=1s', 'workload.unique=100',
    ]);
    const config = compile(problem, problem.cases[0]!);
    const results = decodeAll(config, runReference(config, 1, 0, 4));
    const calls = results.reduce((n, r) => n + r.tpotCalls, 0);
    expect(calls).toBeGreaterThan(20);
    // hot-prefix's 60 output tokens: 59 steps of ceil(5752.705 + 5.999) us after the first token,
    // which reaches the caller floor(3357.44) us after its step, the last floor(60 x 3357.44) us after its own
    const output = 60;
    const tpot = Math.floor(((output - 1) * 5759 + Math.floor(output * 3357.44) - 3357) / (output - 1));
    expect(tpot).toBe(9116);
    expect(results.reduce((n, r) => n + r.tpotSum, 0)).toBe(tpot * calls);
  });

  it('puts the configuration\'s GPUs and their price an hour in every row of a run', async () => {
    const priced = loadProblem('problems/hot-prefix.yaml', ['gpu.profile=qwen2.5-7b-instruct/a100-80/tp4', 'gpu.replicas=2', 'gpu.kvTokens=400000', 'traffic.duration=4s', 'traffic.warmup=1s']);
    const { rows } = await runProblem(priced, { caseNames: ['as-given'], seeds: 2, baseSeed: 1, engine: 'cpu' });
    expect(rows[0]!.gpus).toBe(8);
    expect(rows[0]!.dollars_per_hour).toBeCloseTo(8 * priced.gpu!.pricePerHour!, 9);
    // a built-in profile names no GPU type, so no price
    const unpriced = loadProblem('problems/hot-prefix.yaml', ['traffic.duration=4s', 'traffic.warmup=1s']);
    const plain = (await runProblem(unpriced, { caseNames: ['as-given'], seeds: 2, baseSeed: 1, engine: 'cpu' })).rows[0]!;
    expect([plain.gpus, plain.dollars_per_hour]).toEqual([unpriced.gpu!.replicas, Number.NaN]);
  });

  it('refuses an unknown id naming gpu.profile, with the close ids', () => {
    let err = thrown(() => requestProblemOn('llama-3.1-8b-instruct/h100/tp3'));
    expect(err.issues.map((i) => i.path)).toEqual(['gpu.profile']);
    expect(err.message).toContain('unknown profile; built-in profiles are 8b-h100, 70b-h100');
    expect(err.message).toContain('close: llama-3.1-8b-instruct/a100-80/tp1, llama-3.1-8b-instruct/h100/tp1, llama-3.1-8b-instruct/a100-80/tp2, llama-3.1-8b-instruct/h100/tp2');
    // the organisation-qualified name, and a model named in part
    expect(thrown(() => requestProblemOn('meta-llama/llama-3.1-8b-instruct/h100/tp2')).message).toContain('close: llama-3.1-8b-instruct/a100-80/tp1');
    expect(thrown(() => requestProblemOn('gpt-oss/h100/tp2')).message).toMatch(/close: gpt-oss-120b\/h100\/tp1, .*gpt-oss-20b\/h100\/tp8/);
    err = thrown(() => requestProblemOn('llama-3.1-8b-instruct/H100/tp2'));
    expect(err.message).toContain('llama-3.1-8b-instruct/h100/tp2');
  });

  it('refuses a price or tp out of range, naming the field', () => {
    for (const [gpu, path] of [
      [{ pricePerHour: 0 }, 'gpu.pricePerHour'],
      [{ pricePerHour: -3 }, 'gpu.pricePerHour'],
      [{ pricePerHour: 1001 }, 'gpu.pricePerHour'],
      [{ pricePerHour: '6.88' }, 'gpu.pricePerHour'],
    ] as const) {
      expect(thrown(() => requestProblemOn('llama-3.1-8b-instruct/h100/tp2', gpu)).issues.map((i) => i.path)).toEqual([path]);
    }
    const inline = (tp: unknown) => ({ base: '8ms', perSeq: '250us', prefillRate: 16, chunk: 2048, tp });
    for (const tp of [0, 65, 1.5]) expect(thrown(() => requestProblemOn(inline(tp))).issues.map((i) => i.path)).toEqual(['gpu.profile.tp']);
  });

  it('says where a KV capacity the problem did not set came from when it is refused', () => {
    // 2.1M tokens over a 500-token system prompt: more cache entries than a replica indexes
    const err = thrown(() =>
      problemFromObject({
        id: 'agents',
        goals: { success: 0.9, p99: '60s' },
        traffic: { rate: 1, duration: '30s' },
        workload: { kind: 'task', system: 500 },
        lb: {},
        app: { slots: 100, timeout: '120s' },
        orchestrator: { slots: 10, steps: 2 },
        router: { policy: 'round-robin' },
        gpu: { replicas: 2, slots: 8, profile: 'llama-3.1-8b-instruct/h100/tp2' },
        tools: { slots: 10 },
      }),
    );
    expect(err.issues.map((i) => i.path)).toEqual(['gpu.kvTokens']);
    expect(err.message).toContain("2114224 tokens (gpu.profile llama-3.1-8b-instruct/h100/tp2's KV capacity; set gpu.kvTokens to change it) hold");
  });
});

describe('the prices', () => {
  it('are dated and sourced, per GPU-hour from the instance price', () => {
    expect(gpuPrices().map((p) => [p.type, p.instance, p.perGpuHour, p.retrieved])).toEqual([
      ['H100', 'p5.48xlarge', 6.88, '2026-11-09'],
      ['A100-80', 'p4de.24xlarge', 3.43088125, '2026-11-09'],
    ]);
    // every GPU type the catalogue names has a price
    const types = new Set(profileCatalogue().profiles.map((p) => p.gpu));
    expect([...types].sort()).toEqual(gpuPrices().map((p) => p.type).sort());
  });
});

const cli = runCli;

describe('servesim profiles', () => {
  it('--format json lists every profile, the prices and the shadowed items', async () => {
    const { code, out } = await cli('profiles', '--format', 'json');
    expect(code).toBe(0);
    const doc = JSON.parse(out) as ProfilesDocument;
    expect(doc).toEqual(JSON.parse(JSON.stringify(listProfiles())));
    expect(doc.profiles).toHaveLength(2 + 85);
    expect(doc.profiles.slice(0, 2).map((p) => [p.id, p.assumption])).toEqual([['8b-h100', true], ['70b-h100', true]]);
    expect(doc.profiles.find((p) => p.id === 'llama-3.1-8b-instruct/h100/tp2')).toMatchObject({
      assumption: false,
      gpu: 'H100',
      tp: 2,
      base_us: 6910.42,
      per_seq_us: 2.838,
      prefill_ns_per_token: 17671,
      host: { queueing_us: 1601.351, queueing_us_per_prompt_token: 3.512, us_per_output_token: 1805.543 },
      kv_tokens: 2114224,
      price_per_gpu_hour: 6.88,
      coefficients: { beta: [6910.420479880494, 17.67057489844186, 2.8377471109943855], total_kv_blocks: 132139, block_size: 16 },
      // BLIS: floor(6910.42 + 2.838) + floor(1805.543); servesim rounds the step up
      lone_tpot: { blis_us: 8718, servesim_us: 8719.543, relative: expect.closeTo(8719.543 / 8718 - 1, 9) },
    });
    expect(doc.shadowed).toHaveLength(5);
  });

  it('prints a table with the units, the rounding, BLIS\'s lone TPOT and servesim\'s, the sources and the prices', async () => {
    const { code, out } = await cli('profiles');
    expect(code).toBe(0);
    expect(out).toMatch(
      /^id +gpu +tp +vllm +base us +perSeq us +prefill ns\/tok +alpha0 us +alpha1 us\/tok +alpha2 us\/tok +chunk +kv tokens +\$\/GPU-h +rounding +BLIS TPOT us +TPOT us +vs BLIS +floor us +floor ns\/tok +floored$/m,
    );
    expect(out).toMatch(/^8b-h100 +- +- +- +8000 +250 +62500 +- +- +- +2048 +400000 +- +assumption +- +- +- +- +- +-$/m);
    // above its floor (568 us to read 7.61 GB of INT8 weights over 4 x 3.35 TB/s; 1923 ns a prompt token at 4 x 1979 TFLOPS);
    // its beta2 of 0.383 us a decoding sequence is held, where whole microseconds made it 0
    expect(out).toMatch(/^qwen2\.5-7b-instruct-quantized\.w8a8\/h100\/tp4 +H100 +4 +v0\.8\.4 +2334\.905 +0\.383 +7124 +3730\.281 +1\.861 +4139\.54 +2048 +20963232 +6\.88 +0\.081% +6474 +6475\.54 +\+0\.0% +568 +1923 +-$/m);
    // below it: base 42 us against 1195 us to read 16 GB of BF16 weights over 4 x 3.35 TB/s, which alpha2 gives up
    expect(out).toMatch(/^llama-3\.1-8b-instruct\/h100\/tp4 +H100 +4 +v0\.8\.4 +1195 +5\.91 +11861 +34\.39 +2\.187 +4847\.957 .* +6048 +6048\.957 +\+0\.0% +1195 +4043 +base$/m);
    // and one whose whole lone token is faster than the floor
    expect(out).toMatch(/^mistral-small-24b-instruct-2501\/h100\/tp2 .* +5514 +7546 +\+36\.9% +7036 +23821 +base\+prefill\+token$/m);
    expect(out).toContain('at 1a6eb353412e981dba604fccd5096da4e8aee6da');
    expect(out).toContain('$/GPU-h H100: NVIDIA H100 SXM 80 GB, p5.48xlarge at $55.04/h over 8 GPUs, read 2026-11-09');
  });

  it('refuses another format', async () => {
    const { code, err } = await cli('profiles', '--format', 'csv');
    expect(code).toBe(2);
    expect(err).toMatch(/--format/);
  });
});

describe('GET /v1/profiles', () => {
  let app: FastifyInstance;
  beforeAll(() => {
    app = buildServer();
  });
  afterAll(() => app.close());

  it('answers what servesim profiles -f json prints, and is in the OpenAPI document', async () => {
    const res = await app.inject('/v1/profiles');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(listProfiles())));
    const doc = (await app.inject('/openapi.json')).json();
    expect(doc.paths['/v1/profiles'].get.responses['200'].content).toHaveProperty('application/json');
  });
});
