/**
 * From a field-checked problem file to the typed Problem: the checks that span fields (which
 * components a workload needs, the horizon limit, whether a prompt can ever fit the KV cache),
 * kind-dependent defaults (warm-up), and the cases.
 */
import type { FieldIssue } from '../errors.js';
import { tableTop } from '../model/distribution.js';
import type { Disaggregation, Distribution, GpuPool, GpuProfile, Offload, Problem, Target, Workload } from '../model/problem.js';
import { TRACE_BLOCK_TOKENS, traceSpan, type Trace } from '../model/trace.js';
import { cacheEntries, HORIZON_TEXT, LIMITS, offloadEntries } from './limits.js';
import { DEFAULT_KV_TOKENS, listPrice, withContextFloor } from './profiles.js';
import { buildCases, killTargetOf, type CaseContext } from './scenarios.js';
import { isPlainObject } from './schema-walk.js';
import { COMPONENTS, WORKLOAD_KINDS, type ComponentName, type ProblemFile } from './schema.js';
import { formatDuration } from './units.js';

type Kind = (typeof WORKLOAD_KINDS)[number];

/** The components each workload kind calls, in call order (docs/model.md section 3). */
export const COMPONENTS_BY_KIND: Readonly<Record<Kind, readonly ComponentName[]>> = {
  request: ['lb', 'app', 'router', 'gpu'],
  task: ['lb', 'app', 'orchestrator', 'router', 'gpu', 'tools'],
  job: ['server'],
};

/** Warm-up when the file gives none: agent sessions take longer to reach steady state. */
const DEFAULT_WARMUP: Readonly<Record<Kind, number>> = {
  request: 10_000_000,
  task: 30_000_000,
  job: 10_000_000,
};

/** The least room `traffic.warmup: auto` needs: a warm-up shorter than a second is none. */
const AUTO_WARMUP_LEAST = 1_000_000;

/**
 * The longest warm-up `traffic.warmup: auto` may choose, in whole seconds: LIMITS.autoWarmupMicros,
 * or less where the horizon, the arrivals an instance may simulate at `callRate` model calls (or
 * arrivals) a second, or a trace's replayed length (`traceMicros`) leave less room beside the
 * measured window. The cases' limits are checked at it, so every warm-up the run may choose is inside them.
 */
function autoWarmupMost(duration: number, timeout: number, callRate: number, kind: Kind, traceMicros: number | null): number {
  // the pilot and the longest run each cover the most and the measured window together
  const window = Math.min(LIMITS.horizonMicros - 1 - timeout, (LIMITS.maxArrivals[kind] / callRate) * 1e6, traceMicros ?? Infinity);
  const most = Math.min(LIMITS.autoWarmupMicros, window - duration);
  return Math.max(0, Math.floor(most / 1e6) * 1e6);
}

/**
 * Missing and unwanted components, judged on the raw file so they are reported together with
 * the field errors rather than one round later; what a trace (traffic.trace) rules in and out;
 * and a case named `__proto__` (a JSON key), which zod's records skip without a word.
 */
export function componentIssues(raw: unknown): FieldIssue[] {
  if (!isPlainObject(raw)) return [];
  const scenarios = raw['scenarios'];
  const proto: FieldIssue[] = isPlainObject(scenarios) && Object.hasOwn(scenarios, '__proto__')
    ? [{ path: 'scenarios.__proto__', message: '"__proto__" is not a valid name: must be lower-case words joined by -' }]
    : [];
  return [...proto, ...componentsOf(raw), ...traceIssues(raw)];
}

/** The request workload's fields a trace gives itself, request by request. */
const TRACE_GIVES = ['prefixes', 'share', 'suffix', 'unique', 'output'] as const;

/**
 * With a trace: no traffic.rate (the trace sets the arrivals), a bare `{kind: request}` workload
 * (the trace gives each prompt and output), no case bursts (no Poisson rate to burst). Without
 * one: traffic.rate required, traffic.rateScale refused.
 */
