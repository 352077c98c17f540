/**
 * Sweep files (`sweeps/*.yaml`, or the JSON body of POST /v1/sweeps): a problem, a grid of
 * dotted paths (the same paths as `--set`), the cases and seeds. Parsed once into a typed
 * `Sweep`; every grid point is checked to build a valid problem before any work starts.
 */
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { invalidProblem, invalidSweep, ServesimError, type FieldIssue } from '../errors.js';
import type { Problem } from '../model/problem.js';
import { traceSummary, type TraceSummary } from '../model/trace.js';
import { AUTO_FIRST_SEEDS, DEFAULT_MAX_SEEDS, seedRange } from '../model/verdict.js';
import { problemFromObject, readInputFile, readYaml, selectCases, type TraceDirs } from '../problem/parse.js';
import type { OverrideInput } from '../problem/overrides.js';
import { parsePath } from '../problem/paths.js';
import { isPlainObject } from '../problem/schema-walk.js';
import { problemSource, resolveProblemSource, type ProblemFile } from '../problem/source.js';
import { runInSlices, runWhole } from '../slices.js';
import type { EngineChoice } from '../run/types.js';
import { DEFAULT_MAX_INSTANCES, MAX_SEEDS } from './limits.js';

export { DEFAULT_MAX_INSTANCES, MAX_SEEDS } from './limits.js';

// here, not in limits.ts, which every start of the CLI loads: toLocaleString's first call loads ICU's number formats
export const MAX_SEEDS_MESSAGE = `at most ${MAX_SEEDS.toLocaleString('en')} seeds per case and grid point (each case's results are held in memory at once)`;

/** Grid points by default: each is checked to make a valid problem before any work, ~0.1 ms each. */
const DEFAULT_MAX_POINTS = 100_000;

/** Characters of a grid path or a grid value: paths and names are short, and errors quote them. */
const MAX_GRID_TEXT = 200;

const value = z.union([z.number(), z.string().max(MAX_GRID_TEXT)]);
const range = z
  .object({ from: z.number(), to: z.number(), step: z.number().positive('must be positive') })
  .strict()
  .refine((r) => r.to >= r.from, { message: 'to must be at least from' })
  .describe('from, from + step, ... up to to (inclusive)');
/** Problem field paths to the values each takes: a sweep's grid, a hint search's paths to vary. */
export const gridSchema = z.record(z.string().max(MAX_GRID_TEXT), z.union([z.array(value).min(1, 'needs at least one value'), range]));
/** A path (relative to the sweep file), the id of a shipped problem, or the problem itself. */
const problemField = z.union([z.string().min(1), z.record(z.string(), z.unknown())]);

/** Seeds per configuration, or 'auto' (src/model/verdict.ts): shared by sweeps, hints and HTTP. */
export const seedsSchema = z
  .union([z.number().int().min(1).max(MAX_SEEDS, MAX_SEEDS_MESSAGE), z.literal('auto')])
  .describe(`seeds per case and grid point, or 'auto': ${AUTO_FIRST_SEEDS} first, then more for the configurations whose verdict is still undecided, doubling up to maxSeeds`);
export const maxSeedsSchema = z
  .number()
  .int()
  .min(1)
  .max(MAX_SEEDS, MAX_SEEDS_MESSAGE)
  .describe(`the most seeds a configuration takes; above seeds, undecided configurations get more (default: ${DEFAULT_MAX_SEEDS.toLocaleString('en')} with seeds 'auto', else seeds)`);

export const sweepFileSchema = z
  .object({
    $schema: z.string().optional(),
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'lower-case words joined by -').optional().describe("default: the problem's id"),
    title: z.string().optional().describe("default: the problem's title"),
    problem: problemField,
    grid: gridSchema.describe('problem field paths (as --set takes them) to the values each takes: a list, or a range'),
    cases: z.union([z.literal('all'), z.array(z.string()).min(1)]).default('all'),
    seeds: seedsSchema.default(64),
    maxSeeds: maxSeedsSchema.optional(),
    seed: z.number().int().min(0).max(0xffffffff).optional().describe("the first seed; default: the problem's seed"),
    confidence: z.number().gt(0).max(1).optional().describe("share of seeds that must meet every goal; default: the problem's"),
    engine: z.enum(['auto', 'cpu', 'gpu']).default('auto'),
  })
  .strict();

