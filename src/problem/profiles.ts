/**
 * GPU speed profiles (docs/model.md section 3): t = base + perSeq x B + prefill / prefillRate,
 * base and perSeq in microseconds. Two built-in profiles are hand-set assumptions
 * (problems/README.md says where each number comes from); the catalogue is published ones, read
 * from problems/profiles/ (one file per source), each selected by an id `model/gpu/tpN`; the
 * GPU types' on-demand prices come from problems/profiles/prices.yaml. Under every catalogue
 * profile lies a roofline floor (docs/model.md section 3, "The roofline floor"): the sizes of its
 * model (problems/profiles/models.yaml) and the peaks of its GPU (hardware.yaml) say how fast a
 * step can possibly be, and a fit faster than that is raised to it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { GpuProfile, HostTime, Roofline } from '../model/problem.js';
import { packageRoot } from '../package-root.js';
import { closest } from './issues.js';
import { LIMITS } from './limits.js';
import { formatDuration } from './units.js';

export const BUILTIN_PROFILES: Readonly<Record<string, GpuProfile>> = {
  // docs/model.md's default: an 8B model on one H100.
  '8b-h100': { name: '8b-h100', base: 8_000, perSeq: 250, prefillRate: 16, chunk: 2048 },
  // A 70B model (tensor-parallel over a node's H100s, seen as one replica): every iteration
  // reads about 9x the weights, so slower steps and prefill.
  '70b-h100': { name: '70b-h100', base: 25_000, perSeq: 600, prefillRate: 4, chunk: 2048 },
};

/** Where each built-in profile's numbers come from, as `servesim profiles` lists it. */
const BUILTIN_SOURCES: Readonly<Record<string, string>> = {
  '8b-h100': "docs/model.md's default for an 8B model on one H100; an assumption, not a measurement (problems/README.md)",
  '70b-h100': 'scaled from 8b-h100 by the weights read per iteration, a tensor-parallel group seen as one replica; an assumption, not a measurement (problems/README.md)',
};

export const DEFAULT_PROFILE = '8b-h100';

/** KV cache of a replica, tokens, when neither the problem nor its profile gives one (docs/model.md section 3). */
export const DEFAULT_KV_TOKENS = 400_000;

