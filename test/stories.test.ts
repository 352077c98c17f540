/**
 * The stories MODEL.md section 8 says the model must tell, on the two seed problems.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runProblem, closeEngines } from '../src/run/run.js';
import { loadProblem } from '../src/problem/parse.js';
import { closePool, problemFile, runCase, sum } from './support.js';
import type { CaseSummary } from '../src/model/summary.js';

afterAll(async () => {
  await closePool();
  await closeEngines();
});

const SEEDS = 32;

async function cases(name: string, sets: readonly string[] = []): Promise<readonly CaseSummary[]> {
  const problem = loadProblem(problemFile(name), sets);
  const { rows } = await runProblem(problem, { seeds: SEEDS, baseSeed: problem.seed, engine: 'cpu' });
  return rows;
}

describe('hot prefix (seed 1)', () => {
  it('as given: the owner replica takes 85-90% of the calls and most requests time out', async () => {
    const { results } = await runCase('hot-prefix', { seeds: SEEDS });
    const calls = new Float64Array(results[0]!.callsPerReplica.length);
    for (const r of results) r.callsPerReplica.forEach((c, i) => (calls[i]! += c));
    const total = calls.reduce((s, c) => s + c, 0);
    const share = Math.max(...calls) / total;
    expect(share).toBeGreaterThanOrEqual(0.85);
    expect(share).toBeLessThanOrEqual(0.9);
    expect(sum(results, 'timedOut') / sum(results, 'arrivals')).toBeGreaterThan(0.5);
  });

  it('as given it fails every case', async () => {
    for (const row of await cases('hot-prefix')) expect(row.passes, row.case).toBe(false);
  });

  // bounded affinity keeps up to 1.25x the mean load on the owner, so it needs more slots
  for (const [policy, slots] of [['least-loaded', 16], ['cache-aware', 16], ['bounded-affinity', 32]] as const) {
    it(`${policy} with ${slots} slots passes all four cases and keeps the hit rate high`, async () => {
      const rows = await cases('hot-prefix', [`router.policy=${policy}`, `gpu.slots=${slots}`]);
      expect(rows.map((r) => r.case)).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
      for (const row of rows) {
        expect(row.passes, `${policy} ${row.case}`).toBe(true);
        expect(row.kv_hit_rate).toBeGreaterThan(0.9);
      }
    });
  }

  it('the slow dependency is the case that sets the slot count', async () => {
    const rows = await cases('hot-prefix', ['router.policy=least-loaded', 'gpu.slots=8']);
    const failing = rows.filter((r) => !r.passes).map((r) => r.case);
    expect(failing).toEqual(['slow-dependency']);
  });
});

describe('coding agents (seed 2)', () => {
  it('as given (round robin): hit rate under 50% and it fails; affinity lifts it over 85% and cuts p99 at least threefold', async () => {
    const roundRobin = await cases('coding-agents');
    const affinity = await cases('coding-agents', ['router.policy=prefix-affinity']);
    const [rr, aff] = [roundRobin[0]!, affinity[0]!];
    expect(rr.case).toBe('as-given');
    expect(rr.kv_hit_rate).toBeLessThan(0.5);
    expect(rr.passes).toBe(false);
    expect(rr.p99_ms).toBeGreaterThan(30_000);
    expect(aff.kv_hit_rate).toBeGreaterThan(0.85);
    expect(aff.p99_ms * 3).toBeLessThanOrEqual(rr.p99_ms);
  });

  it('more replicas under round robin buy less than affinity on the same replicas', async () => {
    const [more] = await cases('coding-agents', ['gpu.replicas=12']);
    const [affinity] = await cases('coding-agents', ['router.policy=prefix-affinity']);
    expect(more!.p99_ms).toBeGreaterThan(affinity!.p99_ms);
  });
});
