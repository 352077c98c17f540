/**
 * `servesim compare RESULT.json PROBLEM`: runs one case of a problem and holds its figures
 * against a measured `vllm bench serve` result (`--save-result`), key by key: servesim's
 * figure, the measured one and the error (docs/cli.md; docs/blis-validation.md is one use).
 */
import { ServesimError } from '../errors.js';
import { readInputBytes } from '../problem/parse.js';
import {
  compareWithMeasured,
  formatError,
  formatFigure,
  measuredResult,
  type FigureComparison,
  type MeasuredResult,
} from '../run/vllm-bench.js';
import type { RunResult } from '../run/types.js';
import { EXIT, seedOptions, type SimulationOptionValues } from './options.js';
import { readProblemArgument } from './problem-argument.js';
import { describeEngine, simulate, type CliDeps, type CliIo } from './run-command.js';

/**
 * Bytes of a measured result: `--save-detailed` keeps every request's inter-token latencies,
 * some tens of bytes a token (10,000 requests of 1,000 tokens are a few hundred MB).
 */
export const MAX_MEASURED_BYTES = 512 * 1024 ** 2;

export type CompareOptionValues = Omit<SimulationOptionValues, 'format'> & { readonly format: 'table' | 'json' };

/** Runs the `compare` command; resolves to the exit status. Input errors are thrown. */
export async function compareCommand(resultFile: string, problemArgument: string, opts: CompareOptionValues, deps: CliDeps, io: CliIo): Promise<number> {
  // the measurement and the case are checked before anything is simulated
  const measured = readMeasured(resultFile);
  const seeds = seedOptions(opts.seeds, opts.maxSeeds);
  const problem = await readProblemArgument(problemArgument, (path) => deps.loadProblem(path, opts.set ?? []));
  const cases = await deps.selectCases(problem, opts.case ?? 'all');
  if (cases.length !== 1) {
    throw new ServesimError(
      'SERVESIM_CASE_UNKNOWN',
      `compare holds one case against a measured run, and ${problem.id} has ${cases.length}: name one with --case (${cases.map((c) => c.name).join(', ')})`,
    );
  }

  const controller = new AbortController();
  const release = io.onInterrupt(() => controller.abort());
  let result: RunResult | undefined;
  try {
    result = await simulate(problem, [cases[0]!.name], seeds, opts, deps, io, controller.signal);
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    release();
  }
  if (result === undefined || controller.signal.aborted) {
    io.stderr.write('cancelled\n');
    return EXIT.cancelled;
  }

  const row = result.rows[0]!;
  const figures = compareWithMeasured(row, measured);
  if (figures.length === 0) {
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `servesim has no value for any of ${resultFile}'s figures (${[...measured.figures.keys()].join(', ')}) in case ${row.case}: it counted no successes`);
  }
  // the result's figures servesim gives but has no value for here (TTFT without model calls), then those it never gives
  const compared = new Set(figures.map((f) => f.key));
  const notCompared = [...[...measured.figures.keys()].filter((key) => !compared.has(key)), ...measured.others];
  const about = { problem: problem.id, case: row.case, seeds: row.seeds, baseSeed: result.meta.baseSeed, engine: describeEngine(result.meta), result: resultFile };
  io.stdout.write(opts.format === 'json' ? `${JSON.stringify({ ...about, figures: figures.map(jsonFigure), notCompared }, null, 2)}\n` : formatComparison(about, figures, notCompared));
  return EXIT.ok;
}

/** The measured result file, parsed and checked. */
function readMeasured(path: string): MeasuredResult {
  const text = readInputBytes(path, 'measured result', path, MAX_MEASURED_BYTES).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const lines = text.split('\n').filter((l) => l.trim() !== '').length;
    const appended = lines > 1 ? ` (it has ${lines} lines: a file vllm bench serve --append-result wrote holds one result a line; put the one to compare in a file of its own)` : '';
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${path} is not one JSON object${appended}`);
  }
  return measuredResult(value, path);
}

/** A figure as JSON has it: an error that does not exist (measured 0) is null. */
function jsonFigure(f: FigureComparison): Record<string, string | number | null> {
  return { key: f.key, servesim: f.servesim, measured: f.measured, error: Number.isFinite(f.error) ? f.error : null };
}

/** The table: a header line, then a line a figure, then what the result holds that servesim does not give. */
export function formatComparison(
  about: { readonly problem: string; readonly case: string; readonly seeds: number; readonly baseSeed: number; readonly engine: string; readonly result: string },
  figures: readonly FigureComparison[],
  notCompared: readonly string[],
): string {
  const head = ['figure', 'servesim', 'measured', 'error'];
  const rows = figures.map((f) => [f.key, formatFigure(f.servesim), formatFigure(f.measured), formatError(f.error)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const lines = [
    `${about.problem}, case ${about.case}: ${about.seeds} seed${about.seeds === 1 ? '' : 's'} from ${about.baseSeed} (engine: ${about.engine}) against ${about.result}`,
    '',
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
  ];
  if (notCompared.length > 0) lines.push('', `not compared (servesim gives no such figure for this case): ${notCompared.join(', ')}`);
  return `${lines.join('\n')}\n`;
}