export function builtinProfile(name: string): GpuProfile | undefined {
  return Object.hasOwn(BUILTIN_PROFILES, name) ? BUILTIN_PROFILES[name] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Model sizes and GPU peaks: the roofline floor (docs/model.md section 3)

/** Which figures a source gives, the publisher's page, and the copy they were read from (and when). */
const figureSource = z
  .strictObject({
    gives: z.array(z.string().min(1)).min(1),
    url: z.url(),
    via: z.string().min(1).optional(),
    read: z.iso.date().optional(),
  })
  .refine((s) => (s.via === undefined) === (s.read === undefined), { error: 'via and read go together: the copy read, and when' });

/** An entry whose every figure a source gives, and whose every source gives a figure it states. */
function sourced<T extends z.core.$ZodLooseShape>(shape: T, figures: readonly (keyof T & string)[]) {
  return z.strictObject({ ...shape, sources: z.array(figureSource).min(1) }).superRefine((raw, ctx) => {
    const entry = raw as Record<string, unknown> & { sources: readonly z.output<typeof figureSource>[] };
    const given = new Set(entry.sources.flatMap((s) => s.gives));
    const stated: string[] = figures.filter((f) => entry[f] !== undefined);
    for (const f of stated) {
      if (!given.has(f)) ctx.addIssue({ code: 'custom', path: [f], message: 'no source gives it' });
    }
    for (const g of given) {
      if (!stated.includes(g)) ctx.addIssue({ code: 'custom', path: ['sources'], message: `a source gives ${g}, which the entry does not state` });
    }
  });
}

const GPU_FIGURES = ['memoryBytes', 'bandwidth', 'peakFlops', 'peakFlops8'] as const;
const hardwareFileSchema = z.strictObject({
  gpus: z.record(
    z.string().regex(/^[A-Za-z0-9-]+$/),
    sourced(
      {
        gpu: z.string().min(1),
        memoryBytes: z.number().positive(),
        bandwidth: z.number().positive(),
        peakFlops: z.number().positive(),
        peakFlops8: z.number().positive(),
      },
      GPU_FIGURES,
    ),
  ),
});

const MODEL_FIGURES = ['of', 'params', 'activeParams', 'bytesPerWeight', 'activationBytes', 'layers', 'kvHeads', 'headDim'] as const;
const modelsFileSchema = z.strictObject({
  kvBytes: z.number().positive(),
  kvBytesSource: figureSource,
  models: z.record(
    z.string().regex(/^[a-z0-9._-]+\/[a-z0-9._-]+$/),
    sourced(
      {
        of: z.string().optional(),
        params: z.number().positive().optional(),
        activeParams: z.number().positive().optional(),
        bytesPerWeight: z.number().positive().optional(),
        activationBytes: z.union([z.literal(1), z.literal(2)]).optional(),
        layers: z.number().int().positive().optional(),
        kvHeads: z.number().int().positive().optional(),
        headDim: z.number().int().positive().optional(),
      },
      MODEL_FIGURES,
    ),
  ),
});

/** A GPU type's peaks, as problems/profiles/hardware.yaml gives them. */
export interface GpuSpec {
  /** The catalogue's name of the type (`H100`). */
  readonly type: string;
  readonly gpu: string;
  readonly memoryBytes: number;
  /** Bytes a second. */
  readonly bandwidth: number;
  /** Dense BF16/FP16 FLOPs a second. */
  readonly peakFlops: number;
  /** Dense FP8/INT8 FLOPs a second. */
  readonly peakFlops8: number;
}

/** What the floor needs of a model: a catalogue one's figures (models.yaml), or an inline one's. */
export interface ModelSize {
  readonly params: number;
  /** Parameters one token computes with and a lone decode reads (a mixture of experts' routed share); params for a dense model. */
  readonly activeParams: number;
  readonly bytesPerWeight: number;
  /** Bytes of the operands the matrix units multiply: 2 (BF16/FP16) or 1 (FP8/INT8), which sets the peak FLOPs. */
  readonly activationBytes: 1 | 2;
  readonly kvBytesPerToken: number;
}

let hardware: ReadonlyMap<string, GpuSpec> | undefined;

/** The GPU types' peaks, read once. */
export function gpuSpecs(): ReadonlyMap<string, GpuSpec> {
  if (hardware === undefined) {
    const parsed = hardwareFileSchema.safeParse(parseYaml(readFileSync(join(profilesDir(), HARDWARE_FILE), 'utf8')));
    if (!parsed.success) throw new Error(`problems/profiles/${HARDWARE_FILE}: ${z.prettifyError(parsed.error)}`);
    hardware = new Map(Object.entries(parsed.data.gpus).map(([type, g]) => [type, { type, gpu: g.gpu, memoryBytes: g.memoryBytes, bandwidth: g.bandwidth, peakFlops: g.peakFlops, peakFlops8: g.peakFlops8 }]));
  }
  return hardware;
}

type ModelEntry = z.output<typeof modelsFileSchema>['models'][string];

/** An entry with what its `of` chain gives filled in. */
function resolveModel(entries: Readonly<Record<string, ModelEntry>>, id: string, seen: readonly string[]): Omit<ModelEntry, 'of' | 'sources'> {
  if (!Object.hasOwn(entries, id)) throw new Error(`problems/profiles/${MODELS_FILE}: ${seen.at(-1)} is "of" ${id}, which the file does not have`);
  if (seen.includes(id)) throw new Error(`problems/profiles/${MODELS_FILE}: ${[...seen, id].join(' of ')}: a model cannot be of itself`);
  const { of, sources: _sources, ...own } = entries[id]!;
  const defined = Object.fromEntries(Object.entries(own).filter(([, v]) => v !== undefined));
  return of === undefined ? defined : { ...resolveModel(entries, of, [...seen, id]), ...defined };
}

let models: ReadonlyMap<string, ModelSize> | undefined;

/** The sizes of the catalogue's models, each `of` resolved, read once. */
export function modelSizes(): ReadonlyMap<string, ModelSize> {
  if (models === undefined) {
    const parsed = modelsFileSchema.safeParse(parseYaml(readFileSync(join(profilesDir(), MODELS_FILE), 'utf8')));
    if (!parsed.success) throw new Error(`problems/profiles/${MODELS_FILE}: ${z.prettifyError(parsed.error)}`);
    const { kvBytes, models: entries } = parsed.data;
    models = new Map(
      Object.keys(entries).map((id): [string, ModelSize] => {
        const m = resolveModel(entries, id, []);
        const { params, bytesPerWeight, layers, kvHeads, headDim } = m;
        if (params === undefined || bytesPerWeight === undefined || layers === undefined || kvHeads === undefined || headDim === undefined) {
          throw new Error(`problems/profiles/${MODELS_FILE}: ${id} needs params, bytesPerWeight, layers, kvHeads and headDim, its own or through "of"`);
        }
        const activeParams = m.activeParams ?? params;
        if (activeParams > params) throw new Error(`problems/profiles/${MODELS_FILE}: ${id}: activeParams ${activeParams} is more than params ${params}`);
        // K and V, for every layer and KV head
        const kvBytesPerToken = layers * 2 * kvHeads * headDim * kvBytes;
        return [id, { params, activeParams, bytesPerWeight, activationBytes: m.activationBytes ?? 2, kvBytesPerToken }];
      }),
    );
  }
  return models;
}

/** The least a step can take for `model` on `tp` GPUs of `gpu`: peak bandwidth and peak FLOPs, split evenly over the TP GPUs. */
export function rooflineOf(model: ModelSize, gpu: GpuSpec, tp: number): Roofline {
  const bandwidth = tp * gpu.bandwidth;
  const flops = tp * (model.activationBytes === 1 ? gpu.peakFlops8 : gpu.peakFlops);
  return {
    weightsUs: ((model.activeParams * model.bytesPerWeight) / bandwidth) * 1e6,
    kvUsPerToken: (model.kvBytesPerToken / bandwidth) * 1e6,
    kvBytesPerToken: model.kvBytesPerToken,
    prefillNsPerToken: ((2 * model.activeParams) / flops) * 1e9,
  };
}

/**
 * A fitted profile raised to its floor where it is faster (docs/model.md section 3): base to the
 * weights' read (whole microseconds above), a prompt token's prefill to its FLOPs at peak (whole
 * nanoseconds above). perSeq's floor depends on the problem's prompts (withContextFloor, at build).
 */
export function withFloor(fit: GpuProfile, floor: Roofline): GpuProfile {
  const base = fit.base < floor.weightsUs ? Math.ceil(floor.weightsUs) : fit.base;
  const prefillRate = termOf(fit, 'prefill') < floor.prefillNsPerToken ? 1e6 / Math.ceil(floor.prefillNsPerToken) : fit.prefillRate;
  const fitted = { base: fit.base, perSeq: fit.perSeq, prefillRate: fit.prefillRate, perOutputToken: fit.host?.perOutputToken ?? 0 };
  return withOutputAbsorbed({ ...fit, base, prefillRate, roofline: { ...floor, fitted } });
}

/** perSeq raised to the KV read of a `promptTokens` context (whole microseconds above), where the profile has a floor and perSeq is less. */
export function withContextFloor(profile: GpuProfile, promptTokens: number): GpuProfile {
  const kv = profile.roofline === undefined ? 0 : profile.roofline.kvUsPerToken * promptTokens;
  return profile.perSeq < kv ? { ...profile, perSeq: Math.ceil(kv) } : profile;
}

/**
 * What the floor added to base comes out of the fit's time per output token (BLIS's alpha2), down
 * to 0 (docs/model.md section 3): the fit put that much of a token's time outside a step faster
 * than the GPU can run. Every step, a prefill's too, pays base and every token alpha2, so a
 * request alone still takes BLIS's time to first token and per output token, and the GPU as long
 * as the hardware needs. (perSeq's floor, a decoding sequence's KV read, is the problem's, and adds.)
 */
function withOutputAbsorbed(profile: GpuProfile): GpuProfile {
  const fitted = profile.roofline?.fitted;
  if (fitted === undefined || profile.host === undefined) return profile;
  return { ...profile, host: { ...profile.host, perOutputToken: toNs(Math.max(0, fitted.perOutputToken - (profile.base - fitted.base))) } };
}

/** Microseconds to the nanosecond, the engines' unit (compile.ts holds whole microseconds and the nanoseconds below). */
function toNs(micros: number): number {
  return Math.round(micros * 1000) / 1000;
}

const U32_MAX = 0xffff_ffff;
/** vLLM's default share of GPU memory it takes for weights and KV cache (--gpu-memory-utilization). */
const VLLM_MEMORY_SHARE = 0.9;
/** Prompt tokens a step prefills in a roofline profile: the built-in and catalogue profiles' 2048. */
const ROOFLINE_CHUNK = 2048;

/** Why a model cannot be served as asked, naming the field of the inline profile to change. */
export interface RooflineRefusal {
  readonly path: readonly string[];
  readonly message: string;
}

/**
 * A profile that is its own floor, for a model outside the catalogue: base the weights' read,
 * prefill at peak FLOPs, perSeq the KV read (lifted per problem from 0), and the KV cache what
 * vLLM's 90% of tp x the GPU's memory leaves after the weights.
 */
export function rooflineProfile(name: string, model: ModelSize, gpu: GpuSpec, tp: number, chunk = ROOFLINE_CHUNK): GpuProfile | RooflineRefusal {
  const floor = rooflineOf(model, gpu, tp);
  const weightBytes = model.params * model.bytesPerWeight;
  const usable = VLLM_MEMORY_SHARE * tp * gpu.memoryBytes;
  const kvTokens = Math.floor((usable - weightBytes) / model.kvBytesPerToken);
  if (kvTokens < 1) {
    return {
      path: ['model'],
      message: `its weights, ${gb(weightBytes)} (params x bytesPerWeight), leave no room for a KV cache in tp ${tp} x ${gpu.type}'s ${gb(gpu.memoryBytes)} at vLLM's ${VLLM_MEMORY_SHARE} memory share: raise tp`,
    };
  }
  if (floor.weightsUs > LIMITS.stepMicros) {
    return { path: ['model', 'params'], message: `reading the weights once takes ${Math.round(floor.weightsUs / 1000)} ms a step, over the ${LIMITS.stepMicros / 1e6} s the engines hold` };
  }
  const prefillNs = Math.ceil(floor.prefillNsPerToken);
  if (prefillNs * chunk > U32_MAX) {
    return {
      path: ['chunk'],
      message: `prefilling a chunk of ${chunk} tokens at ${prefillNs} ns a token (peak FLOPs) would take ${formatDuration(Math.round((prefillNs * chunk) / 1000))}, over the ${formatDuration(Math.floor(U32_MAX / 1000))} the engines hold in u32 nanoseconds`,
    };
  }
  return {
    name,
    base: Math.ceil(floor.weightsUs),
    perSeq: 0,
    prefillRate: 1e6 / prefillNs,
    chunk,
    tp,
    gpuType: gpu.type,
    // a default past what the engines index would only be refused: it is past any workload too
    kvTokens: Math.min(kvTokens, LIMITS.tokens * 100),
    roofline: floor,
  };
}

function gb(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`;
}

/** A term of a fitted profile that the floor can raise. */
export type FloorTerm = 'base' | 'perSeq' | 'prefill';

/** A term's value as the engines hold it: microseconds to the nanosecond, or whole nanoseconds a prompt token. */
function termOf(p: { readonly base: number; readonly perSeq: number; readonly prefillRate: number }, term: FloorTerm): number {
  return term === 'prefill' ? Math.round(1e6 / p.prefillRate) : p[term];
}

/** The terms the floor raised in a fitted profile, each from the fit's value to the one run; none for a profile without a fit. */
function floorRaises(profile: GpuProfile): { term: FloorTerm; from: number; to: number }[] {
  const fitted = profile.roofline?.fitted;
  if (fitted === undefined) return [];
  return (['base', 'perSeq', 'prefill'] as const)
    .map((term) => ({ term, from: termOf(fitted, term), to: termOf(profile, term) }))
    .filter((r) => r.to > r.from);
}

const RAISED_TO: Readonly<Record<FloorTerm, string>> = {
  base: 'us (its weights read once)',
  perSeq: 'us (the KV of its shortest prompt read)',
  prefill: 'ns a token (its FLOPs at peak)',
};

/** A number of microseconds as the engines hold it, to the nanosecond, without trailing zeros. */
function micros(us: number): string {
  return String(Number(us.toFixed(3)));
}

/** A lone decoding sequence's time a token: its step (base + perSeq) and its output processing (alpha2). */
function loneToken(p: { readonly base: number; readonly perSeq: number }, perOutputToken: number): number {
  return p.base + p.perSeq + perOutputToken;
}

/** The one line a run prints when a profile's fit is faster than the hardware allows; null when it is not. */
export function floorWarning(profile: GpuProfile): string | null {
  const raises = floorRaises(profile).map((r) => `${r.term} ${micros(r.from)} -> ${micros(r.to)} ${RAISED_TO[r.term]}`);
  const fitted = profile.roofline?.fitted;
  if (raises.length === 0 || fitted === undefined) return null;
  const before = fitted.base + fitted.perSeq;
  const after = profile.base + profile.perSeq;
  const lone = after === before ? '' : `: a lone decode step ${micros(before)} -> ${micros(after)} us${before === 0 ? '' : ` (x${(after / before).toFixed(1)})`}`;
  const output = profile.host?.perOutputToken ?? 0;
  const taken = toNs(fitted.perOutputToken - output);
  const [fit, now] = [loneToken(fitted, fitted.perOutputToken), loneToken(profile, output)];
  const token = taken === 0
    ? ''
    : `; base's rise comes out of alpha2, the time each output token takes outside the GPU: ${micros(fitted.perOutputToken)} -> ${micros(output)} us, ` +
      `so a lone token takes ${micros(now)} us (the fit: ${micros(fit)} us)`;
  return `gpu.profile ${profile.name} is faster than its hardware allows, so the roofline floor applies: ${raises.join(', ')}${lone}${token}`;
}

// ---------------------------------------------------------------------------------------------
// The catalogue

/** Each catalogue file, as BLIS publishes its fits (problems/profiles/blis.yaml says what each field means). */
const catalogueFileSchema = z.strictObject({
  source: z.strictObject({
    name: z.string().min(1),
    url: z.url(),
    commit: z.string().regex(/^[0-9a-f]{40}$/),
    licence: z.string().min(1),
  }),
  blockSize: z.number().int().positive(),
  chunk: z.number().int().positive(),
  models: z
    .array(
      z.strictObject({
        GPU: z.string().regex(/^[A-Za-z0-9-]+$/),
        id: z.string().regex(/^[a-z0-9._-]+\/[a-z0-9._-]+$/),
        tensor_parallelism: z.number().int().min(1).max(64),
        vllm_version: z.string().min(1),
        total_kv_blocks: z.number().int().positive(),
        best_loss: z.number(),
        // BLIS refuses a negative alpha (its latency model's validateCoeffs)
        alpha_coeffs: z.tuple([z.number().nonnegative(), z.number().nonnegative(), z.number().nonnegative()]),
        // a prefill cost of 0 would make prefill free (an infinite prefillRate)
        beta_coeffs: z.tuple([z.number().nonnegative(), z.number().positive(), z.number().nonnegative()]),
      }),
    )
    .min(1),
});

type SourceModel = z.output<typeof catalogueFileSchema>['models'][number];

export interface ProfileSource {
  readonly name: string;
  readonly url: string;
  readonly commit: string;
  readonly licence: string;
  /** The catalogue file, relative to the package. */
  readonly file: string;
}

/**
 * A coefficient of the source as the engines hold it, microseconds (beta1, alpha1: a prompt
 * token's; beta2: a decoding sequence's; alpha2: an output token's), to the nanosecond: the
 * engines' value, and its error relative to the source's (0 where the source's is 0).
 */
export interface Held {
  readonly source: number;
  readonly engine: number;
  readonly relative: number;
}

/** What holding each coefficient to the nanosecond does to it. */
export interface Rounding {
  readonly beta0: Held;
  readonly beta1: Held;
  readonly beta2: Held;
  readonly alpha0: Held;
  readonly alpha1: Held;
  readonly alpha2: Held;
}

function held(source: number): Held {
  const engine = toNs(source);
  return { source, engine, relative: source === 0 ? 0 : (engine - source) / source };
}

export interface CatalogueProfile {
  /** `llama-3.1-8b-instruct/h100/tp2`: the model without its organisation, the GPU, the tensor parallelism. */
  readonly id: string;
  /** The model as the source names it (`meta-llama/llama-3.1-8b-instruct`). */
  readonly model: string;
  readonly gpu: string;
  readonly tp: number;
  readonly vllm: string;
  /** The source's step-time coefficients, microseconds: beta0, per uncached prompt token, per decode token. */
  readonly beta: readonly [number, number, number];
  /** The source's time outside the GPU's steps, microseconds: alpha0 + alpha1 x prompt tokens before queueing, alpha2 per output token (GpuProfile.host). */
  readonly alpha: readonly [number, number, number];
  readonly totalKvBlocks: number;
  readonly blockSize: number;
  readonly bestLoss: number;
  readonly source: ProfileSource;
  /** What the engines run: the fit, rounded, raised to its roofline floor where it is faster. */
  readonly profile: GpuProfile;
  readonly rounding: Rounding;
}

/** A later item of a source that repeats an earlier one's key with other numbers: the source uses the first. */
export interface ShadowedModel {
  readonly id: string;
  readonly beta: readonly number[];
  readonly alpha: readonly number[];
  readonly totalKvBlocks: number;
  readonly bestLoss: number;
  readonly file: string;
}

export interface Catalogue {
  readonly profiles: readonly CatalogueProfile[];
  readonly shadowed: readonly ShadowedModel[];
}

const PRICES_FILE = 'prices.yaml';
const HARDWARE_FILE = 'hardware.yaml';
const MODELS_FILE = 'models.yaml';
/** The files of problems/profiles/ that hold no profiles. */
const NOT_CATALOGUE: ReadonlySet<string> = new Set([PRICES_FILE, HARDWARE_FILE, MODELS_FILE]);

function profilesDir(): string {
  const root = packageRoot();
  if (root === null) throw new Error("servesim's package.json is not found: the profile catalogue lives next to it, in problems/profiles/");
  return join(root.dir, 'problems', 'profiles');
}

/** `model/gpu/tpN`, lower case, the model without its organisation. */
function catalogueId(m: SourceModel): string {
  return `${m.id.split('/')[1]}/${m.GPU.toLowerCase()}/tp${m.tensor_parallelism}`;
}

/** The roofline floor under a source's entry, from its model's sizes and its GPU's peaks. */
function catalogueFloor(id: string, m: SourceModel): Roofline {
  const model = modelSizes().get(m.id);
  if (model === undefined) throw new Error(`profile catalogue: ${id}: problems/profiles/${MODELS_FILE} has no figures for ${m.id}`);
  const gpu = gpuSpecs().get(m.GPU);
  if (gpu === undefined) throw new Error(`profile catalogue: ${id}: problems/profiles/${HARDWARE_FILE} has no figures for ${m.GPU}`);
  return rooflineOf(model, gpu, m.tensor_parallelism);
}

/** The engines' profile for a source's fit, checked against what they can hold, and raised to its floor. */
function engineProfile(id: string, m: SourceModel, chunk: number, blockSize: number): { profile: GpuProfile; rounding: Rounding } {
  const [b0, b1, b2] = m.beta_coeffs;
  const [a0, a1, a2] = m.alpha_coeffs;
  const rounding: Rounding = { beta0: held(b0), beta1: held(b1), beta2: held(b2), alpha0: held(a0), alpha1: held(a1), alpha2: held(a2) };
  // compile.ts holds prefill as round(1e6 / prefillRate) ns per token: round(1000 x beta1)
  const prefillRate = 1000 / b1;
  const prefillNs = Math.round(1e6 / prefillRate);
  const kvTokens = m.total_kv_blocks * blockSize;
  const overLimit = Object.entries({ beta0: b0, beta2: b2, alpha0: a0, alpha1: a1, alpha2: a2 }).filter(([, v]) => v > LIMITS.stepMicros).map(([k]) => k);
  // a step's nanoseconds are summed in one u32 (compile.ts), those below base's and perSeq's microseconds with them
  const stepNs = prefillNs * chunk + 999 * (LIMITS.gpuSlots + 2);
  const problems = [
    overLimit.length > 0 ? `${overLimit.join(', ')} over ${LIMITS.stepMicros / 1e6}s` : '',
    prefillNs < 1 ? 'prefill under 1 ns a token' : '',
    stepNs > 0xffff_ffff ? 'a chunk of prefill past u32 nanoseconds' : '',
    kvTokens > LIMITS.tokens * 100 ? `KV cache past ${LIMITS.tokens * 100} tokens` : '',
  ].filter((p) => p !== '');
  if (problems.length > 0) throw new Error(`profile catalogue: ${id}: the engines cannot hold ${problems.join(', ')}`);
  const fit: GpuProfile = {
    name: id,
    base: rounding.beta0.engine,
    perSeq: rounding.beta2.engine,
    prefillRate,
    chunk,
    tp: m.tensor_parallelism,
    gpuType: m.GPU,
    kvTokens,
    host: { queueing: rounding.alpha0.engine, queueingPerToken: rounding.alpha1.engine, perOutputToken: rounding.alpha2.engine },
  };
  return { profile: withFloor(fit, catalogueFloor(id, m)), rounding };
}

function readCatalogue(): Catalogue {
  const dir = profilesDir();
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && !NOT_CATALOGUE.has(f)).sort();
  const profiles = new Map<string, CatalogueProfile>();
  const shadowed: ShadowedModel[] = [];
  for (const f of files) {
    const parsed = catalogueFileSchema.safeParse(parseYaml(readFileSync(join(dir, f), 'utf8')));
    if (!parsed.success) throw new Error(`profile catalogue: problems/profiles/${f}: ${z.prettifyError(parsed.error)}`);
    const { source, blockSize, chunk, models } = parsed.data;
    const file = `problems/profiles/${f}`;
    // BLIS returns the first item matching (id, GPU, tensor_parallelism, vllm_version): so do we
    const used = new Map<string, SourceModel>();
    for (const m of models) {
      const id = catalogueId(m);
      const key = `${m.id} ${m.GPU} ${m.tensor_parallelism} ${m.vllm_version}`;
      const first = used.get(key);
      if (first !== undefined) {
        if (JSON.stringify(first) !== JSON.stringify(m)) {
          shadowed.push({ id, beta: m.beta_coeffs, alpha: m.alpha_coeffs, totalKvBlocks: m.total_kv_blocks, bestLoss: m.best_loss, file });
        }
        continue;
      }
      used.set(key, m);
      const other = profiles.get(id);
      if (other !== undefined) {
        throw new Error(`profile catalogue: ${id} names both ${other.model} (${other.vllm}, ${other.source.file}) and ${m.id} (${m.vllm_version}, ${file})`);
      }
      profiles.set(id, {
        id,
        model: m.id,
        gpu: m.GPU,
        tp: m.tensor_parallelism,
        vllm: m.vllm_version,
        beta: m.beta_coeffs,
        alpha: m.alpha_coeffs,
        totalKvBlocks: m.total_kv_blocks,
        blockSize,
        bestLoss: m.best_loss,
        source: { ...source, file },
        ...engineProfile(id, m, chunk, blockSize),
      });
    }
  }
  for (const id of profiles.keys()) {
    if (builtinProfile(id) !== undefined) throw new Error(`profile catalogue: ${id} is also a built-in profile`);
  }
  return { profiles: [...profiles.values()], shadowed };
}

