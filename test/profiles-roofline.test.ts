/**
 * The roofline floor under the GPU profiles (docs/model.md section 3, "The roofline floor"):
 * every catalogue model and GPU type has its sourced figures (problems/profiles/models.yaml,
 * hardware.yaml); no profile as loaded runs a step faster than reading its weights, computing a
 * prompt token at peak FLOPs, or reading its prompts' KV allows; fits that broke the floor are
 * flagged and raised, with a warning when a run uses one; a model outside the catalogue, given by
 * its size, gets the floor as its profile; the built-in and fitted inline profiles are untouched.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { compile } from '../src/engine/compile.js';
import { P } from '../src/engine/layout.js';
import { ServesimError } from '../src/errors.js';
import { applyOverrides, settablePaths } from '../src/problem/overrides.js';
import { loadProblem, problemFromObject } from '../src/problem/parse.js';
import { BUILTIN_PROFILES, catalogueProfile, floorWarning, listProfiles, profileCatalogue } from '../src/problem/profiles.js';
import { closeEngines } from '../src/run/run.js';
import { runCli } from './cli-support.js';
import { requestProblemOn } from './support.js';

afterAll(closeEngines);

interface Source { gives: string[]; url: string; via?: string; read?: string }
interface RawModel { of?: string; params?: number; activeParams?: number; bytesPerWeight?: number; activationBytes?: number; layers?: number; kvHeads?: number; headDim?: number; sources: Source[] }
interface RawGpu { gpu: string; memoryBytes: number; bandwidth: number; peakFlops: number; peakFlops8: number; sources: Source[] }
const MODELS = parseYaml(readFileSync('problems/profiles/models.yaml', 'utf8')) as { kvBytes: number; kvBytesSource: Source; models: Record<string, RawModel> };
const GPUS = (parseYaml(readFileSync('problems/profiles/hardware.yaml', 'utf8')) as { gpus: Record<string, RawGpu> }).gpus;

/** A model's figures with its `of` chain filled in, read from the file here rather than through the loader. */
function figures(id: string): Omit<RawModel, 'of' | 'sources'> {
  const { of, sources: _, ...own } = MODELS.models[id]!;
  return of === undefined ? own : { ...figures(of), ...own };
}

/** The floor of a catalogue entry, from the files: microseconds, microseconds a context token, nanoseconds a prompt token. */
function floorOf(model: string, gpu: string, tp: number): { weightsUs: number; kvUs: number; prefillNs: number } {
  const m = figures(model);
  const g = GPUS[gpu]!;
  const active = m.activeParams ?? m.params!;
  return {
    weightsUs: ((active * m.bytesPerWeight!) / (tp * g.bandwidth)) * 1e6,
    kvUs: ((m.layers! * 2 * m.kvHeads! * m.headDim! * MODELS.kvBytes) / (tp * g.bandwidth)) * 1e6,
    prefillNs: ((2 * active) / (tp * (m.activationBytes === 1 ? g.peakFlops8 : g.peakFlops))) * 1e9,
  };
}

function issuesOf(f: () => unknown): { path: string; message: string }[] {
  try {
    f();
  } catch (e) {
    if (e instanceof ServesimError) return (e as ServesimError & { issues: { path: string; message: string }[] }).issues;
    throw e;
  }
  throw new Error('expected the problem to be refused');
}

const LLAMA_8B = { params: 8.0e9, bytesPerWeight: 2, kvBytesPerToken: 131072 };

