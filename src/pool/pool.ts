/**
 * The CPU pool: instances spread over worker threads (Piscina), each slice run by the
 * reference engine, so the pool's records equal the reference engine's bit for bit.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { batchInstances, singleRun, type EngineBatch } from '../engine/batch.js';
import type { EngineConfig } from '../engine/compile.js';
import { ServesimError } from '../errors.js';
import type { SliceResult, SliceTask } from './worker.js';

/** Workers must be plain JS: from the sources (tests), use the compiled worker in dist/. */
function workerFile(): string {
  const here = import.meta.url;
  const url = here.endsWith('.ts') ? new URL('../../dist/src/pool/worker.js', here) : new URL('./worker.js', here);
  return fileURLToPath(url);
}

export interface PoolRunOptions {
  readonly signal?: AbortSignal;
  /** Called as slices finish, with the number of instances finished so far. */
  readonly onProgress?: (instancesDone: number) => void;
  /** Called as each run of a batch finishes (its index), with its records. */
  readonly onRun?: (run: number, records: Uint32Array) => void;
}

/** The pool's threads when none are asked for: one per core. */
export function defaultPoolThreads(): number {
  return availableParallelism();
}

export class SimulationPool {
  readonly threads: number;
  private readonly piscina: Piscina;

  constructor(threads = defaultPoolThreads()) {
    this.threads = Math.max(1, threads);
    this.piscina = new Piscina({ filename: workerFile(), minThreads: this.threads, maxThreads: this.threads, idleTimeout: 30_000 });
  }

  /**
   * Runs instances `first .. first + count - 1` and returns their result records in order,
   * `config.resultWords` each.
   */
  async run(config: EngineConfig, seed: number, first: number, count: number, options: PoolRunOptions = {}): Promise<Uint32Array> {
    return (await this.runBatch(singleRun(config, seed, first, count), options))[0]!;
  }

  /**
   * Runs a batch and returns each run's records. Slices of every run are queued together, so
   * the threads stay busy across runs; they are small enough to report progress and balance
   * load.
   */
  async runBatch(batch: EngineBatch, options: PoolRunOptions = {}): Promise<Uint32Array[]> {
    const sliceSize = Math.max(1, Math.min(64, Math.ceil(batchInstances(batch) / (this.threads * 4))));
    const outs = batch.runs.map((r) => new Uint32Array(r.count * batch.configs[r.config]!.resultWords));
    let done = 0;
    const slices: Promise<void>[] = [];
    batch.runs.forEach((r, index) => {
      const config = batch.configs[r.config]!;
      let left = r.count;
      for (let start = 0; start < r.count; start += sliceSize) {
        const task: SliceTask = { config, seed: r.seed, first: r.first + start, count: Math.min(sliceSize, r.count - start) };
        slices.push(
          this.piscina.run(task, options.signal ? { signal: options.signal } : {}).then((result: SliceResult) => {
            if (!(result instanceof Uint32Array)) throw new ServesimError(result.error.code, result.error.message);
            outs[index]!.set(result, start * config.resultWords);
            done += task.count;
            left -= task.count;
            options.onProgress?.(done);
            if (left === 0) options.onRun?.(index, outs[index]!);
          }),
        );
      }
    });
    try {
      await Promise.all(slices);
    } catch (err) {
      await Promise.allSettled(slices);
      if (options.signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
      throw err;
    }
    return outs;
  }

  async close(): Promise<void> {
    await this.piscina.destroy();
  }
}
