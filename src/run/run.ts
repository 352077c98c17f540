/**
 * Runs a problem's cases over many seeds on an engine and aggregates each case
 * (docs/model.md section 6). The one place that decides which engine runs.
 */
import type { Problem } from '../model/problem.js';
import { compile, type EngineConfig } from '../engine/compile.js';
import { acquireGpu, probeGpu, type GpuContext } from '../gpu/adapter.js';
import { runGpuWithFallback } from '../gpu/engine.js';
import { decodeResult } from '../engine/result.js';
import { selectCases } from '../problem/parse.js';
import { summarize } from '../model/summarize.js';
import { defaultPoolThreads, SimulationPool } from '../pool/pool.js';
import { decideAuto, loadCrossovers, type CrossoverTable, type EngineDecision } from './crossover.js';
import { ServesimError } from '../errors.js';
import { packageVersion } from '../version.js';
import type { RunOptions, RunResult } from './types.js';
import type { CaseSummary } from '../model/summary.js';
import type { InstanceResult } from '../model/result.js';

let sharedPool: SimulationPool | undefined;
let sharedGpu: Promise<GpuContext> | undefined;
let crossovers: CrossoverTable | undefined;

/** One pool per process, started on first use and closed by `closeEngines`. */
export function pool(): SimulationPool {
  sharedPool ??= new SimulationPool();
  return sharedPool;
}

/** One WebGPU device per process, acquired on first use of `--engine gpu`. */
function gpu(): Promise<GpuContext> {
  sharedGpu ??= acquireGpu();
  sharedGpu.catch(() => (sharedGpu = undefined));
  return sharedGpu;
}

export async function closeEngines(): Promise<void> {
  await sharedPool?.close();
  sharedPool = undefined;
  const device = sharedGpu;
  sharedGpu = undefined;
  (await device?.catch(() => undefined))?.destroy();
}

type Engine = (config: EngineConfig, options: RunOptions, onDone: (done: number) => void) => Promise<{ records: Uint32Array; note?: string }>;

/** What runs a batch of `seeds` instances; `auto` goes by the benchmark's crossover. */
async function decide(options: RunOptions): Promise<EngineDecision | { engine: 'gpu' | 'pool'; why?: undefined }> {
  if (options.engine !== 'auto') return { engine: options.engine === 'gpu' ? 'gpu' : 'pool' };
  crossovers ??= loadCrossovers();
  return decideAuto(options.seeds, sharedPool?.threads ?? defaultPoolThreads(), crossovers, () => probeGpu());
}

function gpuEngine(ctx: GpuContext): Engine {
  return async (config, o, onDone) => {
    const outcome = await runGpuWithFallback(ctx, config, o.baseSeed, 0, o.seeds, { ...(o.signal ? { signal: o.signal } : {}), onProgress: onDone });
    return { records: outcome.records, ...(outcome.note === undefined ? {} : { note: outcome.note }) };
  };
}

function poolEngine(): Engine {
  const engine = pool();
  return async (config, o, onDone) => ({
    records: await engine.run(config, o.baseSeed, 0, o.seeds, { ...(o.signal ? { signal: o.signal } : {}), onProgress: onDone }),
  });
}

export async function runProblem(problem: Problem, options: RunOptions): Promise<RunResult> {
  const scenarios = selectCases(problem, options.caseNames ?? 'all');
  const decision = await decide(options);
  let why = decision.why;
  let run: Engine;
  let adapter: string | null = null;
  if (decision.engine === 'gpu') {
    let ctx: GpuContext | null = null;
    try {
      ctx = await gpu();
    } catch (err) {
      // `auto` never fails for want of a device it was not promised
      if (options.engine === 'gpu') throw err;
      why = `${why}; then the CPU pool, as opening the device failed: ${(err as Error).message}`;
    }
    adapter = ctx?.adapterName ?? null;
    run = ctx === null ? poolEngine() : gpuEngine(ctx);
  } else {
    run = poolEngine();
  }
  const notes: string[] = [];
  const total = scenarios.length * options.seeds;
  let finished = 0;
  let arrivalsDone = 0;
  const rows: CaseSummary[] = [];
  for (const scenario of scenarios) {
    if (options.signal?.aborted) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
    const config = compile(problem, scenario);
    const expectedArrivals = problem.traffic.rate * scenario.rateScale * ((problem.traffic.warmup + problem.traffic.duration) / 1e6);
    const { records, note } = await run(config, options, (done) => {
      options.onProgress?.({ instancesDone: finished + done, instancesTotal: total, arrivalsDone: arrivalsDone + done * expectedArrivals });
    });
    if (note !== undefined) notes.push(`${scenario.name}: ${note}`);
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
      engine: adapter === null ? 'pool' : 'gpu',
      adapter,
      ...(adapter === null ? { threads: pool().threads } : {}),
      ...(notes.length === 0 ? {} : { note: notes.join('; ') }),
      ...(why === undefined ? {} : { choice: why }),
      seeds: options.seeds,
      baseSeed: options.baseSeed,
      servesimVersion: packageVersion(),
    },
  };
}
