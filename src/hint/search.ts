/**
 * `runHints`: the cheapest configurations of a problem that pass every case, found by the
 * search in `frontier.ts` with grid points evaluated through the sweep runner, and explained
 * case by case (`explain.ts`).
 */
import type { z } from 'zod';
import { invalidHintRequest, ServesimError, type FieldIssue } from '../errors.js';
import type { CaseSummary } from '../model/summary.js';
import { goalsInMilliseconds } from '../model/problem.js';
import type { Problem } from '../model/problem.js';
import { mapInSlices } from '../slices.js';
import { protoGridKey, sweepFromObjectInSlices, type GridSize, type GridValue, type Sweep } from '../sweep/spec.js';
import { pointProblem, runSweep, sweepTraces } from '../sweep/run.js';
import { traceSummary, type TraceSummary } from '../model/trace.js';
import { pointVerdict, seedRange, VERDICT_LEVEL } from '../model/verdict.js';
import {
  hintRequestSchema,
  type Hint,
  type HintConfiguration,
  type HintRun,
  type HintProgress,
  type HintRequest,
  type HintResult,
  type SearchResult,
} from './api.js';
import { costVariable, defaultCost, isCostVariable, numberAt, parseCost } from './cost.js';
import { caseMargins, describeValues } from './explain.js';
import { searchCheapest, type Evaluation, type Found, type Violation } from './frontier.js';

/**
 * Numeric paths where more is not always better, searched value by value as a string axis is
 * (each value a family): more prefill replicas of the same GPUs leave fewer to decode.
 */
export const UNORDERED_PATHS: ReadonlySet<string> = new Set(['gpu.disaggregation.prefill']);

export interface HintOptions {
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: HintProgress) => void;
  /** Each trace the search replays (sweepTraces), once, before it simulates. */
  readonly onTrace?: (trace: TraceSummary) => void;
  /** Folder that a problem given as a path is read from; absent: only ids and inline problems. */
  readonly baseDir?: string;
  /** Points a round of the numeric search asks (frontier.ts); 1 is bisection. */
  readonly probes?: number;
  /**
   * Instances the search may ask for at once (a server's limit): its first seeds on every grid
   * point (refused before it starts when more, as the search may try them all), and each round
   * of seeds until decided, run in batches of at most this many.
   */
  readonly maxInstances?: number;
}

interface PointResult extends Evaluation {
  readonly rows: readonly CaseSummary[];
}

/**
 * The hint's margin, as a share of what the confidence leaves to fail (1 - confidence): a
 * configuration whose pass probability is shown below confidence + this share of it takes no
 * more seeds, as it passes by less than that if at all (docs/model.md section 6).
 */
const MARGIN_SHARE = 1 / 3;

/** The margin above `confidence` that a configuration must be able to pass by to take more seeds. */
export function hintMargin(confidence: number): number {
  return (1 - confidence) * MARGIN_SHARE;
}

/** The sweep a search's request describes: its grid, cases and seeds, as a sweep file states them. */
export function searchSweep(req: Pick<HintRequest, 'problem' | 'vary' | 'cases' | 'seeds' | 'maxSeeds' | 'engine' | 'seed' | 'confidence'>): Record<string, unknown> {
  return {
    problem: req.problem,
    grid: req.vary,
    cases: req.cases,
    seeds: req.seeds,
    ...(req.maxSeeds === undefined ? {} : { maxSeeds: req.maxSeeds }),
    engine: req.engine,
    ...(req.seed === undefined ? {} : { seed: req.seed }),
    ...(req.confidence === undefined ? {} : { confidence: req.confidence }),
  };
}

export async function runHints(request: HintRequest, options: HintOptions = {}): Promise<HintResult> {
  return searchHints(await planHints(request, options), options);
}

/** A request read and checked, and its grid's costs: its bad input is refused here, before any simulation. */
export interface HintPlan {
  readonly sweep: Sweep;
  readonly costText: string;
  readonly cost: (index: number) => number;
  readonly recheckSeed: number | undefined;
}

export interface HintPlanOptions extends Pick<HintOptions, 'baseDir' | 'maxInstances'> {
  /** Called with the grid's size before any point is listed (after the instance limit); throws to refuse it. */
  readonly checkSize?: (size: GridSize) => void;
}

