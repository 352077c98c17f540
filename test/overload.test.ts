/**
 * Overloaded designs are answers, not errors (issue 12): an instance that reaches one of the
 * engines' capacities counts the requests it cannot serve as failed, and its case FAILs with
 * the reason, in runs, sweeps and hints alike.
 */
import { tableFromIPC } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { P } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { runHints } from '../src/hint/search.js';
import { loadProblem } from '../src/problem/parse.js';
import { formatCsv, formatJson, formatTable } from '../src/run/format.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import { formatSweepTable } from '../src/sweep/format.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { configFor, decodeAll, problemFile } from './support.js';

afterAll(closeEngines);

// problems/mmc.yaml with c = 2 slots of mean service 100 ms: capacity c mu = 20 jobs/s. A 60 s
// warmup holds the time an overloaded queue takes to fill the job table (8 c + 256 = 272 jobs
// in the system) at 1.5x load: (272 jobs) / (30 - 20 jobs/s) = 27 s.
const MM2 = ['server.slots=2', 'traffic.warmup=60s'];
const JOB_CAP = 272;
const SEEDS = 64;
const rateAt = (rho: number): number => rho * 20;

/** Every counted arrival ends as exactly one of these. */
function accounted(r: { successes: number; rejected: number; timedOut: number; died: number; overloaded: number }): number {
  return r.successes + r.rejected + r.timedOut + r.died + r.overloaded;
}

describe('an M/M/2 queue above 100% load', () => {
  for (const rho of [1.5, 2]) {
    // Once the job table is full the system is an M/M/2/272 queue, whose arrivals find it full
    // with probability 1 - 1/rho up to a term of order rho^-272: served = 1/rho of arrivals. The
    // departures of a seed's 200 s vary by about sqrt(20 x 200) = 63 of ~4,000 (1.6%), so 64
    // seeds pool to 0.2% of the rate: 0.01 is five such errors and more.
    it(`rho = ${rho}: FAILs as overloaded at the server, serving 1/rho of the arrivals`, async () => {
      const problem = loadProblem(problemFile('mmc'), [...MM2, `traffic.rate=${rateAt(rho)}`]);
      const result = await runProblem(problem, { seeds: SEEDS, baseSeed: problem.seed, engine: 'cpu' });
      const { rows } = result;
      const row = rows[0]!;
      expect(row.verdict).toBe('FAIL');
      expect(row.passes).toBe(false);
      expect(row.overloaded_seeds).toBe(SEEDS);
      expect(row.overload_reason).toBe(`overloaded: queue at server passed its capacity (${JOB_CAP} jobs) in ${SEEDS} of ${SEEDS} seeds`);
      expect(Math.abs(row.success - 1 / rho)).toBeLessThan(0.01);
      // no deadline: every arrival is served or refused as overloaded, none is left uncounted
      expect(row.overloaded + row.requests * row.success).toBeCloseTo(row.requests, 6);
      expect(row.rejected + row.timed_out + row.died).toBe(0);
      // the row says why in each format
      expect(formatTable(rows, problem.goals, { problemId: problem.id })).toMatch(/why\n.*FAIL .* overloaded: queue at server passed its capacity \(272 jobs\) in 64 of 64 seeds\n/s);
      expect(JSON.parse(formatJson(result)).rows[0]).toMatchObject({ overloaded_seeds: SEEDS, overload_reason: row.overload_reason });
      expect(formatCsv(rows)).toMatch(/,64,overloaded: queue at server passed its capacity \(272 jobs\) in 64 of 64 seeds\n$/);
    });
  }
});

describe('an instance that fills its event heap or KV cache index', () => {
  // No real configuration reaches these (compile.ts sizes them past what its job table can
  // hold): a capacity shrunk in the params stands in for one sized too small.
  const cases = [
    { what: 'event heap', file: 'mmc', sets: ['server.timeout=1s'], word: P.HEAP_CAP, cap: 60, reason: 'queue at server passed the event heap\'s capacity (60 events)' },
    { what: 'KV cache index', file: 'hot-prefix', sets: [], word: P.CACHE_CAP, cap: 0, reason: 'KV cache at gpu passed its capacity (0 entries a replica)' },
  ];
  for (const c of cases) {
    it(`${c.what}: the instance stops, and its jobs and every later arrival of its window fail as overloaded`, () => {
      const { config } = configFor(c.file, c.sets);
      const whole = decodeAll(config, runReference(config, 1, 0, 17));
      config.params[c.word] = c.cap;
      const results = decodeAll(config, runReference(config, 1, 0, 17));
      const stopped = results.filter((r) => r.overload !== '');
      expect(stopped.length).toBeGreaterThan(0);
      results.forEach((r, i) => {
        // the same arrivals as with room to spare: the window is counted to its end
        expect(r.arrivals).toBe(whole[i]!.arrivals);
        expect(accounted(r)).toBe(r.arrivals);
        if (r.overload === '') expect(r).toEqual(whole[i]);
        else expect(r.overload).toBe(c.reason);
      });
      for (const r of stopped) expect(r.overloaded).toBeGreaterThan(0);
    });
  }
});

