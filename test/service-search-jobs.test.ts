/**
 * Hint and capacity searches as background jobs over HTTP: a capacity job on a tiny grid of
 * queues finds the designs and capacities `servesim capacity` finds on the same seeds, a
 * progress event a round, its result as JSON, as an Arrow row per design and as a report page;
 * a cancelled one keeps what it settled; a grid past the design limit gets 413 and a busy
 * server 429, before any work; a hint job answers as `servesim hint` does. Needs
 * `npm run build` first (the pool's workers run from dist/).
 */
import { tableFromIPC } from 'apache-arrow';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CapacityResult } from '../src/capacity/api.js';
import type { HintResult } from '../src/hint/api.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { runCli, until } from './cli-support.js';

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer();
});

afterAll(async () => {
  await app.close();
  await closeEngines();
});

interface SseEvent {
  readonly event: string;
  readonly data: Record<string, unknown>;
}

/** The job's events, read to its final one. */
async function events(id: string): Promise<SseEvent[]> {
  const res = await app.inject(`/v1/jobs/${id}/events`);
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  return res.body
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => {
      const [head, data] = block.split('\n');
      return { event: head!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) as Record<string, unknown> };
    });
}

async function start(url: string, payload: object): Promise<string> {
  const res = await app.inject({ method: 'POST', url, payload });
  expect(res.statusCode, res.body).toBe(202);
  expect(res.headers['location']).toBe(`/v1/jobs/${res.json().id}`);
  return res.json().id as string;
}

/** mmc as the CLI's --set traffic.duration=20s --set confidence=0.5 makes it: a probe decides at once. */
async function tinyQueue(): Promise<Record<string, unknown>> {
  const problem = (await app.inject('/v1/problems/mmc')).json() as Record<string, unknown> & { traffic: Record<string, unknown> };
  return { ...problem, confidence: 0.5, traffic: { ...problem.traffic, duration: '20s' } };
}

const CLI_TINY = ['mmc', '--vary', 'server.replicas=1,2', '--set', 'traffic.duration=20s', '--set', 'confidence=0.5', '--cost', 'server.replicas', '--seeds', '16', '--tolerance', '5%', '--engine', 'cpu'];