function traceIssues(raw: Record<string, unknown>): FieldIssue[] {
  const traffic = raw['traffic'];
  if (!isPlainObject(traffic)) return [];
  const out: FieldIssue[] = [];
  if (traffic['trace'] === undefined) {
    if (traffic['rate'] === undefined) out.push({ path: 'traffic.rate', message: 'required (or traffic.trace, to replay a request trace)' });
    if (traffic['rateScale'] !== undefined) {
      out.push({ path: 'traffic.rateScale', message: "only means something with traffic.trace (a trace's replay speed); scale Poisson arrivals with traffic.rate or a case's rateScale" });
    }
    return out;
  }
  if (traffic['rate'] !== undefined) out.push({ path: 'traffic.rate', message: 'a trace sets the arrivals; traffic.rateScale speeds it up' });
  const workload = raw['workload'];
  if (isPlainObject(workload)) {
    const kind = workload['kind'];
    if (kind !== 'request' && typeof kind === 'string' && (WORKLOAD_KINDS as readonly string[]).includes(kind)) {
      out.push({ path: 'workload.kind', message: `a trace replays single model calls: it takes a request workload ({kind: request}), not ${kind}` });
    } else if (kind === 'request') {
      for (const field of TRACE_GIVES) {
        if (workload[field] !== undefined) out.push({ path: `workload.${field}`, message: "the trace gives each request's prompt and output: leave it out" });
      }
    }
  }
  const scenarios = raw['scenarios'];
  if (isPlainObject(scenarios)) {
    for (const [name, change] of Object.entries(scenarios)) {
      if (isPlainObject(change) && change['burst'] !== undefined && change['burst'] !== null) {
        out.push({ path: `scenarios.${name}.burst`, message: "a trace's arrivals have no Poisson rate to burst; use the case's rateScale" });
      }
    }
  }
  return out;
}

function componentsOf(raw: Record<string, unknown>): FieldIssue[] {
  if (!isPlainObject(raw['workload'])) return [];
  const kind = raw['workload']['kind'];
  if (typeof kind !== 'string' || !(WORKLOAD_KINDS as readonly string[]).includes(kind)) return [];
  const needs = COMPONENTS_BY_KIND[kind as Kind];
  const chain = needs.join(', ');
  const out: FieldIssue[] = [];
  for (const c of COMPONENTS) {
    const present = raw[c] !== undefined;
    if (needs.includes(c) && !present) {
      out.push({ path: c, message: `required: ${kind} workloads use ${chain}` });
    } else if (!needs.includes(c) && present) {
      const message = kind === 'job' ? 'job workloads use only server' : `${kind} workloads do not use ${c}; they use ${chain}`;
      out.push({ path: c, message });
    }
  }
  return out;
}

/** The least value a distribution can take, 0 when it has no floor above 0. */
function floorOf(d: Distribution): number {
  if (d.kind === 'fixed') return d.value;
  if (d.kind === 'uniform') return d.min;
  return 0;
}

function workloadOf(file: ProblemFile): Workload {
  const w = file.workload;
  switch (w.kind) {
    case 'request':
      return {
        kind: 'request',
        prefixes: w.prefixes.map((p) => ({ tokens: p.tokens, weight: p.weight })),
        share: w.share,
        suffix: w.suffix,
        unique: w.unique,
        output: w.output,
      };
    case 'task':
      return { kind: 'task', system: w.system, input: w.input, output: w.output };
    case 'job':
      return { kind: 'job' };
  }
}

type FileGpu = NonNullable<ProblemFile['gpu']>;

/** KV tokens a replica holds: the problem's, else its catalogue profile's, else the default. */
function kvTokensOf(gpu: FileGpu): number {
  return gpu.kvTokens ?? gpu.profile.kvTokens ?? DEFAULT_KV_TOKENS;
}

/** "400000 tokens", saying where a number the problem did not give comes from (`at`: the pool's fields, gpu's or the decode replicas'). */
function kvText(gpu: FileGpu, at = 'gpu'): string {
  const kv = kvTokensOf(gpu);
  return gpu.kvTokens === undefined && gpu.profile.kvTokens !== undefined
    ? `${kv} tokens (${at}.profile ${gpu.profile.name}'s KV capacity; set ${at}.kvTokens to change it)`
    : `${kv} tokens`;
}

/** The offload tier's KV bytes a token: the problem's, else its profile's model's; undefined when neither says. */
function offloadBytesPerToken(gpu: FileGpu): number | undefined {
  return gpu.offload?.bytesPerToken ?? gpu.profile.roofline?.kvBytesPerToken;
}