export const SWEEP_SCHEMA_FILE = 'sweeps/sweep.schema.json';

/**
 * The JSON Schema of sweep files (`# yaml-language-server: $schema=./sweep.schema.json`), from
 * the zod schema; an inline problem is checked against the problem files' schema.
 */
export function sweepJsonSchemaText(): string {
  const schema = z.toJSONSchema(sweepFileSchema, {
    io: 'input',
    // yaml-language-server and most editors speak draft-07 best
    target: 'draft-07',
    override: (ctx) => {
      if (ctx.zodSchema !== problemField) return;
      const json = ctx.jsonSchema as Record<string, unknown>;
      for (const key of Object.keys(json)) delete json[key];
      Object.assign(json, {
        description: 'a problem file (a path relative to this file), the id of a shipped problem, or the problem itself',
        anyOf: [{ type: 'string', minLength: 1 }, { $ref: '../problems/problem.schema.json' }],
      });
    },
  });
  return `${JSON.stringify(schema, null, 2)}\n`;
}

export type SweepFile = z.input<typeof sweepFileSchema>;

export type GridValue = number | string;

export interface GridAxis {
  readonly path: string;
  readonly values: readonly GridValue[];
  /** How the values are stored in a table: whole numbers, reals, or names. */
  readonly type: 'int' | 'float' | 'string';
}

export interface GridPoint {
  readonly index: number;
  readonly values: readonly GridValue[];
  /**
   * The overrides that make this point's problem: each axis's path and value, parsed once for
   * every point that takes them, and named in messages as `--set path=value`.
   */
  readonly overrides: readonly OverrideInput[];
}

export interface Sweep {
  readonly id: string;
  readonly title: string;
  /** The problem before the grid's overrides, as raw input (validated). */
  readonly problemRaw: unknown;
  readonly problemSource: string;
  /**
   * Where its `traffic.trace` resolves: the problem file's folder, and for a grid's values the
   * sweep's; absent for a sweep sent as an object (HTTP, queue), whose traces are problems/'s.
   */
  readonly traceDirs?: TraceDirs;
  readonly problem: Problem;
  readonly axes: readonly GridAxis[];
  readonly points: readonly GridPoint[];
  readonly caseNames: readonly string[];
  /** Seeds every configuration runs, and the most an undecided one may take (src/model/verdict.ts). */
  readonly seeds: number;
  readonly maxSeeds: number;
  readonly baseSeed: number;
  readonly confidence: number;
  readonly engine: EngineChoice;
}

/** How much work a sweep asks for, counted from its axes before any point is built. */
export interface GridSize {
  readonly points: number;
  readonly cases: number;
  /** The most seeds a configuration may take: the limits are checked on the most a sweep may run. */
  readonly seeds: number;
  readonly instances: number;
}

export interface SweepParseOptions {
  /** Folder that relative problem paths are resolved against; absent: paths are refused. */
  readonly baseDir?: string;
  /** Instances (points x cases x seeds); default DEFAULT_MAX_INSTANCES. */
  readonly maxInstances?: number;
  /** Grid points; default DEFAULT_MAX_POINTS. */
  readonly maxPoints?: number;
  /** A caller's own limit on the size (the service's synchronous one): throws to refuse, before
   * any grid point is built or checked. */
  readonly checkSize?: (size: GridSize) => void;
  /** Replace the file's seeds and maxSeeds (the CLI's --seeds, --max-seeds). */
  readonly seeds?: number | 'auto';
  readonly maxSeeds?: number;
  readonly engine?: EngineChoice;
}

function invalid(path: string, message: string): ServesimError {
  return new ServesimError('SERVESIM_SWEEP_INVALID', message, path);
}

/** A grid axis as a sweep file writes it: the values, or a range. */
export type AxisSpec = readonly GridValue[] | { readonly from: number; readonly to: number; readonly step: number };

/** How many values an axis takes, without listing them. */
function axisLength(spec: AxisSpec): number {
  if (Array.isArray(spec)) return spec.length;
  const { from, to, step } = spec as Exclude<AxisSpec, readonly GridValue[]>;
  return Math.floor((to - from) / step + 1e-9) + 1;
}

/** The points of a grid, counted from its axes without listing them. */
export function gridPoints(grid: Readonly<Record<string, AxisSpec>>): number {
  return Object.values(grid).reduce((n, spec) => n * axisLength(spec), 1);
}

