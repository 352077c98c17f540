/**
 * `runCapacity`: for each design of a grid, the highest load at which it passes every case,
 * found by the bisection of `bisection.ts` with each round's probes (a design at a load scale)
 * run as one batch of the run layer, and the Pareto front of cost against capacity.
 *
 * The load scale multiplies the problem's traffic as given: `traffic.rate` for Poisson
 * arrivals, `traffic.rateScale` for a replayed trace; each case scales that again as it
 * always does (peak hour's 1.25x).
 */
import { compile } from '../engine/compile.js';
import { invalidCapacityRequest, ServesimError } from '../errors.js';
import { caseMargins, describeValues } from '../hint/explain.js';
import { costVariable, defaultCost, isCostVariable, numberAt, parseCost } from '../hint/cost.js';
import { hintMargin, parseSearchRequest, searchSettings, searchSweep } from '../hint/search.js';
import { dollarsPerHour, gpuCount, type Problem } from '../model/problem.js';
import type { CaseSummary } from '../model/summary.js';
import { pointVerdict, type Verdict } from '../model/verdict.js';
import { selectCases } from '../problem/parse.js';
import { parsePath } from '../problem/paths.js';
import type { BatchUsed } from '../run/batches.js';
import { runPoints } from '../run/points.js';
import { engineMeta } from '../run/run.js';
import { mapInSlices } from '../slices.js';
import { pointProblem } from '../sweep/run.js';
import { sweepFromObjectInSlices, type GridPoint, type GridSize, type GridValue, type Sweep } from '../sweep/spec.js';
import {
  capacityRequestSchema,
  MAX_DESIGNS,
  MAX_SCALE,
  MIN_SCALE,
  type CapacityCase,
  type CapacityDesign,
  type CapacityEdge,
  type CapacityProgress,
  type CapacityRequest,
  type CapacityResult,
} from './api.js';
import { paretoFront, searchCapacities, type CapacityViolation, type DesignPlace, type Probe, type ProbeResult } from './bisection.js';

export interface CapacityOptions {
  /** Aborts the search: it rejects with SERVESIM_CANCELLED. */
  readonly signal?: AbortSignal;
  /**
   * Ends the search at once, resolving with what the rounds before showed: the designs settled
   * then, and each other's bracket so far (`unsettled` lists them). A cancelled job keeps them.
   */
  readonly stop?: AbortSignal;
  readonly onProgress?: (progress: CapacityProgress) => void;
  /** Folder that a problem given as a path is read from; absent: only ids and inline problems. */
  readonly baseDir?: string;
}

/** How a plan's grid is refused before any design is listed (a server's limits, a busy server). */
export interface CapacityPlanOptions {
  readonly baseDir?: string;
  /** Called with the grid's size before any design is listed; throws to refuse it. */
  readonly checkSize?: (size: GridSize) => void;
}

/** A request read and checked: every design's problem and cost, before anything runs. */
export interface CapacityPlan {
  readonly sweep: Sweep;
  readonly problems: readonly Problem[];
  readonly costText: string;
  readonly costs: readonly number[];
  readonly tolerance: number;
}

/** The fields the load scale sets: varied, they would fight it. */
const LOAD_PATHS = ['traffic.rate', 'traffic.rateScale'];

/** A case's verdict at a load: the probe's own, or one it inherited from a probe under more load. */
interface ShownCase {
  readonly scale: number;
  readonly row: CaseSummary;
}

interface ProbeOutcome extends ProbeResult {
  readonly verdict: Verdict | 'REFUSED';
  /** Every case of the search, in order; empty when refused. */
  readonly cases: readonly ShownCase[];
  /** Why the problem refuses the load, when it does. */
  readonly refusal: string;
}

export async function runCapacity(request: CapacityRequest, options: CapacityOptions = {}): Promise<CapacityResult> {
  return searchCapacity(await planCapacity(request, options), options);
}