/** The offload tier as the engines take it, where the problem has one of more than 0 tokens and its bytes a token are known. */
function offloadOf(gpu: FileGpu): Offload | undefined {
  const bytesPerToken = offloadBytesPerToken(gpu);
  if (gpu.offload === undefined || gpu.offload.tokens === 0 || bytesPerToken === undefined) return undefined;
  return { tokens: gpu.offload.tokens, bandwidth: gpu.offload.bandwidth, bytesPerToken };
}

/** The KV transfer's bytes a token: the problem's, else its profile's model's; undefined when neither says. */
function transferBytesPerToken(gpu: FileGpu): number | undefined {
  return gpu.disaggregation?.bytesPerToken ?? gpu.profile.roofline?.kvBytesPerToken;
}

/** Dollars per GPU-hour of the pool: gpu.pricePerHour, else its profile's GPU type's list price. */
function priceOf(gpu: FileGpu): number | undefined {
  return gpu.pricePerHour ?? listPrice(gpu.profile.gpuType);
}

/**
 * The decode replicas of a split pool, as a pool of their own: gpu's fields but where
 * gpu.disaggregation.decode gives its own (with a profile of their own, its KV capacity and its
 * GPU type's price, not gpu's); undefined when the pool is not split.
 */
function decodeGpuOf(gpu: FileGpu): FileGpu | undefined {
  const d = gpu.disaggregation;
  if (d === undefined || d.prefill === 0) return undefined;
  const own = d.decode ?? {};
  const profile = own.profile ?? gpu.profile;
  const pricePerHour = own.pricePerHour ?? (own.profile === undefined ? priceOf(gpu) : (listPrice(profile.gpuType) ?? priceOf(gpu)));
  const kvTokens = own.kvTokens ?? (own.profile === undefined ? gpu.kvTokens : undefined);
  const { kvTokens: _kv, pricePerHour: _price, ...rest } = gpu;
  return {
    ...rest,
    replicas: Math.max(1, gpu.replicas - d.prefill),
    slots: own.slots ?? gpu.slots,
    profile,
    ...(kvTokens === undefined ? {} : { kvTokens }),
    ...(pricePerHour === undefined ? {} : { pricePerHour }),
  };
}

/** Disaggregation as the engines take it, where the problem splits its replicas (prefill above 0) and its bytes a token are known. */
function disaggregationOf(gpu: FileGpu): Disaggregation | undefined {
  const d = gpu.disaggregation;
  const bytesPerToken = transferBytesPerToken(gpu);
  const decode = decodeGpuOf(gpu);
  if (d === undefined || decode === undefined || bytesPerToken === undefined) return undefined;
  const price = priceOf(decode);
  return {
    prefill: d.prefill, policy: d.policy, latency: d.latency, bandwidth: d.bandwidth, bytesPerToken,
    decode: { slots: decode.slots, kvTokens: kvTokensOf(decode), profile: decode.profile, ...(price === undefined ? {} : { pricePerHour: price }) },
  };
}

/**
 * What stops disaggregation (docs/model.md section 3): no replica left to decode, bytes a token
 * nobody gave, a transfer the engines' whole nanoseconds a token cannot hold, or one of a whole
 * KV cache past a step's limit.
 */
function disaggregationIssues(gpu: FileGpu): FieldIssue[] {
  const d = gpu.disaggregation;
  if (d === undefined || d.prefill === 0) return [];
  if (d.prefill >= gpu.replicas) {
    return [{ path: 'gpu.disaggregation.prefill', message: `${d.prefill} prefill replicas of gpu.replicas ${gpu.replicas} leave none to decode`, from: ['gpu.replicas'] }];
  }
  // a transfer moves at most a prompt both pools' KV holds
  const decode = decodeGpuOf(gpu)!;
  return kvMoveIssues(gpu, 'gpu.disaggregation', d, kvTokensOf(decode) < kvTokensOf(gpu) ? decode : gpu, ['moves', 'moving']);
}

/**
 * What stops moving KV over `at`'s link (the offload tier's load, a transfer to a decode
 * replica): bytes a token nobody gave, a token's time the engines' whole nanoseconds cannot hold,
 * or `whole`'s KV cache taking, with the link's latency, longer than a step may. `verbs`: the
 * messages' "loads" and "loading".
 */
