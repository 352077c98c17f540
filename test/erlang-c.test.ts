/**
 * An M/M/c queue (docs/model.md section 8): problems/mmc.yaml (c = 4 servers, mean service 100 ms)
 * at three loads, against Erlang C's closed form for the waiting probability, the mean wait
 * and the 99th percentile of the time in system. 600 seeds x ~6,000 jobs keep the standard
 * error of the mean wait under 1%, so a 3% miss is a model error, not luck.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { quantile } from '../src/model/histogram.js';
import { summarize } from '../src/model/summarize.js';
import { closePool, pooledLatency, runCase } from './support.js';

const SERVERS = 4;
const MU = 10; // per second: mean service 100 ms

/** Erlang C: probability that an arrival waits, with offered load a = lambda / mu. */
function erlangC(c: number, a: number): number {
  let term = 1;
  let below = 1;
  for (let k = 1; k < c; k++) {
    term *= a / k;
    below += term;
  }
  const top = (term * a) / c / (1 - a / c);
  return top / (below + top);
}

/** The q-quantile of the sojourn time W + S: S ~ Exp(mu), W = 0 or Exp(c mu - lambda). */
function sojournQuantile(c: number, lambda: number, q: number): number {
  const C = erlangC(c, lambda / MU);
  const theta = c * MU - lambda;
  const tail = (t: number): number =>
    (1 - C) * Math.exp(-MU * t) + (C * (theta * Math.exp(-MU * t) - MU * Math.exp(-theta * t))) / (theta - MU);
  let lo = 0;
  let hi = 100;
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (tail(mid) > 1 - q) lo = mid;
    else hi = mid;
  }
  return lo;
}

afterAll(closePool);

describe('M/M/c against Erlang C', () => {
  for (const rho of [0.5, 0.8, 0.9]) {
    const lambda = rho * SERVERS * MU;
    it(`rho = ${rho}: P(wait), mean wait, p99 sojourn and the server's utilization within 3%`, async () => {
      const { problem, results } = await runCase('mmc', { sets: [`traffic.rate=${lambda}`], seeds: 600 });
      const C = erlangC(SERVERS, lambda / MU);
      const meanWait = C / (SERVERS * MU - lambda);
      // the output row's per-component columns, as a user reads them
      const row = summarize('as-given', problem.goals, problem.confidence, results, 0);
      const p99 = quantile(pooledLatency(results), 0.99) / 1e6;
      expect(Math.abs(row.server_wait_probability / C - 1)).toBeLessThan(0.03);
      expect(Math.abs(row.server_wait_mean_ms / 1000 / meanWait - 1)).toBeLessThan(0.03);
      expect(Math.abs(p99 / sojournQuantile(SERVERS, lambda, 0.99) - 1)).toBeLessThan(0.03);
      // utilisation is lambda / (c mu)
      expect(Math.abs(row.server_utilization / rho - 1)).toBeLessThan(0.03);
      // a job workload has no other component
      expect(row.gpu_utilization).toBeNaN();
      expect(row.longest_queue_at).toBe('server');
    });
  }
});
