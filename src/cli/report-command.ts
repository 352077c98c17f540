/**
 * `servesim report RESULTS.arrow`: the sweep report, one self-contained HTML page made from the
 * Arrow table that `servesim sweep --out` wrote, with a hint (`servesim hint --format json`)
 * when one is given.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tableFromIPC, type Table } from 'apache-arrow';
import type { Command } from 'commander';
import { z } from 'zod';
import { ServesimError } from '../errors.js';
import type { HintResult } from '../hint/api.js';
import { renderReport } from '../report/html.js';
import { EXIT } from './options.js';

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

function readFile(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch {
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `cannot read ${what} ${path}`);
  }
}

export function readResultsTable(path: string): Table {
  const bytes = readFile(path, 'results file');
  try {
    return tableFromIPC(bytes);
  } catch {
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${path} is not an Arrow IPC file (write one with servesim sweep --out FILE.arrow)`);
  }
}

export function readHint(path: string): HintResult {
  let raw: unknown;
  try {
    raw = JSON.parse(readFile(path, 'hint file').toString('utf8'));
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
  const table = readResultsTable(results);
  const hint = opts.hint === undefined ? null : readHint(opts.hint);
  const problem = table.schema.metadata.get('servesim.problem');
  if (hint && problem !== undefined && hint.problemId !== problem) {
    io.stderr.write(`servesim: warning: the hint is for problem ${hint.problemId}, the results for ${problem}\n`);
  }
  const html = renderReport(table, { hint });
  const out = opts.out ?? defaultReportPath(results);
  if (out === '-') {
    io.stdout.write(html);
  } else {
    writeFileSync(out, html);
    io.stderr.write(`wrote ${out}\n`);
  }
  return EXIT.ok;
}

export function addReportCommand(program: Command, io: ReportIo, setExit: (code: number) => void): void {
  program
    .command('report')
    .description('write a sweep\'s results as one self-contained HTML page of charts (no network needed to open it)')
    .argument('<results>', 'Arrow file written by servesim sweep --out')
    .option('-o, --out <file>', 'HTML file to write, "-" for stdout (default: the results file with .html)')
    .option('--hint <file>', 'a hint result (servesim hint --format json) to show with the charts')
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  servesim report results.arrow\n' +
        '  servesim report results.arrow --hint hint.json --out report.html',
    )
    .action((results: string, opts: ReportCommandOptions) => {
      setExit(reportCommand(results, opts, io));
    });
}
