/**
 * `servesim report RESULTS.arrow`: the sweep report, one self-contained HTML page made from the
 * Arrow table that `servesim sweep --out` wrote (IPC file or stream), with a hint
 * (`servesim hint --format json`) when one is given. A table cut short is refused; one that is
 * partial on purpose (a sweep stopped early) is reported, and said to be partial.
 * `servesim report CAPACITY.json`: the capacity report of `servesim capacity --format json`'s
 * result, told from Arrow by its content (JSON starts with `{`; the Arrow servesim writes with
 * ARROW1, a file, or 0xFFFFFFFF, a stream).
 */
import { z } from 'zod';
import type { CapacityResult } from '../capacity/api.js';
import { ServesimError } from '../errors.js';
import type { HintResult } from '../hint/api.js';
import { readInputBytes, readInputFile } from '../problem/parse.js';
import { renderCapacityReport } from '../report/capacity.js';
import { renderReport } from '../report/html.js';
import { readSweepArrow } from '../sweep/arrow.js';
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

const nullableNumber = z.number().nullable();

/** The parts of a CapacityResult the capacity report reads; the rest is left as it came. */
const capacitySchema = z
  .looseObject({
    problemId: z.string(),
    title: z.string(),
    paths: z.array(z.string()).min(1),
    load: z.enum(['traffic.rate', 'traffic.rateScale']),
    cost: z.string(),
    goals: z.record(z.string(), z.number()),
    confidence: z.number(),
    seeds: z.number(),
    maxSeeds: z.number(),
    tolerance: z.number(),
    minScale: z.number(),
    maxScale: z.number(),
    designs: z.array(
      z.looseObject({
        values: z.record(z.string(), z.union([z.number(), z.string()])),
        cost: z.number(),
        rate_scale: nullableNumber,
        requests_per_second: nullableNumber,
        requests_per_second_per_gpu: nullableNumber,
        requests_per_dollar: nullableNumber,
        cases: z.array(z.looseObject({ seeds: z.number() })),
        above: z.looseObject({ rate_scale: z.number(), verdict: z.enum(['PASS', 'FAIL', 'UNDECIDED', 'REFUSED']), why: z.string() }).nullable(),
        pareto: z.boolean(),
      }),
    ),
    monotonicityViolations: z.array(z.string()),
    unsettled: z.array(z.number().int().min(0)),
    rounds: z.number(),
    probes: z.number(),
    instances: z.number(),
    engine: z.string().nullable(),
  })
  .superRefine((result, ctx) => {
    // a row a design, a column a path: each design has a value on every path
    for (const [d, design] of result.designs.entries()) {
      for (const path of result.paths) {
        if (!Object.hasOwn(design.values, path)) ctx.addIssue({ code: 'custom', path: ['designs', d, 'values', path], message: 'missing: every design has a value on each of paths' });
      }
    }
    for (const [i, d] of result.unsettled.entries()) {
      if (d >= result.designs.length) ctx.addIssue({ code: 'custom', path: ['unsettled', i], message: `${d} is not a design's index (${result.designs.length} designs)` });
    }
  });

/**
 * Bytes of a capacity result: JSON.parse holds the text as one string, which V8 caps at about
 * 512 MiB; the largest search (MAX_DESIGNS designs, a few cases each) writes tens of MB.
 */
export const MAX_CAPACITY_BYTES = 256 * 1024 ** 2;

/**
 * Bytes of a results file, which may be far larger than a problem file: a row a grid point and
 * case, ~30 columns of mostly 8-byte numbers, and in a stream a batch header a grid point. The
 * largest grid (100,000 points) with several cases makes some hundreds of MB; 2 GiB leaves room
 * beyond that and stays within one Node Buffer (4 GiB).
 */
export const MAX_RESULTS_BYTES = 2 * 1024 ** 3;

const PARQUET_MAGIC = Buffer.from('PAR1');

/**
 * A results file's bytes, refused when not a regular file, over MAX_RESULTS_BYTES, or Parquet:
 * the sweep report is made from an apache-arrow Table, read here synchronously, and hyparquet
 * reads Parquet only asynchronously.
 */
function readResultsBytes(path: string): Buffer {
  const bytes = readInputBytes(path, 'results file', path, MAX_RESULTS_BYTES);
  if (bytes.subarray(0, 4).equals(PARQUET_MAGIC)) {
    throw new ServesimError(
      'SERVESIM_FILE_UNREADABLE',
      `${path} is a Parquet file; servesim report reads the Arrow results only: write them with servesim sweep --out FILE.arrow (or .arrows)`,
    );
  }
  return bytes;
}

/** A hint file: a few configurations, bounded as a problem file is. */
export function readHint(path: string): HintResult {
  // checked for every field the report reads
  return searchResultOf(readInputFile(path, 'hint file'), path, hintSchema, 'a hint result (servesim hint --format json)') as unknown as HintResult;
}

/** A search's result from its JSON text, checked by `schema`; a malformed one is refused naming its first wrong field. */
function searchResultOf(text: string, path: string, schema: z.ZodType, what: string): unknown {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${path} is not JSON`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${path} is not ${what}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

/** A results file's bytes are JSON (a capacity result): the first character past white space is `{`. */
function isJson(bytes: Buffer): boolean {
  const first = bytes.findIndex((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
  return first >= 0 && bytes[first] === 0x7b;
}

/** A capacity result (servesim capacity --format json) from a results file's bytes. */
export function readCapacity(bytes: Buffer, path: string): CapacityResult {
  if (bytes.length > MAX_CAPACITY_BYTES) {
    throw new ServesimError('SERVESIM_INPUT_TOO_LARGE', `capacity result ${path} is ${bytes.length.toLocaleString('en')} bytes; the limit is ${MAX_CAPACITY_BYTES / 1024 ** 2} MiB`);
  }
  // checked for every field the report reads
  return searchResultOf(bytes.toString('utf8'), path, capacitySchema, 'a capacity result (servesim capacity --format json)') as unknown as CapacityResult;
}

/** `results.arrow` (or a capacity search's `capacity.json`) -> `results.html`, beside it. */
export function defaultReportPath(results: string): string {
  return `${results.replace(/\.(arrow|arrows|feather|json)$/i, '')}.html`;
}

/** Runs `report`; resolves to the exit status. Input errors are thrown. */
export function reportCommand(results: string, opts: ReportCommandOptions, io: ReportIo): number {
  const out = opts.out ?? defaultReportPath(results);
  const unwritable = out === '-' ? null : outputProblem('--out', out);
  if (unwritable !== null) {
    io.stderr.write(`servesim: ${unwritable}\n`);
    return EXIT.usage;
  }
  const bytes = readResultsBytes(results);
  let html: string;
  if (isJson(bytes)) {
    if (opts.hint !== undefined) {
      io.stderr.write(`servesim: --hint goes with a sweep's Arrow results; ${results} is JSON, read as a capacity result\n`);
      return EXIT.usage;
    }
    html = renderCapacityReport(readCapacity(bytes, results));
  } else {
    const { table, partial } = readSweepArrow(bytes, results);
    if (partial !== null) io.stderr.write(`servesim: note: ${results} is ${partial}\n`);
    const hint = opts.hint === undefined ? null : readHint(opts.hint);
    const problem = table.schema.metadata.get('servesim.problem');
    if (hint && problem !== undefined && hint.problemId !== problem) {
      io.stderr.write(`servesim: warning: the hint is for problem ${hint.problemId}, the results for ${problem}\n`);
    }
    html = renderReport(table, { hint });
  }
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