let catalogue: Catalogue | undefined;

/** The catalogue, read once, in file order. */
export function profileCatalogue(): Catalogue {
  return (catalogue ??= readCatalogue());
}

export function catalogueProfile(id: string): CatalogueProfile | undefined {
  return profileCatalogue().profiles.find((p) => p.id === id);
}

/**
 * Catalogue ids close to an unknown one: the same model's (on every GPU and TP), else those
 * whose model contains the one given or is contained in it, else the nearest spelling.
 */
export function closeProfiles(id: string): string[] {
  const ids = profileCatalogue().profiles.map((p) => p.id);
  const parts = id.toLowerCase().split('/');
  // `org/model/gpu/tpN` names the model second
  const model = (parts.length >= 4 ? parts[1] : parts[0]) ?? '';
  const modelOf = (x: string): string => x.split('/')[0]!;
  const same = ids.filter((x) => modelOf(x) === model);
  if (same.length > 0) return same;
  const related = model.length < 3 ? [] : ids.filter((x) => modelOf(x).includes(model) || model.includes(modelOf(x)));
  if (related.length > 0) return related;
  const near = closest(id, ids);
  return near === undefined ? [] : [near];
}

// ---------------------------------------------------------------------------------------------
// Prices

const pricesFileSchema = z.strictObject({
  retrieved: z.iso.date(),
  prices: z.record(
    z.string().regex(/^[A-Za-z0-9-]+$/),
    z.strictObject({
      gpu: z.string().min(1),
      instance: z.string().min(1),
      instancePerHour: z.number().positive(),
      gpusPerInstance: z.number().int().positive(),
    }),
  ),
});