function kvMoveIssues(
  gpu: FileGpu,
  at: string,
  link: { readonly bandwidth: number; readonly bytesPerToken?: number | undefined; readonly latency?: number },
  whole: FileGpu,
  verbs: readonly [string, string],
): FieldIssue[] {
  const bytesPerToken = link.bytesPerToken ?? gpu.profile.roofline?.kvBytesPerToken;
  if (bytesPerToken === undefined) {
    return [{
      path: `${at}.bytesPerToken`,
      message: `required: gpu.profile ${gpu.profile.name} does not know its model's KV bytes a token (131072 for Llama 3.1 8B in BF16: 32 layers x 2 x 8 KV heads x 128 x 2 bytes)`,
    }];
  }
  // where the bytes a token come from: the problem, or its profile's model
  const [source, given] = link.bytesPerToken !== undefined
    ? [`${at}.bytesPerToken`, `${bytesPerToken} bytes`]
    : ['gpu.profile', `${bytesPerToken} bytes (gpu.profile ${gpu.profile.name}'s model's)`];
  const ns = Math.round((bytesPerToken / link.bandwidth) * 1e9);
  if (ns < 1) {
    return [{ path: `${at}.bandwidth`, message: `${verbs[0]} a token of ${given} in under half a nanosecond; the engines hold whole nanoseconds a token`, from: [source] }];
  }
  const latency = link.latency ?? 0;
  const micros = latency + Math.floor((kvTokensOf(whole) * ns) / 1000);
  if (micros <= LIMITS.stepMicros) return [];
  return [{
    path: `${at}.bandwidth`,
    message: `${verbs[1]} a whole KV cache (${kvText(whole)}) at ${ns} ns a token of ${given} takes ${formatDuration(micros)}${latency > 0 ? ' with the latency' : ''}, over the ${formatDuration(LIMITS.stepMicros)} a step may take`,
    from: latency > 0 ? [source, `${at}.latency`] : [source],
  }];
}

/** The typed pool: KV tokens and the price per GPU-hour filled in from the profile where not given. */
function gpuPool(gpu: FileGpu): GpuPool {
  const price = priceOf(gpu);
  const offload = offloadOf(gpu);
  const disaggregation = disaggregationOf(gpu);
  return {
    replicas: gpu.replicas,
    slots: gpu.slots,
    kvTokens: kvTokensOf(gpu),
    kv: gpu.kv,
    profile: gpu.profile,
    ...(price === undefined ? {} : { pricePerHour: price }),
    ...(offload === undefined ? {} : { offload }),
    ...(disaggregation === undefined ? {} : { disaggregation }),
  };
}

/**
 * What stops an offload tier (docs/model.md section 3): bytes a token nobody gave, a load the
 * engines' whole nanoseconds a token cannot hold, loading a whole KV cache past a step's limit,
 * more entries than the engines index. `smallest`: the smallest cached context, tokens.
 */
function offloadIssues(gpu: FileGpu, smallest: number): FieldIssue[] {
  if (gpu.offload === undefined || gpu.offload.tokens === 0) return [];
  const { tokens } = gpu.offload;
  const out = kvMoveIssues(gpu, 'gpu.offload', gpu.offload, gpu, ['loads', 'loading']);
  // without bytes a token, what the tier's load takes is all it says
  if (offloadBytesPerToken(gpu) === undefined) return out;
  const entries = offloadEntries(tokens, smallest);
  if (entries > LIMITS.cacheEntries) {
    out.push({
      path: 'gpu.offload.tokens',
      message: `${tokens} tokens hold ${entries} entries of the smallest cached context (${smallest} tokens); the engines index at most ${LIMITS.cacheEntries} a replica`,
    });
  }
  return out;
}

/** The longest batch iteration a profile takes: every slot decoding, and a full chunk of prefill (in nanoseconds, rounded up once, as the engines take it). */
function longestIteration(profile: GpuProfile, slots: number): number {
  const ns = Math.round(1e6 / profile.prefillRate) * profile.chunk + Math.round(profile.base * 1000) + Math.round(profile.perSeq * 1000) * slots;
  return Math.ceil(ns / 1000);
}

