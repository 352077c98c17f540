/**
 * `serve --queue` when things go wrong: a worker killed mid-chunk, a job cancelled by its
 * user, a Redis that is not there. Needs `npm run build` (the workers run from dist/) and
 * redis-server (the last test needs neither).
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServesimError } from '../src/errors.js';
import { CHUNK_QUEUE, QUEUE_PREFIX } from '../src/queue/connection.js';
import { QueueDispatcher } from '../src/queue/dispatcher.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { freePort, MAIN, skipQueueTests, startRedis, startWorker, until, workerReady, type RedisServer, type WorkerProcess } from './queue-support.js';

const LOCK = ['--lock-duration', '1000'];

describe.skipIf(skipQueueTests)('faults on the queue', () => {
  let redis: RedisServer;
  let queue: QueueDispatcher;
  let app: FastifyInstance;
  /** The test's own view of the chunk queue. */
  let chunks: Queue;
  let missing: Error | undefined;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    // under CI a missing redis-server fails each test (a failed hook would only skip them)
    try {
      redis = await startRedis();
    } catch (err) {
      missing = err as Error;
      return;
    }
    queue = await QueueDispatcher.connect(redis.url, { chunkSize: 1, checkMs: 200 });
    app = buildServer({ queue });
    chunks = new Queue(CHUNK_QUEUE, { connection: redis.client, prefix: QUEUE_PREFIX });
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await app?.close();
    await queue?.close();
    await chunks?.close();
    await redis?.stop();
    await closeEngines();
  });

  it('finishes every point exactly once when a worker is killed mid-chunk', async () => {
    if (missing) throw missing;
    // half a second a point on 2 threads (8 seeds took a tenth of one since the engine's speed
    // work), so the kill 150 ms into a chunk lands inside it
    const body = { problem: 'mmc', grid: { 'server.slots': [4, 5, 6], 'traffic.duration': ['3000s'] }, seeds: 32 };
    const doomed = startWorker(redis.url, LOCK);
    workers.push(doomed);
    await workerReady(doomed);
    const job = (await app.inject({ method: 'POST', url: '/v1/jobs', payload: body })).json();
    await until(async () => (await chunks.getJobCounts('active')).active === 1, 20_000, 'a chunk to start');
    await new Promise((r) => setTimeout(r, 150));
    expect(await doomed.stop('SIGKILL')).toBe(null);
    // nothing finished: the killed chunk is still held by the dead worker's lock
    expect((await app.inject(job.links.self)).json().points.done).toBe(0);

    const rescuer = startWorker(redis.url, LOCK);
    workers.push(rescuer);
    const events = (await app.inject(job.links.events)).body;
    expect(events).toContain('event: done');
    const result = (await app.inject({ url: job.links.result, headers: { accept: 'application/json' } })).json();
    expect(result.rows.map((r: Record<string, unknown>) => r['server.slots'])).toEqual([4, 5, 6]);

    const local = await runSweep(sweepFromObject(body));
    expect(result.rows.map((r: Record<string, unknown>) => r['p99_ms'])).toEqual(local.rows.map((r) => r.summary.p99_ms));
    expect(result.rows.map((r: Record<string, unknown>) => r['requests'])).toEqual(local.rows.map((r) => r.summary.requests));
    expect(await rescuer.stop()).toBe(0);
    expect(rescuer.log()).toMatch(/stopped after 3 chunk\(s\), 3 point\(s\)/);
  });

  it('cancelled, leaves no chunk queued and stops the one running', async () => {
    if (missing) throw missing;
    // points long enough (seconds each) that the running chunk cannot finish before the cancel lands
    const body = { problem: 'mmc', grid: { 'server.slots': [4, 5, 6, 7, 8, 9, 10, 11], 'traffic.duration': ['3000s'] }, seeds: 64 };
    const worker = startWorker(redis.url, LOCK);
    workers.push(worker);
    await workerReady(worker);
    const job = (await app.inject({ method: 'POST', url: '/v1/jobs', payload: body })).json();
    await until(async () => (await chunks.getJobCounts('active')).active === 1, 20_000, 'a chunk to start');

    const cancelled = await app.inject({ method: 'DELETE', url: job.links.self });
    expect(cancelled.json()).toMatchObject({ status: 'cancelled', points: { total: 8 } });
    const queued = await chunks.getJobCounts('wait', 'delayed', 'prioritized', 'waiting-children');
    expect(Object.values(queued).reduce((a, b) => a + b, 0)).toBe(0);

    // the running chunk is dropped within a moment, then removed with the sweep's record
    await until(async () => {
      const counts = await chunks.getJobCounts();
      return Object.values(counts).every((n) => n === 0) && (await redis.client.exists(`servesim:sweep:${job.id}`)) === 0;
    }, 10_000, 'the chunks and the record to go');
    expect(await redis.client.smembers('servesim:cleanup')).toEqual([]);
    // the worker's stderr can arrive after Redis already shows the chunk gone
    await until(() => /is cancelled: chunk \d+ dropped/.test(worker.log()), 5_000, () => `the worker to say it dropped the chunk (its log: ${worker.log()})`);
    expect(await worker.stop()).toBe(0);
  });
});

describe('a Redis that is not there', () => {
  let silent: Server | undefined;

  afterAll(() => {
    silent?.close();
  });

  // each within a test's limit of 15 s, where a client that kept retrying would never end:
  // elapsed times asserted tighter failed on a loaded machine
  it('is a clear error at once when nothing listens', async () => {
    const err = await QueueDispatcher.connect(`redis://127.0.0.1:${await freePort()}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServesimError);
    expect(err).toMatchObject({ code: 'SERVESIM_QUEUE_UNREACHABLE', statusCode: 503, message: expect.stringMatching(/cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+\/?: connect ECONNREFUSED/) });
  }, 15_000);

  it('is a clear error within seconds when the server never answers', async () => {
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    const err = await QueueDispatcher.connect(`redis://127.0.0.1:${port}`).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'SERVESIM_QUEUE_UNREACHABLE', message: expect.stringContaining('no answer within 3 s') });
  }, 15_000);

  it('stops `serve --queue` and `worker` before they start, exit status 2', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    for (const args of [['serve', '--port', '0', '--queue', url], ['worker', '--queue', url]]) {
      const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += String(chunk)));
      const code = await new Promise((resolve) => child.once('exit', resolve));
      expect(code).toBe(2);
      expect(stderr).toMatch(/^servesim: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+\/?: connect ECONNREFUSED/);
    }
  }, 30_000);
});