/**
 * A search's request checked against its schema, every issue naming its field (`invalid` says
 * which search's request it is). A grid key `__proto__` is refused first: the schema's record
 * would drop it silently.
 */
export function parseSearchRequest<S extends z.ZodType>(schema: S, request: unknown, invalid: (issues: readonly FieldIssue[]) => ServesimError): z.output<S> {
  const proto = protoGridKey(request, 'vary');
  if (proto !== undefined) throw invalid([proto]);
  const parsed = schema.safeParse(request);
  if (!parsed.success) throw invalid(parsed.error.issues.map((i) => ({ path: i.path.join('.') || '(request)', message: i.message })));
  return parsed.data;
}

export async function planHints(request: HintRequest, options: HintPlanOptions = {}): Promise<HintPlan> {
  const req = parseSearchRequest(hintRequestSchema, request, invalidHintRequest);
  const range = seedRange(req.seeds, req.maxSeeds);
  const { maxInstances } = options;
  const sweep = await sweepFromObjectInSlices(
    searchSweep(req),
    // the search runs a small part of the grid: the sweep's limit on the whole would refuse
    // grids it can search
    {
      ...(options.baseDir === undefined ? {} : { baseDir: options.baseDir }),
      maxInstances: Number.MAX_SAFE_INTEGER,
      checkSize: (size) => {
        // an invalid maxSeeds was refused before the size is checked
        const first = typeof range === 'string' ? size.seeds : range.seeds;
        const instances = size.points * size.cases * first;
        if (maxInstances === undefined || instances <= maxInstances) return void options.checkSize?.(size);
        throw new ServesimError(
          'SERVESIM_GRID_TOO_LARGE',
          `${size.points.toLocaleString('en')} grid points x ${size.cases} cases x ${first} first seeds = ${instances.toLocaleString('en')} instances, should the search try every point; the limit is ${maxInstances.toLocaleString('en')}: vary fewer values`,
          'vary',
        );
      },
    },
  );
  // the grid points' problems, made once and in slices, when the cost needs them
  let problems: Problem[] | undefined;
  const pointProblems = async (): Promise<Problem[]> => (problems ??= await mapInSlices(sweep.points, (point) => pointProblem(sweep, point)));
  // a grid over profiles or prices may price every point though the base problem has none
  const pricing = sweep.axes.some((a) => a.path === 'gpu.pricePerHour' || a.path.startsWith('gpu.profile'));
  const costText = req.cost ?? defaultCost(pricing ? await pointProblems() : [sweep.problem]);
  // a varied profile or replica count changes gpus and dollars_per_hour: worked out from each point's problem
  const cost = costFunction(costText, sweep, parseCost(costText).paths.some(isCostVariable) ? await pointProblems() : undefined);
  return { sweep, costText, cost, recheckSeed: req.recheckSeed };
}

