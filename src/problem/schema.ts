/**
 * The problem file's schema: what a YAML (or JSON) problem may say, field by field, with its
 * units, limits and defaults. Strict objects throughout, so a misspelt key is an error rather
 * than a silently ignored setting. Checks that span several fields (components a workload
 * needs, scenario windows, the horizon) live in build.ts, which turns this schema's output
 * into the typed Problem.
 */
import { z } from 'zod';
import type { DecodePolicy, Distribution, GpuProfile, RouterPolicy, ToolCalls } from '../model/problem.js';
import { DECODE_POLICIES, ROUTER_POLICIES, TOOL_CALLS } from '../model/problem.js';
import { TABLE_MAX, tableTop } from '../model/distribution.js';
import { BUILTIN_CASE_NAMES, CASE_NAME_PATTERN, LIMITS, RESERVED_NAMES } from './limits.js';
import { BUILTIN_PROFILES, DEFAULT_KV_TOKENS, DEFAULT_PROFILE, builtinProfile, catalogueProfile, closeProfiles, gpuSpecs, rooflineProfile } from './profiles.js';
import { BYTE_RATE_PATTERN, DURATION_PATTERN, formatDuration, parseByteRate, parseDuration, parseFraction } from './units.js';

/**
 * JSON Schema to show editors instead of what zod derives, for fields whose input zod can only
 * describe loosely (a duration is a string or the number 0, not any string or number).
 */
export const jsonSchemaHints = new WeakMap<object, Record<string, unknown>>();

/**
 * JSON Schema to add to what zod derives (a rule across fields), for editors; the parser checks
 * the same rules with its own messages (build.ts).
 */
export const jsonSchemaExtras = new WeakMap<object, Record<string, unknown>>();

function hinted<T extends z.ZodType>(schema: T, json: Record<string, unknown>, description?: string): T {
  const out = description === undefined ? schema : schema.meta({ description });
  jsonSchemaHints.set(out, json);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Scalars

function int(min: number, max: number, limit?: string) {
  const what = min === 1 ? 'a positive integer' : min === 0 ? 'a whole number, 0 or more' : `an integer of at least ${min}`;
  const over = `must be at most ${max}${limit === undefined ? '' : ` (${limit})`}`;
  return z
    .number({ error: `must be ${what}` })
    .int({ error: `must be ${what}` })
    .min(min, { error: `must be ${what}` })
    .max(max, { error: over });
}

interface RealBounds {
  readonly gt?: number;
  readonly gte?: number;
  readonly lte: number;
  readonly limit?: string;
  /** The engines hold it in thousandths: refuse a value that is not a whole number of them. */
  readonly milli?: boolean;
}

function real(b: RealBounds) {
  const lower = b.gt !== undefined ? `greater than ${b.gt}` : b.gte !== undefined ? `${b.gte} or more` : '';
  const what = `must be a number${lower === '' ? '' : ` ${lower}`}`;
  // NaN, Infinity and text fail here: name the whole range
  let s = z.number({ error: `${what} and at most ${b.lte}` });
  if (b.gt !== undefined) s = s.gt(b.gt, { error: what });
  if (b.gte !== undefined) s = s.gte(b.gte, { error: what });
  s = s.lte(b.lte, { error: `must be at most ${b.lte}${b.limit === undefined ? '' : ` (${b.limit})`}` });
  if (b.milli === true) {
    s = s.refine((x) => Math.round(x * LIMITS.milli) / LIMITS.milli === x, {
      error: `must be a whole number of thousandths, e.g. 1.25 (the engines hold it in thousandths)`,
    });
  }
  return s;
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `must be one of ${values.join(', ')}` });
}

interface DurationRule {
  /** Refuse 0 (a deadline or a measured window of no length). */
  readonly positive?: boolean;
  /** Least microseconds, with the reason; 0 (or 1 when positive) when absent. */
  readonly min?: { readonly micros: number; readonly why: string };
  /** Most microseconds, with the reason; the horizon limit when absent. */
  readonly max?: { readonly micros: number; readonly why: string };
  readonly description?: string;
}

/** Any duration fits the engines' clocks: u32 microseconds, a run under the horizon limit. */
const HORIZON_MAX = { micros: LIMITS.horizonMicros, why: 'engines keep time in u32 microseconds' };
const U32_MAX = 0xffff_ffff;
/** An overhead or an iteration's time. */
const STEP_MAX = { micros: LIMITS.stepMicros, why: 'milliseconds in practice' };
/** GPUs one replica uses: tensor parallelism past a few nodes' worth is a typo. */
const MAX_TP = 64;
/** Dollars per GPU-hour: list prices are a few dollars, so a thousand is a typo (cents, or a node's price). */
const MAX_PRICE_PER_HOUR = 1000;

