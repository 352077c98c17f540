/**
 * `servesim sweep FILE`, or `servesim sweep PROBLEM --vary PATH=RANGE...` (a grid without a
 * file, --vary as `hint` takes it): a problem over a grid of settings, one row per (grid point,
 * case), as a table, JSON, CSV, Arrow or Parquet. Ctrl-C, SIGTERM, SIGHUP or a failure part way
 * keeps every finished point: they are written first (an Arrow or Parquet file says which points
 * it lacks), then the points that did not finish are named on stderr. Output paths are checked
 * before any work, and written through a temporary file renamed into place, so a failed write
 * leaves the previous file whole and the results in a file it names.
 */
import { extname } from 'node:path';
import cliProgress from 'cli-progress';
import { ServesimError, type FieldIssue } from '../errors.js';
import { traceSummary } from '../model/trace.js';
import { renderReport } from '../report/html.js';
import type { EngineChoice } from '../run/types.js';
import { describeBatches } from '../run/batches.js';
import { unsteadyWarning } from '../run/format.js';
import { sweepToArrow } from '../sweep/arrow.js';
import { describePoint, formatSweepCsv, formatSweepJson, formatSweepTable } from '../sweep/format.js';
import { sweepToParquet } from '../sweep/parquet.js';
import { runSweep, sweepTraces, type SweepOutcome, type SweepProgress, type SweepRunOptions } from '../sweep/run.js';
import { loadSweep, sweepFromObject, type GridPoint, type GridSize, type Sweep, type SweepParseOptions } from '../sweep/spec.js';
import type { SeedRow } from '../sweep/table.js';
import type { SeedRecord } from '../run/seed-records.js';
import { EXIT, EXTENSIONS, FORMAT_OF_EXTENSION, SWEEP_FORMATS, type SweepFormat, type Vary } from './options.js';
import { outputProblem, writeOutput } from './output-file.js';
import { problemWithOverrides } from './problem-argument.js';
import { compact, duration, TimeLeft, type ProgressStream } from './progress.js';
import { traceLine, type CliIo } from './run-command.js';
import { checkSeedRows, writeSeedsOut } from './seeds-out.js';

/** Unfinished points listed on stderr; the JSON output lists them all. */
const LISTED_UNFINISHED = 20;

/** The sweep runner; tests wrap it to stop a sweep part way, the CLI uses the real one. */
export interface SweepDeps {
  runSweep(sweep: Sweep, options?: SweepRunOptions): Promise<SweepOutcome>;
}

/** The commands' io, with a stdout that takes bytes (Arrow, Parquet) and says if it is a terminal. */
export interface SweepIo extends CliIo {
  readonly stdout: { write(data: string | Uint8Array): unknown; readonly isTTY?: boolean };
}

export interface SweepOptionValues {
  readonly out?: string;
  readonly report?: string;
  readonly format?: SweepFormat;
  readonly seeds?: number | 'auto';
  readonly maxSeeds?: number;
  readonly engine?: EngineChoice;
  readonly maxInstances: number;
  /** The grid without a file: FILE is then a problem (a file or a shipped id), as `hint` takes it. */
  readonly vary?: Vary;
  /** With `vary`: the problem's fields changed, and its cases (all by default). */
  readonly set?: readonly string[];
  readonly case?: readonly string[] | 'all';
  /** Also the per-seed table, to this file (seeds-out.ts). */
  readonly seedsOut?: string;
}

