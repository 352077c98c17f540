/**
 * `servesim report RESULTS.arrow`: the sweep report, one self-contained HTML page made from the
 * Arrow table that `servesim sweep --out` wrote (IPC file or stream), with a hint
 * (`servesim hint --format json`) when one is given. A table cut short is refused; one that is
 * partial on purpose (a sweep stopped early) is reported, and said to be partial.
 */
import { z } from 'zod';
import { ServesimError } from '../errors.js';
import type { HintResult } from '../hint/api.js';
import { readInputBytes, readInputFile } from '../problem/parse.js';
import { renderReport } from '../report/html.js';
import { readSweepArrow, type SweepArrow } from '../sweep/arrow.js';
import { EXIT } from './options.js';
import { outputProblem, writeOutput } from './output-file.js';

/** Where `report` writes: the page with --out -, and what it wrote. */
export interface ReportIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

export interface ReportCommandOptions {
  readonly out?: string;
  readonly hint?: string;
}

const configuration = z.object({
  values: z.record(z.string(), z.union([z.number(), z.string()])),
  cost: z.number(),
  cases: z.array(z.object({ case: z.string(), passes: z.boolean(), pass_probability: z.number(), why: z.string() })),
});

/** The parts of a HintResult the report reads; the rest is left as it came. */
const hintSchema = z.looseObject({
  problemId: z.string(),
  paths: z.array(z.string()),
  cost: z.string(),
  hints: z.array(z.object({ found: configuration, cheaper: z.array(configuration) })),
  failing: z.array(configuration),
  evaluated: z.number(),
  gridSize: z.number(),
  monotonicityViolations: z.array(z.string()),
  engine: z.string().nullable(),
});

/**
 * Bytes of a results file, which may be far larger than a problem file: a row a grid point and
 * case, ~30 columns of mostly 8-byte numbers, and in a stream a batch header a grid point. The
 * largest grid (100,000 points) with several cases makes some hundreds of MB; 2 GiB leaves room
 * beyond that and stays within one Node Buffer (4 GiB).
 */
export const MAX_RESULTS_BYTES = 2 * 1024 ** 3;

const PARQUET_MAGIC = Buffer.from('PAR1');

/**
 * A results file, refused when cut short (readSweepArrow), not a regular file, over
 * MAX_RESULTS_BYTES, or Parquet: the report is made from an apache-arrow Table, read here
 * synchronously, and hyparquet reads Parquet only asynchronously.
 */
export function readResultsTable(path: string): SweepArrow {
  const bytes = readInputBytes(path, 'results file', path, MAX_RESULTS_BYTES);
  if (bytes.subarray(0, 4).equals(PARQUET_MAGIC)) {
    throw new ServesimError(
      'SERVESIM_FILE_UNREADABLE',
      `${path} is a Parquet file; servesim report reads the Arrow results only: write them with servesim sweep --out FILE.arrow (or .arrows)`,
    );
  }
  return readSweepArrow(bytes, path);
}

/** A hint file: a few configurations, bounded as a problem file is. */
export function readHint(path: string): HintResult {
  let raw: unknown;
  try {
    raw = JSON.parse(readInputFile(path, 'hint file'));
  } catch (err) {
    if (err instanceof ServesimError) throw err;
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${path} is not JSON`);
  }
  const parsed = hintSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${path} is not a hint result (servesim hint --format json): ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  // checked above for every field the report reads
  return parsed.data as unknown as HintResult;
}

/** `results.arrow` -> `results.html`, beside it. */
export function defaultReportPath(results: string): string {
  return `${results.replace(/\.(arrow|arrows|feather)$/i, '')}.html`;
}

/** Runs `report`; resolves to the exit status. Input errors are thrown. */
export function reportCommand(results: string, opts: ReportCommandOptions, io: ReportIo): number {
  const out = opts.out ?? defaultReportPath(results);
  const unwritable = out === '-' ? null : outputProblem('--out', out);
  if (unwritable !== null) {
    io.stderr.write(`servesim: ${unwritable}\n`);
    return EXIT.usage;
  }
  const { table, partial } = readResultsTable(results);
  if (partial !== null) io.stderr.write(`servesim: note: ${results} is ${partial}\n`);
  const hint = opts.hint === undefined ? null : readHint(opts.hint);
  const problem = table.schema.metadata.get('servesim.problem');
  if (hint && problem !== undefined && hint.problemId !== problem) {
    io.stderr.write(`servesim: warning: the hint is for problem ${hint.problemId}, the results for ${problem}\n`);
  }
  const html = renderReport(table, { hint });
  if (out === '-') {
    io.stdout.write(html);
    return EXIT.ok;
  }
  const failure = writeOutput('--out', out, html);
  if (failure !== null) {
    io.stderr.write(`servesim: ${failure}\n`);
    return EXIT.usage;
  }
  io.stderr.write(`wrote ${out}\n`);
  return EXIT.ok;
}
