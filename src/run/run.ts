/**
 * Runs a problem's cases over many seeds and aggregates each case (docs/model.md section 6):
 * the cases are one batch per shape (src/run/batches.ts).
 */
import type { Problem } from '../model/problem.js';
import { compile, type EngineConfig } from '../engine/compile.js';
import { decodeResult } from '../engine/result.js';
import { selectCases } from '../problem/parse.js';
import { configurationCost, summarize } from '../model/summarize.js';
import { ServesimError } from '../errors.js';
import { packageVersion } from '../version.js';
import type { RunMeta, RunOptions, RunResult } from './types.js';
import type { InstanceResult } from '../model/result.js';
import { runItems, type BatchUsed } from './batches.js';

export { closeEngines, pool } from './batches.js';

/** Each instance's decoded record, `config.resultWords` words each. */
export function decodeRecords(config: EngineConfig, records: Uint32Array): InstanceResult[] {
  const out: InstanceResult[] = [];
  for (let i = 0; i < records.length / config.resultWords; i++) {
    out.push(decodeResult(config, records.subarray(i * config.resultWords, (i + 1) * config.resultWords)));
  }
  return out;
}

/** What a run's meta says of the engines: the one that ran the largest batch, why, and every batch. */
export function engineMeta(batches: readonly BatchUsed[]): Pick<RunMeta, 'engine' | 'adapter' | 'threads' | 'choice' | 'note' | 'batches'> {
  const main = [...batches].sort((a, b) => b.instances - a.instances)[0];
  const notes = batches.flatMap((b) => (b.note === undefined ? [] : [b.note]));
  return {
    engine: main?.engine ?? 'pool',
    adapter: main?.adapter ?? null,
    ...(main?.threads === undefined ? {} : { threads: main.threads }),
    // each batch's own reason is in `batches`
    ...(main?.choice === undefined ? {} : { choice: main.choice }),
    ...(notes.length === 0 ? {} : { note: notes.join('; ') }),
    batches,
  };
}

export async function runProblem(problem: Problem, options: RunOptions): Promise<RunResult> {
  const scenarios = selectCases(problem, options.caseNames ?? 'all');
  if (options.signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
  const configs = scenarios.map((scenario) => compile(problem, scenario));
  const total = scenarios.length * options.seeds;
  // arrivals an instance of each case simulates, warm-up included, for a rate on the progress bar
  const perInstance = scenarios.map((s) => problem.traffic.rate * s.rateScale * ((problem.traffic.warmup + problem.traffic.duration) / 1e6));
  const meanArrivals = perInstance.reduce((a, b) => a + b, 0) / Math.max(1, perInstance.length);
  const records: Uint32Array[] = [];
  const batches = await runItems(configs.map((config) => ({ config, seed: options.baseSeed, seeds: options.seeds })), {
    engine: options.engine,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onProgress: (done) => options.onProgress?.({ instancesDone: done, instancesTotal: total, arrivalsDone: done * meanArrivals }),
    onItem: (item, r) => (records[item] = r),
  });
  const timeout = problem.app?.timeout ?? problem.server?.timeout ?? 0;
  const cost = configurationCost(problem);
  const rows = scenarios.map((scenario, i) => summarize(scenario.name, problem.goals, problem.confidence, decodeRecords(configs[i]!, records[i]!), timeout, cost));
  return {
    problem,
    rows,
    meta: {
      problemId: problem.id,
      ...engineMeta(batches),
      seeds: options.seeds,
      baseSeed: options.baseSeed,
      servesimVersion: packageVersion(),
    },
  };
}
