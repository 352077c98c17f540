/**
 * Background sweeps: create, events, result, cancel, and the registry's bounds. Needs
 * `npm run build` first (the pool's workers run from dist/).
 */
import { tableFromIPC } from 'apache-arrow';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { runSweep } from '../src/sweep/run.js';
import { parseEvents } from './support.js';

async function until(test: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer({ keepFinishedJobs: 3 });
});

afterAll(async () => {
  await app.close();
  await closeEngines();
});

async function createJob(server: FastifyInstance, payload: unknown): Promise<Record<string, any>> {
  const res = await server.inject({ method: 'POST', url: '/v1/jobs', payload: payload as object });
  expect(res.statusCode).toBe(202);
  const job = res.json();
  expect(res.headers['location']).toBe(`/v1/jobs/${job.id}`);
  return job;
}

describe('a job', () => {
  it('runs: 202, events as points finish and a final done, then the Arrow table', async () => {
    const job = await createJob(app, { problem: 'mmc', grid: { 'server.slots': [4, 5, 6] }, seeds: 2 });
    expect(job).toMatchObject({ status: expect.stringMatching(/queued|running/), points: { done: 0, total: 3 } });
    expect(job.links).toEqual({ self: `/v1/jobs/${job.id}`, events: `/v1/jobs/${job.id}/events`, result: `/v1/jobs/${job.id}/result` });

    const stream = await app.inject(job.links.events);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = parseEvents(stream.body);
    // the current state first, then a progress event per point finished since, then done
    expect(events[0]!.event).toBe('state');
    const progress = events.filter((e) => e.event === 'progress');
    expect(events[0]!.data.points.done + progress.length).toBe(3);
    expect(progress.at(-1)?.data ?? { pointsDone: 3 }).toMatchObject({ pointsDone: 3, pointsTotal: 3 });
    expect(events.at(-1)).toMatchObject({ event: 'done', data: { status: 'done', points: { done: 3, total: 3 }, unfinished: [] } });

    const status = (await app.inject(job.links.self)).json();
    expect(status).toMatchObject({ status: 'done', instances: { done: 6, total: 6 }, error: null });

    const result = await app.inject(job.links.result);
    expect(result.headers['content-type']).toBe('application/vnd.apache.arrow.stream');
    const table = tableFromIPC(result.rawPayload);
    expect(table.getChild('server.slots')!.toArray()).toEqual(Int32Array.from([4, 5, 6]));
    expect(table.schema.metadata.get('servesim.engine')).toBe('pool');

    const csv = await app.inject({ url: job.links.result, headers: { accept: 'text/csv' } });
    expect(csv.body.trimEnd().split('\n')).toHaveLength(4);

    // a late client gets the state and the final event at once
    const late = parseEvents((await app.inject(job.links.events)).body);
    expect(late.map((e) => e.event)).toEqual(['state', 'done']);
  });

  it('cancelled keeps its finished points: 409 before, partial while running, cancelled after DELETE', async () => {
    // the 1,200 s points run for 19 s each on 2 threads (4,096 seeds), the 20 s one for 1 s
    const job = await createJob(app, { problem: 'mmc', grid: { 'traffic.duration': ['20s', '1200s', '1200s'] }, seeds: 4096 });
    await until(async () => (await app.inject(job.links.self)).json().points.done >= 1);

    const early = await app.inject(job.links.result);
    expect(early.statusCode).toBe(409);
    expect(early.json()).toMatchObject({ code: 'SERVESIM_JOB_NOT_FINISHED', title: 'Conflict' });
    const partial = await app.inject({ url: `${job.links.result}?partial=1`, headers: { accept: 'application/json' } });
    expect(partial.statusCode).toBe(200);
    expect(partial.json().rows).toHaveLength(1);

    const started = Date.now();
    const cancelled = await app.inject({ method: 'DELETE', url: job.links.self });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'cancelled', points: { done: 1, total: 3 }, unfinished: [1, 2] });

    const table = tableFromIPC((await app.inject(job.links.result)).rawPayload);
    expect(table.numRows).toBe(1);
    expect(table.getChild('traffic.duration')!.get(0)).toBe('20s');
    expect(parseEvents((await app.inject(job.links.events)).body).at(-1)!.event).toBe('cancelled');
    expect((await app.inject('/healthz')).json().sweeps.running).toBe(0);
  });

  it('waits in the queue while the slots are taken, and can be cancelled there', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const server = buildServer({
      maxConcurrent: 1,
      runSweep: async (sweep, options) => {
        await gate;
        return runSweep(sweep, options);
      },
    });
    try {
      const first = await createJob(server, { problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 2 });
      const second = await createJob(server, { problem: 'mmc', grid: { 'server.slots': [5] }, seeds: 2 });
      const third = await createJob(server, { problem: 'mmc', grid: { 'server.slots': [6] }, seeds: 2 });
      expect((await server.inject(second.links.self)).json().status).toBe('queued');
      expect((await server.inject({ method: 'DELETE', url: third.links.self })).json()).toMatchObject({ status: 'cancelled', startedAt: null });
      open();
      await until(async () => (await server.inject(second.links.self)).json().status === 'done');
      expect((await server.inject(first.links.self)).json().status).toBe('done');
    } finally {
      open();
      await server.close();
    }
  });
});

describe('the job registry', () => {
  it('answers 404 for an unknown job', async () => {
    for (const url of ['/v1/jobs/nope', '/v1/jobs/nope/events', '/v1/jobs/nope/result']) {
      const res = await app.inject(url);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 'SERVESIM_NOT_FOUND', detail: expect.stringContaining('"nope"') });
    }
    expect((await app.inject({ method: 'DELETE', url: '/v1/jobs/nope' })).statusCode).toBe(404);
  });

  it('refuses bad bodies and queries as POST /v1/sweeps does', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/jobs', payload: { problem: 'mmc', grid: {}, extra: true } });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toMatch(/body\.extra: unknown field/);
    const query = await app.inject('/v1/jobs/x/result?partial=yes');
    expect(query.statusCode).toBe(400);
    expect(query.json().detail).toMatch(/querystring\.partial: must be one of/);
  });

  it('keeps the newest finished jobs, dropping the oldest', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const job = await createJob(app, { problem: 'mmc', grid: { 'traffic.duration': ['5s'] }, seeds: 1 });
      ids.push(job.id);
      await until(async () => (await app.inject(job.links.self)).json().status === 'done');
    }
    const kept = await Promise.all(ids.map(async (id) => (await app.inject(`/v1/jobs/${id}`)).statusCode));
    expect(kept).toEqual([404, 404, 200, 200, 200]);
  });

  it('refuses jobs beyond the active bound with 429', async () => {
    const server = buildServer({
      maxActiveJobs: 1,
      retryAfterSeconds: 3,
      runSweep: (_sweep, options) =>
        new Promise((_resolve, reject) => options!.signal!.addEventListener('abort', () => reject(new Error('aborted')))),
    });
    try {
      await createJob(server, { problem: 'mmc', grid: {}, seeds: 1 });
      const res = await server.inject({ method: 'POST', url: '/v1/jobs', payload: { problem: 'mmc', grid: {}, seeds: 1 } });
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toBe('3');
    } finally {
      // closing cancels the jobs still running
      await server.close();
    }
  });
});