/** Runs the `sweep` command; resolves to the exit status. Input errors are thrown. */
export async function sweepCommand(
  file: string,
  opts: SweepOptionValues,
  deps: Partial<SweepDeps>,
  io: SweepIo,
): Promise<number> {
  if (opts.vary === undefined && (opts.set !== undefined || opts.case !== undefined)) {
    return usage(io, `${opts.set === undefined ? '--case' : '--set'} goes with --vary (a problem and a grid); a sweep file states its problem's fields and its cases`);
  }
  const format = opts.format ?? (opts.out === undefined ? 'table' : FORMAT_OF_EXTENSION[extname(opts.out).toLowerCase()]);
  if (format === undefined) {
    return usage(io, `--out ${opts.out}: cannot tell the format from its extension; name it ${EXTENSIONS}, or add --format ${SWEEP_FORMATS.join('|')}`);
  }
  if ((format === 'arrow' || format === 'parquet') && opts.out === undefined && io.stdout.isTTY === true) {
    return usage(io, `${format === 'arrow' ? 'an Arrow stream' : 'Parquet'} is binary: write it to a file with --out results.${format}, or pipe stdout to a program`);
  }
  const { seedsOut } = opts;
  // a sweep can take hours: find an unwritable destination before, not after
  for (const [flag, path] of [['--out', opts.out], ['--report', opts.report], ['--seeds-out', seedsOut]] as const) {
    const problem = path === undefined ? null : outputProblem(flag, path);
    if (problem !== null) return usage(io, problem);
  }

  const parse: SweepParseOptions = {
    maxInstances: opts.maxInstances,
    ...(opts.seeds === undefined ? {} : { seeds: opts.seeds }),
    ...(opts.maxSeeds === undefined ? {} : { maxSeeds: opts.maxSeeds }),
    ...(opts.engine === undefined ? {} : { engine: opts.engine }),
    // a row a seed: counted, as the instances are, before the grid's points are listed
    ...(seedsOut === undefined ? {} : {
      checkSize: ({ points, cases, seeds, instances }: GridSize) =>
        checkSeedRows(instances, `${points.toLocaleString('en')} grid points x ${cases} cases x ${seeds.toLocaleString('en')} seeds`),
    }),
  };
  const sweep = opts.vary === undefined ? loadSweep(file, parse) : gridSweep(file, opts.vary, opts, parse);

  for (const trace of sweepTraces(sweep)) io.stderr.write(traceLine(traceSummary(trace)));

  const controller = new AbortController();
  // held until the table is written: a signal after the last point finishes the writing rather
  // than killing the process part way through it
  const release = io.onInterrupt(() => controller.abort());
  try {
    const progress = createSweepProgress(io.stderr, sweep.id);
    const seedRows: SeedRow[][] = [];
    const onSeedRecords = (point: GridPoint, records: readonly SeedRecord[]): void => void (seedRows[point.index] = records.map((record) => ({ point, record })));
    let outcome: SweepOutcome;
    try {
      outcome = await (deps.runSweep ?? runSweep)(sweep, { signal: controller.signal, onProgress: progress.onProgress, ...(seedsOut === undefined ? {} : { onSeedRecords }) });
    } finally {
      progress.stop();
    }
    // by grid point, in the grid's order (points finish in the engines')
    return await writeOutcome(sweep, outcome, format, opts, io, seedRows.flat());
  } finally {
    release();
  }
}

/**
 * The sweep of `PROBLEM --vary ...`, as a sweep file with that problem and grid would state it
 * (its seeds and engine defaults included); the problem is found as `hint` finds it, relative
 * paths from the working directory.
 */
function gridSweep(problem: string, vary: Vary, opts: Pick<SweepOptionValues, 'set' | 'case'>, parse: SweepParseOptions): Sweep {
  try {
    const raw = {
      problem: opts.set === undefined ? problem : problemWithOverrides(problem, opts.set),
      grid: vary,
      cases: opts.case === undefined || opts.case === 'all' ? 'all' : [...opts.case],
    };
    return sweepFromObject(raw, { ...parse, baseDir: process.cwd() });
  } catch (err) {
    if (!(err instanceof ServesimError)) throw err;
    // a sweep file's `problem` is no problem field: the file is a sweep, not the problem --vary varies
    if (err.code === 'SERVESIM_PROBLEM_INVALID' && (err as { issues?: readonly FieldIssue[] }).issues?.some((i) => i.path === 'problem')) {
      throw new ServesimError('SERVESIM_SWEEP_INVALID', `${problem} is a sweep file, which states its own grid: with --vary, name a problem file or a shipped problem's id`, '--vary');
    }
    // the sweep's fields are the command line's options here
    const flag = err.path === undefined ? undefined : FLAG_OF_FIELD.get(err.path);
    if (flag === undefined) throw err;
    throw new ServesimError(err.code, err.message.slice(`${err.path}: `.length), flag);
  }
}

