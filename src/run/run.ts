/**
 * Runs a problem's cases over many seeds on an engine and aggregates each case
 * (MODEL.md section 6). The one place that decides which engine runs.
 */
import type { Problem } from '../model/problem.js';
import { compile } from '../engine/compile.js';
import { decodeResult } from '../engine/result.js';
import { selectCases } from '../problem/parse.js';
import { summarize } from '../report/summarize.js';
import { SimulationPool } from '../pool/pool.js';
import { ServesimError } from '../errors.js';
import { packageVersion } from '../cli/version.js';
import type { RunOptions, RunResult } from './types.js';
import type { CaseSummary } from '../model/summary.js';
import type { InstanceResult } from '../model/result.js';

let sharedPool: SimulationPool | undefined;

/** One pool per process, started on first use and closed by `closeEngines`. */
export function pool(): SimulationPool {
  sharedPool ??= new SimulationPool();
  return sharedPool;
}

export async function closeEngines(): Promise<void> {
  await sharedPool?.close();
  sharedPool = undefined;
}

export async function runProblem(problem: Problem, options: RunOptions): Promise<RunResult> {
  const scenarios = selectCases(problem, options.caseNames ?? 'all');
  if (options.engine === 'gpu') {
    throw new ServesimError('SERVESIM_NO_ADAPTER', 'the GPU engine is not available in this build; use --engine cpu');
  }
  const engine = pool();
  const total = scenarios.length * options.seeds;
  let finished = 0;
  let arrivalsDone = 0;
  const rows: CaseSummary[] = [];
  for (const scenario of scenarios) {
    if (options.signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
    const config = compile(problem, scenario);
    const expectedArrivals = problem.traffic.rate * scenario.rateScale * ((problem.traffic.warmup + problem.traffic.duration) / 1e6);
    const records = await engine.run(config, options.baseSeed, 0, options.seeds, {
      ...(options.signal ? { signal: options.signal } : {}),
      onProgress: (done) => {
        options.onProgress?.({ instancesDone: finished + done, instancesTotal: total, arrivalsDone: arrivalsDone + done * expectedArrivals });
      },
    });
    finished += options.seeds;
    arrivalsDone += options.seeds * expectedArrivals;
    const results: InstanceResult[] = [];
    for (let i = 0; i < options.seeds; i++) {
      results.push(decodeResult(config, records.subarray(i * config.resultWords, (i + 1) * config.resultWords)));
    }
    const timeout = problem.app?.timeout ?? problem.server?.timeout ?? 0;
    rows.push(summarize(scenario.name, problem.goals, problem.confidence, results, timeout));
  }
  return {
    problem,
    rows,
    meta: {
      problemId: problem.id,
      engine: 'pool',
      adapter: null,
      threads: engine.threads,
      seeds: options.seeds,
      baseSeed: options.baseSeed,
      servesimVersion: packageVersion(),
    },
  };
}
