/**
 * The hint request and result: what `servesim hint` and POST /v1/hints take and give.
 * The search itself lives in `search.ts`; this file is the contract the CLI and the service
 * share.
 */
import { z } from 'zod';
import type { GoalsInMilliseconds } from '../model/problem.js';
import type { Verdict } from '../model/verdict.js';
import { gridSchema, maxSeedsSchema, seedsSchema } from '../sweep/spec.js';
import { MAX_COST_LENGTH } from './cost.js';

/** The fields of every search's request (a hint's, a capacity search's): the grid, cases, seeds, cost and engine. */
export const searchRequestFields = {
  /** A shipped problem id, or the problem itself (paths only from the CLI). */
  problem: z.union([z.string().min(1), z.record(z.string(), z.unknown())]),
  /** The paths to search over, each a list or a range (as a sweep's grid). Numeric paths
   * are searched assuming a larger value never hurts (checked around what is found); each
   * value of a string path (router.policy) is searched on its own. */
  vary: gridSchema.refine((v) => Object.keys(v).length > 0, { message: 'needs at least one path to vary' }),
  /** Cost of a configuration: + - * / and parentheses over numbers, the varied paths,
   * numeric problem fields (times in microseconds), `gpus` and `dollars_per_hour`; default
   * `dollars_per_hour` when the problem's GPUs have a price, else `gpu.replicas * gpu.slots`. */
  cost: z.string().min(1).max(MAX_COST_LENGTH, `at most ${MAX_COST_LENGTH.toLocaleString('en')} characters`).optional(),
  cases: z.union([z.literal('all'), z.array(z.string()).min(1)]).default('all'),
  /** 'auto' (seeds until each verdict is decided) or a fixed count. */
  seeds: seedsSchema.default('auto'),
  maxSeeds: maxSeedsSchema.optional(),
  seed: z.number().int().min(0).max(0xffffffff).optional(),
  confidence: z.number().gt(0).max(1).optional(),
  engine: z.enum(['auto', 'cpu', 'gpu']).default('auto'),
};

export const hintRequestSchema = z
  .object({
    ...searchRequestFields,
    /** The base seed of the re-check on fresh seeds; default: derived from `seed` (src/hint/search.ts). */
    recheckSeed: z.number().int().min(0).max(0xffffffff).optional(),
  })
  .strict();

export type HintRequest = z.input<typeof hintRequestSchema>;

/**
 * One case's margins against every goal it has (positive: met with room to spare), each rounded
 * to what its seeds resolve (the interval's half-width for rates, the histogram's 0.8% for
 * latencies); null for a goal the problem does not set.
 */
export interface CaseMargin {
  readonly case: string;
  readonly verdict: Verdict;
  readonly passes: boolean;
  /** Seeds this case took (with seeds 'auto', until its verdict was decided or the cap). */
  readonly seeds: number;
  readonly success: number;
  readonly p99_ms: number;
  readonly ttft_p99_ms: number | null;
  readonly tpot_p99_ms: number | null;
  readonly pass_probability: number;
  /** The pass probability's interval (at interval_level). */
  readonly pass_probability_lo: number;
  readonly pass_probability_hi: number;
  /** pass_probability_lo - confidence: positive when the pass is beyond seed noise. */
  readonly pass_probability_margin: number;
  /** success - goal (fraction). */
  readonly success_margin: number;
  /** goal - p99 (milliseconds), and the same for TTFT and TPOT p99 where those goals are set. */
  readonly p99_margin_ms: number;
  readonly ttft_p99_margin_ms: number | null;
  readonly tpot_p99_margin_ms: number | null;
  /**
   * Why it fails ("server-dies: p99 4.1 s > 3 s") or is undecided, and when its measured window
   * is not in steady state, that and the warm-up the steady-state test suggests; else "".
   */
  readonly why: string;
}

/** A configuration's cases on one run of seeds, and its verdict over them. */
export interface HintRun {
  readonly verdict: Verdict;
  readonly cases: readonly CaseMargin[];
}

export interface HintConfiguration extends HintRun {
  readonly values: Readonly<Record<string, number | string>>;
  readonly cost: number;
  /** The same configuration on fresh seeds (base seed `recheckSeed`), for the found ones and their cheaper neighbours. */
  readonly recheck?: HintRun;
}

export interface Hint {
  /** A cheapest passing configuration (one of the Pareto set). */
  readonly found: HintConfiguration;
  /** One step down each varied numeric path (where there is a lower value), evaluated: why
   * each fails, or that it passes too (a violation, or a cost that falls with that path). */
  readonly cheaper: readonly HintConfiguration[];
  /** The re-check on fresh seeds agrees: the found one passes again, no passing neighbour fails and no other passes. */
  readonly holds: boolean;
}

/** What a search's result states, whichever search (a hint, a capacity search): its settings and its work. */
export interface SearchResult {
  readonly problemId: string;
  readonly title: string;
  readonly paths: readonly string[];
  /** The cost expression used. */
  readonly cost: string;
  readonly goals: GoalsInMilliseconds;
  readonly confidence: number;
  /** Seeds every configuration ran, the most an undecided one could take, and the base seed. */
  readonly seeds: number;
  readonly maxSeeds: number;
  readonly seed: number;
  /** The confidence of each verdict (the chance it is not wrong), over all the looks at it. */
  readonly verdictLevel: number;
  /**
   * A configuration whose pass probability is shown below confidence + margin takes no more
   * seeds and is not taken as passing: it passes by less than the margin, if at all.
   */
  readonly margin: number;
  readonly cases: readonly string[];
  /** Rounds of evaluation: each round's configurations ran as one batch per configuration shape. */
  readonly rounds: number;
  /** Instances simulated: every case's seeds of every configuration run. */
  readonly instances: number;
  /** Where a monotonicity the search assumed turned out false (checked, not assumed): each says which configurations. */
  readonly monotonicityViolations: readonly string[];
  readonly engine: string | null;
  /** Seconds the GPU spent on its passes over every round (BatchUsed.gpuSeconds); null when none ran there. */
  readonly gpuSeconds: number | null;
}

export interface HintResult extends SearchResult {
  /** The re-check's base seed. */
  readonly recheckSeed: number;
  /** The Pareto set over cost and the string-valued paths: for each combination of the
   * string-valued paths (each router policy), its cheapest passing configurations (ties kept
   * when neither is below the other on every path), cheapest first; empty when none passes.
   * The hint may answer one step dearer than a design that passes by less than the margin. */
  readonly hints: readonly Hint[];
  /** For each combination of the string-valued paths where nothing passes, its most generous
   * configuration (every numeric path at its highest) and why it fails. */
  readonly failing: readonly HintConfiguration[];
  readonly evaluated: number;
  readonly gridSize: number;
}

/** Progress of a hint search: called as each grid point's evaluation finishes. */
export interface HintProgress {
  /** The search's round (each round's points run as one batch per configuration shape), from 1. */
  readonly round: number;
  /** Instances simulated so far, this point's included. */
  readonly instances: number;
  readonly evaluated: number;
  readonly gridSize: number;
  /** The point just evaluated, and its verdict over every case. */
  readonly values: Readonly<Record<string, number | string>>;
  readonly verdict: Verdict;
  /** Seeds its cases took, most first. */
  readonly seeds: number;
}