describe('POST /v1/jobs/capacity', () => {
  it('finds the capacities the CLI finds on the same seeds, a progress event a round', async () => {
    const body = { problem: await tinyQueue(), vary: { 'server.replicas': [1, 2] }, cost: 'server.replicas', seeds: 16, tolerance: 0.05, engine: 'cpu' };
    const id = await start('/v1/jobs/capacity', body);
    const seen = await events(id);
    const final = seen.at(-1)!;
    expect(final.event, JSON.stringify(final.data)).toBe('done');
    expect(final.data).toMatchObject({ kind: 'capacity', problem: { id: 'mmc' }, designs: 2 });

    const res = await app.inject({ url: `/v1/jobs/${id}/result` });
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const result = res.json() as CapacityResult;
    const progress = seen.filter((e) => e.event === 'progress').map((e) => e.data);
    expect(progress.map((p) => p['round'])).toEqual(Array.from({ length: result.rounds }, (_, i) => i + 1));
    expect(progress.at(-1)).toMatchObject({ settled: 2, designs: 2 });
    expect(result.unsettled).toEqual([]);

    const cli = await runCli('capacity', ...CLI_TINY, '-f', 'json');
    expect(cli.code, cli.err).toBe(0);
    const expected = JSON.parse(cli.out) as CapacityResult;
    const shown = (r: CapacityResult) => r.designs.map((d) => ({ values: d.values, cost: d.cost, rate_scale: d.rate_scale, rps: d.requests_per_second, above: d.above, pareto: d.pareto, instances: d.instances }));
    expect(shown(result)).toEqual(shown(expected));
    expect(result.designs.every((d) => d.rate_scale !== null)).toBe(true);

    // the same designs as an Arrow table, a row each
    const arrow = await app.inject({ url: `/v1/jobs/${id}/result`, headers: { accept: 'application/vnd.apache.arrow.stream' } });
    expect(arrow.statusCode).toBe(200);
    const table = tableFromIPC(arrow.rawPayload);
    expect(table.schema.metadata.get('servesim.table')).toBe('capacity');
    expect(table.getChild('server.replicas')!.toArray()).toEqual(Float64Array.from(result.designs.map((d) => d.values['server.replicas'] as number)));
    expect([...table.getChild('rate_scale')!.toArray()]).toEqual(result.designs.map((d) => d.rate_scale));
    expect([...table.getChild('pareto')!]).toEqual(result.designs.map((d) => d.pareto));
    expect([...table.getChild('settled')!]).toEqual([true, true]);

    const page = await app.inject(`/v1/jobs/${id}/report`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<svg class="front"');
    for (const d of result.designs) expect(page.body).toContain(`${d.rate_scale}x`);
  });

  it('keeps the rounds it finished when cancelled', async () => {
    // four designs on 256 seeds a probe: many rounds, the first in well under a second
    const body = { problem: await tinyQueue(), vary: { 'server.replicas': [1, 2, 3, 4] }, cost: 'server.replicas', seeds: 256, tolerance: 0.01, engine: 'cpu' };
    const id = await start('/v1/jobs/capacity', body);
    const job = async () => (await app.inject(`/v1/jobs/${id}`)).json() as { status: string; progress: unknown };
    await until(async () => {
      const { status, progress } = await job();
      return progress !== null || ['done', 'failed', 'cancelled'].includes(status);
    }, 30_000);
    expect(await job()).toMatchObject({ status: 'running', progress: { round: expect.any(Number) } });
    const cancelled = await app.inject({ method: 'DELETE', url: `/v1/jobs/${id}` });
    expect(cancelled.json()).toMatchObject({ status: 'cancelled', error: null });
    const roundsSeen = (cancelled.json().progress as { round: number }).round;
    const result = (await app.inject(`/v1/jobs/${id}/result`)).json() as CapacityResult;
    expect(result.rounds).toBeGreaterThanOrEqual(roundsSeen);
    expect(result.unsettled.length).toBeGreaterThan(0);
    // a capacity kept is a load its design passed at, every case of it
    for (const d of result.designs.filter((x) => x.rate_scale !== null)) expect(d.cases.map((c) => c.verdict)).toEqual(['PASS']);
    expect((await app.inject('/healthz')).json().sweeps.running).toBe(0);
  }, 60_000);

  it('refuses too many designs with 413, and bad input with 400, before any work', async () => {
    const tooMany = await app.inject({ method: 'POST', url: '/v1/jobs/capacity', payload: { problem: 'mmc', vary: { 'server.slots': { from: 1, to: 10_001, step: 1 } } } });
    expect(tooMany.statusCode).toBe(413);
    expect(tooMany.json()).toMatchObject({ code: 'SERVESIM_GRID_TOO_LARGE', path: 'vary', detail: 'vary: 10,001 grid points; the limit is 10,000 points' });
    const load = await app.inject({ method: 'POST', url: '/v1/jobs/capacity', payload: { problem: 'mmc', vary: { 'traffic.rate': [10, 20] } } });
    expect(load.statusCode).toBe(400);
    expect(load.json()).toMatchObject({ code: 'SERVESIM_SWEEP_INVALID' });
    expect(load.json().detail).toMatch(/vary\.traffic\.rate: the search sets the load itself/);
    expect((await app.inject('/healthz')).json().jobs).toMatchObject({ queued: 0, running: 0 });
  });

  it('refuses a job with 429 when the server has as many as it takes', async () => {
    const busy = buildServer({ maxActiveJobs: 1 });
    try {
      const body = { problem: 'mmc', vary: { 'server.replicas': [1, 2] }, cost: 'server.replicas', seeds: 256, engine: 'cpu' };
      const first = await busy.inject({ method: 'POST', url: '/v1/jobs/capacity', payload: body });
      expect(first.statusCode).toBe(202);
      const second = await busy.inject({ method: 'POST', url: '/v1/jobs/capacity', payload: body });
      expect(second.statusCode).toBe(429);
      expect(second.json().code).toBe('SERVESIM_BUSY');
      expect(second.headers['retry-after']).toBe('5');
    } finally {
      await busy.close();
    }
  });
});

describe('POST /v1/jobs/hints', () => {
  it('answers as servesim hint does, a progress event a point evaluated', async () => {
    const id = await start('/v1/jobs/hints', { problem: 'mmc', vary: { 'server.slots': [4, 5, 6] }, cost: 'server.slots', seeds: 64, engine: 'cpu' });
    const seen = await events(id);
    expect(seen.at(-1)!.event).toBe('done');
    const progress = seen.filter((e) => e.event === 'progress').map((e) => e.data);
    const result = (await app.inject(`/v1/jobs/${id}/result`)).json() as HintResult;
    expect(progress).toHaveLength(result.evaluated);
    expect(progress.at(-1)).toMatchObject({ evaluated: result.evaluated, gridSize: 3, round: result.rounds, undecided: 0 });

    const cli = await runCli('hint', 'mmc', '--vary', 'server.slots=4,5,6', '--cost', 'server.slots', '--seeds', '64', '--engine', 'cpu', '-f', 'json');
    expect(cli.code, cli.err).toBe(0);
    const expected = JSON.parse(cli.out) as HintResult;
    const { engine: _e, gpuSeconds: _g, ...answer } = result;
    const { engine: _ce, gpuSeconds: _cg, ...cliAnswer } = expected;
    expect(answer).toEqual(cliAnswer);
    expect(answer.hints[0]!.found.values).toEqual({ 'server.slots': 4 });

    // a hint has no page of its own, and no Arrow table
    expect((await app.inject(`/v1/jobs/${id}/report`)).json()).toMatchObject({ status: 409, code: 'SERVESIM_JOB_NO_RESULT' });
    expect((await app.inject({ url: `/v1/jobs/${id}/result`, headers: { accept: 'application/vnd.apache.arrow.stream' } })).statusCode).toBe(406);
  });
});