export interface GpuPrice {
  /** The catalogue's name of the GPU type (`H100`). */
  readonly type: string;
  readonly gpu: string;
  /** Dollars per GPU-hour: the instance's price over its GPUs. */
  readonly perGpuHour: number;
  readonly instance: string;
  readonly instancePerHour: number;
  readonly gpusPerInstance: number;
  /** The date the prices were read. */
  readonly retrieved: string;
  readonly file: string;
}

let prices: readonly GpuPrice[] | undefined;

/** The list prices, read once. */
export function gpuPrices(): readonly GpuPrice[] {
  if (prices === undefined) {
    const parsed = pricesFileSchema.safeParse(parseYaml(readFileSync(join(profilesDir(), PRICES_FILE), 'utf8')));
    if (!parsed.success) throw new Error(`problems/profiles/${PRICES_FILE}: ${z.prettifyError(parsed.error)}`);
    const { retrieved } = parsed.data;
    prices = Object.entries(parsed.data.prices).map(([type, p]) => ({
      type,
      ...p,
      perGpuHour: p.instancePerHour / p.gpusPerInstance,
      retrieved,
      file: `problems/profiles/${PRICES_FILE}`,
    }));
  }
  return prices;
}

/** Dollars per GPU-hour of a GPU type, when the price table has it. */
export function listPrice(gpuType: string | undefined): number | undefined {
  return gpuType === undefined ? undefined : gpuPrices().find((p) => p.type === gpuType)?.perGpuHour;
}

