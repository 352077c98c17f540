/**
 * Runs instances on the reference engine in this thread: the ground truth the CPU pool and
 * the kernels are compared with, bit for bit.
 */
import type { EngineConfig } from './compile.js';
import { extractResult } from './result.js';
import { advance, init, recordRequests, type EngineBuffers, type RequestRecorder } from './simulate.js';

/** Time at which every instance has certainly finished (u32 microseconds). */
export const END_OF_TIME = 0xffffffff;

/**
 * Simulates instances `first .. first + count - 1` of base seed `seed` and returns their
 * result records, concatenated (config.resultWords each). `windows` > 1 advances them in
 * that many equal time windows, as the GPU engine does. `recorderOf`, when given, is asked
 * for the recorder of each instance's counted arrivals (`--requests-out`) before it runs.
 */
export function runReference(config: EngineConfig, seed: number, first: number, count: number, windows = 1, recorderOf?: (instance: number) => RequestRecorder): Uint32Array {
  const buffers: EngineBuffers = { params: config.params, tables: config.tables, state: new Uint32Array(config.stateWords) };
  const out = new Uint32Array(count * config.resultWords);
  const horizon = horizonOf(config);
  try {
    for (let i = 0; i < count; i++) {
      if (recorderOf !== undefined) recordRequests(recorderOf(first + i));
      init(buffers, 0, seed, first + i);
      for (let w = 1; w <= windows; w++) {
        const until = w === windows ? END_OF_TIME : Math.floor((horizon * w) / windows);
        if (advance(buffers, 0, until)) break;
      }
      out.set(extractResult(config, buffers.state, 0), i * config.resultWords);
    }
  } finally {
    // the pool may run other instances on this thread next (poolOnThisThread)
    if (recorderOf !== undefined) recordRequests(null);
  }
  return out;
}

/** Arrival end + timeout: the instant by which a run with a deadline has ended. */
export function horizonOf(config: EngineConfig): number {
  return config.horizonMicros;
}
