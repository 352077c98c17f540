/** GET /v1/jobs/:id/report serves the HTML report of a job's finished points. */
import { afterAll, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';

const app = buildServer();

afterAll(async () => {
  await app.close();
  await closeEngines();
});

it("serves a finished job's report as one self-contained page", async () => {
  const created = await app.inject({ method: 'POST', url: '/v1/jobs', payload: { problem: 'mmc', grid: { 'server.slots': [4, 5] }, seeds: 2 } });
  expect(created.statusCode).toBe(202);
  const { id } = created.json();
  for (let i = 0; i < 500; i++) {
    const status = (await app.inject({ method: 'GET', url: `/v1/jobs/${id}` })).json();
    if (status.status === 'done') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const res = await app.inject({ method: 'GET', url: `/v1/jobs/${id}/report` });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.body).toContain('server.slots');
  expect(res.body).not.toMatch(/<script[^>]+src=/);
  expect((await app.inject({ method: 'GET', url: '/v1/jobs/nope/report' })).statusCode).toBe(404);
});