// ---------------------------------------------------------------------------------------------
// The listing: `servesim profiles` and GET /v1/profiles

export interface ProfileListing {
  readonly id: string;
  /** Hand-set numbers (the built-in profiles), not a published measurement. */
  readonly assumption: boolean;
  readonly model: string | null;
  readonly gpu: string | null;
  /** GPUs a replica uses; null when the profile does not say (counted as one). */
  readonly tp: number | null;
  readonly vllm: string | null;
  /** What the engines run: base and perSeq to the nanosecond, prefill in whole nanoseconds a prompt token. */
  readonly base_us: number;
  readonly per_seq_us: number;
  readonly prefill_ns_per_token: number;
  /** Time outside the GPU's steps the engines run (BLIS's alphas, to the nanosecond, after any floor); null: none. */
  readonly host: {
    readonly queueing_us: number;
    readonly queueing_us_per_prompt_token: number;
    readonly us_per_output_token: number;
  } | null;
  readonly chunk: number;
  /** gpu.kvTokens's default with this profile. */
  readonly kv_tokens: number;
  /** Dollars per GPU-hour of its GPU type, when listed; null otherwise. */
  readonly price_per_gpu_hour: number | null;
  /** The source's numbers, as published. */
  readonly coefficients: {
    readonly beta: readonly number[];
    readonly alpha: readonly number[];
    readonly total_kv_blocks: number;
    readonly block_size: number;
    readonly best_loss: number;
  } | null;
  readonly rounding: Rounding | null;
  /** A request alone on a replica: its time per output token in BLIS and in servesim; null without a BLIS fit. */
  readonly lone_tpot: LoneTpot | null;
  /** The roofline floor under the profile (docs/model.md section 3); null where it names no model. */
  readonly roofline: RooflineListing | null;
  readonly source: string;
}

