/**
 * Background sweeps (POST /v1/jobs): each job waits for an engine slot, runs, and keeps every
 * point it finished, whatever way it ends. Finished jobs stay in memory for their results,
 * the oldest dropped beyond a bound; jobs still queued or running are bounded too.
 */
import { randomUUID } from 'node:crypto';
import type { BatchUsed } from '../run/batches.js';
import { sweepMeta, type SweepOutcome, type SweepRow, type SweepRunOptions } from '../sweep/run.js';
import type { GridPoint, Sweep } from '../sweep/spec.js';
import { busy, publicMessage, ServiceError } from './errors.js';
import type { Release, Slots } from './slots.js';
import type { SweepRunner } from './streaming-run.js';

export type JobState = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
export type FinalState = Extract<JobState, 'done' | 'failed' | 'cancelled'>;

export interface JobLinks {
  readonly self: string;
  readonly events: string;
  readonly result: string;
}

export interface JobStatus {
  readonly id: string;
  readonly status: JobState;
  readonly sweep: { readonly id: string; readonly title: string; readonly problem: string };
  readonly createdAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly points: { readonly done: number; readonly total: number };
  readonly instances: { readonly done: number; readonly total: number };
  /** Indices of the grid points not finished (yet). */
  readonly unfinished: readonly number[];
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly links: JobLinks;
}

export interface JobProgress {
  readonly pointsDone: number;
  readonly pointsTotal: number;
  readonly instancesDone: number;
  readonly instancesTotal: number;
  /** The point that just finished. */
  readonly point: { readonly index: number; readonly values: Readonly<Record<string, number | string>> };
}

export type JobEvent = { readonly event: 'progress'; readonly data: JobProgress } | { readonly event: FinalState; readonly data: JobStatus };

function jobLinks(id: string): JobLinks {
  const self = `/v1/jobs/${id}`;
  return { self, events: `${self}/events`, result: `${self}/result` };
}

/** What a job's sweep reports as it runs, here or on a queue's workers. */
export interface JobRunOptions extends Pick<SweepRunOptions, 'onProgress'> {
  readonly signal: AbortSignal;
  readonly onPoint: (point: GridPoint, rows: readonly SweepRow[]) => void;
  /** A batch has run: the job's table lists every batch, as they run. */
  readonly onBatch: (used: BatchUsed) => void;
}

/**
 * Runs jobs' sweeps on other machines (src/queue) instead of this server's engines; the jobs
 * outlive this server there, so another one can take them up.
 */
export interface JobDispatcher {
  run(job: Job, options: JobRunOptions): Promise<SweepOutcome>;
  /** Jobs a previous server left running. */
  unfinished(): Promise<{ readonly id: string; readonly sweep: Sweep; readonly createdAt: Date }[]>;
  /** The server is stopping: leave its jobs running for the next one instead of cancelling them. */
  detach(): void;
}

export class Job {
  readonly id: string;
  readonly createdAt: Date;
  readonly controller = new AbortController();
  readonly sweep: Sweep;
  state: JobState = 'queued';
  /** Resolves when the job reaches a final state. */
  settled: Promise<void> = Promise.resolve();
  private startedAt: Date | null = null;
  private finishedAt: Date | null = null;
  private readonly batches: BatchUsed[] = [];
  private readonly rows: SweepRow[] = [];
  private readonly finished = new Set<number>();
  private instancesDone = 0;
  /** Instances of the finished points (each row says the seeds its configuration took). */
  private instancesFinished = 0;
  private instancesPlanned = 0;
  private error: (Error & { code?: unknown }) | null = null;
  private readonly listeners = new Set<(event: JobEvent) => void>();

  constructor(sweep: Sweep, id: string = randomUUID(), createdAt = new Date()) {
    this.sweep = sweep;
    this.id = id;
    this.createdAt = createdAt;
  }

  get isFinal(): boolean {
    return this.state === 'done' || this.state === 'failed' || this.state === 'cancelled';
  }

