/**
 * Background jobs: sweeps (POST /v1/jobs) and searches (POST /v1/jobs/hints, /v1/jobs/capacity).
 * Each job waits for an engine slot, runs, and keeps what it finished (a sweep's points, a
 * capacity search's settled designs), whatever way it ends. Finished jobs stay in memory for their results,
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
/** What a job runs: a sweep, a hint search or a capacity search. */
export type JobKind = 'sweep' | 'hint' | 'capacity';

export interface JobLinks {
  readonly self: string;
  readonly events: string;
  readonly result: string;
}

interface JobStatusBase {
  readonly id: string;
  readonly kind: JobKind;
  readonly status: JobState;
  readonly createdAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly links: JobLinks;
}

export interface SweepJobStatus extends JobStatusBase {
  readonly kind: 'sweep';
  readonly sweep: { readonly id: string; readonly title: string; readonly problem: string };
  readonly points: { readonly done: number; readonly total: number };
  readonly instances: { readonly done: number; readonly total: number };
  /** Indices of the grid points not finished (yet). */
  readonly unfinished: readonly number[];
}

export interface SearchJobStatus<P = unknown> extends JobStatusBase {
  readonly kind: 'hint' | 'capacity';
  readonly problem: { readonly id: string; readonly title: string };
  /** Grid points (configurations, designs) the search may look at. */
  readonly designs: number;
  /** The search's last progress event; null before its first. */
  readonly progress: P | null;
}

export type JobStatus = SweepJobStatus | SearchJobStatus;

export interface JobProgress {
  readonly pointsDone: number;
  readonly pointsTotal: number;
  readonly instancesDone: number;
  readonly instancesTotal: number;
  /** The point that just finished. */
  readonly point: { readonly index: number; readonly values: Readonly<Record<string, number | string>> };
}

/** `progress`: a sweep's JobProgress, or a search's own progress (HintJobProgress, CapacityProgress). */
export type JobEvent = { readonly event: 'progress'; readonly data: unknown } | { readonly event: FinalState; readonly data: JobStatus };

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

/** A job's life, whatever it runs: its states, its listeners, its final event. */
abstract class JobBase {
  abstract readonly kind: JobKind;
  readonly id: string;
  readonly createdAt: Date;
  readonly controller = new AbortController();
  state: JobState = 'queued';
  /** Resolves when the job reaches a final state. */
  settled: Promise<void> = Promise.resolve();
  private startedAt: Date | null = null;
  private finishedAt: Date | null = null;
  protected error: (Error & { code?: unknown }) | null = null;
  private readonly listeners = new Set<(event: JobEvent) => void>();

