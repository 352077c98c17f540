/**
 * `serve --queue` leaves no key of a job behind, even when Redis restarts without its data in
 * the middle of the job: the service puts the sweep's record and its lost chunks back, the job
 * finishes, and settling it removes every chunk job. Needs `npm run build` (the worker runs
 * from dist/) and redis-server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueDispatcher } from '../src/queue/dispatcher.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { freePort, skipQueueTests, startWorker, until, workerReady, type WorkerProcess } from './queue-support.js';

/** A redis-server without persistence on `port`: stopping it loses every key. */
function redisOn(port: number): { stop(): Promise<void> } {
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  return {
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

describe.skipIf(skipQueueTests)('keys of a job on the queue', () => {
  let port: number;
  let server: { stop(): Promise<void> };
  let client: Redis;
  let queue: QueueDispatcher;
  let app: FastifyInstance;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    port = await freePort();
    server = redisOn(port);
    client = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    client.on('error', () => {});
    await until(async () => (await client.ping().catch(() => '')) === 'PONG', 10_000, 'redis-server to answer');
    queue = await QueueDispatcher.connect(`redis://127.0.0.1:${port}`, { chunkSize: 1, checkMs: 200 });
    app = buildServer({ queue });
  });

  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await app?.close();
    await queue?.close();
    client?.disconnect();
    await server?.stop();
    await closeEngines();
  });

  it('are gone once the job ends, though Redis restarted without its data mid-job', async () => {
    const url = `redis://127.0.0.1:${port}`;
    worker = startWorker(url, ['--lock-duration', '1000']);
    await workerReady(worker);
    // a second or so a point, so that Redis restarts while the job runs
    const body = { problem: 'mmc', grid: { 'server.slots': [4, 5, 6, 7], 'traffic.duration': ['3000s'] }, seeds: 8 };
    const job = (await app.inject({ method: 'POST', url: '/v1/jobs', payload: body })).json();
    await until(async () => (await app.inject(job.links.self)).json().points.done >= 1, 60_000, 'a point to finish');

    await server.stop();
    server = redisOn(port);
    await until(async () => (await client.ping().catch(() => '')) === 'PONG', 10_000, 'redis-server to answer again');

    const events = (await app.inject(job.links.events)).body;
    expect(events).toContain('event: done');
    const result = (await app.inject({ url: job.links.result, headers: { accept: 'application/json' } })).json();
    expect(result.rows.map((r: Record<string, unknown>) => r['server.slots'])).toEqual([4, 5, 6, 7]);

    // what a job may leave: nothing under its id, no chunk in any of BullMQ's lists
    const leftovers = async (): Promise<string[]> => {
      const keys = (await client.keys('servesim:*')).filter((k) => k.includes(job.id));
      for (const set of ['completed', 'failed']) if ((await client.zcard(`servesim:chunks:${set}`)) > 0) keys.push(`servesim:chunks:${set}`);
      for (const list of ['wait', 'active']) if ((await client.llen(`servesim:chunks:${list}`)) > 0) keys.push(`servesim:chunks:${list}`);
      if ((await client.sismember('servesim:sweeps', job.id)) === 1) keys.push('servesim:sweeps');
      if ((await client.sismember('servesim:cleanup', job.id)) === 1) keys.push('servesim:cleanup');
      return keys;
    };
    let left: string[] = [];
    await until(async () => (left = await leftovers()).length === 0, 15_000, () => `the job's keys to go (left: ${left.join(', ')})`);
  }, 120_000);
});