/** Reads and checks a request: its bad input is refused here, before any simulation. */
export async function planCapacity(request: CapacityRequest, options: CapacityPlanOptions = {}): Promise<CapacityPlan> {
  const req = parseSearchRequest(capacityRequestSchema, request, invalidCapacityRequest);
  const fighting = Object.keys(req.vary).filter((path) => LOAD_PATHS.includes(path));
  if (fighting.length > 0) {
    throw invalidCapacityRequest(fighting.map((path) => ({ path: `vary.${path}`, message: 'the search sets the load itself (a scale of the problem\'s traffic); set the traffic it scales with --set' })));
  }
  const sweep = await sweepFromObjectInSlices(
    searchSweep(req),
    // the grid's instances at one load: the search's total depends on how it goes
    {
      ...(options.baseDir === undefined ? {} : { baseDir: options.baseDir }),
      ...(options.checkSize === undefined ? {} : { checkSize: options.checkSize }),
      maxInstances: Number.MAX_SAFE_INTEGER,
      maxPoints: MAX_DESIGNS,
    },
  );
  const problems = await mapInSlices(sweep.points, (point) => pointProblem(sweep, point));
  const costText = req.cost ?? defaultCost(problems);
  const costs = designCosts(costText, req.cost === undefined, sweep, problems);
  return { sweep, problems, costText, costs, tolerance: req.tolerance };
}

