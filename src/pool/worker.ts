/**
 * A Piscina worker: runs a slice of instances on the reference engine and hands the result
 * records back without a copy.
 */
import { move } from 'piscina';
import type { EngineConfig } from '../engine/compile.js';
import { runReference } from '../engine/reference.js';

export interface SliceTask {
  readonly config: EngineConfig;
  readonly seed: number;
  readonly first: number;
  readonly count: number;
}

export default function runSlice(task: SliceTask): Uint32Array {
  return move(runReference(task.config, task.seed, task.first, task.count)) as Uint32Array;
}
