/**
 * What the routes share: the limits, the engine slots, the job registry, the shipped problems,
 * and the functions that run sweeps and hint searches (replaceable in tests).
 */
import type { HintRequest, HintResult } from '../hint/api.js';
import { INPUT_LIMITS } from '../problem/bounds.js';
import { DEFAULT_MAX_INSTANCES } from '../sweep/limits.js';
import type { ProblemCatalog } from './catalog.js';
import type { JobRegistry } from './jobs.js';
import type { Slots } from './slots.js';
import type { SweepRunner } from './streaming-run.js';

export type HintRunner = (request: HintRequest, options: { signal?: AbortSignal; maxInstances?: number }) => Promise<HintResult>;

export interface ServiceLimits {
  /** Largest request body, bytes. */
  readonly bodyLimit: number;
  /** Sweeps and hint searches running at once; requests beyond get 429, jobs queue. */
  readonly maxConcurrent: number;
  /** Largest sweep (points x cases x seeds) POST /v1/sweeps runs while the client waits; for POST
   * /v1/hints, the most instances its search asks at once (every grid point on its first seeds). */
  readonly syncMaxInstances: number;
  /** Largest sweep taken at all, as a job. */
  readonly maxInstances: number;
  /** Grid points of a sweep, job or hint search: every point is checked to make a valid problem
   * before it runs, a slice of the event loop at a time (src/slices.ts). */
  readonly maxGridPoints: number;
  /** Finished jobs kept in memory for their results. */
  readonly keepFinishedJobs: number;
  /** Jobs queued or running at once. */
  readonly maxActiveJobs: number;
  /** What a 429 tells the client to wait, seconds. */
  readonly retryAfterSeconds: number;
}

export const DEFAULT_LIMITS: ServiceLimits = {
  // a body is held to the same bounds as a problem or sweep file
  bodyLimit: INPUT_LIMITS.bytes,
  maxConcurrent: 2,
  syncMaxInstances: 20_000,
  maxInstances: DEFAULT_MAX_INSTANCES,
  maxGridPoints: 10_000,
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