export interface LoneTpot {
  /** floor(beta0 + beta2) + floor(alpha2): BLIS's step for one decoding sequence and its output processing, each truncated to the microsecond. */
  readonly blis_us: number;
  /** The engines' step for one decoding sequence, rounded up to the microsecond, and alpha2 as they hold it (after any floor). */
  readonly servesim_us: number;
  /** servesim_us / blis_us - 1. */
  readonly relative: number;
}

export interface RooflineListing {
  /** Base's floor: reading the active weights once, split over the TP GPUs. */
  readonly weights_us: number;
  /** perSeq's floor for a decoding sequence with 1,000 tokens of context; a problem's shortest prompt sets the one applied. */
  readonly kv_us_per_1k_tokens: number;
  readonly prefill_ns_per_token: number;
  /** Where the fit is faster than the floor, so that the floor applies (`base`, `prefill`; perSeq's depends on a problem's prompts). */
  readonly floored: readonly FloorTerm[];
  /** Of alpha2, what the floor moved into base (docs/model.md section 3). */
  readonly output_us_absorbed: number;
  /** The fit's base and alpha2 together are faster than the weights' read: servesim's lone TPOT is then above BLIS's. */
  readonly token_faster_than_floor: boolean;
}

function rooflineListing(p: GpuProfile): RooflineListing | null {
  const r = p.roofline;
  if (r === undefined) return null;
  const floored = floorRaises(p).map((x) => x.term);
  const fittedOutput = r.fitted?.perOutputToken ?? 0;
  const raise = r.fitted === undefined ? 0 : p.base - r.fitted.base;
  return {
    weights_us: r.weightsUs,
    kv_us_per_1k_tokens: r.kvUsPerToken * 1000,
    prefill_ns_per_token: r.prefillNsPerToken,
    floored,
    output_us_absorbed: toNs(fittedOutput - (p.host?.perOutputToken ?? 0)),
    token_faster_than_floor: raise > fittedOutput,
  };
}

