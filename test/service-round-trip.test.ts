/**
 * What the API gives can be sent back: a shipped problem as GET /v1/problems/:id answers it is
 * the problem its id names when a sweep sends it inline, changed or not; and the example body
 * /docs shows for each route runs. Needs `npm run build` first (the pool's workers run from dist/).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProblem, problemFromObject } from '../src/problem/parse.js';
import { shippedProblemFile, shippedProblemIds } from '../src/problem/source.js';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer();
});

afterAll(async () => {
  await app.close();
  await closeEngines();
});

/** A JSON sweep's rows, without the grid's columns. */
async function sweepRows(body: object): Promise<Record<string, unknown>[]> {
  const res = await app.inject({ method: 'POST', url: '/v1/sweeps', headers: { accept: 'application/json' }, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  const { sweep, rows } = res.json() as { sweep: { grid: string[] }; rows: Record<string, unknown>[] };
  return rows.map((row) => Object.fromEntries(Object.entries(row).filter(([key]) => !sweep.grid.includes(key))));
}

describe('GET /v1/problems/:id, sent back', () => {
  it('is, for every shipped problem, the problem its id names', async () => {
    const ids = shippedProblemIds();
    expect(ids.length).toBeGreaterThan(5);
    for (const id of ids) {
      const res = await app.inject(`/v1/problems/${id}`);
      expect(res.statusCode, id).toBe(200);
      // as a sweep reads an inline problem: no folder, a trace looked for in problems/
      expect(problemFromObject(res.json(), [], id), id).toEqual(loadProblem(shippedProblemFile(id)));
    }
  });

  it('runs changed as the id runs with that change', async () => {
    const problem = (await app.inject('/v1/problems/hot-prefix')).json() as { gpu: Record<string, unknown> };
    expect(problem.gpu['slots']).not.toBe(16);
    problem.gpu['slots'] = 16;
    const run = { cases: ['peak-hour'], seeds: 4, engine: 'cpu' };
    const inline = await sweepRows({ problem, grid: {}, ...run });
    const byId = await sweepRows({ problem: 'hot-prefix', grid: { 'gpu.slots': [16] }, ...run });
    expect(inline).toHaveLength(1);
    expect(inline).toEqual(byId);
    // the change mattered: the problem as shipped answers otherwise
    expect(await sweepRows({ problem: 'hot-prefix', grid: {}, ...run })).not.toEqual(byId);
  });
});

describe('the example body of each route in /docs', () => {
  it('is answered with success', async () => {
    const doc = (await app.inject('/openapi.json')).json() as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { example?: unknown }> } }>>;
    };
    const bodies = Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations).flatMap(([method, op]) => (op.requestBody === undefined ? [] : [{ route: `${method.toUpperCase()} ${path}`, media: op.requestBody.content['application/json'] }])));
    expect(bodies.map((b) => b.route)).toEqual(expect.arrayContaining(['POST /v1/sweeps', 'POST /v1/jobs', 'POST /v1/hints']));
    for (const { route, media } of bodies) {
      expect(media?.example, route).toBeDefined();
      const [method, url] = route.split(' ') as ['POST', string];
      const res = await app.inject({ method, url, headers: { accept: 'application/json' }, payload: media!.example as object });
      expect(res.statusCode, `${route}: ${res.body.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
      expect(res.statusCode, `${route}: ${res.body.slice(0, 300)}`).toBeLessThan(300);
    }
  }, 60_000);
});
