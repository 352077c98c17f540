import type { Problem } from '../model/problem.js';
import type { CaseSummary } from '../model/summary.js';
import type { TraceSummary } from '../model/trace.js';
import type { BatchUsed } from './batches.js';
import type { SeedRecord } from './seed-records.js';
import type { RequestRecord } from './request-records.js';

/** What a user asks for: the GPU, the CPU pool, or whichever pays off for this batch. */
export type EngineChoice = 'auto' | 'cpu' | 'gpu';
/** What actually ran. */
export type EngineUsed = 'reference' | 'pool' | 'gpu';

export interface Progress {
  readonly instancesDone: number;
  readonly instancesTotal: number;
  /** Arrivals simulated so far (all cases), for a rate on the progress bar. */
  readonly arrivalsDone: number;
}

export interface RunOptions {
  /** Case names to run; all of the problem's cases when absent. */
  readonly caseNames?: readonly string[];
  /** Seeds every case runs; up to `maxSeeds` (default: `seeds`) while its verdict is undecided. */
  readonly seeds: number;
  readonly maxSeeds?: number;
  readonly baseSeed: number;
  readonly engine: EngineChoice;
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: Progress) => void;
  /** The cases' per-seed records (src/run/seed-records.ts), cases in order, once all have run; none are made without it. */
  readonly onSeedRecords?: (records: readonly SeedRecord[]) => void;
  /**
   * The per-request records of each case's first `seeds` seeds (src/run/request-records.ts),
   * cases in order, once all have run; none are made without it.
   */
  readonly requestRecords?: { readonly seeds: number; readonly onRecords: (records: readonly RequestRecord[]) => void };
}

export interface RunMeta {
  readonly problemId: string;
  readonly engine: EngineUsed;
  /** The WebGPU adapter used, when the GPU engine ran. */
  readonly adapter: string | null;
  /** Worker threads, when the CPU pool ran. */
  readonly threads?: number;
  /** Why some instances ran elsewhere than asked (a lost GPU device falls back to the CPU). */
  readonly note?: string;
  /** With `--engine auto`: why this engine (the benchmark's crossover, or no adapter). */
  readonly choice?: string;
  /** Each batch the cases ran as (one per configuration shape): its size and engine. */
  readonly batches: readonly BatchUsed[];
  /** Seeds every case ran, and the most an undecided one could take (each row's `seeds` says what it took). */
  readonly seeds: number;
  readonly maxSeeds: number;
  readonly baseSeed: number;
  readonly servesimVersion: string;
  /** The problem's trace, as loaded; null without one. */
  readonly trace: TraceSummary | null;
}

export interface RunResult {
  readonly problem: Problem;
  readonly rows: readonly CaseSummary[];
  readonly meta: RunMeta;
}
