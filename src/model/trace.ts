/**
 * A request trace replayed instead of Poisson arrivals (docs/model.md section 2): each request's
 * arrival, prompt and output as recorded, and how its prompt shares a prefix with an earlier
 * request's (from the trace's block hash ids). Parsed once (src/problem/trace.ts); the engines
 * read it as a section of their tables (src/engine/compile.ts).
 */

/** Tokens per hash id in a Mooncake trace: one KV block. */
export const TRACE_BLOCK_TOKENS = 512;

export type TraceFormat = 'mooncake' | 'azure';

export interface Trace {
  /** The file as the problem named it, shown in messages and results. */
  readonly file: string;
  readonly format: TraceFormat;
  /** Requests, in time order. */
  readonly requests: number;
  /** Each request's arrival, whole microseconds after the trace's first request (non-decreasing). */
  readonly at: Float64Array;
  /** Prompt tokens (at least 1). */
  readonly input: Uint32Array;
  /** Output tokens (at least 1). */
  readonly output: Uint32Array;
  /**
   * The radix-tree node each request's full blocks end at (docs/model.md section 2), -1 for a
   * request without a full block (and for every request of a trace without hash ids).
   */
  readonly node: Int32Array;
  /** The radix tree over every request's full blocks (TraceTree), shared by all windows. */
  readonly tree: TraceTree;
  /**
   * Each request's hash ids (all of them, the partial last block included), request i's at
   * ids[idsStart[i]] up to ids[idsStart[i + 1]]: prefix-affinity keys hash the first few.
   */
  readonly ids: Uint32Array;
  readonly idsStart: Uint32Array;
  /**
   * Prompt tokens an infinite block cache would find for each request: its longest run of
   * leading full blocks that an earlier request of the trace also began with, x 512, less the
   * one prompt token always computed (min(run x 512, input - 1)).
   */
  readonly reusable: Uint32Array;
}

/**
 * A radix tree over the trace's prompts by 512-token blocks: a node is a run of blocks that
 * every prompt through it shares, split wherever two prompts of the trace diverge or one ends.
 * Nodes are numbered in preorder, so node u's subtree is the nodes u to end[u] - 1 and u is an
 * ancestor of v exactly when u <= v < end[u]; along a path the deeper node has the larger number.
 */
export interface TraceTree {
  readonly nodes: number;
  /** The node above, -1 for a node hanging from the root (the empty prompt). */
  readonly parent: Int32Array;
  /** One past the last node of the subtree. */
  readonly end: Uint32Array;
  /** The node's own blocks x 512. */
  readonly tokens: Uint32Array;
  /** Tokens from the root to the node's end: its ancestors' tokens and its own. */
  readonly depth: Uint32Array;
}

/** The trace's span: from its first request to its last, microseconds. */
export function traceSpan(trace: Trace): number {
  return trace.requests === 0 ? 0 : trace.at[trace.requests - 1]! - trace.at[0]!;
}

/** What a trace is, for a listing (the service's typed problem): its rows stay out. */
export interface TraceListing {
  readonly file: string;
  readonly format: TraceFormat;
  readonly requests: number;
  readonly spanMicros: number;
}

export function traceListing(trace: Trace): TraceListing {
  return { file: trace.file, format: trace.format, requests: trace.requests, spanMicros: traceSpan(trace) };
}

/**
 * What prefix-affinity routing hashes for request i: its first `blocks` hash ids (fewer when
 * it has fewer), FNV-1a over their bytes, never 0; 0 for a request without hash ids, which
 * routes as a unique prompt.
 */
export function affinityKey(trace: Trace, i: number, blocks: number): number {
  const from = trace.idsStart[i]!;
  const to = Math.min(trace.idsStart[i + 1]!, from + blocks);
  if (to === from) return 0;
  let h = 0x811c9dc5;
  for (let k = from; k < to; k++) {
    const id = trace.ids[k]!;
    for (let b = 0; b < 32; b += 8) h = Math.imul(h ^ ((id >>> b) & 0xff), 0x01000193) >>> 0;
  }
  return h === 0 ? 1 : h;
}

/** A trace as the user should see it on load, and as results keep it (servesim.trace). */
export interface TraceSummary {
  readonly file: string;
  readonly format: TraceFormat;
  readonly requests: number;
  readonly spanSeconds: number;
  /** Requests a second over the span (0 for a trace of one request). */
  readonly meanRate: number;
  readonly meanInputTokens: number;
  readonly meanOutputTokens: number;
  /** Of all prompt tokens, the share an infinite block cache would find (Trace.reusable). */
  readonly blockCacheShare: number;
}

export function traceSummary(trace: Trace): TraceSummary {
  const span = traceSpan(trace) / 1e6;
  let input = 0;
  let output = 0;
  let reusable = 0;
  for (let i = 0; i < trace.requests; i++) {
    input += trace.input[i]!;
    output += trace.output[i]!;
    reusable += trace.reusable[i]!;
  }
  const n = Math.max(1, trace.requests);
  return {
    file: trace.file,
    format: trace.format,
    requests: trace.requests,
    spanSeconds: span,
    meanRate: span > 0 ? (trace.requests - 1) / span : 0,
    meanInputTokens: input / n,
    meanOutputTokens: output / n,
    blockCacheShare: input === 0 ? 0 : reusable / input,
  };
}

/** The summary as one line: "FILE: N requests over S s (R/s), I input and O output tokens on average, X% ...". */
export function describeTraceSummary(s: TraceSummary): string {
  const n = (x: number, digits = 0) => x.toLocaleString('en', { maximumFractionDigits: digits });
  return (
    `${s.file}: ${n(s.requests)} requests over ${n(s.spanSeconds, 1)} s (${n(s.meanRate, 2)}/s), ` +
    `${n(s.meanInputTokens)} input and ${n(s.meanOutputTokens)} output tokens on average, ` +
    `${(100 * s.blockCacheShare).toFixed(1)}% of prompt tokens found by an infinite block cache`
  );
}
