/**
 * The service side of a distributed sweep (`serve --queue`): a job's grid points go on the
 * BullMQ queue in chunks, and the table is assembled as chunks complete, point by point, with
 * the same events a local sweep gives. Redis keeps what a new service process needs to take
 * a job up: the sweep as a sweep file, its chunking, and its state; the chunks' results stay
 * in their BullMQ jobs until the sweep settles.
 *
 * Completions arrive as BullMQ events. A service taking a job up looks every chunk up once;
 * after that a periodic check of the first chunks not yet heard of covers events missed (a
 * dropped connection, an event stream trimmed under a reader that fell behind).
 */
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { ServesimError } from '../errors.js';
import type { Job, JobDispatcher, JobRunOptions } from '../service/jobs.js';
import type { BatchUsed } from '../run/batches.js';
import { sweepMeta, type SweepOutcome, type SweepRow } from '../sweep/run.js';
import type { Sweep } from '../sweep/spec.js';
import {
  chunkData, chunkIndexes, chunkJobId, decodeSummary, defaultChunkSize, parseChunkJobId, sweepFromFile, sweepToFile,
  type ChunkData, type ChunkResult,
} from './chunks.js';
import {
  CHUNK_QUEUE, CLEANUP_KEY, connectRedis, QUEUE_PREFIX, redactUrl, redisClient, RUNNING_SWEEPS_KEY, sweepKey, type SweepState,
} from './connection.js';

export interface QueueDispatcherOptions {
  /** Points per chunk; by default about CHUNK_INSTANCES instances (defaultChunkSize). */
  readonly chunkSize?: number;
  /** How often chunks not heard of are looked up, and settled sweeps' leftovers removed. */
  readonly checkMs?: number;
  /** Tries per chunk when a worker fails it with an error that is not servesim's. */
  readonly attempts?: number;
  readonly log?: (line: string) => void;
}

const DEFAULT_CHECK_MS = 2000;
const DEFAULT_ATTEMPTS = 2;
/** Redis calls in flight at once when a sweep's chunks are added, looked up or removed; also
 * the most chunks of one sweep a periodic check looks up. */
const BATCH = 200;

type End =
  | { readonly kind: 'done' }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'detached' };

async function inBatches<T>(items: readonly T[], each: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH) await Promise.all(items.slice(i, i + BATCH).map(each));
}

function describeChunk(sweep: Sweep, indexes: readonly number[], chunk: number): string {
  const first = indexes[0]!;
  const last = indexes.at(-1)!;
  return `chunk ${chunk} (grid point${first === last ? ` ${first}` : `s ${first}-${last}`} of ${sweep.points.length})`;
}

/** One job's sweep being put together from its chunks' results. */
class Assembly {
  readonly ended: Promise<End>;
  readonly chunks: readonly (readonly number[])[];
  private end: (end: End) => void = () => {};
  private over = false;
  private readonly rows: SweepRow[] = [];
  private readonly batches: BatchUsed[] = [];
  private readonly finished = new Set<number>();
  private readonly chunksDone = new Set<number>();
  /** Instances finished in chunks still running, as their workers last reported. */
  private readonly partial = new Map<number, number>();
  private arrivals = 0;

  constructor(
    readonly job: Job,
    readonly chunkSize: number,
    private readonly options: JobRunOptions,
  ) {
    this.chunks = chunkIndexes(job.sweep, chunkSize);
    this.ended = new Promise((resolve) => (this.end = resolve));
  }

  get isOver(): boolean {
    return this.over;
  }

  /** Chunks whose result has not arrived. */
  outstanding(): number[] {
    return this.chunks.map((_, c) => c).filter((c) => !this.chunksDone.has(c));
  }

  stop(end: End): void {
    if (this.over) return;
    this.over = true;
    this.end(end);
  }

