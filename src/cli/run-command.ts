/**
 * `servesim run PROBLEM...`: simulate each problem's cases and print one table (or JSON, CSV)
 * per problem. Failing a goal is a result, not an error: the exit status is 0 either way,
 * unless `--check` asks for the verdicts as the status (for scripts and CI).
 */
import type { Problem, Scenario } from '../model/problem.js';
import { describeTraceSummary, traceSummary, type TraceSummary } from '../model/trace.js';
import { pointVerdict, type SeedRange } from '../model/verdict.js';
import { floorWarning } from '../problem/profiles.js';
import { formatCsv, formatJson, formatTable, unsteadyWarning } from '../run/format.js';
import type { RunMeta, RunOptions, RunResult } from '../run/types.js';
import { describeBatches } from '../run/batches.js';
import { formatVllmBench } from '../run/vllm-bench.js';
import type { SeedRecord } from '../run/seed-records.js';
import type { RequestRecord } from '../run/request-records.js';
import { REQUEST_TABLE } from '../sweep/table.js';
import { DEFAULT_REQUEST_SEEDS, EXIT, seedOptions, type RunFormat, type SimulationOptionValues } from './options.js';
import { readProblemArgument } from './problem-argument.js';
import { createProgressReporter, type ProgressStream } from './progress.js';
import { outputProblem } from './output-file.js';
import { checkSeedRows, runRecordTable, writeRecordsOut, writeSeedsOut } from './seeds-out.js';

/** What the commands need from the rest of servesim; main.ts passes the real modules (lazy.ts). */
export interface CliDeps {
  loadProblem(path: string, overrides?: readonly string[]): Problem | Promise<Problem>;
  selectCases(problem: Problem, names: readonly string[] | 'all'): readonly Scenario[] | Promise<readonly Scenario[]>;
  runProblem(problem: Problem, options: RunOptions): Promise<RunResult>;
}

/** Where the commands write, and how they hear Ctrl-C; main.ts passes the process's. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: ProgressStream;
  /** Calls `handler` on Ctrl-C until the returned function is called. */
  onInterrupt(handler: () => void): () => void;
}

/** `run`'s options: the simulation's, its formats, `--check`, `--seeds-out` and `--requests-out`. */
export type RunOptionValues = Omit<SimulationOptionValues, 'format'> & {
  readonly format: RunFormat;
  readonly check?: boolean;
  readonly seedsOut?: string;
  readonly requestsOut?: string;
  readonly requestsSeeds?: number;
};

