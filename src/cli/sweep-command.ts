/**
 * `servesim sweep FILE`: a problem over a grid of settings, one row per (grid point, case), as
 * a table, JSON, CSV or an Arrow stream. Ctrl-C or a failure part way keeps every finished
 * point: they are written first, then the points that did not finish are named on stderr.
 */
import { writeReportForSweep } from '../report/html.js';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { Option, type Command } from 'commander';
import type { EngineChoice } from '../run/types.js';
import { sweepToArrow } from '../sweep/arrow.js';
import { describePoint, formatSweepCsv, formatSweepJson, formatSweepTable } from '../sweep/format.js';
import { runSweep, type SweepOutcome, type SweepProgress, type SweepRunOptions } from '../sweep/run.js';
import { DEFAULT_MAX_INSTANCES, loadSweep, type Sweep } from '../sweep/spec.js';
import {
  ENGINE_CHOICES,
  EXIT,
  OUTPUT_FORMATS,
  parseChoice,
  parseEngine,
  parseInteger,
  parseSeeds,
  type OutputFormat,
} from './options.js';
import { compact, duration, type ProgressStream } from './progress.js';
import type { CliIo } from './run-command.js';

export type SweepFormat = OutputFormat | 'arrow';
export const SWEEP_FORMATS: readonly SweepFormat[] = [...OUTPUT_FORMATS, 'arrow'];

const FORMAT_OF_EXTENSION: Readonly<Record<string, SweepFormat>> = {
  '.arrow': 'arrow',
  '.arrows': 'arrow',
  '.csv': 'csv',
  '.json': 'json',
  '.txt': 'table',
};

/** Unfinished points listed on stderr; the JSON output lists them all. */
const LISTED_UNFINISHED = 20;

/** The sweep runner; tests wrap it to stop a sweep part way, the CLI uses the real one. */
export interface SweepDeps {
  runSweep(sweep: Sweep, options?: SweepRunOptions): Promise<SweepOutcome>;
}

/** The commands' io, with a stdout that takes bytes (an Arrow stream) and says if it is a terminal. */
export interface SweepIo extends CliIo {
  readonly stdout: { write(data: string | Uint8Array): unknown; readonly isTTY?: boolean };
}

export interface SweepOptionValues {
  readonly out?: string;
  readonly report?: string;
  readonly format?: SweepFormat;
  readonly seeds?: number;
  readonly engine?: EngineChoice;
  readonly maxInstances: number;
}

/** Adds `servesim sweep` to the command table; the action reports its exit status through `setExit`. */
export function addSweepCommand(
  program: Command,
  deps: Partial<SweepDeps>,
  io: SweepIo,
  setExit: (code: number) => void,
): void {
  const sweep = program
    .command('sweep')
    .description(
      "simulate a problem at every point of a grid of settings (a sweep file), each over the file's " +
        'cases and seeds; one row per grid point and case',
    )
    .argument('<file>', 'sweep file (YAML or JSON); see sweeps/README.md');
  for (const option of sweepOptions()) sweep.addOption(option);
  sweep
    .addHelpText(
      'after',
      '\nResults go to stdout (or --out), progress and the engine used to stderr. On Ctrl-C or a\n' +
        'failure the finished grid points are still written and the others listed on stderr\n' +
        '(exit status 130 when cancelled).\n\n' +
        'Examples:\n' +
        '  servesim sweep sweeps/hot-prefix-slots.yaml\n' +
        '  servesim sweep sweeps/coding-agents-replicas.yaml --out replicas.arrow\n' +
        '  servesim sweep sweeps/mmc.yaml --seeds 8 --format csv > mmc.csv',
    )
    .action(async (file: string, opts: SweepOptionValues) => {
      setExit(await sweepCommand(file, opts, deps, io));
    });
}

function sweepOptions(): Option[] {
  return [
    new Option('-o, --out <file>', 'write the results to this file; its extension (.arrow, .csv, .json, .txt) picks the format'),
    new Option('-f, --format <format>', `output format: ${SWEEP_FORMATS.join(', ')} (default: from --out, else table)`)
      .argParser((text) => parseChoice(text, '--format', SWEEP_FORMATS)),
    new Option('--report <file>', 'also write the HTML report (as servesim report) of the finished points'),
    new Option('-n, --seeds <n>', "seeds per case and grid point (default: the sweep file's)").argParser(parseSeeds),
    new Option('--engine <engine>', `engine to run on: ${ENGINE_CHOICES.join(', ')} (default: the sweep file's)`)
      .argParser(parseEngine),
    new Option('--max-instances <n>', 'refuse a larger sweep (grid points x cases x seeds)')
      .argParser((text) => parseInteger(text, '--max-instances', 1, Number.MAX_SAFE_INTEGER))
      .default(DEFAULT_MAX_INSTANCES),
  ];
}