  completed(chunk: number, result: ChunkResult): void {
    if (this.over || this.chunksDone.has(chunk)) return;
    this.chunksDone.add(chunk);
    this.partial.delete(chunk);
    const { sweep } = this.job;
    for (const used of result.batches) {
      this.batches.push(used);
      this.options.onBatch(used);
    }
    for (const done of result.points) {
      // a chunk taken up again after its worker died may have been finished by then
      if (this.finished.has(done.index)) continue;
      const point = sweep.points[done.index]!;
      const rows = done.rows.map((r) => ({ point, summary: decodeSummary(r) }));
      this.rows.push(...rows);
      this.finished.add(done.index);
      this.arrivals += rows.reduce((sum, r) => sum + r.summary.requests, 0);
      this.options.onPoint(point, rows);
    }
    this.progress();
    if (result.error !== null) {
      this.stop({ kind: 'failed', error: Object.assign(new Error(result.error.message), { code: result.error.code }) });
    } else if (this.finished.size === sweep.points.length) {
      this.stop({ kind: 'done' });
    } else if (result.points.length < this.chunks[chunk]!.length) {
      this.stop({ kind: 'failed', error: new Error(`${describeChunk(sweep, this.chunks[chunk]!, chunk)} came back with ${result.points.length} of its points`) });
    }
  }

  failed(chunk: number, reason: string): void {
    const message = `${describeChunk(this.job.sweep, this.chunks[chunk]!, chunk)} failed on a worker: ${reason}`;
    this.stop({ kind: 'failed', error: new Error(message) });
  }

  progressed(chunk: number, instances: number): void {
    if (this.over || this.chunksDone.has(chunk)) return;
    this.partial.set(chunk, instances);
    this.progress();
  }

  outcome(end: End): SweepOutcome {
    const { sweep } = this.job;
    return {
      rows: [...this.rows].sort((a, b) => a.point.index - b.point.index),
      finished: [...this.finished].sort((a, b) => a - b),
      unfinished: sweep.points.map((p) => p.index).filter((i) => !this.finished.has(i)),
      cancelled: end.kind === 'cancelled' || end.kind === 'detached',
      error: end.kind === 'failed' ? end.error : null,
      meta: sweepMeta(sweep, this.batches, this.job.createdAt.toISOString()),
    };
  }

  private progress(): void {
    const { sweep } = this.job;
    const perPoint = sweep.caseNames.length * sweep.seeds;
    const total = sweep.points.length * perPoint;
    let running = 0;
    for (const n of this.partial.values()) running += n;
    this.options.onProgress?.({
      pointsDone: this.finished.size,
      pointsTotal: sweep.points.length,
      instancesDone: Math.min(total, this.finished.size * perPoint + running),
      instancesTotal: total,
      arrivalsDone: this.arrivals,
    });
  }
}

export class QueueDispatcher implements JobDispatcher {
  private readonly assemblies = new Map<string, Assembly>();
  private detached = false;
  private readonly timer: NodeJS.Timeout;
  private checking = false;

  private constructor(
    private readonly redis: Redis,
    private readonly eventsBase: Redis,
    private readonly queue: Queue<ChunkData, ChunkResult>,
    private readonly events: QueueEvents,
    private readonly options: QueueDispatcherOptions,
  ) {
    events.on('completed', ({ jobId, returnvalue }) => {
      const found = this.find(jobId);
      if (found) found.assembly.completed(found.chunk, returnvalue as unknown as ChunkResult);
    });
    events.on('failed', ({ jobId }) => {
      const found = this.find(jobId);
      if (found) void this.check(found.assembly, [found.chunk]).catch((err: Error) => this.log(`checking ${jobId}: ${err.message}`));
    });
    events.on('progress', ({ jobId, data }) => {
      const found = this.find(jobId);
      const instances = (data as { instances?: unknown } | null)?.instances;
      if (found && typeof instances === 'number') found.assembly.progressed(found.chunk, instances);
    });
    this.timer = setInterval(() => void this.tick(), options.checkMs ?? DEFAULT_CHECK_MS);
  }

