/**
 * The hint request and result: what `servesim hint` and POST /v1/hints take and give.
 * The search itself lives in `search.ts`; this file is the contract the CLI and the service
 * share.
 */
import { z } from 'zod';
import type { GoalsInMilliseconds } from '../model/problem.js';
import { gridSchema, MAX_SEEDS, MAX_SEEDS_MESSAGE } from '../sweep/spec.js';
import { MAX_COST_LENGTH } from './cost.js';

export const hintRequestSchema = z
  .object({
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
    seeds: z.number().int().min(1).max(MAX_SEEDS, MAX_SEEDS_MESSAGE).default(32),
    seed: z.number().int().min(0).max(0xffffffff).optional(),
    confidence: z.number().gt(0).max(1).optional(),
    engine: z.enum(['auto', 'cpu', 'gpu']).default('auto'),
  })
  .strict();

export type HintRequest = z.input<typeof hintRequestSchema>;

/** One case's margin against the goals (positive: met with room to spare). */
export interface CaseMargin {
  readonly case: string;
  readonly passes: boolean;
  readonly success: number;
  readonly p99_ms: number;
  readonly pass_probability: number;
  /** success - goal (fraction). */
  readonly success_margin: number;
  /** goal - p99 (milliseconds). */
  readonly p99_margin_ms: number;
  /** "server-dies: p99 4.1 s > 3 s" when it fails, else "". */
  readonly why: string;
}

export interface HintConfiguration {
  readonly values: Readonly<Record<string, number | string>>;
  readonly cost: number;
  readonly cases: readonly CaseMargin[];
}

export interface Hint {
  /** A cheapest passing configuration (one of the Pareto set). */
  readonly found: HintConfiguration;
  /** One step down each varied numeric path (where there is a lower value), evaluated: why
   * each fails, or that it passes too (a violation, or a cost that falls with that path). */
  readonly cheaper: readonly HintConfiguration[];
}

export interface HintResult {
  readonly problemId: string;
  readonly title: string;
  readonly paths: readonly string[];
  /** The cost expression used. */
  readonly cost: string;
  readonly goals: GoalsInMilliseconds;
  readonly confidence: number;
  readonly seeds: number;
  readonly cases: readonly string[];
  /** The Pareto set over cost and the string-valued paths: for each combination of the
   * string-valued paths (each router policy), its cheapest passing configurations (ties kept
   * when neither is below the other on every path), cheapest first; empty when none passes. */
  readonly hints: readonly Hint[];
  /** For each combination of the string-valued paths where nothing passes, its most generous
   * configuration (every numeric path at its highest) and why it fails. */
  readonly failing: readonly HintConfiguration[];
  readonly evaluated: number;
  /** Rounds of evaluation: each round's points ran as one batch per configuration shape. */
  readonly rounds: number;
  readonly gridSize: number;
  /** Points where a monotonicity the search assumed turned out false (checked, not assumed). */
  readonly monotonicityViolations: readonly string[];
  readonly engine: string | null;
  /** Seconds the GPU spent on its passes over every round (BatchUsed.gpuSeconds); null when none ran there. */
  readonly gpuSeconds: number | null;
}

/** Progress of a hint search: called as each grid point's evaluation finishes. */
export interface HintProgress {
  readonly evaluated: number;
  readonly gridSize: number;
  /** The point just evaluated, and whether it passes every case. */
  readonly values: Readonly<Record<string, number | string>>;
  readonly passes: boolean;
}