/** Runs the `sweep` command; resolves to the exit status. Input errors are thrown. */
export async function sweepCommand(
  file: string,
  opts: SweepOptionValues,
  deps: Partial<SweepDeps>,
  io: SweepIo,
): Promise<number> {
  const format = opts.format ?? (opts.out === undefined ? 'table' : FORMAT_OF_EXTENSION[extname(opts.out).toLowerCase()]);
  if (format === undefined) {
    return usage(io, `cannot tell the format of '${opts.out}' from its extension; add --format ${SWEEP_FORMATS.join('|')}`);
  }
  if (format === 'arrow' && opts.out === undefined && io.stdout.isTTY === true) {
    return usage(io, 'an Arrow stream is binary: write it to a file with --out results.arrow, or pipe stdout to a program');
  }
  if (opts.out !== undefined) {
    // a sweep can take hours: find an unwritable destination before, not after
    try {
      accessSync(dirname(resolve(opts.out)), constants.W_OK);
    } catch {
      return usage(io, `cannot write ${opts.out}: its folder does not exist or is not writable`);
    }
  }

  const sweep = loadSweep(file, {
    maxInstances: opts.maxInstances,
    ...(opts.seeds === undefined ? {} : { seeds: opts.seeds }),
    ...(opts.engine === undefined ? {} : { engine: opts.engine }),
  });

  const controller = new AbortController();
  const release = io.onInterrupt(() => controller.abort());
  const progress = createSweepProgress(io.stderr, sweep.id);
  let outcome: SweepOutcome;
  try {
    outcome = await (deps.runSweep ?? runSweep)(sweep, { signal: controller.signal, onProgress: progress.onProgress });
  } finally {
    progress.stop();
    release();
  }

  const { meta } = outcome;
  if (meta.engine !== null) io.stderr.write(`engine: ${meta.engine}${meta.adapter ? ` (${meta.adapter})` : ''}\n`);
  if (meta.choice !== undefined) io.stderr.write(`  ${meta.choice}\n`);
  if (outcome.finished.length > 0) writeResults(sweep, outcome, format, opts.out, io);
  if (outcome.finished.length > 0 && opts.report !== undefined) writeReportForSweep(opts.report, sweep, outcome);
  if (outcome.unfinished.length > 0) reportUnfinished(sweep, outcome, io);
  if (outcome.cancelled) {
    io.stderr.write('cancelled\n');
    return EXIT.cancelled;
  }
  // main() prints it: a ServesimError by its message (status 2), anything else with its stack (1)
  if (outcome.error !== null) throw outcome.error;
  return EXIT.ok;
}

function usage(io: SweepIo, message: string): number {
  io.stderr.write(`servesim: ${message}\n`);
  return EXIT.usage;
}

function render(sweep: Sweep, outcome: SweepOutcome, format: SweepFormat): string | Uint8Array {
  switch (format) {
    case 'arrow':
      return sweepToArrow(sweep, outcome.rows, outcome.meta);
    case 'json':
      return formatSweepJson(sweep, outcome);
    case 'csv':
      return formatSweepCsv(sweep, outcome);
    case 'table':
      return formatSweepTable(sweep, outcome);
  }
}

function writeResults(sweep: Sweep, outcome: SweepOutcome, format: SweepFormat, out: string | undefined, io: SweepIo): void {
  const data = render(sweep, outcome, format);
  if (out === undefined) {
    io.stdout.write(data);
    return;
  }
  writeFileSync(out, data);
  const points = outcome.finished.length;
  io.stderr.write(`wrote ${outcome.rows.length} rows (${points} grid point${points === 1 ? '' : 's'}) to ${out}\n`);
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
  let bar: cliProgress.SingleBar | null = null;
  let last: SweepProgress | null = null;
  let lastLine = Number.NEGATIVE_INFINITY;
  let shown = false;
  let stopped = false;

  const draw = (p: SweepProgress, final: boolean): void => {
    const elapsed = now() - started;
    const stats = {
      label,
      points: `${p.pointsDone}/${p.pointsTotal}`,
      rate: compact(p.instancesDone / Math.max(elapsed / 1000, 1e-3)),
      // not `eta`: cli-progress fills that token itself, from the bar's own count
      left: p.instancesDone > 0 ? duration((elapsed * (p.instancesTotal - p.instancesDone)) / p.instancesDone) : '–',
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