/** The longest time a slowdown of each component can stretch. */
function longestTimes(file: ProblemFile, gpu: FileGpu | undefined): Map<Target, number> {
  const out = new Map<Target, number>();
  const decode = gpu === undefined ? undefined : decodeGpuOf(gpu);
  if (gpu !== undefined) out.set('gpu', Math.max(longestIteration(gpu.profile, gpu.slots), decode === undefined ? 0 : longestIteration(decode.profile, decode.slots)));
  if (file.tools !== undefined) out.set('tools', Math.round(tableTop(file.tools.latency)));
  if (file.server !== undefined) out.set('server', Math.round(tableTop(file.server.service)));
  return out;
}

/** The smallest request of a trace, prompt + output tokens, and its index. */
function smallestRequest(trace: Trace): { tokens: number; index: number } {
  let best = { tokens: Infinity, index: 0 };
  for (let i = 0; i < trace.requests; i++) {
    const tokens = trace.input[i]! + trace.output[i]!;
    if (tokens < best.tokens) best = { tokens, index: i };
  }
  return best;
}

/** Tokens some fields of the workload add up to, each named for messages. */
type Part = readonly [field: string, tokens: number];

function sum(parts: readonly Part[]): number {
  return parts.reduce((s, [, n]) => s + n, 0);
}

function smallestPrefixOf(w: ProblemFile['workload']): Part | undefined {
  return w.kind === 'request' && w.prefixes.length > 0 ? ['the smallest of workload.prefixes', Math.min(...w.prefixes.map((p) => p.tokens))] : undefined;
}

/**
 * The fields that make up the smallest prompt a model call can carry: a shared prefix and
 * suffix, or a unique prompt, whichever is smaller; an agent's system prompt and one step's
 * input. Undefined when the workload names no prompt it can draw (a request sharing prefixes it
 * does not list, which workloadIssues refuses).
 */
function smallestPrompt(w: ProblemFile['workload'] & { kind: 'request' | 'task' }): readonly Part[] | undefined {
  if (w.kind === 'task') return [['workload.system', w.system], ['workload.input', floorOf(w.input)]];
  const prefix = smallestPrefixOf(w);
  const shared: Part[] | undefined = w.share > 0 && prefix !== undefined ? [prefix, ['workload.suffix', floorOf(w.suffix)]] : undefined;
  const unique: Part[] | undefined = w.share < 1 ? [['workload.unique', floorOf(w.unique)]] : undefined;
  return shared === undefined || (unique !== undefined && sum(unique) < sum(shared)) ? unique : shared;
}

/** The fewest prompt tokens a decoding sequence holds: every decode step reads at least their KV. */
function leastPromptTokens(file: ProblemFile, trace: Trace | null): number {
  if (trace !== null) return trace.input.reduce((least, n) => Math.min(least, n), Infinity);
  const w = file.workload;
  return w.kind === 'job' ? 0 : sum(smallestPrompt(w) ?? []);
}

/**
 * The problem's GPU with its profile's perSeq raised to the KV read of the shortest prompt, where
 * the profile has a roofline floor (docs/model.md section 3), and the issue when that read takes
 * longer than a step may.
 */
function flooredGpu(file: ProblemFile, trace: Trace | null): { gpu?: FileGpu; issue?: FieldIssue } {
  if (file.gpu === undefined) return {};
  const prompt = leastPromptTokens(file, trace);
  let gpu = { ...file.gpu, profile: withContextFloor(file.gpu.profile, prompt) };
  // the decode replicas' own profile, alike
  const split = gpu.disaggregation;
  const own = split?.decode?.profile;
  if (split !== undefined && own !== undefined) gpu = { ...gpu, disaggregation: { ...split, decode: { ...split.decode, profile: withContextFloor(own, prompt) } } };
  for (const [path, p] of [['gpu.profile', gpu.profile], ['gpu.disaggregation.decode.profile', gpu.disaggregation?.decode?.profile]] as const) {
    if (p === undefined || p.perSeq <= LIMITS.stepMicros) continue;
    const message =
      `${p.name}: reading the KV of the shortest prompt, ${prompt} tokens, takes ${formatDuration(p.perSeq)} ` +
      `a decode step, over the ${formatDuration(LIMITS.stepMicros)} the engines hold`;
    return { gpu, issue: { path, message } };
  }
  return { gpu };
}

