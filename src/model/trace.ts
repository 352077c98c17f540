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
   * The latest earlier request whose prompt shares the most leading blocks (hash ids) with this
   * one's, or -1 when none shares a block (and always -1 in a trace without hash ids).
   */
  readonly parent: Int32Array;
  /** Prompt tokens shared with `parent`: common leading blocks x 512, at most either prompt's length; 0 without one. */
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
