/**
 * The CPU pool: instances spread over worker threads (Piscina), each slice run by the
 * reference engine, so the pool's records equal the reference engine's bit for bit. A pool of
 * one thread may run its slices on the calling thread instead (`here`).
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Piscina } from 'piscina';
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

export interface PoolOptions {
  /**
   * With one thread, run the slices on the calling thread, between turns of its event loop,
   * rather than in a worker: no worker to start, nor the engine's modules to load a second
   * time (docs/architecture.md, "A run's time"). For a command whose event loop only reports
   * progress and hears signals; a server's must answer while a slice runs.
   */
  readonly here?: boolean;
}

/** Longest a slice run here holds the event loop before giving it a turn (progress, Ctrl-C). */
const TURN_MS = 20;

export class SimulationPool {
  readonly threads: number;
  /** Null when the slices run on this thread. */
  private readonly piscina: Promise<Piscina> | null;
  private closed = false;

  constructor(threads = defaultPoolThreads(), options: PoolOptions = {}) {
    this.threads = Math.max(1, threads);
    this.piscina = this.threads === 1 && options.here === true
      ? null
      : import('piscina').then(({ Piscina }) => new Piscina({ filename: workerFile(), minThreads: this.threads, maxThreads: this.threads, idleTimeout: 30_000 }));
  }

  /**
   * Runs instances `first .. first + count - 1` and returns their result records in order,
   * `config.resultWords` each.
   */
  async run(config: EngineConfig, seed: number, first: number, count: number, options: PoolRunOptions = {}): Promise<Uint32Array> {
    return (await this.runBatch(singleRun(config, seed, first, count), options))[0]!;
  }

  /**
   * Runs a batch and returns each run's records. Slices of every run go to the threads in
   * turn, in the runs' order, so they stay busy across runs and runs finish in about that
   * order (a sweep's points one after another, whatever their configurations' shapes); slices
   * are small enough to report progress and balance load. Cancelling stops handing out slices and rejects at once; the few slices
   * already running finish in the background and are dropped. (An AbortSignal given to
   * Piscina would terminate a worker mid-task, and a result it had already posted then throws
   * "Unexpected message from Worker" out of reach of any catch.)
   */
  async runBatch(batch: EngineBatch, options: PoolRunOptions = {}): Promise<Uint32Array[]> {
    const sliceSize = Math.max(1, Math.min(64, Math.ceil(batchInstances(batch) / (this.threads * 4))));
    const outs = batch.runs.map((r) => new Uint32Array(r.count * batch.configs[r.config]!.resultWords));
    const left = batch.runs.map((r) => r.count);
    const tasks = batch.runs.flatMap((r, run) => {
      const config = batch.configs[r.config]!;
      const slices: { run: number; start: number; task: SliceTask }[] = [];
      for (let start = 0; start < r.count; start += sliceSize) {
        slices.push({ run, start, task: { config, seed: r.seed, first: r.first + start, count: Math.min(sliceSize, r.count - start) } });
      }
      return slices;
    });
    const total = batchInstances(batch);
    const cancelled = (): ServesimError => new ServesimError('SERVESIM_CANCELLED', 'cancelled');
    if (options.signal?.aborted) throw cancelled();
    return new Promise<Uint32Array[]>((resolve, reject) => {
      let next = 0;
      let running = 0;
      let done = 0;
      let over = false;
      const finish = (err?: Error): void => {
        if (over) return;
        over = true;
        options.signal?.removeEventListener('abort', onAbort);
        if (err === undefined) resolve(outs);
        else reject(err);
      };
      const onAbort = (): void => finish(cancelled());
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const pump = (): void => {
        // two slices a worker, so none waits for its next; here, one at a time
        while (!over && running < (this.piscina === null ? 1 : this.threads * 2) && next < tasks.length) {
          const { run, start, task } = tasks[next++]!;
          running++;
          this.runSlice(task, () => over).then(
            (result: SliceResult) => {
              running--;
              if (over) return;
              if (!(result instanceof Uint32Array)) return finish(new ServesimError(result.error.code, result.error.message));
              try {
                outs[run]!.set(result, start * task.config.resultWords);
                done += task.count;
                left[run]! -= task.count;
                options.onProgress?.(done);
                if (left[run] === 0) options.onRun?.(run, outs[run]!);
              } catch (err) {
                return finish(err instanceof Error ? err : new Error(String(err)));
              }
              if (done === total) return finish();
              // the next slices go out on a later turn of the event loop: posted from here, small
              // ones finish while this answer is read, piscina reads theirs in the same turn, and
              // so on, one long turn in which a server answers nobody else
              setImmediate(pump);
            },
            (err: unknown) => {
              running--;
              finish(err instanceof Error ? err : new Error(String(err)));
            },
          );
        }
      };
      if (tasks.length === 0) finish();
      else pump();
    });
  }

  /** One slice's records: from a worker, or run here instance by instance (`over`: its batch has ended, drop it). */
  private async runSlice(task: SliceTask, over: () => boolean): Promise<SliceResult> {
    if (this.piscina !== null) return (await this.piscina).run(task) as Promise<SliceResult>;
    const { runReference } = await import('../engine/reference.js');
    const { config } = task;
    const out = new Uint32Array(task.count * config.resultWords);
    let turn = performance.now();
    for (let i = 0; i < task.count; i++) {
      if (performance.now() - turn > TURN_MS) {
        await new Promise(setImmediate);
        turn = performance.now();
      }
      if (this.closed) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
      // its batch ended (cancelled, or another slice failed): these records are dropped
      if (over()) return out;
      out.set(runReference(config, task.seed, task.first + i, 1), i * config.resultWords);
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    await (await this.piscina)?.destroy();
  }
}