/** Searches a plan's designs for their capacities. */
export async function searchCapacity(plan: CapacityPlan, options: CapacityOptions = {}): Promise<CapacityResult> {
  const { sweep, problems, costText, costs, tolerance } = plan;
  // either ends the round in flight; only `signal` rejects
  const signals = [options.signal, options.stop].filter((s) => s !== undefined);
  const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  const valuesOf = (index: number): Record<string, GridValue> =>
    Object.fromEntries(sweep.axes.map((axis, a) => [axis.path, sweep.points[index]!.values[a]!]));
  const margin = hintMargin(sweep.confidence);
  /**
   * An undecided probe takes no more seeds once its pass probability is estimated below
   * confidence + margin: it would pass, if at all, by less than the margin, so the search takes
   * it as the edge and probes less load. (A hint stops only once the interval shows it; here
   * the bisection's tolerance absorbs an estimate's error, and the seeds such a probe would
   * take, thousands near the confidence, go to the probes below it.)
   */
  const unpromising = (row: CaseSummary, confidence: number): boolean => row.pass_probability < confidence + margin;

  const batches: BatchUsed[] = [];
  let instances = 0;
  const instancesOf = new Array<number>(sweep.points.length).fill(0);
  let lastRound = { probes: 0, passed: 0, failed: 0, undecided: 0, refused: 0 };
  // each design's cases by the highest load each passed at: a case passing under more load
  // passes under less (what bisection assumes of the whole design), so a probe leaves it out
  const shown = sweep.points.map(() => new Map<string, ShownCase>());
  // each design's highest load passed so far
  const passed = new Array<number>(sweep.points.length).fill(0);
  const evaluate = async (probes: readonly Probe[]): Promise<ProbeOutcome[]> => {
    const out = new Array<ProbeOutcome>(probes.length);
    const inherited = probes.map((p) => sweep.caseNames.flatMap((name) => {
      const known = shown[p.design]!.get(name);
      return known !== undefined && known.scale >= p.scale ? [known] : [];
    }));
    const settle = (at: number, ran: readonly ShownCase[]): void => {
      const cases = [...ran, ...inherited[at]!].sort((a, b) => sweep.caseNames.indexOf(a.row.case) - sweep.caseNames.indexOf(b.row.case));
      const verdict = pointVerdict(cases.map((c) => c.row.verdict));
      if (verdict === 'PASS') passed[probes[at]!.design] = Math.max(passed[probes[at]!.design]!, probes[at]!.scale);
      out[at] = { passes: verdict === 'PASS', decided: verdict !== 'UNDECIDED', verdict, cases, refusal: '' };
    };
    // a load the problem refuses is an edge of the bracket, found before anything runs
    const runnable: { readonly at: number; readonly probe: Probe; readonly problem: Problem; readonly cases: readonly string[] }[] = [];
    for (const [at, probe] of probes.entries()) {
      const cases = sweep.caseNames.filter((name) => !inherited[at]!.some((c) => c.row.case === name));
      if (cases.length === 0) {
        settle(at, []);
        continue;
      }
      try {
        const problem = probeProblem(sweep, sweep.points[probe.design]!, problems[probe.design]!, probe.scale);
        for (const scenario of selectCases(problem, cases)) compile(problem, scenario);
        runnable.push({ at, probe, problem, cases });
      } catch (err) {
        if (!(err instanceof ServesimError)) throw err;
        out[at] = { passes: false, refused: true, verdict: 'REFUSED', cases: [], refusal: err.message };
      }
    }
    const { error } = await runPoints(runnable, (r) => r.problem, { caseNames: sweep.caseNames, seeds: sweep.seeds, maxSeeds: sweep.maxSeeds, baseSeed: sweep.baseSeed, engine: sweep.engine }, {
      ...(signal === undefined ? {} : { signal }),
      enough: (row, confidence, r) => unpromising(row, confidence) || r.probe.scale <= passed[r.probe.design]! * (1 + tolerance),
      casesOf: (r) => r.cases,
      onBatch: (used) => batches.push(used),
      onPoint: (r, rows) => {
        const taken = rows.reduce((sum, row) => sum + row.seeds, 0);
        instances += taken;
        instancesOf[r.probe.design]! += taken;
        const ran = rows.map((row) => ({ scale: r.probe.scale, row }));
        for (const c of ran) {
          const known = shown[r.probe.design]!.get(c.row.case);
          if (c.row.verdict === 'PASS' && (known === undefined || known.scale < c.scale)) shown[r.probe.design]!.set(c.row.case, c);
        }
        settle(r.at, ran);
      },
    });
    if (signal?.aborted === true) throw new ServesimError('SERVESIM_CANCELLED', 'cancelled');
    if (error !== null) throw error;
    const count = (verdict: ProbeOutcome['verdict']): number => out.filter((o) => o.verdict === verdict).length;
    lastRound = { probes: probes.length, passed: count('PASS'), failed: count('FAIL'), undecided: count('UNDECIDED'), refused: count('REFUSED') };
    return out;
  };

  const outcome = await searchCapacities({
    designs: designPlaces(sweep),
    tolerance,
    minScale: MIN_SCALE,
    maxScale: MAX_SCALE,
    evaluate,
    ...(options.stop === undefined ? {} : { stop: options.stop }),
    onRound: (round, settled) => options.onProgress?.({ round, ...lastRound, settled, designs: sweep.points.length }),
  });

  const designs = outcome.designs.map((found, d): Omit<CapacityDesign, 'pareto'> => {
    const problem = problems[d]!;
    const lower = found.lower;
    const rate = lower === null ? null : problem.traffic.rate * lower.scale;
    const gpus = gpuCount(problem);
    const dollars = dollarsPerHour(problem);
    return {
      values: valuesOf(d),
      cost: costs[d]!,
      rate_scale: lower?.scale ?? null,
      requests_per_second: rate === null ? null : tidy(rate),
      requests_per_second_per_gpu: rate === null || gpus === null ? null : tidy(rate / gpus),
      requests_per_dollar: rate === null || dollars === null ? null : tidy((rate * 3600) / dollars),
      cases: lower === null ? [] : atScales(lower.result.cases, problem.goals, sweep.confidence, margin),
      above: found.upper === null ? null : { ...edge(found.upper.scale, found.upper.result, problem.goals, sweep.confidence, margin), shown_on: found.upperFrom === d ? null : valuesOf(found.upperFrom) },
      probes: found.probes,
      instances: instancesOf[d]!,
    };
  });
  const front = paretoFront(designs.map((d) => ({ cost: d.cost, capacity: d.requests_per_second })));
  const engines = batches.length === 0 ? null : engineMeta(batches);
  const onGpu = batches.filter((b) => b.gpuSeconds !== undefined);
  return {
    ...searchSettings(sweep, costText),
    load: sweep.problem.traffic.trace === null ? 'traffic.rate' : 'traffic.rateScale',
    tolerance,
    minScale: MIN_SCALE,
    maxScale: MAX_SCALE,
    designs: designs.map((d, i) => ({ ...d, pareto: front[i]! })),
    monotonicityViolations: outcome.violations.map((v) => describeViolation(v, valuesOf)),
    unsettled: outcome.unsettled,
    rounds: outcome.rounds,
    probes: outcome.designs.reduce((sum, d) => sum + d.probes, 0),
    instances,
    engine: engines?.engine ?? null,
    gpuSeconds: onGpu.length === 0 ? null : onGpu.reduce((sum, b) => sum + b.gpuSeconds!, 0),
  };
}

/** Four significant digits: a rate's estimate is no finer than the search's tolerance. */
function tidy(value: number): number {
  return Number(value.toPrecision(4));
}