function axisValues(spec: AxisSpec): GridValue[] {
  if (Array.isArray(spec)) return [...(spec as readonly GridValue[])];
  const { from, step } = spec as Exclude<AxisSpec, readonly GridValue[]>;
  return Array.from({ length: axisLength(spec) }, (_, i) => Number((from + i * step).toPrecision(12)));
}

function axisType(values: readonly GridValue[]): GridAxis['type'] {
  if (values.every((v) => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 31)) return 'int';
  if (values.every((v) => typeof v === 'number')) return 'float';
  return 'string';
}

/**
 * Reads the problem a sweep names (problem/source.ts: a shipped id, a file path, or an inline
 * object). Messages name a file as the sweep does, relative to its folder (a shipped one by its
 * file name), never by the absolute path: a server's errors must not describe its disk.
 */
function resolveProblem(problem: string | Record<string, unknown>, baseDir: string | undefined): { raw: unknown; source: string; dir: string | undefined } {
  let text: string;
  let resolved: ProblemFile;
  try {
    const found = resolveProblemSource(problemSource(problem), baseDir);
    if ('inline' in found) return { raw: found.inline, source: found.shown, dir: baseDir };
    resolved = found;
    text = readInputFile(found.file, 'problem file', found.shown);
  } catch (err) {
    if (!(err instanceof ServesimError)) throw err;
    // the sweep's field is to blame: a file it cannot read is an invalid sweep, one too large stays so
    if (err.code !== 'SERVESIM_FILE_UNREADABLE') throw new ServesimError(err.code, err.message, 'problem');
    throw invalid('problem', err.message);
  }
  const { value } = readYaml(text, resolved.shown, (issues) => invalidProblem(issues, resolved.shown));
  return { raw: value, source: resolved.shown, dir: baseDir === undefined ? undefined : dirname(resolved.file) };
}

/**
 * The issue of a grid (`field` of `raw`: a sweep's grid, a hint's vary) with an own key
 * `__proto__`, as a JSON body or YAML may have: zod's record would drop it (assigning it sets
 * the parsed object's prototype), and the sweep would run without that axis. Checked on the
 * raw object, before zod.
 */
export function protoGridKey(raw: unknown, field: string): FieldIssue | undefined {
  const grid = isPlainObject(raw) && Object.hasOwn(raw, field) ? raw[field] : undefined;
  if (!isPlainObject(grid) || !Object.hasOwn(grid, '__proto__')) return undefined;
  return { path: `${field}.__proto__`, message: 'not a problem field path; a grid key is a path as --set takes it, e.g. gpu.slots' };
}

/** Validates a sweep (already parsed from YAML or JSON) and expands its grid. */
export function sweepFromObject(raw: unknown, options: SweepParseOptions = {}): Sweep {
  return runWhole(sweepSteps(raw, options));
}

/** sweepFromObject for a server: the grid's points are listed and checked in slices of the event loop. */
export function sweepFromObjectInSlices(raw: unknown, options: SweepParseOptions = {}): Promise<Sweep> {
  return runInSlices(sweepSteps(raw, options));
}

