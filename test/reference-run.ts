/**
 * `servesim` commands in this process on the reference engine: the rows every engine gives (their
 * records agree bit for bit, docs/engines.md), without the worker pool or a build.
 */
import { main } from '../src/cli/program.js';
import type { CliIo } from '../src/cli/run-command.js';
import { compile } from '../src/engine/compile.js';
import { runReference } from '../src/engine/reference.js';
import type { Problem } from '../src/model/problem.js';
import { configurationCost, summarize } from '../src/model/summarize.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import type { RunOptions, RunResult } from '../src/run/types.js';
import { decodeAll } from './support.js';

/** A `runProblem` that runs each case's seeds on the reference engine; `onResult` sees each run. */
export function referenceRunner(onResult: (result: RunResult) => void = () => undefined): (problem: Problem, options: RunOptions) => Promise<RunResult> {
  return async (problem, options) => {
    const rows = selectCases(problem, options.caseNames ?? 'all').map((scenario) => {
      const config = compile(problem, scenario);
      const results = decodeAll(config, runReference(config, options.baseSeed, 0, options.seeds));
      return summarize(scenario.name, problem.goals, problem.confidence, results, problem.app?.timeout ?? problem.server?.timeout ?? 0, configurationCost(problem));
    });
    const result: RunResult = {
      problem,
      rows,
      meta: { problemId: problem.id, engine: 'reference', adapter: null, batches: [], seeds: options.seeds, maxSeeds: options.seeds, baseSeed: options.baseSeed, servesimVersion: '', trace: null },
    };
    onResult(result);
    return result;
  };
}

/** `servesim ARGS` in this process on the reference engine: its exit status and what it wrote. */
export async function runOnReference(args: readonly string[], onResult?: (result: RunResult) => void): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io = {
    stdout: { write: (t: string) => (out += t) },
    stderr: { write: (t: string) => ((err += t), true), isTTY: false },
    onInterrupt: () => () => undefined,
  } as unknown as CliIo;
  const code = await main(['node', 'servesim', ...args], { loadProblem, selectCases, runProblem: referenceRunner(onResult) }, io);
  return { code, out, err };
}