/**
 * A design's problem at a load scale: its traffic.rate (or with a trace its traffic.rateScale)
 * times the scale, as one more override after the grid point's.
 */
function probeProblem(sweep: Sweep, point: GridPoint, problem: Problem, scale: number): Problem {
  const trace = problem.traffic.trace !== null;
  const field = trace ? 'traffic.rateScale' : 'traffic.rate';
  // twelve digits: 30 x 1.1 is 33, not 33.000000000000004
  const value = Number(((trace ? problem.traffic.rateScale : problem.traffic.rate) * scale).toPrecision(12));
  return pointProblem(sweep, { ...point, overrides: [...point.overrides, { path: parsePath(field)!, value, text: `${field}=${value}` }] });
}

/**
 * Each design's place for the search: its family (the values of the string-valued paths) and
 * its rank on each numeric path, smallest first.
 */
function designPlaces(sweep: Sweep): DesignPlace[] {
  const numeric = sweep.axes.flatMap((axis, a) => (axis.type === 'string' ? [] : [a]));
  const sorted = numeric.map((a) => [...new Set(sweep.axes[a]!.values as readonly number[])].sort((x, y) => x - y));
  return sweep.points.map((point) => ({
    family: JSON.stringify(sweep.axes.flatMap((axis, a) => (axis.type === 'string' ? [point.values[a]] : []))),
    ranks: numeric.map((a, k) => sorted[k]!.indexOf(point.values[a] as number)),
  }));
}

/**
 * Each design's cost, read from its own problem: the varied paths and the others alike (times
 * in microseconds, as the engines have them), and the variables gpus and dollars_per_hour.
 */
function designCosts(text: string, byDefault: boolean, sweep: Sweep, problems: readonly Problem[]): number[] {
  const expression = parseCost(text);
  return problems.map((problem, d) => {
    const at = describeValues(Object.fromEntries(sweep.axes.map((axis, a) => [axis.path, sweep.points[d]!.values[a]!])));
    const value = expression.evaluate((path) => {
      if (isCostVariable(path)) return costVariable(problem, path);
      const found = numberAt(problem, path);
      if (found !== undefined) return found;
      const fix = byDefault ? ' (the default cost: give one, --cost)' : '';
      throw new ServesimError('SERVESIM_SWEEP_INVALID', `${path} in "${text}" is not a number in the problem at ${at}${fix}`, 'cost');
    });
    if (!Number.isFinite(value)) throw new ServesimError('SERVESIM_SWEEP_INVALID', `"${text}" is not a finite number at ${at}`, 'cost');
    return value;
  });
}

/** A bracket's upper edge as the result shows it: its verdict and why it does not pass. */
function edge(scale: number, result: ProbeOutcome, goals: Problem['goals'], confidence: number, margin: number): Omit<CapacityEdge, 'shown_on'> {
  const cases = atScales(result.cases, goals, confidence, margin);
  return {
    rate_scale: scale,
    verdict: result.verdict,
    seeds: Math.max(0, ...cases.map((c) => c.seeds)),
    why: result.verdict === 'REFUSED' ? result.refusal : cases.filter((c) => !c.passes).map((c) => c.why).join('; '),
  };
}

/** Each case's margins, with the load it was shown at. */
function atScales(cases: readonly ShownCase[], goals: Problem['goals'], confidence: number, margin: number): CapacityCase[] {
  const margins = caseMargins(cases.map((c) => c.row), goals, confidence, margin);
  return margins.map((m, i) => ({ ...m, rate_scale: cases[i]!.scale }));
}

/** "gpu.slots=12 does not pass at 1.5x, though gpu.slots=10 passed there". */
function describeViolation(v: CapacityViolation, valuesOf: (index: number) => Record<string, GridValue>): string {
  const values = valuesOf(v.design);
  const other = valuesOf(v.because);
  const differ = Object.fromEntries(Object.entries(other).filter(([path, value]) => values[path] !== value));
  return v.passes
    ? `${describeValues(values)} passes at ${v.scale}x, though ${describeValues(differ)} did not pass there or lower (assumed: more never lowers the capacity)`
    : `${describeValues(values)} does not pass at ${v.scale}x, though ${describeValues(differ)} passed there or higher (assumed: more never lowers the capacity)`;
}