/**
 * A lone decoding sequence's time a token as the engines run it: its step (iterationTime: base's
 * and perSeq's nanoseconds rounded up to the microsecond once) and its output processing, alpha2
 * to the nanosecond (a call's tokens' sum is floored once, so over a long output this is its TPOT).
 */
export function engineLoneTpot(p: GpuProfile): number {
  return Math.ceil((Math.round(p.base * 1000) + Math.round(p.perSeq * 1000)) / 1000) + (p.host?.perOutputToken ?? 0);
}

/** BLIS's lone request (BlackboxLatencyModel's StepTime and OutputTokenProcessingTime): each decode step int64(beta0 + beta2), each token's processing int64(alpha2). */
function blisLoneTpot(c: CatalogueProfile): number {
  return Math.floor(c.beta[0] + c.beta[2]) + Math.floor(c.alpha[2]);
}

function loneTpot(c: CatalogueProfile): LoneTpot {
  const blis = blisLoneTpot(c);
  const servesim = engineLoneTpot(c.profile);
  return { blis_us: blis, servesim_us: servesim, relative: servesim / blis - 1 };
}

function hostListing(h: HostTime | undefined): ProfileListing['host'] {
  return h === undefined ? null : { queueing_us: h.queueing, queueing_us_per_prompt_token: h.queueingPerToken, us_per_output_token: h.perOutputToken };
}