/** The sweep fields `gridSweep` fills from options, by the option. */
const FLAG_OF_FIELD: ReadonlyMap<string, string> = new Map([['grid', '--vary'], ['cases', '--case']]);

/** What a sweep leaves: its engine, its table and report, what did not finish; the exit status. */
async function writeOutcome(sweep: Sweep, outcome: SweepOutcome, format: SweepFormat, opts: SweepOptionValues, io: SweepIo, seedRows: readonly SeedRow[]): Promise<number> {
  const { meta } = outcome;
  if (meta.engine !== null) io.stderr.write(`engine: ${meta.engine}${meta.adapter ? ` (${meta.adapter})` : ''}\n`);
  for (const line of [meta.batches.length === 0 ? undefined : describeBatches(meta.batches), meta.choice, meta.note]) if (line !== undefined) io.stderr.write(`  ${line}\n`);
  const failures: string[] = [];
  if (outcome.finished.length > 0) {
    const written = [
      writeResults(sweep, outcome, format, opts.out, io),
      opts.report === undefined ? null : writeOutput('--report', opts.report, renderReport({ sweep, outcome })),
      opts.seedsOut === undefined ? null : await writeSeeds(sweep, outcome, opts.seedsOut, seedRows, io),
    ];
    for (const failure of written) if (failure !== null) failures.push(failure);
  }
  for (const { point, summary } of outcome.rows) {
    const unsteady = unsteadyWarning(summary);
    if (unsteady !== null) io.stderr.write(`servesim: warning: ${describePoint(sweep, point)}: ${unsteady}\n`);
  }
  if (outcome.unfinished.length > 0) reportUnfinished(sweep, outcome, io);
  for (const failure of failures) io.stderr.write(`servesim: ${failure}\n`);
  if (outcome.cancelled) {
    io.stderr.write('cancelled\n');
    return EXIT.cancelled;
  }
  // main() prints it: a ServesimError by its message (status 2), anything else with its stack (1)
  if (outcome.error !== null) throw outcome.error;
  return failures.length > 0 ? EXIT.usage : EXIT.ok;
}

function usage(io: SweepIo, message: string): number {
  io.stderr.write(`servesim: ${message}\n`);
  return EXIT.usage;
}

/** Why the sweep stopped early, for the Arrow and Parquet metadata; undefined when it did not. */
function stoppedBecause(outcome: SweepOutcome): string | undefined {
  if (outcome.cancelled) return 'cancelled';
  return outcome.error === null ? undefined : `stopped by an error: ${outcome.error.message}`;
}

function render(sweep: Sweep, outcome: SweepOutcome, format: SweepFormat, out: string | undefined): string | Uint8Array {
  const stopped = stoppedBecause(outcome);
  switch (format) {
    case 'arrow': {
      // the stream format for pipes and `.arrows`; the file format (with its footer) for files
      const ipc = out === undefined || extname(out).toLowerCase() === '.arrows' ? 'stream' : 'file';
      return sweepToArrow(sweep, outcome.rows, outcome.meta, { format: ipc, ...(stopped === undefined ? {} : { stopped }) });
    }
    case 'parquet':
      return sweepToParquet(sweep, outcome.rows, outcome.meta, stopped);
    case 'json':
      return formatSweepJson(sweep, outcome);
    case 'csv':
      return formatSweepCsv(sweep, outcome);
    case 'table':
      return formatSweepTable(sweep, outcome);
  }
}

