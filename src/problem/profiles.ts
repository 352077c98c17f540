/**
 * GPU speed profiles (docs/model.md section 3): t = base + perSeq x B + prefill / prefillRate,
 * base and perSeq in microseconds. Two built-in profiles are hand-set assumptions
 * (problems/README.md says where each number comes from); the catalogue is published ones, read
 * from problems/profiles/ (one file per source), each selected by an id `model/gpu/tpN`; the
 * GPU types' on-demand prices come from problems/profiles/prices.yaml.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { GpuProfile } from '../model/problem.js';
import { packageRoot } from '../package-root.js';
import { closest } from './issues.js';
import { LIMITS } from './limits.js';

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
        alpha_coeffs: z.array(z.number()).length(3),
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
 * What rounding to the engines' integer units does to an entry: the engine's value less the
 * source's (the relative error is that over the source's value). The engines take base and
 * perSeq in whole microseconds and prefill in whole nanoseconds per prompt token.
 */
export interface Rounding {
  readonly baseUs: number;
  readonly perSeqUs: number;
  readonly perSeqRelative: number;
  readonly prefillNsPerToken: number;
  readonly prefillRelative: number;
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
  /** Carried over, not applied: alpha0 + alpha1 x input tokens before queueing, alpha2 per output token (microseconds). */
  readonly alpha: readonly number[];
  readonly totalKvBlocks: number;
  readonly blockSize: number;
  readonly bestLoss: number;
  readonly source: ProfileSource;
  /** What the engines run. */
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

function profilesDir(): string {
  const root = packageRoot();
  if (root === null) throw new Error("servesim's package.json is not found: the profile catalogue lives next to it, in problems/profiles/");
  return join(root.dir, 'problems', 'profiles');
}

/** `model/gpu/tpN`, lower case, the model without its organisation. */
function catalogueId(m: SourceModel): string {
  return `${m.id.split('/')[1]}/${m.GPU.toLowerCase()}/tp${m.tensor_parallelism}`;
}

/** The engines' profile for a source's fit, checked against what they can hold. */
function engineProfile(id: string, m: SourceModel, chunk: number, blockSize: number): { profile: GpuProfile; rounding: Rounding } {
  const [b0, b1, b2] = m.beta_coeffs;
  const base = Math.round(b0);
  const perSeq = Math.round(b2);
  // compile.ts holds prefill as round(1e6 / prefillRate) ns per token: round(1000 x beta1)
  const prefillRate = 1000 / b1;
  const prefillNs = Math.round(1e6 / prefillRate);
  const kvTokens = m.total_kv_blocks * blockSize;
  const problems = [
    base > LIMITS.stepMicros || perSeq > LIMITS.stepMicros ? 'base or perSeq over 10s' : '',
    prefillNs < 1 ? 'prefill under 1 ns a token' : '',
    prefillNs * chunk > 0xffff_ffff ? 'a chunk of prefill past u32 nanoseconds' : '',
    kvTokens > LIMITS.tokens * 100 ? `KV cache past ${LIMITS.tokens * 100} tokens` : '',
  ].filter((p) => p !== '');
  if (problems.length > 0) throw new Error(`profile catalogue: ${id}: the engines cannot hold ${problems.join(', ')}`);
  return {
    profile: { name: id, base, perSeq, prefillRate, chunk, tp: m.tensor_parallelism, gpuType: m.GPU, kvTokens },
    rounding: {
      baseUs: base - b0,
      perSeqUs: perSeq - b2,
      perSeqRelative: b2 === 0 ? 0 : (perSeq - b2) / b2,
      prefillNsPerToken: prefillNs - b1 * 1000,
      prefillRelative: (prefillNs - b1 * 1000) / (b1 * 1000),
    },
  };
}

function readCatalogue(): Catalogue {
  const dir = profilesDir();
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== PRICES_FILE).sort();
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
  /** What the engines run. */
  readonly base_us: number;
  readonly per_seq_us: number;
  readonly prefill_ns_per_token: number;
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
  readonly source: string;
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
      chunk: p.chunk,
      kv_tokens: DEFAULT_KV_TOKENS,
      price_per_gpu_hour: null,
      coefficients: null,
      rounding: null,
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
      chunk: c.profile.chunk,
      kv_tokens: c.profile.kvTokens!,
      price_per_gpu_hour: listPrice(c.gpu) ?? null,
      coefficients: { beta: c.beta, alpha: c.alpha, total_kv_blocks: c.totalKvBlocks, block_size: c.blockSize, best_loss: c.bestLoss },
      rounding: c.rounding,
      source: `${c.source.name} at ${c.source.commit} (${c.source.url}; ${c.source.licence}), via ${c.source.file}`,
    }),
  );
  return { profiles: [...builtins, ...published], prices: gpuPrices(), shadowed };
}
