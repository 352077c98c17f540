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
   * The earlier request whose full blocks (hash ids) are all a prefix of this one's prompt, the
   * deepest such and of those the latest, or -1 when none is (and always -1 in a trace without
   * hash ids): the engines cache a prompt under its parent's, which it must contain whole.
   */
  readonly parent: Int32Array;
  /** Prompt tokens shared with `parent`: its full blocks x 512, at most either prompt's length; 0 without one. */
  readonly shared: Uint32Array;
  /**
   * What prefix-affinity routing hashes (never 0): the prompt's second block id + 1 (its first
   * where it has one block), as every request of a conversation trace shares its first block
   * (the system prompt); 0 in a trace without hash ids, where calls route as unique prompts.
   */
  readonly routeKey: Uint32Array;
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