/** Writes the per-seed table; returns why that failed, or null. */
async function writeSeeds(sweep: Sweep, outcome: SweepOutcome, path: string, rows: readonly SeedRow[], io: SweepIo): Promise<string | null> {
  const failure = await writeSeedsOut(path, sweep, rows, outcome.meta, stoppedBecause(outcome));
  if (failure === null) io.stderr.write(`wrote ${rows.length} rows (a row a seed) to ${path}\n`);
  return failure;
}

/** Writes the results; returns why that failed, or null. */
function writeResults(sweep: Sweep, outcome: SweepOutcome, format: SweepFormat, out: string | undefined, io: SweepIo): string | null {
  const data = render(sweep, outcome, format, out);
  if (out === undefined) {
    io.stdout.write(data);
    return null;
  }
  const failure = writeOutput('--out', out, data);
  const points = outcome.finished.length;
  if (failure === null) io.stderr.write(`wrote ${outcome.rows.length} rows (${points} grid point${points === 1 ? '' : 's'}) to ${out}\n`);
  return failure;
}

function reportUnfinished(sweep: Sweep, outcome: SweepOutcome, io: SweepIo): void {
  const { unfinished } = outcome;
  const total = outcome.finished.length + unfinished.length;
  const why = outcome.cancelled ? 'cancelled' : 'stopped by the error below';
  const lines = [`${unfinished.length} of ${total} grid points did not finish (${why}):`];
  for (const i of unfinished.slice(0, LISTED_UNFINISHED)) lines.push(`  ${i}: ${describePoint(sweep, sweep.points[i]!)}`);
  if (unfinished.length > LISTED_UNFINISHED) lines.push(`  … and ${unfinished.length - LISTED_UNFINISHED} more`);
  io.stderr.write(lines.join('\n') + '\n');
}

interface SweepProgressReporter {
  readonly onProgress: (progress: SweepProgress) => void;
  stop(): void;
}

/**
 * Grid points done, instances per second and time left on stderr: a bar on a terminal, a line
 * every few seconds in logs, nothing for a sweep that ends within a second (as progress.ts
 * does for `run`, whose bar counts instances and arrivals instead).
 */
export function createSweepProgress(
  stream: ProgressStream,
  label: string,
  now: () => number = Date.now,
): SweepProgressReporter {
  const started = now();
  const timeLeft = new TimeLeft(now);
  let bar: cliProgress.SingleBar | null = null;
  let last: SweepProgress | null = null;
  let lastLine = Number.NEGATIVE_INFINITY;
  let shown = false;
  let stopped = false;

  const draw = (p: SweepProgress, final: boolean): void => {
    const elapsed = now() - started;
    const left = timeLeft.ms(p);
    const stats = {
      label,
      points: `${p.pointsDone}/${p.pointsTotal}`,
      rate: compact(p.instancesDone / Math.max(elapsed / 1000, 1e-3)),
      // not `eta`: cli-progress fills that token itself, from the bar's own count
      left: left === null ? '–' : duration(left),
    };
    if (stream.isTTY === true) {
      if (bar === null) {
        bar = new cliProgress.SingleBar(
          {
            stream,
            format: '{label} {bar} {points} grid points | {rate} instances/s | ETA {left}',
            hideCursor: true,
            clearOnComplete: true,
            // Ctrl-C is the command's to handle
            gracefulExit: false,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(p.instancesTotal, p.instancesDone, stats);
      } else {
        bar.update(p.instancesDone, stats);
      }
      if (final) bar.stop();
    } else if (final || now() - lastLine >= 5000) {
      const eta = final ? '' : ` | ETA ${stats.left}`;
      stream.write(`${label} ${stats.points} grid points | ${stats.rate} instances/s${eta}\n`);
      lastLine = now();
    }
  };

  return {
    onProgress(p) {
      if (stopped) return;
      timeLeft.observe(p);
      last = p;
      if (!shown && now() - started < 1000) return;
      shown = true;
      draw(p, false);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (shown && last !== null) draw(last, true);
    },
  };
}
