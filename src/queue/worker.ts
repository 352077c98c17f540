/**
 * The worker side of a distributed sweep: a BullMQ worker that takes chunks of grid points,
 * runs them on this machine's engine as a local sweep does (runPoints: the chunk's points as
 * batches, one per configuration shape) and returns the points' CaseSummary rows as the chunk
 * job's return value.
 *
 * A worker holds `chunks` jobs at once but runs one chunk at a time: on the CPU pool one
 * chunk already fills every core; a GPU finishes a chunk sooner, so it holds several, which
 * is the same as taking bigger chunks (more points per lease, the next chunk already in hand
 * when one ends) without the service knowing who runs them.
 */
import { hostname } from 'node:os';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { packageVersion } from '../version.js';
import { ServesimError } from '../errors.js';
import { problemFromObject } from '../problem/parse.js';
import type { BatchUsed } from '../run/batches.js';
import type { EngineChoice } from '../run/types.js';
import { runPoints } from '../run/points.js';
import { encodeSummary, type ChunkData, type ChunkResult, type EncodedSummary } from './chunks.js';
import { CHUNK_QUEUE, connectRedis, CPU_CHUNKS, DEFAULT_LOCK_MS, GPU_CHUNKS, QUEUE_PREFIX, redactUrl, sweepKey } from './connection.js';

/** How often a running chunk asks whether its sweep is still wanted. */
const WATCH_MS = 500;
/** Progress reports per chunk are at most this often (each is a Redis write and an event). */
const PROGRESS_MS = 1000;

export interface ChunkWorkerOptions {
  readonly url: string;
  readonly engine: EngineChoice;
  /** Chunks held at once; by default CPU_CHUNKS, or GPU_CHUNKS once a chunk ran on a GPU. */
  readonly chunks?: number;
  /** Lock duration (ms); the stalled-job check runs as often. */
  readonly lockDuration?: number;
  readonly log?: (line: string) => void;
}

export class ChunkWorker {
  private readonly redis: Redis;
  private readonly worker: Worker<ChunkData, ChunkResult>;
  private readonly options: ChunkWorkerOptions;
  /** Chunks run one after another, whichever job they come from. */
  private engineTurn: Promise<unknown> = Promise.resolve();
  private chunksRun = 0;
  private pointsRun = 0;

  private constructor(redis: Redis, options: ChunkWorkerOptions) {
    this.redis = redis;
    this.options = options;
    const lockDuration = options.lockDuration ?? DEFAULT_LOCK_MS;
    this.worker = new Worker<ChunkData, ChunkResult>(CHUNK_QUEUE, (job) => this.process(job), {
      // BullMQ duplicates this client for its own (blocking) connections
      connection: redis,
      prefix: QUEUE_PREFIX,
      name: `${hostname()}:${process.pid}`,
      concurrency: options.chunks ?? (options.engine === 'gpu' ? GPU_CHUNKS : CPU_CHUNKS),
      lockDuration,
      stalledInterval: lockDuration,
      // a chunk lost twice (two workers killed under it) still gets a third try
      maxStalledCount: 2,
    });
    this.worker.on('error', (err) => this.log(`error: ${err.message}`));
    this.worker.on('failed', (job, err) => {
      if (job !== undefined) this.log(`chunk ${job.id} failed: ${err.message}`);
    });
  }

  /** Connects (SERVESIM_QUEUE_UNREACHABLE when Redis does not answer) and starts taking chunks. */
  static async start(options: ChunkWorkerOptions): Promise<ChunkWorker> {
    const redis = await connectRedis(options.url, { blocking: true });
    const worker = new ChunkWorker(redis, options);
    try {
      await worker.worker.waitUntilReady();
    } catch (err) {
      await worker.worker.close(true).catch(() => {});
      redis.disconnect();
      throw new ServesimError('SERVESIM_QUEUE_UNREACHABLE', `Redis at ${redactUrl(options.url)} answered, but not to BullMQ: ${(err as Error).message}`);
    }
    worker.log(`taking chunks from ${redactUrl(options.url)} (engine ${options.engine}, ${worker.worker.concurrency} chunk(s) at a time)`);
    return worker;
  }

  /** Takes no more chunks, finishes those in hand, and disconnects. */
  async close(): Promise<void> {
    await this.worker.close();
    await this.redis.quit();
    this.log(`stopped after ${this.chunksRun} chunk(s), ${this.pointsRun} point(s)`);
  }

  private log(line: string): void {
    this.options.log?.(`servesim worker: ${line}\n`);
  }

  private onEngine<T>(run: () => Promise<T>): Promise<T> {
    const turn = this.engineTurn.then(run);
    this.engineTurn = turn.catch(() => {});
    return turn;
  }

  private async sweepState(job: string): Promise<string | null> {
    return this.redis.hget(sweepKey(job), 'state');
  }

  private async process(job: Job<ChunkData, ChunkResult>): Promise<ChunkResult> {
    const data = job.data;
    const dropped = (state: string | null): UnrecoverableError =>
      new UnrecoverableError(`sweep ${data.job} is ${state ?? 'gone'}: chunk ${data.chunk} dropped`);
    const state = await this.sweepState(data.job);
    if (state !== 'running') throw dropped(state);
    if (data.version !== packageVersion()) {
      throw new UnrecoverableError(`the service runs servesim ${data.version}, this worker ${packageVersion()}: run the same version everywhere`);
    }

    // the service marks a cancelled sweep in Redis: stop mid-point rather than at the chunk's end
    const controller = new AbortController();
    let stopState: string | null = null;
    const watch = setInterval(() => {
      this.sweepState(data.job).then(
        (s) => {
          if (s === 'running') return;
          stopState = s;
          controller.abort();
        },
        () => {},
      );
    }, WATCH_MS);

    const points: { index: number; rows: EncodedSummary[] }[] = [];
    const batches: BatchUsed[] = [];
    let lastReport = Date.now();
    try {
      const outcome = await this.onEngine(() =>
        runPoints(
          data.points,
          (point) => {
            const parsed = problemFromObject(data.problem, point.overrides, data.source);
            return parsed.confidence === data.confidence ? parsed : { ...parsed, confidence: data.confidence };
          },
          { caseNames: data.cases, seeds: data.seeds, maxSeeds: data.maxSeeds, baseSeed: data.baseSeed, engine: this.options.engine },
          {
            signal: controller.signal,
            onPoint: (point, rows) => void points.push({ index: point.index, rows: rows.map(encodeSummary) }),
            onBatch: (used) => void batches.push(used),
            onProgress: (instances) => {
              if (Date.now() - lastReport < PROGRESS_MS) return;
              lastReport = Date.now();
              job.updateProgress({ instances }).catch(() => {});
            },
          },
        ),
      );
      if (outcome.error !== null) throw outcome.error;
    } catch (err) {
      if (controller.signal.aborted) throw dropped(stopState);
      // the same input fails the same way on any worker: report it, do not retry
      if (err instanceof ServesimError) return { points, batches, error: { code: err.code, message: err.message } };
      throw err;
    } finally {
      clearInterval(watch);
    }
    if (controller.signal.aborted) throw dropped(stopState);
    this.chunksRun++;
    this.pointsRun += points.length;
    if (batches.some((b) => b.engine === 'gpu') && this.options.chunks === undefined && this.worker.concurrency < GPU_CHUNKS) {
      this.worker.concurrency = GPU_CHUNKS;
      this.log(`running on a GPU: now ${GPU_CHUNKS} chunks at a time`);
    }
    return { points, batches, error: null };
  }
}