describe('a sweep crossing rho = 1', () => {
  it('finishes every grid point: the stable ones as before, the overloaded ones FAIL with the reason', async () => {
    const loads = [0.5, 0.8, 1.5, 2];
    const sweep = sweepFromObject({
      id: 'mm2-load',
      problem: 'mmc',
      grid: { 'server.slots': [2], 'traffic.warmup': ['60s'], 'traffic.rate': loads.map(rateAt) },
      // seeds until decided: 16 cannot show a pass probability of 0.9, so the stable points
      // take more (64 seeds pass, 32 cannot), while the overloaded ones FAIL at once
      seeds: 16,
      maxSeeds: 64,
      engine: 'cpu',
    });
    const outcome = await runSweep(sweep);
    expect(outcome).toMatchObject({ finished: [0, 1, 2, 3], unfinished: [], error: null });
    const rows = outcome.rows.map((r) => r.summary);
    for (const [i, rho] of loads.entries()) {
      const row = rows[i]!;
      if (rho < 1) {
        // what the same point gives as a run of its own
        const problem = loadProblem(problemFile('mmc'), [...MM2, `traffic.rate=${rateAt(rho)}`]);
        const alone = await runProblem(problem, { seeds: 16, maxSeeds: 64, baseSeed: problem.seed, engine: 'cpu' });
        expect(row).toEqual(alone.rows[0]);
        expect(row).toMatchObject({ verdict: 'PASS', passes: true, overloaded: 0, overloaded_seeds: 0, overload_reason: '' });
        expect(row.seeds).toBeGreaterThan(16);
      } else {
        expect(row).toMatchObject({ verdict: 'FAIL', passes: false, seeds: 16 });
        expect(row.overload_reason).toBe(`overloaded: queue at server passed its capacity (${JOB_CAP} jobs) in 16 of 16 seeds`);
      }
    }
    const table = tableFromIPC(sweepToArrow(sweep, outcome.rows, outcome.meta));
    expect(table.getChild('overload_reason')!.toArray()).toEqual(rows.map((r) => r.overload_reason));
    expect(Array.from(table.getChild('overloaded_seeds')!.toArray())).toEqual([0, 0, 16, 16]);
    expect(formatSweepTable(sweep, outcome)).toContain(rows[3]!.overload_reason);
  }, 120_000);
});

describe('a hint over a range that overloads', () => {
  it('answers: the cheaper neighbour fails as overloaded', async () => {
    // mean service 100 ms at 35 jobs/s: 3 slots are 117% loaded, 4 are 88%
    const result = await runHints({
      problem: { ...mmcObject(), traffic: { rate: 35, duration: '200s', warmup: '60s' } },
      vary: { 'server.slots': { from: 1, to: 8, step: 1 } },
      cost: 'server.slots',
      // 8 seeds show the overload, not a pass: the passing design takes up to 64
      seeds: 8,
      maxSeeds: 64,
      engine: 'cpu',
    });
    expect(result.hints.map((h) => h.found.values)).toEqual([{ 'server.slots': 4 }]);
    const [neighbour] = result.hints[0]!.cheaper;
    expect(neighbour!.values).toEqual({ 'server.slots': 3 });
    expect(neighbour!.cases[0]!.why).toMatch(/^as-given: overloaded: queue at server passed its capacity \(280 jobs\) in 8 of 8 seeds, /);
  }, 120_000);
});

/** problems/mmc.yaml as the object a request would carry. */
function mmcObject(): Record<string, unknown> {
  return {
    id: 'mmc',
    goals: { success: 0.99, p99: '2s' },
    workload: { kind: 'job' },
    server: { replicas: 1, slots: 4, service: { dist: 'exponential', mean: '100ms' }, timeout: 0 },
    cases: ['as-given'],
  };
}
