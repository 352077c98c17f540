/**
 * The capacity search's request and result: what `servesim capacity` takes and gives. The
 * search lives in `search.ts`; this file is the contract its callers share.
 */
import { z } from 'zod';
import { searchRequestFields, type CaseMargin, type SearchResult } from '../hint/api.js';
import type { Verdict } from '../model/verdict.js';
import { LIMITS } from '../problem/limits.js';

/** A bracket is closed when its top is at most this much above its bottom. */
export const DEFAULT_TOLERANCE = 0.02;
/** The search's load scales: as far as a case may scale the problem's traffic, either way. */
export const MAX_SCALE = LIMITS.maxScale;
export const MIN_SCALE = 1 / LIMITS.maxScale;
/**
 * Designs a search takes: each round looks at every design against its family's (a cost of
 * designs squared), and each design takes a few probes of every case's seeds.
 */
export const MAX_DESIGNS = 10_000;

export const capacityRequestSchema = z
  .object({
    // the designs are every point of the grid, each searched for its capacity
    ...searchRequestFields,
    tolerance: z
      .number()
      .min(0.001)
      .max(1)
      .default(DEFAULT_TOLERANCE)
      .describe('the search stops when the lowest load a design does not pass is at most this share above the highest it passes'),
  })
  .strict();

export type CapacityRequest = z.input<typeof capacityRequestSchema>;

/**
 * A case's verdict and margins at or above a load: a case shown passing under more load passes
 * under less, so a probe does not run it again (rate_scale says where it was shown).
 */
export interface CapacityCase extends CaseMargin {
  readonly rate_scale: number;
}

/** A probe at one load scale: its verdict over the cases, or why the problem refuses that load. */
export interface CapacityEdge {
  readonly rate_scale: number;
  /** REFUSED: the problem does not accept this load (a limit on its rates), so nothing ran. */
  readonly verdict: Verdict | 'REFUSED';
  /** The most seeds a case took. */
  readonly seeds: number;
  /** Why it does not pass: each case that does not, or the refusal; "" when it passes. */
  readonly why: string;
  /**
   * The design the probe was of, when another: one with as much or more on every numeric path
   * (the same names), whose not passing here settles this one's (more never lowers the
   * capacity); null for the design's own probe.
   */
  readonly shown_on: Readonly<Record<string, number | string>> | null;
}

export interface CapacityDesign {
  readonly values: Readonly<Record<string, number | string>>;
  readonly cost: number;
  /** The highest load scale at which every case PASSes; null when none does down to the least load tried. */
  readonly rate_scale: number | null;
  /** Arrivals per second at that scale (the problem's traffic, before a case scales it). */
  readonly requests_per_second: number | null;
  /** Per GPU (gpu.replicas x the profile's tp); null without a GPU pool. */
  readonly requests_per_second_per_gpu: number | null;
  /** Requests an hour over the GPUs' dollars an hour; null without a price. */
  readonly requests_per_dollar: number | null;
  /** The cases at capacity (empty without one). */
  readonly cases: readonly CapacityCase[];
  /** The lowest load tried above capacity that does not pass (the design's own probe, or a design's above it); null when it passes at the search's highest. */
  readonly above: CapacityEdge | null;
  /** Probes the design took, and their instances (cases x seeds). */
  readonly probes: number;
  readonly instances: number;
  /** On the Pareto front of cost against capacity (requests per second). */
  readonly pareto: boolean;
}

export interface CapacityResult extends SearchResult {
  /** The field the load scale multiplies: traffic.rate, or traffic.rateScale with a trace. */
  readonly load: 'traffic.rate' | 'traffic.rateScale';
  readonly tolerance: number;
  readonly minScale: number;
  readonly maxScale: number;
  /** Every design, in grid order. */
  readonly designs: readonly CapacityDesign[];
  /**
   * Designs (indexes into `designs`) whose search was stopped before it settled (a cancelled
   * job): each one's capacity is a load it passed at, its `above` the lowest shown not passing
   * so far; empty for a search that ran to its end.
   */
  readonly unsettled: readonly number[];
  /** Probes of every design (a design at a load scale). */
  readonly probes: number;
}

/** Progress of a capacity search: called as each round of probes finishes. */
export interface CapacityProgress {
  readonly round: number;
  readonly probes: number;
  readonly passed: number;
  readonly failed: number;
  readonly undecided: number;
  readonly refused: number;
  /** Designs whose capacity is settled so far, of all. */
  readonly settled: number;
  readonly designs: number;
}