  constructor(id: string, createdAt: Date) {
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

  abstract status(): JobStatus;

  start(): void {
    this.state = 'running';
    this.startedAt = new Date();
  }

  settle(state: FinalState, error: Error | null): void {
    this.state = state;
    this.error = error;
    this.finishedAt = new Date();
    this.emit({ event: state, data: this.status() });
    this.listeners.clear();
  }

  protected baseStatus(): Omit<JobStatusBase, 'kind'> {
    return {
      id: this.id,
      status: this.state,
      createdAt: this.createdAt.toISOString(),
      startedAt: this.startedAt?.toISOString() ?? null,
      finishedAt: this.finishedAt?.toISOString() ?? null,
      error: this.error === null ? null : { code: typeof this.error.code === 'string' ? this.error.code : 'SERVESIM_INTERNAL', message: publicMessage(this.error) },
      links: jobLinks(this.id),
    };
  }

  protected emit(event: JobEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

/** A background sweep. */
export class Job extends JobBase {
  readonly kind = 'sweep' as const;
  readonly sweep: Sweep;
  private readonly batches: BatchUsed[] = [];
  private readonly rows: SweepRow[] = [];
  private readonly finished = new Set<number>();
  private instancesDone = 0;
  /** Instances of the finished points (each row says the seeds its configuration took). */
  private instancesFinished = 0;
  private instancesPlanned = 0;

  constructor(sweep: Sweep, id: string = randomUUID(), createdAt = new Date()) {
    super(id, createdAt);
    this.sweep = sweep;
  }

  status(): SweepJobStatus {
    const total = this.sweep.points.length;
    const done = this.isFinal ? this.instancesFinished : this.instancesDone;
    const { id, status, ...rest } = this.baseStatus();
    return {
      id,
      kind: this.kind,
      status,
      sweep: { id: this.sweep.id, title: this.sweep.title, problem: this.sweep.problem.id },
      points: { done: this.finished.size, total },
      instances: { done, total: this.instancesTotal(done) },
      unfinished: this.unfinished(),
      ...rest,
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
      } satisfies JobProgress,
    });
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

/** A search a job runs, checked before the job is made (src/hint, src/capacity). */
export interface Search<R, P> {
  readonly kind: 'hint' | 'capacity';
  readonly problem: { readonly id: string; readonly title: string };
  readonly designs: number;
  /**
   * Runs the search to its result. When `signal` aborts (the job is cancelled) it either
   * rejects, or resolves with what it had found by then, which the cancelled job keeps.
   */
  readonly run: (signal: AbortSignal, onProgress: (progress: P) => void) => Promise<R>;
}

/** A background hint or capacity search: its progress as it goes, then its result. */
export class SearchJob<R = unknown, P = unknown> extends JobBase {
  readonly kind: 'hint' | 'capacity';
  private readonly search: Search<R, P>;
  private progress: P | null = null;
  private answer: R | null = null;

  constructor(search: Search<R, P>) {
    super(randomUUID(), new Date());
    this.kind = search.kind;
    this.search = search;
  }

  /** The search's result: whole when done, what a cancelled search kept, null when there is none. */
  get result(): R | null {
    return this.answer;
  }

  status(): SearchJobStatus<P> {
    const { id, status, ...rest } = this.baseStatus();
    return { id, kind: this.kind, status, problem: this.search.problem, designs: this.search.designs, progress: this.progress, ...rest };
  }

  /** Runs the search; resolves to how the job ends. */
  async work(signal: AbortSignal): Promise<{ state: FinalState; error: Error | null }> {
    try {
      this.answer = await this.search.run(signal, (progress) => {
        this.progress = progress;
        this.emit({ event: 'progress', data: progress });
      });
      return { state: signal.aborted ? 'cancelled' : 'done', error: null };
    } catch (err) {
      if (signal.aborted) return { state: 'cancelled', error: null };
      return { state: 'failed', error: err instanceof Error ? err : new Error(String(err)) };
    }
  }
}

export type AnyJob = Job | SearchJob;

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
  private readonly jobs = new Map<string, AnyJob>();
  private readonly options: JobRegistryOptions;

  constructor(options: JobRegistryOptions) {
    this.options = options;
  }

  create(sweep: Sweep): Job {
    this.checkRoom();
    return this.start(new Job(sweep));
  }

  /** A job for a search already checked (its bad input refused before it is made). */
  createSearch<R, P>(search: Search<R, P>): SearchJob<R, P> {
    this.checkRoom();
    return this.start(new SearchJob(search));
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

  private start<J extends AnyJob>(job: J): J {
    this.jobs.set(job.id, job);
    job.settled = this.run(job);
    return job;
  }

  get(id: string): AnyJob {
    const job = this.jobs.get(id);
    if (job === undefined) {
      throw new ServiceError('SERVESIM_NOT_FOUND', 404, `no job "${id}" (finished jobs are kept for the last ${this.options.keepFinished})`);
    }
    return job;
  }

  /** Stops a job (its finished points stay); a job already finished is left as it is. */
  async cancel(id: string): Promise<AnyJob> {
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

  private count(test: (job: AnyJob) => boolean): number {
    let n = 0;
    for (const job of this.jobs.values()) if (test(job)) n++;
    return n;
  }

  private async run(job: AnyJob): Promise<void> {
    const { signal } = job.controller;
    // a dispatched sweep runs on the queue's workers: it holds none of this server's slots; searches run here
    const dispatcher = job instanceof Job ? this.options.dispatcher : undefined;
    let release: Release = () => {};
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
    if (job instanceof SearchJob) {
      const { state, error } = await job.work(signal);
      job.settle(state, error);
      release();
      this.evict();
      return;
    }
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