/** sweepFromObject's steps: it may pause after each grid point it lists or checks. */
function* sweepSteps(raw: unknown, options: SweepParseOptions): Generator<void, Sweep> {
  const proto = protoGridKey(raw, 'grid');
  if (proto !== undefined) throw invalidSweep([proto]);
  const parsed = sweepFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw invalidSweep(parsed.error.issues.map((i) => ({ path: i.path.join('.') || '(sweep)', message: i.message })));
  }
  const file = parsed.data;
  const { raw: problemRaw, source, dir } = resolveProblem(file.problem, options.baseDir);
  // a local caller's (baseDir) traces may be anywhere; an object's only in problems/
  const traceDirs: TraceDirs | undefined = dir === undefined || options.baseDir === undefined ? undefined : { file: dir, set: options.baseDir };
  const problem = problemFromObject(problemRaw, [], source, traceDirs);

  // counted from the axes: nothing is listed or checked before the size is known to be allowed
  const count = gridPoints(file.grid);
  let caseNames: string[];
  try {
    caseNames = selectCases(problem, file.cases).map((c) => c.name);
  } catch (err) {
    // the same check as `run --case`, but here the sweep file's field is to blame (a trace too
    // short for the cases is the problem's)
    throw err instanceof ServesimError && err.code === 'SERVESIM_CASE_UNKNOWN' ? new ServesimError(err.code, err.message, 'cases') : err;
  }
  const range = seedRange(options.seeds ?? file.seeds, options.maxSeeds ?? (options.seeds === undefined ? file.maxSeeds : undefined));
  if (typeof range === 'string') throw invalid('maxSeeds', range);
  const seeds = range.maxSeeds;
  const instances = count * caseNames.length * seeds;
  const limit = options.maxInstances ?? DEFAULT_MAX_INSTANCES;
  const maxPoints = options.maxPoints ?? DEFAULT_MAX_POINTS;
  if (count > maxPoints || instances > limit) {
    throw new ServesimError(
      'SERVESIM_GRID_TOO_LARGE',
      `${count.toLocaleString('en')} grid points x ${caseNames.length} cases x ${range.seeds === seeds ? '' : 'up to '}${seeds} seeds = ${instances.toLocaleString('en')} instances; the limit is ${limit.toLocaleString('en')} instances (${maxPoints.toLocaleString('en')} points)${range.seeds === seeds ? '' : '; a lower maxSeeds (--max-seeds) asks for fewer'}`,
      'grid',
    );
  }
  options.checkSize?.({ points: count, cases: caseNames.length, seeds, instances });

  const axes: GridAxis[] = Object.entries(file.grid).map(([path, spec]) => {
    const values = axisValues(spec);
    return { path, values, type: axisType(values) };
  });
  const axisOverrides = axes.map((axis) => {
    const path = parsePath(axis.path);
    // a path that does not parse stays text: checking the first point reports it as --set's
    return axis.values.map((value): OverrideInput => {
      const text = `${axis.path}=${JSON.stringify(value)}`;
      return path === undefined ? text : { path, value, text };
    });
  });
  const points: GridPoint[] = [];
  for (let index = 0; index < count; index++) {
    let rest = index;
    const values: GridValue[] = new Array<GridValue>(axes.length);
    const overrides: OverrideInput[] = new Array<OverrideInput>(axes.length);
    for (let a = axes.length - 1; a >= 0; a--) {
      const axis = axes[a]!;
      const v = rest % axis.values.length;
      values[a] = axis.values[v]!;
      overrides[a] = axisOverrides[a]![v]!;
      rest = Math.floor(rest / axis.values.length);
    }
    points.push({ index, values, overrides });
    yield;
  }
  // every point must make a valid problem for the cases: a bad value fails now, not after hours of work
  for (const point of points) {
    try {
      selectCases(problemFromObject(problemRaw, point.overrides, source, traceDirs), caseNames);
    } catch (err) {
      // the override error names the path; say which grid point carried it
      const at = axes.map((a, i) => `${a.path}=${String(point.values[i])}`).join(', ');
      const message = err instanceof Error ? err.message : String(err);
      throw new ServesimError('SERVESIM_SWEEP_INVALID', `grid point ${point.index} (${at}): ${message}`, 'grid');
    }
    yield;
  }
  return {
    id: file.id ?? problem.id,
    title: file.title ?? problem.title,
    problemRaw,
    problemSource: source,
    ...(traceDirs === undefined ? {} : { traceDirs }),
    problem,
    axes,
    points,
    caseNames,
    seeds: range.seeds,
    maxSeeds: range.maxSeeds,
    baseSeed: file.seed ?? problem.seed,
    confidence: file.confidence ?? problem.confidence,
    engine: options.engine ?? file.engine,
  };
}

/** The grid path that replays another trace at each of its values. */
export const TRACE_AXIS = 'traffic.trace';

/**
 * What a sweep's results keep of its trace (SweepMeta.trace, servesim.trace): its problem's,
 * null without one, or with traffic.trace on the grid (each row's is its traffic.trace value).
 */
export function sweepTraceSummary(sweep: Sweep): TraceSummary | null {
  const trace = sweep.problem.traffic.trace;
  return trace === null || sweep.axes.some((a) => a.path === TRACE_AXIS) ? null : traceSummary(trace);
}

/** Reads a sweep file; relative problem paths resolve against the file's folder. */
export function loadSweep(path: string, options: Omit<SweepParseOptions, 'baseDir'> = {}): Sweep {
  const { value } = readYaml(readInputFile(path, 'sweep file'), path, (issues) => invalidSweep(issues, path));
  return sweepFromObject(value, { ...options, baseDir: dirname(resolve(path)) });
}
