/**
 * Bookkeeping the model must keep on every problem and case: every counted arrival resolves
 * exactly once (success or one failure cause), and Little's law holds in steady state.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadProblem } from '../src/problem/parse.js';
import { closePool, problemFile, runCase, sum } from './support.js';

const problems = readdirSync(fileURLToPath(new URL('../problems/', import.meta.url)))
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => f.replace(/\.yaml$/, ''));

afterAll(closePool);

describe('conservation: arrivals = successes + rejected + timed out + died', () => {
  for (const name of problems) {
    for (const scenario of loadProblem(problemFile(name)).cases) {
      it(`${name} / ${scenario.name}`, async () => {
        const { results } = await runCase(name, { caseName: scenario.name, seeds: 8 });
        for (const r of results) {
          expect(r.arrivals).toBeGreaterThan(0);
          expect(r.successes + r.rejected + r.timedOut + r.died).toBe(r.arrivals);
          expect(r.latency.reduce((s, c) => s + c, 0)).toBe(r.successes);
          expect(r.cachedTokens).toBeLessThanOrEqual(r.promptTokens);
        }
      });
    }
  }
});

describe("Little's law: time-average number in system = arrival rate x mean time in system", () => {
  const steady: [string, string[]][] = [
    ['mmc', []],
    ['hot-prefix', ['router.policy=least-loaded', 'gpu.slots=16']],
    ['coding-agents', ['router.policy=prefix-affinity', 'gpu.slots=4']],
    ['multi-tenant-prefixes', []],
  ];
  for (const [name, sets] of steady) {
    it(`${name} ${sets.join(' ')}`, async () => {
      const { results } = await runCase(name, { sets, seeds: 32 });
      const window = sum(results, 'measuredMicros');
      const inSystem = sum(results, 'inSystemArea') / window;
      const rate = sum(results, 'arrivals') / window;
      const meanSojourn = sum(results, 'sojournSum') / sum(results, 'arrivals');
      expect(Math.abs(inSystem / (rate * meanSojourn) - 1)).toBeLessThan(0.05);
    });
  }
});