/** Runs the `run` command; resolves to the exit status. Input errors are thrown. */
export async function runCommand(
  files: readonly string[],
  opts: RunOptionValues,
  deps: CliDeps,
  io: CliIo,
): Promise<number> {
  // load and check every file before simulating any: a typo in the last one fails at once
  const seeds = seedOptions(opts.seeds, opts.maxSeeds);
  const plans: { problem: Problem; caseNames: readonly string[] | undefined; cases: number }[] = [];
  for (const file of files) {
    const problem = await readProblemArgument(file, (path) => deps.loadProblem(path, opts.set ?? []));
    const wanted = opts.case ?? 'all';
    const selected = await deps.selectCases(problem, wanted);
    plans.push({ problem, caseNames: wanted === 'all' ? undefined : selected.map((s) => s.name), cases: selected.length });
  }
  const { seedsOut } = opts;
  if (seedsOut !== undefined) {
    if (plans.length > 1) return usage(io, `--seeds-out writes one problem's seeds, and ${plans.length} problems were named: run them one at a time`);
    const { cases } = plans[0]!;
    checkSeedRows(cases * seeds.maxSeeds, `${cases} cases x ${seeds.maxSeeds.toLocaleString('en')} seeds`);
    const problem = outputProblem('--seeds-out', seedsOut);
    if (problem !== null) return usage(io, problem);
  }
  const { requestsOut } = opts;
  const requestsSeeds = opts.requestsSeeds ?? DEFAULT_REQUEST_SEEDS;
  if (requestsOut === undefined && opts.requestsSeeds !== undefined) return usage(io, '--requests-seeds says how many seeds --requests-out records: name the file too');
  if (requestsOut !== undefined) {
    if (plans.length > 1) return usage(io, `--requests-out writes one problem's requests, and ${plans.length} problems were named: run them one at a time`);
    // every case runs its first --seeds seeds, whatever --seeds auto adds
    if (requestsSeeds > seeds.seeds) return usage(io, `--requests-seeds ${requestsSeeds} is more than the ${seeds.seeds} seeds each case runs (--seeds)`);
    const problem = outputProblem('--requests-out', requestsOut);
    if (problem !== null) return usage(io, problem);
  }

  const controller = new AbortController();
  const release = io.onInterrupt(() => controller.abort());
  const results: RunResult[] = [];
  let seedRecords: readonly SeedRecord[] = [];
  const onSeedRecords = seedsOut === undefined ? undefined : (records: readonly SeedRecord[]): void => void (seedRecords = records);
  let requestRecords: readonly RequestRecord[] = [];
  const records: Pick<RunOptions, 'onSeedRecords' | 'requestRecords'> = {
    ...(onSeedRecords === undefined ? {} : { onSeedRecords }),
    ...(requestsOut === undefined ? {} : { requestRecords: { seeds: requestsSeeds, onRecords: (made) => void (requestRecords = made) } }),
  };
  try {
    for (const [i, { problem, caseNames }] of plans.entries()) {
      const result = await simulate(problem, caseNames, seeds, opts, deps, io, controller.signal, records);
      if (controller.signal.aborted) break;
      results.push(result);
      writeResult(result, i, plans.length, opts, io);
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    release();
  }

  if (controller.signal.aborted) {
    io.stderr.write('cancelled\n');
    return EXIT.cancelled;
  }
  if (opts.format === 'json') {
    io.stdout.write(formatJson(results.length === 1 && files.length === 1 ? results[0]! : results));
  }
  if (seedsOut !== undefined) {
    const { subject, rows, meta } = runRecordTable(results[0]!, seedRecords);
    const failure = await writeSeedsOut(seedsOut, subject, rows, meta);
    if (failure !== null) return usage(io, failure);
    io.stderr.write(`wrote ${rows.length} rows (a row a seed) to ${seedsOut}\n`);
  }
  if (requestsOut !== undefined) {
    const { subject, rows, meta } = runRecordTable(results[0]!, requestRecords);
    const failure = await writeRecordsOut('--requests-out', REQUEST_TABLE, requestsOut, subject, rows, meta);
    if (failure !== null) return usage(io, failure);
    const which = requestsSeeds === 1 ? 'seed 0' : `seeds 0 to ${requestsSeeds - 1}`;
    io.stderr.write(`wrote ${rows.length} rows (a row a counted arrival or model call of ${which}, run again on the reference engine) to ${requestsOut}\n`);
  }
  return opts.check === true ? checkStatus(results) : EXIT.ok;
}

/**
 * One problem's cases run (all of them without `caseNames`), with its trace, floor warning and
 * progress on stderr, and after it the engine that ran; for `run` and `compare`.
 */
export async function simulate(
  problem: Problem,
  caseNames: readonly string[] | undefined,
  seeds: SeedRange,
  opts: Pick<SimulationOptionValues, 'seed' | 'engine'>,
  deps: CliDeps,
  io: CliIo,
  signal: AbortSignal,
  records: Pick<RunOptions, 'onSeedRecords' | 'requestRecords'> = {},
): Promise<RunResult> {
  if (problem.traffic.trace !== null) io.stderr.write(traceLine(traceSummary(problem.traffic.trace)));
  const profile = problem.gpu?.profile;
  const floor = profile === undefined ? null : floorWarning(profile);
  if (floor !== null) io.stderr.write(`servesim: warning: ${floor}\n`);
  const progress = createProgressReporter(io.stderr, { label: problem.id });
  let result: RunResult;
  try {
    result = await deps.runProblem(problem, {
      ...(caseNames === undefined ? {} : { caseNames }),
      ...seeds,
      baseSeed: opts.seed ?? problem.seed,
      engine: opts.engine,
      signal,
      onProgress: progress.onProgress,
      ...records,
    });
  } finally {
    progress.stop();
  }
  if (signal.aborted) return result;
  for (const row of result.rows) {
    const unsteady = unsteadyWarning(row);
    if (unsteady !== null) io.stderr.write(`servesim: warning: ${problem.id}: ${unsteady}\n`);
  }
  io.stderr.write(`engine: ${describeEngine(result.meta)}\n`);
  // how the cases were batched, why auto chose the engine, and what ran elsewhere than asked
  for (const line of [describeBatches(result.meta.batches), result.meta.choice, result.meta.note]) if (line !== undefined) io.stderr.write(`  ${line}\n`);
  return result;
}

/** A usage or output error: its message on stderr, exit status 2. */
function usage(io: CliIo, message: string): number {
  io.stderr.write(`servesim: ${message}\n`);
  return EXIT.usage;
}

/** `--check`: 1 when any case FAILs, else 3 when any is UNDECIDED, else 0. */
function checkStatus(results: readonly RunResult[]): number {
  const verdict = pointVerdict(results.flatMap((r) => r.rows.map((row) => row.verdict)));
  return verdict === 'FAIL' ? EXIT.checkFailed : verdict === 'UNDECIDED' ? EXIT.checkUndecided : EXIT.ok;
}

/** Tables and CSV stream out per problem; JSON waits for all (one document). */
function writeResult(
  result: RunResult,
  index: number,
  count: number,
  opts: RunOptionValues,
  io: CliIo,
): void {
  const { problem, rows, meta } = result;
  if (opts.format === 'table') {
    if (index > 0) io.stdout.write('\n');
    io.stdout.write(
      formatTable(rows, problem.goals, {
        ...meta,
        engine: describeEngine(meta),
        adapter: null,
        title: problem.title,
        confidence: problem.confidence,
      }),
    );
  } else if (opts.format === 'csv') {
    // several problems share one CSV: a leading problem column, one header
    io.stdout.write(
      formatCsv(rows, count > 1 ? { problem: problem.id, header: index === 0 } : {}),
    );
  } else if (opts.format === 'vllm-bench') {
    io.stdout.write(formatVllmBench(result));
  }
}

/** A trace as loaded, the line stderr shows before simulating it (run, sweep, hint). */
export function traceLine(summary: TraceSummary): string {
  return `trace ${describeTraceSummary(summary)}\n`;
}

/** "pool (2 threads)", "gpu (NVIDIA H200)": what ran, for stderr and the table header. */
export function describeEngine(meta: RunMeta): string {
  const details: string[] = [];
  const { threads } = meta;
  if (threads !== undefined) details.push(`${threads} thread${threads === 1 ? '' : 's'}`);
  if (meta.adapter) details.push(meta.adapter);
  return details.length === 0 ? meta.engine : `${meta.engine} (${details.join(', ')})`;
}