/** Checks of the workload (or the trace that replaces it) against the pool that must serve it. */
function workloadIssues(file: ProblemFile, trace: Trace | null): FieldIssue[] {
  const out: FieldIssue[] = [];
  const w = file.workload;
  if (w.kind === 'request' && w.share > 0 && w.prefixes.length === 0) {
    out.push({ path: 'workload.prefixes', message: `needs 1 to ${LIMITS.prefixes} prefixes when share is above 0` });
  }
  // tokens come from model calls: a plain queueing server has none
  for (const goal of ['ttft_p99', 'tpot_p99'] as const) {
    if (w.kind === 'job' && file.goals[goal] !== undefined) {
      out.push({ path: `goals.${goal}`, message: 'job workloads make no model calls, so they have no tokens to time: set it on a request or task workload' });
    }
  }
  if (file.gpu === undefined) return out;
  out.push(...poolIssues(file, trace, file.gpu, 'gpu'));
  // the decode replicas' own KV and slots, where they have any
  const decode = decodeGpuOf(file.gpu);
  if (decode !== undefined && file.gpu.disaggregation?.decode !== undefined) {
    // the offload tier is both pools': an issue of it that both find is named once
    const named = new Set(out.map((i) => `${i.path}: ${i.message}`));
    out.push(...poolIssues(file, trace, decode, 'gpu.disaggregation.decode').filter((i) => !named.has(`${i.path}: ${i.message}`)));
  }
  out.push(...disaggregationIssues(file.gpu));
  return out;
}

/** The checks of a pool's KV (`at`: its fields, gpu's or the decode replicas'): the smallest call fits it, its cache entries fit the engines' index. */
function poolIssues(file: ProblemFile, trace: Trace | null, gpu: FileGpu, at: string): FieldIssue[] {
  const out: FieldIssue[] = [];
  const w = file.workload;
  const kv = kvTokensOf(gpu);
  const { slots } = gpu;
  // a call whose smallest possible context exceeds the cache could never be admitted
  const smallestPrefix = smallestPrefixOf(w);
  let parts: readonly Part[] = [];
  let what = '';
  if (trace !== null) {
    // as for a workload: when even the smallest request cannot fit the cache, none can
    const smallest = smallestRequest(trace);
    if (smallest.tokens > kv) {
      out.push({
        path: `${at}.kvTokens`,
        message: `${kvText(gpu, at)} cannot hold the smallest request of ${trace.file} (request ${smallest.index + 1}, prompt + output), ${smallest.tokens} tokens`,
      });
    }
  } else if (w.kind !== 'job') {
    const prompt = smallestPrompt(w);
    parts = prompt === undefined ? [] : [...prompt, ['workload.output', floorOf(w.output)]];
    what = w.kind === 'request' ? 'the smallest request (prompt + output)' : "an agent's first step (system + input + output)";
  }
  const least = sum(parts);
  if (least > kv) {
    const terms = parts.map(([field, n]) => `${field} ${n}`).join(' + ');
    out.push({ path: `${at}.kvTokens`, message: `${kvText(gpu, at)} cannot hold ${what}, ${least} tokens (${terms})` });
  }
  // each replica indexes its cached contexts; the smallest one decides how many fit (a
  // trace's is one 512-token block)
  const smallest = trace !== null
    ? (["a trace's block", TRACE_BLOCK_TOKENS] as const)
    : w.kind === 'task' ? (['workload.system', w.system] as const) : smallestPrefix;
  const entries = smallest === undefined ? 0 : cacheEntries(kv, smallest[1], slots);
  if (smallest !== undefined && entries > LIMITS.cacheEntries) {
    out.push({
      path: `${at}.kvTokens`,
      message: `${kvText(gpu, at)} hold ${entries} cache entries of ${smallest[0]} (${smallest[1]} tokens) ` +
        `with ${at}.slots; the engines index at most ${LIMITS.cacheEntries} a replica`,
    });
  }
  out.push(...offloadIssues(gpu, smallest?.[1] ?? kv));
  return out;
}

/**
 * The typed Problem, or the issues that stop it. `casesGiven`: whether the file listed its
 * cases (otherwise its own scenarios join the built-in four).
 */