  /** Connects (SERVESIM_QUEUE_UNREACHABLE when Redis does not answer in a few seconds). */
  static async connect(url: string, options: QueueDispatcherOptions = {}): Promise<QueueDispatcher> {
    const redis = await connectRedis(url, { blocking: false });
    // QueueEvents reads with a blocking command on its own duplicate of this client
    const eventsBase = redisClient(url, { blocking: true });
    const queue = new Queue<ChunkData, ChunkResult>(CHUNK_QUEUE, { connection: redis, prefix: QUEUE_PREFIX });
    const events = new QueueEvents(CHUNK_QUEUE, { connection: eventsBase, prefix: QUEUE_PREFIX });
    const log = (what: string) => (err: Error) => options.log?.(`servesim queue: ${what}: ${err.message}\n`);
    queue.on('error', log('queue'));
    events.on('error', log('events'));
    try {
      await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
    } catch (err) {
      await Promise.allSettled([events.close(), queue.close()]);
      redis.disconnect();
      eventsBase.disconnect();
      throw new ServesimError('SERVESIM_QUEUE_UNREACHABLE', `Redis at ${redactUrl(url)} answered, but not to BullMQ: ${(err as Error).message}`);
    }
    return new QueueDispatcher(redis, eventsBase, queue, events, options);
  }

  detach(): void {
    this.detached = true;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.events.close();
    await this.queue.close();
    await this.redis.quit();
    this.eventsBase.disconnect();
  }

  async unfinished(): Promise<{ id: string; sweep: Sweep; createdAt: Date }[]> {
    const found: { id: string; sweep: Sweep; createdAt: Date }[] = [];
    for (const id of await this.redis.smembers(RUNNING_SWEEPS_KEY)) {
      const record = await this.redis.hgetall(sweepKey(id));
      try {
        if (record['state'] !== 'running' || record['sweep'] === undefined) throw new Error(`no record of it`);
        found.push({ id, sweep: sweepFromFile(JSON.parse(record['sweep'])), createdAt: new Date(record['createdAt'] ?? Date.now()) });
      } catch (err) {
        // e.g. written by a servesim whose sweep files this one does not read: drop it
        this.log(`cannot take up job ${id}: ${(err as Error).message}`);
        await this.settle(id, 'failed', Number(record['chunks'] ?? 0));
      }
    }
    return found;
  }

  async run(job: Job, options: JobRunOptions): Promise<SweepOutcome> {
    const { chunkSize, takenUp } = await this.record(job);
    const assembly = new Assembly(job, chunkSize, options);
    this.assemblies.set(job.id, assembly);
    const onAbort = (): void => assembly.stop({ kind: this.detached ? 'detached' : 'cancelled' });
    options.signal.addEventListener('abort', onAbort, { once: true });
    if (options.signal.aborted) onAbort();
    try {
      if (!assembly.isOver) {
        await this.enqueue(assembly);
        if (takenUp) await this.check(assembly, assembly.outstanding());
      }
      const end = await assembly.ended;
      // a stopping server leaves the job to the next one
      if (end.kind !== 'detached') await this.settle(job.id, end.kind, assembly.chunks.length);
      return assembly.outcome(end);
    } catch (err) {
      // Redis went away mid-sweep: what has been assembled is kept, as on any failure
      const end: End = { kind: 'failed', error: err instanceof Error ? err : new Error(String(err)) };
      assembly.stop(end);
      await this.settle(job.id, 'failed', assembly.chunks.length).catch(() => {});
      return assembly.outcome(end);
    } finally {
      options.signal.removeEventListener('abort', onAbort);
      this.assemblies.delete(job.id);
    }
  }

  private log(line: string): void {
    this.options.log?.(`servesim queue: ${line}\n`);
  }

  private find(jobId: string): { assembly: Assembly; chunk: number } | undefined {
    const parsed = parseChunkJobId(jobId);
    const assembly = parsed && this.assemblies.get(parsed.job);
    return assembly && parsed.chunk < assembly.chunks.length ? { assembly, chunk: parsed.chunk } : undefined;
  }

  /** The job's record in Redis: written once, read back by a service taking the job up. */
  private async record(job: Job): Promise<{ chunkSize: number; takenUp: boolean }> {
    const stored = await this.redis.hget(sweepKey(job.id), 'chunkSize');
    if (stored !== null) return { chunkSize: Number(stored), takenUp: true };
    const size = this.options.chunkSize ?? defaultChunkSize(job.sweep);
    await this.writeRecord(job, size);
    return { chunkSize: size, takenUp: false };
  }

  private async writeRecord(job: Job, chunkSize: number): Promise<void> {
    await this.redis
      .multi()
      .hset(sweepKey(job.id), {
        sweep: JSON.stringify(sweepToFile(job.sweep)),
        chunkSize,
        chunks: Math.ceil(job.sweep.points.length / chunkSize),
        createdAt: job.createdAt.toISOString(),
        state: 'running' satisfies SweepState,
      })
      .sadd(RUNNING_SWEEPS_KEY, job.id)
      .exec();
  }

