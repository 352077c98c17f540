/**
 * `serve --queue`: a job's sweep through `servesim worker` processes over a real Redis gives
 * the local sweep's table, value for value; a service restarted mid-sweep takes the job up.
 * Needs `npm run build` (the workers run from dist/) and redis-server.
 */
import { tableFromIPC, type Table } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueDispatcher } from '../src/queue/dispatcher.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { skipQueueTests, startRedis, startWorker, until, workerReady, type RedisServer, type WorkerProcess } from './queue-support.js';
import { parseEvents } from './support.js';

/** Every column of two tables: the same values (nulls included) and, for numbers, the same bytes. */
function expectSameTable(actual: Table, expected: Table): void {
  expect(actual.schema.fields.map((f) => f.name)).toEqual(expected.schema.fields.map((f) => f.name));
  expect(actual.numRows).toBe(expected.numRows);
  for (const field of expected.schema.fields) {
    const a = actual.getChild(field.name)!;
    const e = expected.getChild(field.name)!;
    expect([...a], field.name).toEqual([...e]);
    const values = e.toArray();
    if (ArrayBuffer.isView(values)) {
      const bytes = (v: ArrayBufferView) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
      expect(bytes(a.toArray() as ArrayBufferView).equals(bytes(values)), field.name).toBe(true);
    }
  }
}

describe.skipIf(skipQueueTests)('a sweep on the queue', () => {
  let redis: RedisServer;
  let missing: Error | undefined;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    // under CI a missing redis-server fails each test (a failed hook would only skip them)
    try {
      redis = await startRedis();
    } catch (err) {
      missing = err as Error;
    }
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await redis?.stop();
    await closeEngines();
  });

  it('through two worker processes equals the local sweep, with the same events', async () => {
    if (missing) throw missing;
    const body = { problem: 'mmc', grid: { 'server.slots': [4, 5, 6], 'traffic.rate': [20, 28, 36] }, seeds: 4 };
    const sweep = sweepFromObject(body);
    const local = await runSweep(sweep);
    expect(local.unfinished).toEqual([]);

    const pair = [startWorker(redis.url), startWorker(redis.url)];
    workers.push(...pair);
    await Promise.all(pair.map(workerReady));
    const queue = await QueueDispatcher.connect(redis.url, { chunkSize: 2, checkMs: 200 });
    const app = buildServer({ queue });
    try {
      const created = await app.inject({ method: 'POST', url: '/v1/jobs', payload: body });
      expect(created.statusCode).toBe(202);
      const job = created.json();
      const events = parseEvents((await app.inject(job.links.events)).body);
      expect(events[0]!.event).toBe('state');
      const progress = events.filter((e) => e.event === 'progress');
      expect(events[0]!.data.points.done + progress.length).toBe(9);
      expect(new Set(progress.map((e) => e.data.point.index)).size).toBe(progress.length);
      expect(events.at(-1)).toMatchObject({ event: 'done', data: { status: 'done', points: { done: 9, total: 9 }, instances: { done: 36, total: 36 }, unfinished: [] } });

      const result = await app.inject(job.links.result);
      const table = tableFromIPC(result.rawPayload);
      expect(table.schema.metadata.get('servesim.engine')).toBe('pool');
      expectSameTable(table, tableFromIPC(sweepToArrow(sweep, local.rows, local.meta)));

      // settled: no chunk, record or index left in Redis
      await until(async () => (await redis.client.keys('servesim:sweep:*')).length === 0, 10_000, 'the record to go');
      expect(await redis.client.zcard('servesim:chunks:completed')).toBe(0);
      expect(await redis.client.smembers('servesim:sweeps')).toEqual([]);
    } finally {
      await app.close();
      await queue.close();
    }
    expect(await Promise.all(pair.map((w) => w.stop()))).toEqual([0, 0]);
    // both had a share, and neither failed a chunk
    for (const w of pair) expect(w.log()).toMatch(/stopped after [1-9]\d* chunk/);
    for (const w of pair) expect(w.log()).not.toContain('failed');
  });

  it('is taken up by a new service when the first stops mid-sweep', async () => {
    if (missing) throw missing;
    const body = { problem: 'mmc', grid: { 'server.slots': [4, 5, 6, 7, 8, 9], 'traffic.duration': ['2000s'] }, seeds: 4 };
    const sweep = sweepFromObject(body);
    const local = await runSweep(sweep);

    const worker = startWorker(redis.url);
    workers.push(worker);
    await workerReady(worker);
    const first = await QueueDispatcher.connect(redis.url, { chunkSize: 1, checkMs: 200 });
    const before = buildServer({ queue: first });
    const job = (await before.inject({ method: 'POST', url: '/v1/jobs', payload: body })).json();
    await until(async () => (await before.inject(job.links.self)).json().points.done >= 1, 20_000, 'a point');
    const atStop = (await before.inject(job.links.self)).json();
    await before.close();
    expect(atStop.points.done).toBeLessThan(6);
    await first.close();
    // the job is still wanted: its chunks stay queued and the worker goes on
    expect(await redis.client.smembers('servesim:sweeps')).toEqual([job.id]);

    const second = await QueueDispatcher.connect(redis.url, { checkMs: 200 });
    const after = buildServer({ queue: second });
    try {
      await after.ready();
      const events = parseEvents((await after.inject(`/v1/jobs/${job.id}/events`)).body);
      expect(events.at(-1)).toMatchObject({ event: 'done', data: { id: job.id, points: { done: 6, total: 6 } } });
      const table = tableFromIPC((await after.inject(`/v1/jobs/${job.id}/result`)).rawPayload);
      expectSameTable(table, tableFromIPC(sweepToArrow(sweep, local.rows, local.meta)));
    } finally {
      await after.close();
      await second.close();
    }
    expect(await worker.stop()).toBe(0);
  });
});
