/**
 * A Piscina worker: runs a slice of instances on the reference engine and hands the result
 * records back (copied: a slice's are a few hundred kB, where importing piscina's `move`
 * here loads its whole pool into each worker, tens of milliseconds as the pool starts).
 */
import type { EngineConfig } from '../engine/compile.js';
import { runReference } from '../engine/reference.js';
import { ServesimError, type ErrorCode } from '../errors.js';

export interface SliceTask {
  readonly config: EngineConfig;
  readonly seed: number;
  readonly first: number;
  readonly count: number;
}

/** A slice's records, or the servesim error that stopped it (errors lose their code crossing threads). */
export type SliceResult = Uint32Array | { readonly error: { readonly code: ErrorCode; readonly message: string } };

export default function runSlice(task: SliceTask): SliceResult {
  try {
    return runReference(task.config, task.seed, task.first, task.count);
  } catch (err) {
    if (err instanceof ServesimError) return { error: { code: err.code, message: err.message } };
    throw err;
  }
}
