/**
 * The shipped problems' warm-ups are long enough (docs/model.md section 1): every case of every
 * problem in problems/ measures a window the steady-state test finds steady, at 32 seeds a case,
 * as given or at the design its story turns on. 32 seeds flag a warm-up too short, as the last
 * tests show; fewer flag an overloaded design by chance (coding agents' server-dies at 16).
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadProblem } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { unsteadyWarning } from '../src/run/format.js';
import type { CaseSummary } from '../src/model/summary.js';
import { problemFile } from './support.js';

const SEEDS = 32;

afterAll(closeEngines);

const problems = readdirSync(fileURLToPath(new URL('../problems/', import.meta.url)))
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => f.replace(/\.yaml$/, ''));

// where hot prefix's peak hour, near a load-spreading router's capacity, is slowest to settle
const LEAST_LOADED_8 = ['router.policy=least-loaded', 'gpu.slots=8'];

/**
 * The designs each problem is judged at: as given, but where the design as given is overloaded
 * at peak hour (its queue grows for as long as it runs, so it has no steady state to reach) the
 * one its story passes with. A new problem must be given its designs here.
 */
const DESIGNS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  'hot-prefix': [['router.policy=least-loaded', 'gpu.slots=10'], LEAST_LOADED_8],
  'coding-agents': [[]],
  mmc: [[]],
  'multi-tenant-prefixes': [[]],
  'small-kv-cache': [['router.policy=prefix-affinity']],
  'hung-replica': [[]],
  // as given, reservation's and incremental's peak hour both overloaded: the replicas that pass it
  'long-answers': [['gpu.replicas=8'], ['gpu.replicas=8', 'gpu.kv=reserve']],
  // co-located and split 3 + 5
  'long-prompts': [[], ['gpu.disaggregation.prefill=3']],
  'conversation-trace': [[]],
};

async function rows(name: string, sets: readonly string[], caseNames?: readonly string[]): Promise<readonly CaseSummary[]> {
  const problem = loadProblem(problemFile(name), sets);
  const { rows } = await runProblem(problem, { ...(caseNames ? { caseNames } : {}), seeds: SEEDS, maxSeeds: SEEDS, baseSeed: problem.seed, engine: 'cpu' });
  return rows;
}

describe('the shipped problems measure steady windows at their warm-ups', () => {
  it('every shipped problem has its designs here', () => {
    expect(Object.keys(DESIGNS).sort()).toEqual([...problems].sort());
  });

  for (const name of problems) {
    for (const sets of DESIGNS[name] ?? []) {
      it(`${name} ${sets.join(' ')}`.trim(), async () => {
        const found = await rows(name, sets);
        expect(found.length).toBeGreaterThan(0);
        expect(found.map(unsteadyWarning).filter((w) => w !== null)).toEqual([]);
      });
    }
  }

  // the warm-ups these problems had before the steady-state test asked for longer
  for (const [name, sets] of [
    ['hot-prefix', [...LEAST_LOADED_8, 'traffic.warmup=10s']],
    ['multi-tenant-prefixes', ['traffic.warmup=30s']],
  ] as const) {
    it(`${SEEDS} seeds flag ${name}'s peak hour at ${sets.join(' ')}`, async () => {
      const [peak] = await rows(name, sets, ['peak-hour']);
      expect(peak!.steady).toBe(false);
      expect(unsteadyWarning(peak!)).toMatch(/^peak-hour: measured window not in steady state /);
    });
  }
});