/** Searches a plan's grid for its cheapest passing configurations, and re-checks them on fresh seeds. */
export async function searchHints(plan: HintPlan, options: HintOptions = {}): Promise<HintResult> {
  const { sweep, costText, cost } = plan;
  const { maxInstances } = options;
  for (const trace of sweepTraces(sweep)) options.onTrace?.(traceSummary(trace));
  const valuesOf = (index: number): Record<string, GridValue> =>
    Object.fromEntries(sweep.axes.map((axis, a) => [axis.path, sweep.points[index]!.values[a]!]));

  let engine: string | null = null;
  let gpuSeconds: number | null = null;
  const reported = new Set<number>();
  let instances = 0;
  let round = 0;
  const margin = hintMargin(sweep.confidence);
  // the grid points on the sweep's seeds, or (the re-check) on fresh ones: decided, or to the
  // margin; with `firstLook`, only the first look's seeds, verdicts as the procedure gives them there
  const run = async (on: Sweep, indexes: readonly number[], report: boolean, firstLook = false): Promise<Map<number, PointResult>> => {
    const outcome = await runSweep(on, {
      only: indexes,
      ...(maxInstances === undefined ? {} : { batchInstances: maxInstances }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      enough: (row, confidence) => firstLook || row.pass_probability_hi < confidence + margin,
      onPoint: (point, rows) => {
        instances += rows.reduce((sum, r) => sum + r.summary.seeds, 0);
        if (!report) return;
        reported.add(point.index);
        options.onProgress?.({
          round,
          instances,
          evaluated: reported.size,
          gridSize: sweep.points.length,
          values: valuesOf(point.index),
          verdict: pointVerdict(rows.map((r) => r.summary.verdict)),
          seeds: Math.max(...rows.map((r) => r.summary.seeds)),
        });
      },
    });
    if (outcome.cancelled) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
    if (outcome.error !== null) throw outcome.error;
    engine ??= outcome.meta.engine;
    for (const batch of outcome.meta.batches) if (batch.gpuSeconds !== undefined) gpuSeconds = (gpuSeconds ?? 0) + batch.gpuSeconds;
    const results = new Map<number, PointResult>();
    for (const index of indexes) {
      const rows = outcome.rows.filter((r) => r.point.index === index).map((r) => r.summary);
      // an undecided point is not taken as passing: the hint names only what its seeds show
      results.set(index, { passes: rows.every((r) => r.passes), rows });
    }
    return results;
  };

  // the search steers by each point's first look: a point whose cases are all decided there is
  // decided; else one whose pass probability there reaches the confidence, with no goal shown
  // missed, is taken as passing until it is decided
  const steer = async (indexes: readonly number[]): Promise<Map<number, PointResult>> => {
    const looked = await run(sweep, indexes, true, true);
    return new Map(
      [...looked].map(([index, { passes, rows }]) => {
        if (rows.every((r) => r.verdict !== 'UNDECIDED')) return [index, { passes, rows }];
        return [index, { rows, decided: false, passes: rows.every((r) => r.verdict !== 'FAIL' && r.pass_probability >= sweep.confidence) }];
      }),
    );
  };
  const outcome = await searchCheapest({
    axes: sweep.axes.map((axis) => ({ values: axis.values, numeric: axis.type !== 'string' && !UNORDERED_PATHS.has(axis.path) })),
    cost,
    evaluate: (indexes, decide) => {
      round++;
      return decide || sweep.maxSeeds === sweep.seeds ? run(sweep, indexes, true) : steer(indexes);
    },
    ...(options.probes === undefined ? {} : { probes: options.probes }),
  });

  // the answer on fresh seeds: what was found and the neighbours it was chosen over, as one batch
  const recheckSeed = plan.recheckSeed ?? freshSeed(sweep.baseSeed);
  const rechecked = outcome.found.flatMap((f) => [f.index, ...f.cheaper]);
  const recheck = rechecked.length === 0 ? new Map<number, PointResult>() : await run({ ...sweep, baseSeed: recheckSeed }, [...new Set(rechecked)], false);

  const hintRun = (index: number, rows: readonly CaseSummary[]): HintRun => {
    const problem = pointProblem(sweep, sweep.points[index]!);
    const cases = caseMargins(rows, problem.goals, sweep.confidence, margin);
    return { verdict: pointVerdict(cases.map((c) => c.verdict)), cases };
  };
  const configuration = (index: number): HintConfiguration => {
    const again = recheck.get(index);
    return {
      values: valuesOf(index),
      cost: cost(index),
      ...hintRun(index, outcome.evaluated.get(index)!.rows),
      ...(again === undefined ? {} : { recheck: hintRun(index, again.rows) }),
    };
  };
  const hint = (found: Found): Hint => {
    const best = configuration(found.index);
    const cheaper = found.cheaper.map(configuration);
    return { found: best, cheaper, holds: best.recheck?.verdict === 'PASS' && cheaper.every((c) => !overturned(c)) };
  };
  return {
    ...searchSettings(sweep, costText),
    recheckSeed,
    hints: outcome.found.map(hint),
    failing: outcome.failing.map(configuration),
    evaluated: outcome.evaluated.size,
    instances,
    rounds: outcome.rounds,
    gridSize: sweep.points.length,
    monotonicityViolations: outcome.violations.map((v) => describeViolation(v, valuesOf)),
    engine,
    gpuSeconds,
  };
}

/** What a search's result says of its problem and settings, as its sweep has them. */
export function searchSettings(sweep: Sweep, cost: string): Pick<SearchResult, 'problemId' | 'title' | 'paths' | 'cost' | 'goals' | 'confidence' | 'seeds' | 'maxSeeds' | 'seed' | 'verdictLevel' | 'margin' | 'cases'> {
  return {
    problemId: sweep.problem.id,
    title: sweep.problem.title,
    paths: sweep.axes.map((a) => a.path),
    cost,
    goals: goalsInMilliseconds(sweep.problem.goals),
    confidence: sweep.confidence,
    seeds: sweep.seeds,
    maxSeeds: sweep.maxSeeds,
    seed: sweep.baseSeed,
    verdictLevel: VERDICT_LEVEL,
    margin: hintMargin(sweep.confidence),
    cases: sweep.caseNames,
  };
}

/**
 * The cost of each grid point: varied paths take the point's value, other paths the base
 * problem's, and the variables (gpus, dollars_per_hour) the point's whole problem (`problems`,
 * by index, when the cost has variables). Every path is checked once, before any simulation.
 */
function costFunction(text: string, sweep: Sweep, problems: readonly Problem[] | undefined): (index: number) => number {
  const expression = parseCost(text);
  const axisOf = new Map(sweep.axes.map((axis, a) => [axis.path, a]));
  const unknown = expression.paths.filter((p) => !isCostVariable(p) && !axisOf.has(p) && numberAt(sweep.problem, p) === undefined);
  if (unknown.length > 0) {
    throw new ServesimError(
      'SERVESIM_SWEEP_INVALID',
      `unknown path${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')} in "${text}": neither varied nor a number in the problem`,
      'cost',
    );
  }
  const textual = expression.paths.filter((p) => axisOf.has(p) && sweep.axes[axisOf.get(p)!]!.type === 'string');
  if (textual.length > 0) {
    throw new ServesimError('SERVESIM_SWEEP_INVALID', `${textual.join(', ')} in "${text}" varies over names, not numbers`, 'cost');
  }
  const costs = sweep.points.map((point) => {
    const at = (): string => sweep.axes.map((axis, a) => `${axis.path}=${String(point.values[a])}`).join(', ');
    const problem = problems?.[point.index] ?? sweep.problem;
    let value: number;
    try {
      value = expression.evaluate((p) => {
        if (isCostVariable(p)) return costVariable(problem, p);
        const a = axisOf.get(p);
        return a === undefined ? numberAt(sweep.problem, p)! : (point.values[a] as number);
      });
    } catch (err) {
      if (!(err instanceof ServesimError) || err.path === undefined) throw err;
      // the same field, and the grid point that lacks it
      throw new ServesimError(err.code, `${err.message.slice(err.path.length + 2)} (at ${at()})`, err.path);
    }
    if (!Number.isFinite(value)) {
      throw new ServesimError('SERVESIM_SWEEP_INVALID', `"${text}" is not a finite number at ${at()}`, 'cost');
    }
    return value;
  });
  return (index) => costs[index]!;
}

/**
 * The re-check's base seed when none is given: another base seed, so its instances' keys
 * (instanceKey hashes the base seed with the instance) are unrelated to the search's.
 */
export function freshSeed(baseSeed: number): number {
  return (baseSeed + 0x9e3779b9) >>> 0;
}

/**
 * A neighbour's verdict that turned over on fresh seeds: a pass that fails, or one not
 * passing (failing or undecided) that passes, when a cheaper answer may then exist.
 */
function overturned(c: HintConfiguration): boolean {
  const again = c.recheck?.verdict;
  return (c.verdict === 'PASS' && again === 'FAIL') || (c.verdict !== 'PASS' && again === 'PASS');
}

/** "gpu.slots=9, router.policy=x passes, though gpu.slots=10 failed". */
function describeViolation(v: Violation, valuesOf: (index: number) => Record<string, GridValue>): string {
  const values = valuesOf(v.index);
  const other = valuesOf(v.because);
  const differ = Object.fromEntries(Object.entries(other).filter(([path, value]) => values[path] !== value));
  return v.passes
    ? `${describeValues(values)} passes, though ${describeValues(differ)} failed (assumed: less never passes where more fails)`
    : `${describeValues(values)} fails, though ${describeValues(differ)} passed (assumed: more never fails where less passes)`;
}