  private chunkOptions(job: string, chunk: number) {
    return {
      jobId: chunkJobId(job, chunk),
      attempts: this.options.attempts ?? DEFAULT_ATTEMPTS,
      backoff: { type: 'fixed', delay: 1000 },
      // results stay until the sweep settles: a new service may need them
      removeOnComplete: false,
      removeOnFail: false,
    } as const;
  }

  /** Adds the chunks not in Redis; a chunk already there (taking a job up) is left alone. */
  private async enqueue(assembly: Assembly): Promise<void> {
    const { job } = assembly;
    const chunks = assembly.chunks.map((indexes, c) => ({ indexes, c }));
    for (let i = 0; i < chunks.length && !assembly.isOver; i += BATCH) {
      await this.queue.addBulk(
        chunks.slice(i, i + BATCH).map(({ indexes, c }) => ({
          name: 'chunk',
          data: chunkData(job.id, job.sweep, c, indexes),
          opts: this.chunkOptions(job.id, c),
        })),
      );
    }
  }

  /**
   * Looks chunks up: a result missed, a final failure, or a chunk that is gone (added again,
   * after its sweep's record when that is gone too: a Redis that restarted without its data
   * lost both, and a worker drops a chunk whose sweep has no record).
   */
  private async check(assembly: Assembly, chunks: readonly number[]): Promise<void> {
    const { job } = assembly;
    const gone: number[] = [];
    await inBatches(chunks, async (c) => {
      if (assembly.isOver) return;
      const id = chunkJobId(job.id, c);
      const state = await this.queue.getJobState(id);
      if (state === 'completed' || state === 'failed') {
        const found = await this.queue.getJob(id);
        if (found === undefined) return;
        if (state === 'completed') assembly.completed(c, found.returnvalue);
        else assembly.failed(c, found.failedReason);
      } else if (state === 'unknown') {
        gone.push(c);
      }
    });
    if (gone.length === 0 || assembly.isOver) return;
    if ((await this.redis.exists(sweepKey(job.id))) === 0) {
      this.log(`job ${job.id}: its record and ${gone.length} chunk(s) are gone from Redis; adding them again`);
      await this.writeRecord(job, assembly.chunkSize);
    }
    await inBatches(gone, async (c) => {
      // a sweep settled meanwhile has had its chunks removed: adding one now would orphan it
      if (!assembly.isOver) await this.queue.add('chunk', chunkData(job.id, job.sweep, c, assembly.chunks[c]!), this.chunkOptions(job.id, c));
    });
  }

  /**
   * Marks the sweep settled (workers drop its chunks when they see it), removes its chunk
   * jobs, and forgets it once none is left; chunks locked by a worker go on the next tick.
   * The chunk count is written with the state: the record may have been lost with a Redis
   * restart, and without the count the chunk jobs added since would never be removed.
   */
  private async settle(id: string, state: Exclude<SweepState, 'running'>, chunks: number): Promise<void> {
    await this.redis.multi().hset(sweepKey(id), { state, chunks }).srem(RUNNING_SWEEPS_KEY, id).sadd(CLEANUP_KEY, id).exec();
    await this.cleanup(id);
  }

  private async cleanup(id: string): Promise<void> {
    const chunks = Number((await this.redis.hget(sweepKey(id), 'chunks')) ?? 0);
    let left = 0;
    await inBatches(
      Array.from({ length: chunks }, (_, c) => c),
      async (c) => {
        // 0: locked by a worker that has not yet seen the sweep settle
        if ((await this.queue.remove(chunkJobId(id, c))) === 0) left++;
      },
    );
    if (left === 0) await this.redis.multi().del(sweepKey(id)).srem(CLEANUP_KEY, id).exec();
  }

  private async tick(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      for (const assembly of this.assemblies.values()) await this.check(assembly, assembly.outstanding().slice(0, BATCH));
      for (const id of await this.redis.smembers(CLEANUP_KEY)) await this.cleanup(id);
    } catch (err) {
      this.log(`periodic check: ${(err as Error).message}`);
    } finally {
      this.checking = false;
    }
  }
}