  /** Listens until the job's final event; returns the unsubscribe. */
  subscribe(listener: (event: JobEvent) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  status(): JobStatus {
    const total = this.sweep.points.length;
    const done = this.isFinal ? this.instancesFinished : this.instancesDone;
    return {
      id: this.id,
      status: this.state,
      sweep: { id: this.sweep.id, title: this.sweep.title, problem: this.sweep.problem.id },
      createdAt: this.createdAt.toISOString(),
      startedAt: this.startedAt?.toISOString() ?? null,
      finishedAt: this.finishedAt?.toISOString() ?? null,
      points: { done: this.finished.size, total },
      instances: { done, total: this.instancesTotal(done) },
      unfinished: this.unfinished(),
      error: this.error === null ? null : { code: typeof this.error.code === 'string' ? this.error.code : 'SERVESIM_INTERNAL', message: publicMessage(this.error) },
      links: jobLinks(this.id),
    };
  }

  /** The finished points so far, and every batch run so far. */
  outcome(): SweepOutcome {
    return {
      // points arrive in any order from a queue's workers; a table lists them in the grid's
      rows: [...this.rows].sort((a, b) => a.point.index - b.point.index),
      finished: [...this.finished].sort((a, b) => a - b),
      unfinished: this.unfinished(),
      cancelled: this.state === 'cancelled',
      error: this.error,
      meta: sweepMeta(this.sweep, [...this.batches], this.createdAt.toISOString()),
    };
  }

  start(): void {
    this.state = 'running';
    this.startedAt = new Date();
  }

  addBatch(used: BatchUsed): void {
    this.batches.push(used);
  }

  /** Progress of the running sweep: instances done, and planned so far (more as undecided configurations take seeds). */
  setInstances(done: number, planned: number): void {
    this.instancesDone = done;
    this.instancesPlanned = planned;
  }

  addPoint(point: GridPoint, rows: readonly SweepRow[]): void {
    this.rows.push(...rows);
    this.finished.add(point.index);
    this.instancesFinished += rows.reduce((sum, r) => sum + r.summary.seeds, 0);
    const total = this.sweep.points.length;
    this.emit({
      event: 'progress',
      data: {
        pointsDone: this.finished.size,
        pointsTotal: total,
        instancesDone: this.instancesFinished,
        instancesTotal: this.instancesTotal(this.instancesFinished),
        point: { index: point.index, values: Object.fromEntries(this.sweep.axes.map((a, i) => [a.path, point.values[i]!])) },
      },
    });
  }

  settle(state: FinalState, error: Error | null): void {
    this.state = state;
    this.error = error;
    this.finishedAt = new Date();
    this.emit({ event: state, data: this.status() });
    this.listeners.clear();
  }

  private emit(event: JobEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /**
   * Instances the sweep runs: every configuration's first seeds, and with seeds 'auto' what the
   * run has planned so far (undecided configurations take more as they go).
   */
  private instancesTotal(done: number): number {
    return Math.max(done, this.instancesPlanned, this.sweep.points.length * this.sweep.caseNames.length * this.sweep.seeds);
  }

  private unfinished(): number[] {
    return this.sweep.points.map((p) => p.index).filter((i) => !this.finished.has(i));
  }
}

export interface JobRegistryOptions {
  readonly slots: Slots;
  readonly run: SweepRunner;
  /** Finished jobs kept for their results; the oldest go first. */
  readonly keepFinished: number;
  /** Jobs queued or running at once; more are refused with 429. */
  readonly maxActive: number;
  readonly retryAfterSeconds: number;
  /** Where jobs run when not on this server's engine slots. */
  readonly dispatcher?: JobDispatcher;
}

export class JobRegistry {
  private readonly jobs = new Map<string, Job>();
  private readonly options: JobRegistryOptions;

  constructor(options: JobRegistryOptions) {
    this.options = options;
  }

  create(sweep: Sweep): Job {
    this.checkRoom();
    return this.start(new Job(sweep));
  }

  /** Throws 429 when the jobs queued or running are at the bound: before a new job's body is checked. */
  checkRoom(): void {
    const active = this.count((job) => !job.isFinal);
    if (active >= this.options.maxActive) {
      throw busy(`${active} jobs are queued or running, the most this server takes`, this.options.retryAfterSeconds);
    }
  }

  /** Takes up a job another server started (same id), past the bound on active jobs. */
  adopt(id: string, sweep: Sweep, createdAt: Date): Job {
    return this.start(new Job(sweep, id, createdAt));
  }

  private start(job: Job): Job {
    this.jobs.set(job.id, job);
    job.settled = this.run(job);
    return job;
  }

  get(id: string): Job {
    const job = this.jobs.get(id);
    if (job === undefined) {
      throw new ServiceError('SERVESIM_NOT_FOUND', 404, `no job "${id}" (finished jobs are kept for the last ${this.options.keepFinished})`);
    }
    return job;
  }

  /** Stops a job (its finished points stay); a job already finished is left as it is. */
  async cancel(id: string): Promise<Job> {
    const job = this.get(id);
    job.controller.abort();
    await job.settled;
    return job;
  }

  /** On shutdown: nobody will be there to read the results. */
  async cancelAll(): Promise<void> {
    const jobs = [...this.jobs.values()];
    for (const job of jobs) job.controller.abort();
    await Promise.all(jobs.map((job) => job.settled));
  }

  counts(): Record<JobState, number> {
    const counts: Record<JobState, number> = { queued: 0, running: 0, done: 0, failed: 0, cancelled: 0 };
    for (const job of this.jobs.values()) counts[job.state]++;
    return counts;
  }

  private count(test: (job: Job) => boolean): number {
    let n = 0;
    for (const job of this.jobs.values()) if (test(job)) n++;
    return n;
  }

  private async run(job: Job): Promise<void> {
    const { signal } = job.controller;
    const { dispatcher } = this.options;
    let release: Release = () => {};
    // a dispatched job runs on the queue's workers: it holds none of this server's slots
    if (dispatcher === undefined) {
      try {
        release = await this.options.slots.acquire(signal);
      } catch {
        job.settle('cancelled', null);
        this.evict();
        return;
      }
    }
    job.start();
    try {
      const options: JobRunOptions = {
        signal,
        onPoint: (point, rows) => job.addPoint(point, rows),
        onProgress: (progress) => job.setInstances(progress.instancesDone, progress.instancesTotal),
        onBatch: (used) => job.addBatch(used),
      };
      // unlike an Arrow answer, a job sends no schema before its rows: it runs as one sweep
      const outcome = await (dispatcher ? dispatcher.run(job, options) : this.options.run(job.sweep, options));
      const state = outcome.unfinished.length === 0 ? 'done' : outcome.cancelled ? 'cancelled' : 'failed';
      job.settle(state, state === 'failed' ? outcome.error : null);
    } catch (err) {
      job.settle('failed', err instanceof Error ? err : new Error(String(err)));
    } finally {
      release();
    }
    this.evict();
  }

  private evict(): void {
    let excess = this.count((job) => job.isFinal) - this.options.keepFinished;
    // a Map iterates in insertion order: the oldest jobs come first
    for (const [id, job] of this.jobs) {
      if (excess <= 0) break;
      if (!job.isFinal) continue;
      this.jobs.delete(id);
      excess--;
    }
  }
}
