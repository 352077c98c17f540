/**
 * A batch: the instances an engine runs together, of one or many configurations (grid points
 * and cases of a sweep). Every engine takes a batch and answers each run's result records, so
 * a sweep can be planned as a few batches rather than one per grid point and case.
 */
import type { EngineConfig } from './compile.js';
import { runReference } from './reference.js';

/** Instances `first .. first + count - 1` of base seed `seed` of one of the batch's configurations. */
export interface BatchRun {
  /** Index into the batch's `configs`. */
  readonly config: number;
  readonly seed: number;
  readonly first: number;
  readonly count: number;
}

export interface EngineBatch {
  readonly configs: readonly EngineConfig[];
  readonly runs: readonly BatchRun[];
}

/** The batch's instances, all runs together. */
export function batchInstances(batch: EngineBatch): number {
  return batch.runs.reduce((n, r) => n + r.count, 0);
}

/** A batch of one run: `count` instances of one configuration. */
export function singleRun(config: EngineConfig, seed: number, first: number, count: number): EngineBatch {
  return { configs: [config], runs: [{ config: 0, seed, first, count }] };
}

/** The reference engine in this thread: each run's records, `resultWords` of its configuration each. */
export function runReferenceBatch(batch: EngineBatch): Uint32Array[] {
  return batch.runs.map((r) => runReference(batch.configs[r.config]!, r.seed, r.first, r.count));
}
