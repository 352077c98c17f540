/**
 * The service refuses work over its limits before doing any of it: a grid is counted from its
 * axes before a point is checked, a body is measured before it is validated, and an error lists
 * a bounded number of issues. The runners are stubs: nothing here should reach them.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSeeds } from '../src/cli/options.js';
import { buildServer } from '../src/service/server.js';

/** A grid of 100,000 points whose first point (server.slots=0) is invalid: an answer about
 * that point would show the points were checked before the size. */
const HUGE_GRID = { 'server.slots': { from: 0, to: 99_999, step: 1 } };

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer({
    runSweep: () => Promise.reject(new Error('the sweep should not run')),
    runHints: () => Promise.reject(new Error('the search should not run')),
  });
});

afterAll(async () => {
  await app.close();
});

const post = (url: string, payload: unknown) => app.inject({ method: 'POST', url, payload: payload as object });

describe('a grid is counted before any point is checked', () => {
  for (const url of ['/v1/sweeps', '/v1/jobs']) {
    it(`${url}: 100,000 points are refused by their count`, async () => {
      const res = await post(url, { problem: 'mmc', grid: HUGE_GRID, cases: ['as-given'], seeds: 1 });
      expect(res.statusCode).toBe(413);
      expect(res.json()).toMatchObject({
        code: 'SERVESIM_GRID_TOO_LARGE',
        detail: 'grid: 100,000 grid points x 1 cases x 1 seeds = 100,000 instances; the limit is 2,000,000 instances (10,000 points)',
      });
    });
  }

  it('/v1/hints: 100,000 points are refused by their count', async () => {
    const res = await post('/v1/hints', { problem: 'mmc', vary: HUGE_GRID });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ code: 'SERVESIM_GRID_TOO_LARGE', detail: 'vary: 100,000 grid points; the limit is 10,000 points' });
  });

  it('/v1/sweeps: the synchronous limit is checked before the points too', async () => {
    const small = buildServer({ syncMaxInstances: 10 });
    try {
      const res = await small.inject({ method: 'POST', url: '/v1/sweeps', payload: { problem: 'mmc', grid: { 'server.slots': { from: 0, to: 19, step: 1 } }, cases: ['as-given'], seeds: 1 } });
      expect(res.statusCode).toBe(413);
      expect(res.json().detail).toBe('grid: 20 instances (20 points x 1 cases x 1 seeds) is over the 10 this endpoint runs while you wait; POST the same body to /v1/jobs');
    } finally {
      await small.close();
    }
  });
});

describe('a body is measured before it is validated', () => {
  it('90,000 unknown keys (under the byte limit) get a short 413 naming the limit', async () => {
    const problem = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`k${i}`, 1]));
    const payload = JSON.stringify({ problem, grid: {} });
    expect(payload.length).toBeLessThan(1024 * 1024);
    const res = await app.inject({ method: 'POST', url: '/v1/sweeps', headers: { 'content-type': 'application/json' }, payload });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({
      type: 'https://servesim.dev/errors/SERVESIM_INPUT_TOO_LARGE',
      title: 'Payload Too Large',
      status: 413,
      code: 'SERVESIM_INPUT_TOO_LARGE',
      detail: 'body: more than 10,000 keys and values; the limit is 10,000',
      path: 'body',
    });
  });

  it('a body nested past the depth limit gets a 413 naming it', async () => {
    const payload = `{"problem": {"id": ${'['.repeat(10_000)}${']'.repeat(10_000)}}, "grid": {}}`;
    const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers: { 'content-type': 'application/json' }, payload });
    expect(res.statusCode).toBe(413);
    expect(res.json().detail).toBe('body: nested deeper than 64 levels; the limit is 64');
  });

  it('an error lists 20 issues and counts the rest', async () => {
    const problem = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`key${i}`, 1]));
    const res = await post('/v1/sweeps', { problem, grid: {} });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe('SERVESIM_PROBLEM_INVALID');
    expect(body.issues).toHaveLength(20);
    expect(body.detail).toMatch(/; \.\.\. and 1,9\d\d more$/);
    expect(res.body.length).toBeLessThan(10_000);
  });
});

describe('seeds per run are limited: a case holds every seed\'s results at once', () => {
  const SEEDS_OVER = 'invalid request: body.seeds: fits none of its forms (must be <= 10000 | must be string | must be "auto")';

  it('a job of 20,000 seeds is refused naming the field and the limit', async () => {
    const res = await post('/v1/jobs', { problem: 'mmc', grid: { 'server.slots': [4] }, seeds: 20_000 });
    expect(res.statusCode).toBe(400);
    // seeds is a count or 'auto': the message lists what each form wants
    expect(res.json().detail).toBe(SEEDS_OVER);
  });

  it('a hint search of 20,000 seeds likewise', async () => {
    const res = await post('/v1/hints', { problem: 'mmc', vary: { 'server.slots': [4, 5] }, seeds: 20_000 });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toBe(SEEDS_OVER);
  });

  it('and --seeds on the command line', () => {
    expect(() => parseSeeds('20000')).toThrow("--seeds must be an integer from 1 to 10000, got '20000'.");
    expect(parseSeeds('10000')).toBe(10_000);
  });
});