/** A duration's microseconds under `rule`, or z.NEVER with the issue in ctx (`or` ends a message that the input is no duration). */
function durationValue(input: string | number, rule: DurationRule, ctx: z.RefinementCtx, or = ''): number {
  const r = parseDuration(input);
  if (!r.ok) {
    ctx.addIssue({ code: 'custom', message: `${r.message}${or}`, input });
    return z.NEVER;
  }
  if (rule.positive === true && r.value === 0) {
    ctx.addIssue({ code: 'custom', message: 'must be longer than 0', input });
    return z.NEVER;
  }
  if (rule.min !== undefined && r.value < rule.min.micros) {
    ctx.addIssue({ code: 'custom', message: `must be at least ${formatDuration(rule.min.micros)} (${rule.min.why})`, input });
    return z.NEVER;
  }
  const max = rule.max ?? HORIZON_MAX;
  if (r.value > max.micros) {
    ctx.addIssue({ code: 'custom', message: `must be at most ${formatDuration(max.micros)} (${max.why})`, input });
    return z.NEVER;
  }
  return r.value;
}

/** A duration with a unit ('250ms', '30s') as integer microseconds. */
export function duration(rule: DurationRule = {}) {
  const s = z
    .union([z.string(), z.number()], { error: 'must be a duration with a unit, e.g. 30s or 250ms' })
    .transform((input, ctx) => durationValue(input, rule, ctx));
  const json: Record<string, unknown> = rule.positive === true
    ? { type: 'string', pattern: DURATION_PATTERN }
    : { anyOf: [{ type: 'string', pattern: DURATION_PATTERN }, { const: 0 }] };
  return hinted(s, json, rule.description);
}

/** traffic.warmup: a duration, or 'auto' (the run chooses it: docs/model.md section 1). */
function warmupDuration(description: string) {
  const s = z
    .union([z.string(), z.number()], { error: 'must be a duration with a unit, e.g. 30s or 250ms, or auto' })
    .transform((input, ctx) => (input === 'auto' ? ('auto' as const) : durationValue(input, {}, ctx, ', or auto')));
  return hinted(s, { anyOf: [{ const: 'auto' }, { type: 'string', pattern: DURATION_PATTERN }, { const: 0 }] }, description);
}

interface FractionRule {
  /** (0, 1] instead of [0, 1]: a confidence of 0 asks nothing. */
  readonly positive?: boolean;
  readonly description?: string;
}

