/**
 * POST /v1/hints is held to the synchronous instance limit, as POST /v1/sweeps is, on what its
 * search may ask at once: every grid point on its first seeds (the search may try them all),
 * refused with 413 before any point is checked; then each round of seeds until decided, run in
 * batches under the limit. Needs `npm run build` first (the pool's workers run from dist/).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { TINY_QUEUE } from './support.js';

const LIMIT = 300;

let app: FastifyInstance;

beforeAll(() => {
  app = buildServer({ syncMaxInstances: LIMIT });
});

afterAll(async () => {
  await app.close();
  await closeEngines();
});

const hint = (payload: object) => app.inject({ method: 'POST', url: '/v1/hints', payload });

describe('POST /v1/hints and the instance limit', () => {
  it('refuses a grid whose first seeds on every point pass it, before any point is checked', async () => {
    // 10 points x 1 case x 32 first seeds = 320; the last point (0 slots) is invalid, but never checked
    const slots = [...Array.from({ length: 9 }, (_, i) => i + 1), 0];
    const res = await hint({ problem: TINY_QUEUE, vary: { 'server.slots': slots }, seeds: 'auto' });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ code: 'SERVESIM_GRID_TOO_LARGE', path: 'vary' });
    expect(res.json().detail).toBe(
      'vary: 10 grid points x 1 cases x 32 first seeds = 320 instances, should the search try every point; the limit is 300: vary fewer values',
    );
    expect((await app.inject('/healthz')).json().sweeps.running).toBe(0);
  });

  it('searches a grid that passes it only on the most seeds a point may take', async () => {
    // 4 points x 32 first seeds = 128; on maxSeeds, 4 x 256 = 1,024
    const res = await hint({ problem: TINY_QUEUE, vary: { 'server.slots': [1, 2, 3, 4] }, seeds: 'auto', maxSeeds: 256, cost: 'server.slots' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ gridSize: 4, maxSeeds: 256 });
  });
});

describe("a round's seeds until decided", () => {
  it('run in batches of at most batchInstances', async () => {
    // M/M/4 over 50 s: a p99 goal of 700 ms is met by about 80% of seeds, undecided at 32
    const sweep = sweepFromObject({ problem: 'mmc', grid: { 'traffic.duration': ['50s'], 'goals.p99': ['700ms', '710ms', '720ms'] }, seeds: 'auto', maxSeeds: 128, engine: 'cpu' });
    const outcome = await runSweep(sweep, { batchInstances: 100 });
    const sizes = outcome.meta.batches.map((b) => b.instances);
    // 3 x 32 first seeds, then more for those undecided: every batch under the bound
    expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(100);
    expect(outcome.rows.map((r) => r.summary.seeds).some((s) => s > 32)).toBe(true);
  });
});
