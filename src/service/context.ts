/**
 * What the routes share: the limits, the engine slots, the job registry, the shipped problems,
 * and the functions that run sweeps and hint searches (replaceable in tests).
 */
import type { HintRequest, HintResult } from '../hint/api.js';
import { DEFAULT_MAX_INSTANCES } from '../sweep/spec.js';
import type { ProblemCatalog } from './catalog.js';
import type { JobRegistry } from './jobs.js';
import type { Slots } from './slots.js';
import type { SweepRunner } from './streaming-run.js';

export type HintRunner = (request: HintRequest, options: { signal?: AbortSignal }) => Promise<HintResult>;

export interface ServiceLimits {
  /** Largest request body, bytes. */
  readonly bodyLimit: number;
  /** Sweeps and hint searches running at once; requests beyond get 429, jobs queue. */
  readonly maxConcurrent: number;
  /** Largest sweep (points x cases x seeds) POST /v1/sweeps runs while the client waits. */
  readonly syncMaxInstances: number;
  /** Largest sweep taken at all, as a job. */
  readonly maxInstances: number;
  /** Finished jobs kept in memory for their results. */
  readonly keepFinishedJobs: number;
  /** Jobs queued or running at once. */
  readonly maxActiveJobs: number;
  /** What a 429 tells the client to wait, seconds. */
  readonly retryAfterSeconds: number;
}

export const DEFAULT_LIMITS: ServiceLimits = {
  bodyLimit: 1024 * 1024,
  maxConcurrent: 2,
  syncMaxInstances: 20_000,
  maxInstances: DEFAULT_MAX_INSTANCES,
  keepFinishedJobs: 100,
  maxActiveJobs: 100,
  retryAfterSeconds: 5,
};

export interface ServiceContext {
  readonly limits: ServiceLimits;
  readonly slots: Slots;
  readonly jobs: JobRegistry;
  readonly problems: ProblemCatalog;
  readonly runSweep: SweepRunner;
  readonly runHints: HintRunner;
}
