/**
 * A sweep runs as batches, one per configuration shape (src/run/batches.ts), and its table is
 * the one grid point at a time gives: batching changes where instances run, never what they
 * report.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeEngines, runProblem } from '../src/run/run.js';
import { pointProblem, runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { TINY_QUEUE } from './support.js';

afterAll(closeEngines);

const sweep = (cases: readonly string[]) =>
  sweepFromObject({
    problem: {
      ...TINY_QUEUE,
      cases: undefined,
      scenarios: { 'server-down': { failures: [{ target: 'server', replica: 0 }] } },
    },
    grid: { 'server.slots': [1, 2, 3], 'traffic.rate': [8, 12] },
    cases,
    seeds: 8,
    engine: 'cpu',
  });

describe('a sweep as batches', () => {
  it('runs P points x S seeds of one shape as one batch', async () => {
    const s = sweep(['as-given', 'peak-hour']);
    const outcome = await runSweep(s);
    // as-given and peak-hour differ in rate only: one shape
    expect(outcome.meta.batches).toEqual([{ instances: 6 * 2 * 8, configs: 12, engine: 'pool', adapter: null, threads: expect.any(Number) }]);
    expect(outcome.finished).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('puts cases of another shape in a batch of their own, and the table is the one point at a time gives', async () => {
    const s = sweep(['as-given', 'server-down']);
    const outcome = await runSweep(s);
    expect(outcome.meta.batches.map((b) => [b.instances, b.configs])).toEqual([[48, 6], [48, 6]]);
    const alone = [];
    for (const point of s.points) {
      const { rows } = await runProblem(pointProblem(s, point), { caseNames: s.caseNames, seeds: s.seeds, baseSeed: s.baseSeed, engine: 'cpu' });
      alone.push(...rows.map((summary) => ({ point, summary })));
    }
    expect(outcome.rows).toEqual(alone);
  });
});