export function buildProblem(file: ProblemFile, casesGiven: boolean, trace: Trace | null = null): { problem?: Problem; issues: FieldIssue[] } {
  const floored = flooredGpu(file, trace);
  const issues: FieldIssue[] = [...workloadIssues(file, trace), ...(floored.issue === undefined ? [] : [floored.issue])];
  const kind = file.workload.kind;
  const rateScale = trace === null ? 1 : (file.traffic.rateScale ?? 1);
  const span = trace === null ? 0 : traceSpan(trace);
  if (trace !== null && span === 0) {
    const what = trace.requests === 1 ? 'has one request' : `has ${trace.requests} requests all at the same time`;
    return { issues: [...issues, { path: 'traffic.trace', message: `${trace.file} ${what}: a trace needs requests at two different times at least` }] };
  }
  if (trace === null && file.traffic.rate === undefined) {
    return { issues: [...issues, { path: 'traffic.rate', message: 'required (or traffic.trace, to replay a request trace)' }] };
  }
  // with a trace, its mean rate at the replay's speed: for the limits and for display
  const rate = trace === null ? file.traffic.rate! : (trace.requests / (span / 1e6)) * rateScale;
  const duration = file.traffic.duration;
  const timeout = file.app?.timeout ?? file.server?.timeout ?? 0;
  const callsPerArrival = kind === 'task' ? (file.orchestrator?.steps ?? 1) : 1;
  const warmupAuto = file.traffic.warmup === 'auto';
  const warmup = file.traffic.warmup === 'auto' ? autoWarmupMost(duration, timeout, rate * callsPerArrival, kind, trace === null ? null : span / rateScale) : (file.traffic.warmup ?? DEFAULT_WARMUP[kind]);
  if (warmupAuto && warmup < AUTO_WARMUP_LEAST) {
    issues.push({
      path: 'traffic.warmup',
      message: `auto has no room for a warm-up: with traffic.duration ${formatDuration(duration)}, the limits (${HORIZON_TEXT} of simulated time, ${LIMITS.maxArrivals[kind].toLocaleString('en')} ${kind === 'task' ? 'model calls' : 'arrivals'} an instance${trace === null ? '' : ', the trace\'s length'}) leave less than ${formatDuration(AUTO_WARMUP_LEAST)}: give a warm-up, or shorten traffic.duration`,
      from: ['traffic.duration'],
    });
    return { issues };
  }

  const horizon = warmup + duration + timeout;
  if (horizon >= LIMITS.horizonMicros) {
    const deadline = file.app !== undefined ? 'app.timeout' : 'server.timeout';
    issues.push({
      path: 'traffic.duration',
      message:
        `traffic.warmup ${formatDuration(warmup)} + traffic.duration ${formatDuration(duration)} + ${deadline} ${formatDuration(timeout)} ` +
        `= ${formatDuration(horizon)}, must be under ${HORIZON_TEXT} (engines keep time in u32 microseconds)`,
    });
  }

  const replicas = new Map<Target, number>();
  if (file.gpu !== undefined) replicas.set('gpu', file.gpu.replicas);
  if (file.app !== undefined) replicas.set('app', file.app.replicas);
  if (file.server !== undefined) replicas.set('server', file.server.replicas);
  if (file.tools !== undefined) replicas.set('tools', 1);
  const ctx: CaseContext = {
    warmup,
    duration,
    rate,
    trace: trace === null ? null : { scale: rateScale, scaleGiven: file.traffic.rateScale !== undefined },
    replicas,
    dependency: kind === 'job' ? 'server' : 'gpu',
    killTarget: killTargetOf(replicas),
    kind,
    callsPerArrival,
    warmupAuto,
    longest: longestTimes(file, floored.gpu),
  };
  const built = buildCases(file, ctx, casesGiven);
  issues.push(...built.issues);
  if (issues.length > 0) return { issues };

  const problem: Problem = {
    id: file.id,
    title: file.title ?? file.id,
    goals: {
      success: file.goals.success,
      p99: file.goals.p99,
      ttftP99: file.goals.ttft_p99 ?? null,
      tpotP99: file.goals.tpot_p99 ?? null,
    },
    confidence: file.confidence,
    seed: file.seed,
    traffic: { rate, duration, warmup, warmupAuto, trace, rateScale },
    workload: workloadOf(file),
    lb: file.lb ?? null,
    app: file.app ?? null,
    orchestrator: file.orchestrator ?? null,
    router: file.router ?? null,
    gpu: floored.gpu === undefined ? null : gpuPool(floored.gpu),
    tools: file.tools ?? null,
    server: file.server ?? null,
    cases: built.cases,
  };
  return { problem, issues };
}