export interface ProfilesDocument {
  readonly profiles: readonly ProfileListing[];
  readonly prices: readonly GpuPrice[];
  readonly shadowed: readonly ShadowedModel[];
}

/** Every profile a problem may name, built-in first, then the catalogue, and the prices. */
export function listProfiles(): ProfilesDocument {
  const builtins = Object.values(BUILTIN_PROFILES).map(
    (p): ProfileListing => ({
      id: p.name,
      assumption: true,
      model: null,
      gpu: null,
      tp: null,
      vllm: null,
      base_us: p.base,
      per_seq_us: p.perSeq,
      prefill_ns_per_token: Math.round(1e6 / p.prefillRate),
      host: null,
      chunk: p.chunk,
      kv_tokens: DEFAULT_KV_TOKENS,
      price_per_gpu_hour: null,
      coefficients: null,
      rounding: null,
      lone_tpot: null,
      roofline: null,
      source: BUILTIN_SOURCES[p.name]!,
    }),
  );
  const { profiles, shadowed } = profileCatalogue();
  const published = profiles.map(
    (c): ProfileListing => ({
      id: c.id,
      assumption: false,
      model: c.model,
      gpu: c.gpu,
      tp: c.tp,
      vllm: c.vllm,
      base_us: c.profile.base,
      per_seq_us: c.profile.perSeq,
      prefill_ns_per_token: Math.round(1e6 / c.profile.prefillRate),
      host: hostListing(c.profile.host),
      chunk: c.profile.chunk,
      kv_tokens: c.profile.kvTokens!,
      price_per_gpu_hour: listPrice(c.gpu) ?? null,
      coefficients: { beta: c.beta, alpha: c.alpha, total_kv_blocks: c.totalKvBlocks, block_size: c.blockSize, best_loss: c.bestLoss },
      rounding: c.rounding,
      lone_tpot: loneTpot(c),
      roofline: rooflineListing(c.profile),
      source: `${c.source.name} at ${c.source.commit} (${c.source.url}; ${c.source.licence}), via ${c.source.file}`,
    }),
  );
  return { profiles: [...builtins, ...published], prices: gpuPrices(), shadowed };
}