describe('the figures', () => {
  const { profiles } = profileCatalogue();

  it('cover every catalogue model and GPU type, each figure given by a source with its address', () => {
    for (const p of profiles) {
      const m = figures(p.model);
      for (const f of ['params', 'bytesPerWeight', 'layers', 'kvHeads', 'headDim'] as const) expect(m[f], `${p.model} ${f}`).toBeGreaterThan(0);
      expect(GPUS[p.gpu], p.gpu).toBeDefined();
    }
    const entries: [string, Record<string, unknown> & { sources: Source[] }, readonly string[]][] = [
      ...Object.entries(MODELS.models).map(([id, m]): [string, RawModel & Record<string, unknown>, readonly string[]] => [id, m as RawModel & Record<string, unknown>, ['of', 'params', 'activeParams', 'bytesPerWeight', 'activationBytes', 'layers', 'kvHeads', 'headDim']]),
      ...Object.entries(GPUS).map(([id, g]): [string, RawGpu & Record<string, unknown>, readonly string[]] => [id, g as RawGpu & Record<string, unknown>, ['memoryBytes', 'bandwidth', 'peakFlops', 'peakFlops8']]),
    ];
    for (const [id, entry, keys] of entries) {
      for (const key of keys.filter((k) => entry[k] !== undefined)) {
        expect(entry.sources.some((s) => s.gives.includes(key)), `${id} ${key}`).toBe(true);
      }
    }
    for (const s of [MODELS.kvBytesSource, ...entries.flatMap(([, e]) => e.sources)]) {
      expect(s.url, JSON.stringify(s)).toMatch(/^https:\/\//);
      // a copy read is dated
      expect(s.via === undefined || /^\d{4}-\d{2}-\d{2}$/.test(String(s.read)), JSON.stringify(s)).toBe(true);
    }
    // every GPU figure was read from a copy of NVIDIA's datasheet figures; of the models', the
    // count problems/README.md states (a source without `via` is to check against its page)
    for (const g of Object.values(GPUS)) expect(g.sources.every((s) => s.via !== undefined)).toBe(true);
    const sources = Object.values(MODELS.models).flatMap((m) => m.sources);
    const count = (list: readonly Source[]): number => list.reduce((n, s) => n + s.gives.length, 0);
    expect([count(sources), count(sources.filter((s) => s.via !== undefined))]).toEqual([113, 86]);
  });

  it('give the KV bytes a token from the config (layers x 2 x KV heads x head dim x 2 bytes) and a mixture of experts its active share', () => {
    // problems/README.md's check of the default KV size: 128 KiB a token for Llama 3.1 8B
    expect(floorOf('meta-llama/llama-3.1-8b-instruct', 'H100', 1).kvUs * 3.35e12 / 1e6).toBeCloseTo(131072, 6);
    // Mixtral reads its 12.9B active parameters a lone decode step, not its 46.7B
    expect(catalogueProfile('mixtral-8x7b-instruct-v0.1/h100/tp2')!.profile.roofline!.weightsUs).toBeCloseTo((12.9e9 * 2) / (2 * 3.35e12) * 1e6, 6);
    // a quantized checkpoint is its base model's architecture at fewer bytes a weight
    expect(figures('redhatai/qwen2.5-7b-instruct-quantized.w4a16')).toMatchObject({ params: 7.61e9, bytesPerWeight: 0.5, kvHeads: 4 });
  });
});

describe('no profile as loaded is faster than its floor', () => {
  const { profiles } = profileCatalogue();

  it('base reads the weights, a prompt token takes its FLOPs at peak, perSeq reads the prompt\'s KV', () => {
    for (const c of profiles) {
      const floor = floorOf(c.model, c.gpu, c.tp);
      expect(c.profile.base, c.id).toBeGreaterThanOrEqual(floor.weightsUs);
      expect(Math.round(1e6 / c.profile.prefillRate), c.id).toBeGreaterThanOrEqual(floor.prefillNs);
      for (const prompt of [1, 1000, 30_000]) {
        const words = compile(requestProblemOn(c.id, { kvTokens: 200_000 }, prompt), requestProblemOn(c.id, { kvTokens: 200_000 }, prompt).cases[0]!).params;
        // microseconds held to the nanosecond: whole ones and the nanoseconds below
        const base = words[P.ITER_BASE]! + words[P.ITER_BASE_NS]! / 1000;
        const perSeq = words[P.ITER_PER_SEQ]! + words[P.ITER_PER_SEQ_NS]! / 1000;
        // a lone decode step, and one of a full batch
        expect(base + perSeq, `${c.id} at ${prompt}`).toBeGreaterThanOrEqual(floor.weightsUs + floor.kvUs * prompt);
        expect(perSeq, `${c.id} at ${prompt}`).toBeGreaterThanOrEqual(floor.kvUs * prompt);
      }
    }
  });

  it('raises only what breaks it, and no more than to the floor\'s whole unit above', () => {
    let raisedBase = 0;
    let raisedPrefill = 0;
    for (const c of profiles) {
      const floor = floorOf(c.model, c.gpu, c.tp);
      const fitted = c.profile.roofline!.fitted!;
      expect(c.profile.base, c.id).toBe(fitted.base < floor.weightsUs ? Math.ceil(floor.weightsUs) : fitted.base);
      const fittedNs = Math.round(1e6 / fitted.prefillRate);
      expect(Math.round(1e6 / c.profile.prefillRate), c.id).toBe(fittedNs < floor.prefillNs ? Math.ceil(floor.prefillNs) : fittedNs);
      if (c.profile.base > fitted.base) raisedBase++;
      if (c.profile.prefillRate < fitted.prefillRate) raisedPrefill++;
    }
    expect([raisedBase, raisedPrefill]).toEqual([24, 13]);
  });

  it('counts the 23 fits that decode a lone sequence faster than they can read their weights (issue 27)', () => {
    const faster = profiles.filter((c) => c.beta[0] + c.beta[2] < floorOf(c.model, c.gpu, c.tp).weightsUs);
    expect(faster).toHaveLength(23);
    // 48 us a token for an 8B model at TP 4, against 1.2 ms to read 16 GB over 4 x 3.35 TB/s
    const tp4 = faster.find((c) => c.id === 'llama-3.1-8b-instruct/h100/tp4')!;
    expect(tp4.beta[0] + tp4.beta[2]).toBeCloseTo(47.7, 1);
    expect(tp4.profile.base).toBe(1195);
  });

  it('raises perSeq on a trace to its shortest prompt\'s KV read', () => {
    const problem = loadProblem('problems/conversation-trace.yaml');
    const trace = problem.traffic.trace!;
    const shortest = trace.input.reduce((a, b) => Math.min(a, b), Infinity);
    const floor = floorOf('meta-llama/llama-3.1-8b-instruct', 'H100', 1);
    // beta2 is 6 us; 891 tokens of KV take 34.9 us to read
    expect(shortest).toBe(891);
    expect(problem.gpu!.profile.perSeq).toBe(Math.ceil(floor.kvUs * shortest));
    expect(problem.gpu!.profile.perSeq).toBe(35);
  });
});

describe('a fit that breaks the floor', () => {
  const id = 'llama-3.1-8b-instruct/h100/tp4';

  it('is flagged in the listing with its floor, and the engines run the floor', () => {
    const listing = listProfiles().profiles.find((p) => p.id === id)!;
    expect(listing).toMatchObject({ base_us: 1195, per_seq_us: 5.91, coefficients: { beta: [41.80647673754272, 11.861039406797376, 5.9099565324485255] } });
    // what the floor adds to base, 1195 - 41.806 us, comes out of alpha2's 6001.151
    expect(listing.roofline).toEqual({
      weights_us: expect.closeTo(1194.03, 2),
      kv_us_per_1k_tokens: expect.closeTo(9.78, 2),
      prefill_ns_per_token: expect.closeTo(4042.4, 1),
      floored: ['base'],
      output_us_absorbed: 1153.194,
      token_faster_than_floor: false,
    });
    expect(listing.host!.us_per_output_token).toBe(6001.151 - 1153.194);
    const words = compile(requestProblemOn(id, {}, 100), requestProblemOn(id, {}, 100).cases[0]!).params;
    expect([words[P.ITER_BASE], words[P.ITER_BASE_NS], words[P.ITER_PER_SEQ], words[P.ITER_PER_SEQ_NS]]).toEqual([1195, 0, 5, 910]);
    expect([words[P.OUTPUT_TOKEN_US], words[P.OUTPUT_TOKEN_NS]]).toEqual([4847, 957]);
    // one that does not break it is not flagged
    expect(listProfiles().profiles.find((p) => p.id === 'llama-3.1-8b-instruct/h100/tp1')!.roofline!.floored).toEqual([]);
  });

  it('makes a run say that the floor applies and by how much', async () => {
    const warning = floorWarning(requestProblemOn(id, {}, 2000).gpu!.profile);
    // 2000 tokens of KV over 4 x 3.35 TB/s: 19.6 us a decoding sequence, over beta2's 5.91
    expect(warning).toBe(
      'gpu.profile llama-3.1-8b-instruct/h100/tp4 is faster than its hardware allows, so the roofline floor applies: ' +
        'base 41.806 -> 1195 us (its weights read once), perSeq 5.91 -> 20 us (the KV of its shortest prompt read): a lone decode step 47.716 -> 1215 us (x25.5); ' +
        "base's rise comes out of alpha2, the time each output token takes outside the GPU: 6001.151 -> 4847.957 us, so a lone token takes 6062.957 us (the fit: 6048.867 us)",
    );
    const { code, err } = await runCli('run', 'hot-prefix', '--set', `gpu.profile=${id}`, '--set', 'traffic.duration=2s', '--set', 'traffic.warmup=1s', '--case', 'as-given', '--seeds', '2');
    expect(code, err).not.toBe(2);
    expect(err.split('\n').filter((l) => l.includes('roofline floor applies'))).toEqual([expect.stringMatching(/^servesim: warning: gpu\.profile llama-3\.1-8b-instruct\/h100\/tp4 is faster than its hardware allows.*base 41\.806 -> 1195 us/)]);
    // a profile above its floor runs without a word about it
    expect((await runCli('run', 'hot-prefix', '--set', 'gpu.profile=llama-3.1-8b-instruct/h100/tp1', '--set', 'workload.unique=100', '--set', 'traffic.duration=2s', '--set', 'traffic.warmup=1s', '--case', 'as-given', '--seeds', '2')).err).not.toContain('roofline');
  });
});

describe('a model outside the catalogue, by its size', () => {
  it('is its roofline floor: base the weights\' read, prefill at peak FLOPs, perSeq the KV read, the KV cache what memory leaves', () => {
    const gpu = requestProblemOn({ model: LLAMA_8B, gpu: 'H100', tp: 1 }).gpu!;
    expect(gpu.profile).toEqual({
      name: 'custom',
      // 16 GB over 3.35 TB/s: 4776.1 us
      base: 4777,
      // 1000 tokens x 128 KiB over 3.35 TB/s: 39.1 us
      perSeq: 40,
      // 2 x 8e9 FLOPs over 989.5 TFLOPS: 16169.8 ns a token
      prefillRate: 1e6 / 16170,
      chunk: 2048,
      tp: 1,
      gpuType: 'H100',
      // 90% of 80 GB less 16 GB of weights, over 128 KiB a token
      kvTokens: Math.floor((0.9 * 80e9 - 16e9) / 131072),
      roofline: { weightsUs: expect.closeTo(4776.12, 2), kvUsPerToken: expect.closeTo(0.0391, 4), kvBytesPerToken: LLAMA_8B.kvBytesPerToken, prefillNsPerToken: expect.closeTo(16169.78, 2) },
    });
    expect([gpu.kvTokens, gpu.pricePerHour]).toEqual([427246, 55.04 / 8]);
    // the same figures as the catalogue's Llama 3.1 8B on one H100: the same floor
    const { fitted: _, ...catalogueFloor } = catalogueProfile('llama-3.1-8b-instruct/h100/tp1')!.profile.roofline!;
    expect(gpu.profile.roofline).toEqual(catalogueFloor);
    // the floor is the profile, so a run has nothing to warn of
    expect(floorWarning(gpu.profile)).toBeNull();
  });

  it('spreads over tp GPUs, reads a mixture of experts\' active share, and computes 8-bit activations at the 8-bit peak', () => {
    const tp4 = requestProblemOn({ model: LLAMA_8B, gpu: 'H100', tp: 4 }).gpu!.profile;
    expect([tp4.base, tp4.tp]).toEqual([Math.ceil(4776.12 / 4), 4]);
    const moe = requestProblemOn({ model: { params: 46.7e9, activeParams: 12.9e9, bytesPerWeight: 2, kvBytesPerToken: 131072 }, gpu: 'H100', tp: 2 }).gpu!.profile;
    expect(moe.base).toBe(Math.ceil((12.9e9 * 2) / (2 * 3.35e12) * 1e6));
    const fp8 = requestProblemOn({ model: { ...LLAMA_8B, bytesPerWeight: 1, activationBytes: 1 }, gpu: 'H100' }).gpu!.profile;
    expect(Math.round(1e6 / fp8.prefillRate)).toBe(Math.ceil((2 * 8e9) / 1978.9e12 * 1e9));
    expect(requestProblemOn({ model: LLAMA_8B, gpu: 'A100-80', chunk: 512 }).gpu!.profile).toMatchObject({ base: Math.ceil(16e9 / 2.039e12 * 1e6), chunk: 512, gpuType: 'A100-80' });
  });

  it('refuses what cannot be served, naming the field', () => {
    const at = (profile: unknown): string[] => issuesOf(() => requestProblemOn(profile)).map((i) => `${i.path}: ${i.message}`);
    expect(at({ model: LLAMA_8B, gpu: 'H200' })).toEqual(['gpu.profile.gpu: must be a GPU type of problems/profiles/hardware.yaml: H100, A100-80; got "H200"']);
    expect(at({ model: LLAMA_8B })).toEqual(['gpu.profile.gpu: required with model: a GPU type of problems/profiles/hardware.yaml: H100, A100-80']);
    expect(at({ model: LLAMA_8B, gpu: 'H100', base: '8ms' })).toEqual([
      'gpu.profile.base: a model profile is its roofline floor: leave base, perSeq and prefillRate out (or model, for a fitted profile)',
    ]);
    expect(at({ model: { ...LLAMA_8B, activeParams: 9e9 }, gpu: 'H100' })).toEqual(['gpu.profile.model.activeParams: must be at most params (8000000000), got 9000000000']);
    // 140 GB of BF16 weights on one 80 GB GPU
    expect(at({ model: { params: 70e9, bytesPerWeight: 2, kvBytesPerToken: 327680 }, gpu: 'H100' })).toEqual([
      "gpu.profile.model: its weights, 140.0 GB (params x bytesPerWeight), leave no room for a KV cache in tp 1 x H100's 80.0 GB at vLLM's 0.9 memory share: raise tp",
    ]);
    expect(requestProblemOn({ model: { params: 70e9, bytesPerWeight: 2, kvBytesPerToken: 327680 }, gpu: 'H100', tp: 4 }).gpu!.profile.base).toBe(Math.ceil(140e9 / (4 * 3.35e12) * 1e6));
    expect(at({ base: '8ms', perSeq: '250us', prefillRate: 16, gpu: 'H100' })).toEqual([
      'gpu.profile.gpu: names the GPU of a model profile: give model too, or leave gpu out; got "H100"',
      'gpu.profile.chunk: required (or model and gpu, for a model described by its size)',
    ]);
    expect(at({ model: { params: 8e9, bytesPerWeight: 2 }, gpu: 'H100' })).toEqual(['gpu.profile.model.kvBytesPerToken: required']);
    // the KV of the shortest prompt read in a decode step past what the engines hold
    expect(issuesOf(() => requestProblemOn({ model: { params: 8e9, bytesPerWeight: 2, kvBytesPerToken: 100_000_000 }, gpu: 'H100', tp: 8 }, { kvTokens: 4_000_000 }, 3_000_000)).map((i) => i.path)).toEqual(['gpu.profile']);
  });

  it('takes --set on its fields, as the schema lists them', () => {
    const raw = {
      id: 'sized',
      goals: { success: 0.99, p99: '10s' },
      traffic: { rate: 5, duration: '30s' },
      workload: { kind: 'request', unique: 1000, output: 50 },
      lb: {},
      app: { slots: 100, timeout: '30s' },
      router: { policy: 'least-loaded' },
      gpu: { replicas: 2, slots: 8, profile: { model: LLAMA_8B, gpu: 'H100' } },
    };
    const set = problemFromObject(applyOverrides(raw, ['gpu.profile.tp=2', 'gpu.profile.model.params=4e9'])).gpu!.profile;
    expect([set.tp, set.base]).toEqual([2, Math.ceil((4e9 * 2) / (2 * 3.35e12) * 1e6)]);
    expect(settablePaths()).toEqual(expect.arrayContaining(['gpu.profile.model.params', 'gpu.profile.model.kvBytesPerToken', 'gpu.profile.gpu']));
  });
});

describe('the built-in and fitted inline profiles', () => {
  it('run as before: no floor, whatever the prompts, and nothing to warn of', () => {
    const inline = { name: 'hand', base: '8ms', perSeq: '250us', prefillRate: 16, chunk: 2048 };
    for (const [profile, want] of [
      ['8b-h100', BUILTIN_PROFILES['8b-h100']!],
      ['70b-h100', BUILTIN_PROFILES['70b-h100']!],
      [inline, { name: 'hand', base: 8000, perSeq: 250, prefillRate: 16, chunk: 2048 }],
    ] as const) {
      for (const prompt of [1, 100_000]) {
        const problem = requestProblemOn(profile, { kvTokens: 400_000 }, prompt);
        expect(problem.gpu!.profile).toEqual(want);
        const words = compile(problem, problem.cases[0]!).params;
        expect([words[P.ITER_BASE], words[P.ITER_PER_SEQ], words[P.PREFILL_NS_PER_TOKEN]]).toEqual([want.base, want.perSeq, Math.round(1e6 / want.prefillRate)]);
        expect(floorWarning(problem.gpu!.profile)).toBeNull();
      }
    }
    expect(listProfiles().profiles.filter((p) => p.assumption).map((p) => p.roofline)).toEqual([null, null]);
  });
});