/** A fraction in [0, 1], written 0.99 or '99%'. */
function fraction(rule: FractionRule = {}) {
  const range = rule.positive === true ? 'greater than 0 and at most 1' : 'between 0 and 1';
  const s = z
    .union([z.number(), z.string()], { error: 'must be a fraction such as 0.99 or a percentage such as "99%"' })
    .transform((input, ctx) => {
      const r = parseFraction(input);
      if (!r.ok) {
        ctx.addIssue({ code: 'custom', message: r.message, input });
        return z.NEVER;
      }
      const low = rule.positive === true ? r.value <= 0 : r.value < 0;
      if (low || r.value > 1) {
        ctx.addIssue({ code: 'custom', message: `must be ${range} (or a percentage)`, input });
        return z.NEVER;
      }
      return r.value;
    });
  return hinted(
    s,
    {
      anyOf: [
        rule.positive === true ? { type: 'number', exclusiveMinimum: 0, maximum: 1 } : { type: 'number', minimum: 0, maximum: 1 },
        { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?\\s*%$' },
      ],
    },
    rule.description,
  );
}

// ---------------------------------------------------------------------------------------------
// Distributions: a plain value (fixed) or {dist: ...}. Time fields take durations, token
// fields plain integers; both become integers in the typed Distribution.

type Unit = 'time' | 'tokens';

function distValue(unit: Unit) {
  return unit === 'time' ? duration() : int(0, LIMITS.tokens, 'token counts');
}

function distShape(unit: Unit) {
  const v = distValue(unit);
  return z.discriminatedUnion('dist', [
    z.strictObject({ dist: z.literal('fixed'), value: v }),
    z.strictObject({ dist: z.literal('uniform'), min: v, max: v }),
    z.strictObject({ dist: z.literal('lognormal'), median: v, p99: v }),
    z.strictObject({ dist: z.literal('exponential'), mean: v }),
  ]);
}

/** A distribution field after unit conversion: a plain value or one {dist: ...} shape. */
type DistInput = number | z.output<ReturnType<typeof distShape>>;

type Report = (path: string, message: string, value: number) => undefined;

/** The typed distribution a field's input gives, or undefined once it reported what stops it. */
function distributionOf(input: DistInput, least: number, atLeast: string, issue: Report): Distribution | undefined {
  if (typeof input === 'number') {
    if (input < least) return issue('', atLeast, input);
    return { kind: 'fixed', value: input };
  }
  switch (input.dist) {
    case 'fixed':
      if (input.value < least) return issue('value', atLeast, input.value);
      return { kind: 'fixed', value: input.value };
    case 'uniform':
      if (input.min < least) return issue('min', atLeast, input.min);
      if (input.max < input.min) return issue('max', 'must not be below min', input.max);
      return { kind: 'uniform', min: input.min, max: input.max };
    case 'lognormal':
      if (input.median < Math.max(1, least)) return issue('median', 'must be greater than 0', input.median);
      if (input.p99 <= input.median) return issue('p99', 'must be greater than the median', input.p99);
      return { kind: 'lognormal', median: input.median, p99: input.p99 };
    case 'exponential':
      if (input.mean < 1) return issue('mean', 'must be greater than 0', input.mean);
      return { kind: 'exponential', mean: input.mean };
  }
}

// One instance per unit, named, so the JSON Schema defines each once and refers to it.
const DIST_SHAPES = {
  time: distShape('time').meta({ id: 'TimeDistribution', description: 'Durations carry units: 250ms, 1s.' }),
  tokens: distShape('tokens').meta({ id: 'TokenDistribution', description: 'Token counts: plain integers.' }),
} as const;

/** The field of a {dist: ...} that sets how far its table reaches, and its value. */
function topField(d: Distribution): { field: string; value: number } {
  switch (d.kind) {
    case 'fixed':
      return { field: 'value', value: d.value };
    case 'uniform':
      return { field: 'max', value: d.max };
    case 'lognormal':
      return { field: 'p99', value: d.p99 };
    case 'exponential':
      return { field: 'mean', value: d.mean };
  }
}

function distribution(unit: Unit, least: number, description: string) {
  const v = distValue(unit);
  const shape = DIST_SHAPES[unit];
  const show = (x: number): string => (unit === 'time' ? formatDuration(Math.round(x)) : `${Math.round(x)}`);
  const atLeast = least === 0 ? 'must not be negative' : `must be at least ${show(least)}`;
  const plain = unit === 'time' ? 'a duration' : 'a token count';
  const s = z.union([v, shape], { error: `must be ${plain} or {dist: fixed|uniform|lognormal|exponential, ...}` }).transform((input, ctx): Distribution => {
    const issue: Report = (path, message, value) => {
      ctx.addIssue({ code: 'custom', path: path === '' ? [] : [path], message, input: value });
      return undefined;
    };
    const d = distributionOf(input, least, atLeast, issue);
    if (d === undefined) return z.NEVER;
    // the engines sample a table whose top point must fit a word; a clamped tail changes the mean
    const top = tableTop(d);
    if (top > TABLE_MAX) {
      const { field, value } = topField(d);
      const why = unit === 'time' ? 'u31 microseconds' : 'u31 token counts';
      const message = `the engines would sample up to ${show(top)}, past the ${show(TABLE_MAX)} their tables hold (${why}); got ${show(value)}`;
      issue(typeof input === 'number' ? '' : field, message, value);
      return z.NEVER;
    }
    return d;
  });
  return s.meta({ description });
}

// ---------------------------------------------------------------------------------------------
// Sections

const goals = z.strictObject({
  // a goal of 0 asks nothing: every design would pass
  success: fraction({ positive: true, description: 'Minimum success rate: 0.99 or "99%".' }),
  p99: duration({ positive: true, description: 'Maximum p99 latency of successes, e.g. 3s.' }),
  ttft_p99: duration({ positive: true, description: 'Maximum p99 time to first token of model calls, e.g. 500ms. Not set: no goal.' }).optional(),
  tpot_p99: duration({ positive: true, description: 'Maximum p99 time per output token after the first, e.g. 50ms. Not set: no goal.' }).optional(),
});

const traffic = z.strictObject({
  // required without a trace, refused with one (build.ts traceIssues): the trace sets the arrivals
  rate: real({ gte: LIMITS.minRate, lte: LIMITS.maxRate, limit: 'arrivals a second' }).optional().meta({
    description: 'Poisson arrivals per second. Required, unless traffic.trace replays a trace instead.',
  }),
  trace: z
    .string({ error: 'must be the path of a trace file (.jsonl: Mooncake, .csv: Azure)' })
    .min(1, { error: 'must be the path of a trace file (.jsonl: Mooncake, .csv: Azure)' })
    .optional()
    .meta({
      description:
        "A request trace replayed instead of Poisson arrivals: a Mooncake .jsonl or an Azure LLM inference .csv, relative to the problem file's folder (problems/traces/ holds the shipped one).",
    }),
  rateScale: real({ gt: 0, lte: LIMITS.maxScale }).optional().meta({
    description: 'With traffic.trace: how much faster than recorded the trace is replayed. Default 1.',
  }),
  duration: duration({
    positive: true,
    min: { micros: LIMITS.minWindowMicros, why: "the cases act on the measured window's thirds" },
    description: 'Length of the measured window, e.g. 30s.',
  }),
  warmup: warmupDuration(
    "Traffic before the measured window, not counted. Default 10s (request, job) or 30s (task). 'auto': each case's warm-up is the steady-state test's truncation point on a pilot run (docs/model.md section 1).",
  ).optional(),
});

// either Poisson arrivals or a trace; rateScale scales only a trace
jsonSchemaExtras.set(traffic, { oneOf: [{ required: ['rate'] }, { required: ['trace'] }], dependencies: { rateScale: ['trace'] } });

const prefix = z.strictObject({
  tokens: int(1, LIMITS.tokens, 'token counts'),
  weight: real({ gte: LIMITS.weight.min, lte: LIMITS.weight.max, limit: 'relative weights' }).default(1),
});

const requestWorkload = z.strictObject({
  kind: z.literal('request'),
  prefixes: z
    .array(prefix, { error: 'must be a list of {tokens, weight}' })
    .max(LIMITS.prefixes, { error: `must have at most ${LIMITS.prefixes} entries` })
    .default([]),
  share: fraction({ description: 'Probability a prompt starts with a shared prefix. Default 0.' }).prefault(0),
  suffix: distribution('tokens', 0, 'Tokens after the shared prefix. Default 300.').prefault(300),
  unique: distribution('tokens', 1, 'Prompt tokens of a prompt with no shared prefix. Default 2000.').prefault(2000),
  output: distribution('tokens', 1, 'Output tokens. Default 60.').prefault(60),
});

const taskWorkload = z.strictObject({
  kind: z.literal('task'),
  system: int(0, LIMITS.tokens, 'token counts').default(4000).meta({
    description: 'System prompt and tool schemas, tokens. Default 4000.',
  }),
  input: distribution('tokens', 0, 'New input tokens of each step. Default 1000.').prefault(1000),
  output: distribution('tokens', 1, 'Output tokens of each step. Default 50.').prefault(50),
});

const jobWorkload = z.strictObject({ kind: z.literal('job') });

export const WORKLOAD_KINDS = ['request', 'task', 'job'] as const;

const workload = z.discriminatedUnion('kind', [requestWorkload, taskWorkload, jobWorkload]);

const lb = z.strictObject({
  overhead: duration({ max: STEP_MAX, description: 'Per-hop overhead. Default 1ms.' }).prefault('1ms'),
});

const app = z.strictObject({
  replicas: int(1, LIMITS.replicas).default(1),
  slots: int(1, LIMITS.slots),
  timeout: duration({ positive: true, description: "The client's deadline after arrival, e.g. 30s." }),
  overhead: duration({ max: STEP_MAX, description: 'Per-hop overhead. Default 5ms.' }).prefault('5ms'),
});

const orchestrator = z.strictObject({
  slots: int(1, LIMITS.slots),
  steps: int(1, LIMITS.steps, 'model calls per task'),
  overhead: duration({ max: STEP_MAX, description: 'Per-step overhead. Default 0ms.' }).prefault('0ms'),
  toolCalls: oneOf(TOOL_CALLS as unknown as readonly [ToolCalls, ...ToolCalls[]]).default('between-steps').meta({
    description: 'between-steps: a tool call between consecutive model calls (steps - 1 of them); every-step: one after each model call. Default between-steps.',
  }),
});

const router = z.strictObject({
  policy: oneOf(ROUTER_POLICIES as unknown as readonly [RouterPolicy, ...RouterPolicy[]]),
  slots: int(1, LIMITS.slots).default(100_000),
  overhead: duration({ max: STEP_MAX, description: 'Per-hop overhead. Default 1ms.' }).prefault('1ms'),
  boundedLoad: real({ gte: 1, lte: LIMITS.maxBoundedLoad, limit: 'the most GPU replicas', milli: true }).default(1.25).meta({ description: 'bounded-affinity load factor c. Default 1.25.' }),
  alpha: real({ gte: 0, lte: LIMITS.maxAlpha, milli: true }).default(1).meta({ description: 'cache-aware weight of queued tokens. Default 1.' }),
  retries: int(0, LIMITS.retries).default(1),
  virtualNodes: int(1, LIMITS.virtualNodes, 'ring points per replica').default(64),
  affinityBlocks: int(1, LIMITS.affinityBlocks, 'blocks a prefix-affinity key hashes').default(2).meta({
    description: "prefix-affinity and bounded-affinity on a trace: a call's key hashes its prompt's first this many 512-token blocks. Default 2: the conversation trace's first block is one system prompt every request shares, its second tells conversations apart.",
  }),
});

/** A model outside the catalogue, by its size (docs/model.md section 3, "The roofline floor"). */
const modelSize = z
  .strictObject({
    params: real({ gte: 1e6, lte: 1e13, limit: 'parameters' }).meta({ description: 'Parameters the model holds (a mixture of experts: all of them), e.g. 8.0e9.' }),
    activeParams: real({ gte: 1e6, lte: 1e13, limit: 'parameters' }).exactOptional().meta({
      description: 'Parameters one token computes with and a lone decode reads (a mixture of experts: its shared layers and the experts it routes to). Not set: params.',
    }),
    bytesPerWeight: real({ gt: 0, lte: 4 }).meta({ description: 'Bytes a weight takes as served: 2 for BF16, 1 for FP8 or INT8, 0.5 for INT4.' }),
    activationBytes: int(1, 2, '2 for BF16 or FP16 activations, 1 for FP8 or INT8').default(2).meta({
      description: "Bytes of the activations the matrix units multiply: 1 (FP8, INT8) runs at the GPU's 8-bit peak. Default 2.",
    }),
    kvBytesPerToken: int(1, 100_000_000, 'bytes a token').meta({
      description: 'KV cache bytes a token: layers x 2 x KV heads x head dim x bytes an element (131072 for Llama 3.1 8B in BF16).',
    }),
  })
  .superRefine((m, ctx) => {
    if (m.activeParams !== undefined && m.activeParams > m.params) {
      ctx.addIssue({ code: 'custom', path: ['activeParams'], message: `must be at most params (${m.params})`, input: m.activeParams });
    }
  });

const FITTED_FIELDS = ['base', 'perSeq', 'prefillRate'] as const;

/** Either the fitted form {base, perSeq, prefillRate, chunk} or the model form {model, gpu}, each with name and tp. */
const inlineProfileFields = z.strictObject({
  name: z.string({ error: 'must be a name' }).min(1, { error: 'must be a name' }).default('custom'),
  base: duration({ max: STEP_MAX, description: 'Fixed time of one iteration, e.g. 8ms.' }).optional(),
  perSeq: duration({ max: STEP_MAX, description: 'Added time per decoding sequence, e.g. 0.25ms.' }).optional(),
  prefillRate: real({ gte: LIMITS.prefillRate.min, lte: LIMITS.prefillRate.max, limit: 'tokens a millisecond' }).optional().meta({
    description: 'Prompt tokens prefilled per millisecond.',
  }),
  chunk: int(1, LIMITS.tokens, 'token counts').optional().meta({ description: 'Most prompt tokens per iteration. With model: default 2048.' }),
  tp: int(1, MAX_TP, 'GPUs a replica uses').exactOptional().meta({
    description: 'GPUs one replica uses (tensor parallelism): the gpus and dollars_per_hour of a hint cost, and with model the GPUs its weights and KV spread over. Not set: one.',
  }),
  model: modelSize.optional().meta({
    description: 'A model outside the catalogue by its size: with gpu, the profile is its roofline floor (docs/model.md section 3), instead of base, perSeq and prefillRate.',
  }),
  gpu: z.string({ error: 'must be a GPU type' }).optional().meta({ description: "With model: the GPU type, a key of problems/profiles/hardware.yaml (H100, A100-80)." }),
});
// editors: one form or the other (the transform below says which field is missing, or extra)
jsonSchemaExtras.set(inlineProfileFields, { oneOf: [{ required: ['base', 'perSeq', 'prefillRate', 'chunk'] }, { required: ['model', 'gpu'] }] });

type InlineProfile = z.output<typeof inlineProfileFields>;

function fittedProfile(p: InlineProfile, ctx: z.core.$RefinementCtx<InlineProfile>): GpuProfile {
  if (p.gpu !== undefined) ctx.addIssue({ code: 'custom', path: ['gpu'], message: 'names the GPU of a model profile: give model too, or leave gpu out', input: p.gpu });
  for (const f of [...FITTED_FIELDS, 'chunk'] as const) {
    if (p[f] === undefined) ctx.addIssue({ code: 'custom', path: [f], message: 'required (or model and gpu, for a model described by its size)', input: undefined });
  }
  const { base, perSeq, prefillRate, chunk } = p;
  if (base === undefined || perSeq === undefined || prefillRate === undefined || chunk === undefined || p.gpu !== undefined) return z.NEVER;
  // compile.ts holds prefill as whole ns per token, and one chunk's prefill in a u32 of ns
  const chunkNs = Math.round(1e6 / prefillRate) * chunk;
  if (chunkNs > U32_MAX) {
    ctx.addIssue({
      code: 'custom',
      path: ['prefillRate'],
      message: `prefilling one chunk of ${chunk} tokens would take ${formatDuration(Math.round(chunkNs / 1000))}, over the ${formatDuration(Math.floor(U32_MAX / 1000))} the engines hold in u32 nanoseconds`,
      input: prefillRate,
    });
    return z.NEVER;
  }
  return { name: p.name, base, perSeq, prefillRate, chunk, ...(p.tp === undefined ? {} : { tp: p.tp }) };
}

function modelProfile(p: InlineProfile & { model: NonNullable<InlineProfile['model']> }, ctx: z.core.$RefinementCtx<InlineProfile>): GpuProfile {
  for (const f of FITTED_FIELDS) {
    // the field's value as written is gone (a duration is microseconds by now): the message says enough
    if (p[f] !== undefined) ctx.addIssue({ code: 'custom', path: [f], message: 'a model profile is its roofline floor: leave base, perSeq and prefillRate out (or model, for a fitted profile)', input: undefined });
  }
  const types = [...gpuSpecs().keys()];
  const spec = p.gpu === undefined ? undefined : gpuSpecs().get(p.gpu);
  if (spec === undefined) {
    const why = `a GPU type of problems/profiles/hardware.yaml: ${types.join(', ')}`;
    ctx.addIssue({ code: 'custom', path: ['gpu'], message: p.gpu === undefined ? `required with model: ${why}` : `must be ${why}`, input: p.gpu });
  }
  if (spec === undefined || FITTED_FIELDS.some((f) => p[f] !== undefined)) return z.NEVER;
  const { params, activeParams, bytesPerWeight, activationBytes, kvBytesPerToken } = p.model;
  const size = { params, activeParams: activeParams ?? params, bytesPerWeight, activationBytes: activationBytes === 1 ? 1 : 2, kvBytesPerToken } as const;
  const out = rooflineProfile(p.name, size, spec, p.tp ?? 1, p.chunk);
  if ('message' in out) {
    ctx.addIssue({ code: 'custom', path: [...out.path], message: out.message, input: undefined });
    return z.NEVER;
  }
  return out;
}

const inlineProfile = inlineProfileFields.transform((p, ctx): GpuProfile => (p.model === undefined ? fittedProfile(p, ctx) : modelProfile({ ...p, model: p.model }, ctx)));

const profileNames = Object.keys(BUILTIN_PROFILES);
const CATALOGUE_IDS = 'a catalogue id (model/gpu/tpN, e.g. llama-3.1-8b-instruct/h100/tp2; `servesim profiles` lists them)';

/** A built-in profile, else a catalogue one, else an issue naming the ids closest to it. */
function namedProfile(input: string, ctx: z.core.$RefinementCtx<unknown>): GpuProfile {
  const found = builtinProfile(input) ?? catalogueProfile(input)?.profile;
  if (found !== undefined) return found;
  const near = closeProfiles(input);
  ctx.addIssue({
    code: 'custom',
    message:
      `unknown profile; built-in profiles are ${profileNames.join(', ')}, or give ${CATALOGUE_IDS}, {name, base, perSeq, prefillRate, chunk} or {model, gpu, tp}` +
      (near.length === 0 ? '' : `; close: ${near.join(', ')}`),
    input,
  });
  return z.NEVER;
}

const profile = z
  .union([z.string(), inlineProfile], {
    error: `must be a profile name (${profileNames.join(', ')}), ${CATALOGUE_IDS}, {name, base, perSeq, prefillRate, chunk} or {model, gpu, tp}`,
  })
  .transform((input, ctx): GpuProfile => (typeof input === 'string' ? namedProfile(input, ctx) : input))
  .meta({
    description: `A built-in profile (${profileNames.join(', ')}), ${CATALOGUE_IDS}, an inline one, or a model by its size on a GPU type ({model: {params, bytesPerWeight, kvBytesPerToken}, gpu, tp}: its roofline floor). Default ${DEFAULT_PROFILE}.`,
  });

/** A byte rate with a unit ('25GB/s') in bytes a second, above 0 and at most `max`. */
function byteRate(max: number, description: string) {
  const s = z
    .string({ error: 'must be a byte rate with a unit, e.g. 25GB/s' })
    .transform((input, ctx) => {
      const r = parseByteRate(input);
      if (!r.ok || r.value <= 0 || r.value > max) {
        ctx.addIssue({ code: 'custom', message: r.ok ? `must be above 0 and at most ${max / 1e12}TB/s` : r.message, input });
        return z.NEVER;
      }
      return r.value;
    });
  return hinted(s, { type: 'string', pattern: BYTE_RATE_PATTERN }, description);
}

/** Bytes a second: a GPU's own memory is a few TB/s, so more from outside it is a typo. */
const MAX_OFFLOAD_BANDWIDTH = 100e12;

const offload = z.strictObject({
  tokens: int(0, LIMITS.tokens * 100, 'token counts').meta({
    description: "KV tokens the offload tier holds a replica (host memory beyond the GPU's: vLLM's CPU offload, LMCache, Mooncake's store); 0: no tier.",
  }),
  bandwidth: byteRate(MAX_OFFLOAD_BANDWIDTH, 'How fast KV loads back from the tier, e.g. 25GB/s (PCIe 5 x16 in practice).'),
  bytesPerToken: int(1, 100_000_000, 'bytes a token').optional().meta({
    description: "KV bytes a token. Default: the profile's model's (a catalogue or model profile); required with a built-in or fitted inline profile.",
  }),
});

/** Bytes a second between GPUs: NVLink is about 1 TB/s a direction, so more is a typo. */
const MAX_LINK_BANDWIDTH = 10e12;

const decodePool = z.strictObject({
  profile: profile.optional().meta({ description: "The decode replicas' profile (a GPU type of their own: Splitwise's design). Default: gpu.profile." }),
  slots: int(1, LIMITS.gpuSlots, 'sequences in one batch').optional().meta({ description: "Most sequences in a decode replica's batch. Default: gpu.slots." }),
  kvTokens: int(1, LIMITS.tokens * 100, 'token counts').optional().meta({
    description: "KV cache per decode replica, tokens. Default: with a profile of their own, its KV capacity (else 400000); else gpu.kvTokens' value.",
  }),
  pricePerHour: real({ gt: 0, lte: MAX_PRICE_PER_HOUR, limit: 'dollars per GPU-hour' }).optional().meta({
    description: "Dollars per decode GPU-hour. Default: with a profile of their own, the list price of its GPU type (else gpu's price); else gpu's price.",
  }),
});

const disaggregation = z.strictObject({
  prefill: int(0, LIMITS.gpuReplicas - 1, 'GPU replicas').meta({
    description: 'Replicas that only prefill (the first ones); the rest of gpu.replicas only decode. 0: none, every replica does both (co-located), as without this block.',
  }),
  policy: oneOf(DECODE_POLICIES as unknown as readonly [DecodePolicy, ...DecodePolicy[]]).default('least-loaded').meta({
    description: "How the decode pool's router picks the replica a call decodes on once its prompt is done. Default: least-loaded.",
  }),
  latency: duration({ max: STEP_MAX, description: "A KV transfer's fixed time before its first byte. Default 1ms." }).prefault('1ms'),
  bandwidth: byteRate(MAX_LINK_BANDWIDTH, 'The link from a prefill replica to a decode replica, e.g. 50GB/s (one 400 Gb/s RDMA NIC). Default 50GB/s.').prefault('50GB/s'),
  bytesPerToken: int(1, 100_000_000, 'bytes a token').optional().meta({
    description: "KV bytes a token. Default: the profile's model's (a catalogue or model profile); required with a built-in or fitted inline profile.",
  }),
  decode: decodePool.optional().meta({ description: "The decode replicas' own profile, slots, KV and price. Default: gpu's." }),
});

const gpu = z.strictObject({
  replicas: int(1, LIMITS.gpuReplicas, 'GPU replicas'),
  slots: int(1, LIMITS.gpuSlots, 'sequences in one batch'),
  // no default here: a catalogue profile brings its own (src/problem/build.ts)
  kvTokens: int(1, LIMITS.tokens * 100, 'token counts').optional().meta({
    description: `KV cache per replica, tokens. Default: the catalogue profile's KV capacity, else ${DEFAULT_KV_TOKENS}.`,
  }),
  kv: oneOf(['reserve', 'incremental']).default('reserve').meta({
    description: "How a running sequence takes KV (docs/model.md section 3): reserve, its uncached prompt and whole output when admitted; incremental (vLLM's), its prompt when admitted and a token each step, the most recently admitted sequence preempted and later recomputed when none is left. Default: reserve.",
  }),
  profile: profile.prefault(DEFAULT_PROFILE),
  pricePerHour: real({ gt: 0, lte: MAX_PRICE_PER_HOUR, limit: 'dollars per GPU-hour' }).optional().meta({
    description: "Dollars per GPU-hour. Default: the on-demand list price of the profile's GPU type (a catalogue profile's, or a model profile's gpu; problems/profiles/prices.yaml); none for the built-in and fitted inline profiles.",
  }),
  // a deployment's setting, not the hardware's: a catalogue profile's 2048 is BLIS's default
  chunk: int(1, LIMITS.tokens, 'token counts').optional().meta({
    description: "Most prompt tokens one batch iteration prefills (vLLM's max_num_batched_tokens). Default: the profile's (2048 for the built-in and catalogue ones).",
  }),
  offload: offload.optional().meta({ description: 'A KV tier beyond GPU memory (docs/model.md section 3). Default: none.' }),
  disaggregation: disaggregation.optional().meta({ description: 'Prefill and decode on separate replicas of this pool, KV moving between them (docs/model.md section 3). Default: none, every replica does both.' }),
}).transform((g, ctx) => {
  const { chunk } = g;
  if (chunk === undefined) return g;
  // a deployment's setting: both pools' where the decode replicas have a profile of their own
  const decode = g.disaggregation?.decode;
  for (const p of [g.profile, ...(decode?.profile === undefined ? [] : [decode.profile])]) {
    const chunkNs = Math.round(1e6 / p.prefillRate) * chunk;
    if (chunkNs > U32_MAX) {
      ctx.addIssue({
        code: 'custom',
        path: ['chunk'],
        message: `prefilling one chunk of ${chunk} tokens at ${p.name}'s rate would take ${formatDuration(Math.round(chunkNs / 1000))}, over the ${formatDuration(Math.floor(U32_MAX / 1000))} the engines hold in u32 nanoseconds`,
        input: chunk,
      });
      return z.NEVER;
    }
  }
  const withChunk = { ...g, profile: { ...g.profile, chunk } };
  if (g.disaggregation === undefined || decode?.profile === undefined) return withChunk;
  return { ...withChunk, disaggregation: { ...g.disaggregation, decode: { ...decode, profile: { ...decode.profile, chunk } } } };
});

const tools = z.strictObject({
  slots: int(1, LIMITS.slots),
  latency: distribution('time', 0, 'Tool call latency. Default lognormal, median 250ms, p99 1s.').prefault({
    dist: 'lognormal',
    median: '250ms',
    p99: '1s',
  }),
});

const server = z.strictObject({
  replicas: int(1, LIMITS.replicas).default(1),
  slots: int(1, LIMITS.slots),
  service: distribution('time', 0, 'Service time of one job, e.g. {dist: exponential, mean: 100ms}.'),
  timeout: duration({ description: 'Client deadline; 0 = none. Default 0.' }).prefault(0),
});

export const TARGETS = ['gpu', 'server', 'tools', 'app'] as const;

// Windows are measured from the start of the measured window; absent ends default to the
// middle third, as the lab's slow-dependency and server-dies cases do.
const failure = z.strictObject({
  target: oneOf(TARGETS).optional(),
  replica: z
    .union([int(0, LIMITS.replicas), oneOf(['random', 'busiest'] as const)], {
      error: 'must be a replica index, random or busiest',
    })
    .default('random')
    .meta({ description: 'A replica index, random (drawn per seed) or busiest (most calls held when it starts). Default random.' }),
  from: duration({ description: 'From the start of the measured window. Default: its middle third.' }).optional(),
  to: duration({ description: 'From the start of the measured window. Default: its middle third.' }).optional(),
  mode: oneOf(['reset', 'hang'] as const).default('reset'),
  detectAfter: duration({ description: 'hang: how long until a health check finds it. Default 5s.' }).prefault('5s'),
});

const slowdown = z.strictObject({
  target: oneOf(TARGETS).optional(),
  factor: real({ gte: 1 / LIMITS.milli, lte: LIMITS.maxSlowdown, milli: true }).default(2),
  from: duration().optional(),
  to: duration().optional(),
});

const burst = z.strictObject({
  scale: real({ gt: 0, lte: LIMITS.maxScale }),
  from: duration().optional(),
  to: duration().optional(),
});

const scenario = z.strictObject({
  rateScale: real({ gt: 0, lte: LIMITS.maxScale }).optional(),
  burst: burst.nullable().optional(),
  slowdown: slowdown.nullable().optional(),
  failures: z.array(failure, { error: 'must be a list of failures' }).optional(),
});

const caseName = z
  .string({ error: 'must be a case name' })
  .regex(new RegExp(CASE_NAME_PATTERN), { error: 'must be lower-case words joined by -' })
  .refine((name) => !RESERVED_NAMES.has(name), { error: 'is reserved: JavaScript objects carry a member of that name' });

export const problemFileSchema = z
  .strictObject({
    // lets a JSON problem name its schema for editors; YAML files use the comment instead
    $schema: z.string().optional(),
    id: z
      .string({ error: 'must be a name' })
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { error: 'must be letters, digits, . _ or -' }),
    title: z.string({ error: 'must be text' }).optional(),
    goals,
    confidence: fraction({
      positive: true,
      description: 'Share of seeds that must meet every goal. Default 0.9.',
    }).prefault(0.9),
    seed: int(0, LIMITS.seed, 'u32 seeds').default(1),
    traffic,
    workload,
    lb: lb.optional(),
    app: app.optional(),
    orchestrator: orchestrator.optional(),
    router: router.optional(),
    gpu: gpu.optional(),
    tools: tools.optional(),
    server: server.optional(),
    cases: z
      .array(caseName, { error: 'must be a list of case names' })
      .min(1, { error: 'must name at least one case' })
      .default([...BUILTIN_CASE_NAMES]),
    failures: z.array(failure, { error: 'must be a list of failures' }).default([]),
    scenarios: z.record(caseName, scenario, { error: 'must be a mapping of case name to case' }).default({}),
  })
  .meta({ title: 'servesim problem', description: 'A servesim problem file: see problems/README.md.' });

/** A problem file as written (before defaults and unit conversion). */
export type ProblemFileInput = z.input<typeof problemFileSchema>;
/** A problem file after field validation: units converted, field defaults filled. */
export type ProblemFile = z.output<typeof problemFileSchema>;
export type FileFailure = z.output<typeof failure>;
export type FileScenario = z.output<typeof scenario>;

/** Components: top-level sections a workload kind needs or must not have. */
export const COMPONENTS = ['lb', 'app', 'orchestrator', 'router', 'gpu', 'tools', 'server'] as const;
export type ComponentName = (typeof COMPONENTS)[number];
