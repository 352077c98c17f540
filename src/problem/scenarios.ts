/**
 * Test cases (docs/model.md section 4): the lab's four built-in cases, a file's own named cases and
 * changes to the built-in ones, and picking cases by name. Windows in a file are measured from
 * the start of the measured window; in the typed Scenario they are microseconds from the start
 * of the run, so the engines never need to know about warm-up.
 */
import { invalidProblem, ServesimError, type FieldIssue } from '../errors.js';
import { traceSpan } from '../model/trace.js';
import { expectedArrivals, type Burst, type Problem, type ReplicaFailure, type Scenario, type Slowdown, type Target } from '../model/problem.js';
import { BUILTIN_CASE_NAMES, HORIZON_TEXT, LIMITS } from './limits.js';
import type { FileFailure, FileScenario, ProblemFile } from './schema.js';
import { formatDuration } from './units.js';

/** What resolving a case needs to know about the problem. */
export interface CaseContext {
  readonly warmup: number;
  readonly duration: number;
  /** Arrivals per second: traffic.rate, or a trace's mean rate at traffic.rateScale. */
  readonly rate: number;
  /**
   * The trace replayed instead of Poisson arrivals, or null: traffic.rateScale, and whether the
   * problem gave that.
   */
  readonly trace: { readonly scale: number; readonly scaleGiven: boolean } | null;
  /** Replicas of each component a slowdown or failure may hit; absent: the problem lacks it. */
  readonly replicas: ReadonlyMap<Target, number>;
  /** What slow-dependency slows: the model, or a job problem's server. */
  readonly dependency: Target;
  /** What server-dies kills: the component with the most replicas. */
  readonly killTarget: Target;
  /** The workload's kind, and the model calls one arrival makes (a task's steps, else 1). */
  readonly kind: keyof typeof LIMITS.maxArrivals;
  readonly callsPerArrival: number;
  /** `traffic.warmup: auto`: `warmup` is the most the run may choose. */
  readonly warmupAuto: boolean;
  /** The longest time a slowdown of each target can stretch, microseconds. */
  readonly longest: ReadonlyMap<Target, number>;
}

const DEFAULT_DETECT_AFTER = 5_000_000;
const PEAK_HOUR_SCALE = 1.25;
const SLOW_DEPENDENCY_FACTOR = 2;
const LENGTHEN = ': lengthen traffic.duration or move the window';
/** The field whose times a slowdown of each target stretches. */
const STRETCHED_FIELD: Readonly<Record<Target, string>> = { gpu: 'gpu.profile', tools: 'tools.latency', server: 'server.service', app: 'app' };

/** A product of scales for messages, without float noise (0.1 x 3 is 0.3). */
function scaleText(x: number): string {
  return String(Number(x.toPrecision(12)));
}

/** A count for messages: whole above 10, else two decimals. */
function round(n: number): string {
  return n >= 10 ? Math.round(n).toLocaleString('en') : n.toFixed(2);
}

export function isBuiltinCase(name: string): boolean {
  return (BUILTIN_CASE_NAMES as readonly string[]).includes(name);
}

/** The component server-dies kills: the one with the most replicas, the GPU pool on a tie. */
export function killTargetOf(replicas: ReadonlyMap<Target, number>): Target {
  const order: Target[] = ['gpu', 'app', 'server'];
  let best: Target | undefined;
  for (const t of order) {
    const n = replicas.get(t);
    if (n !== undefined && (best === undefined || n > (replicas.get(best) ?? 0))) best = t;
  }
  return best ?? 'server';
}

class CaseBuilder {
  readonly issues: FieldIssue[] = [];
  constructor(private readonly ctx: CaseContext) {}

  private issue(path: string, message: string, from?: readonly string[]): void {
    this.issues.push({ path, message, ...(from === undefined ? {} : { from }) });
  }

  /** A window in the file's terms (from the measured window's start) → run time. */
  window(from: number | undefined, to: number | undefined, path: string): { from: number; to: number } | undefined {
    const d = this.ctx.duration;
    const f = from ?? Math.floor(d / 3);
    const t = to ?? Math.floor((2 * d) / 3);
    let ok = true;
    if (f >= d) {
      this.issue(`${path}.from`, `${formatDuration(f)} is not inside the measured window (0 to ${formatDuration(d)})${LENGTHEN}`);
      ok = false;
    }
    if (t > d) {
      this.issue(`${path}.to`, `${formatDuration(t)} is past the end of the measured window (${formatDuration(d)})${LENGTHEN}`);
      ok = false;
    }
    if (ok && f >= t) {
      const shown = to === undefined ? ` (to defaults to ${formatDuration(t)})` : '';
      this.issue(`${path}.from`, `must be before to: ${formatDuration(f)} is not before ${formatDuration(t)}${shown}`);
      ok = false;
    }
    return ok ? { from: this.ctx.warmup + f, to: this.ctx.warmup + t } : undefined;
  }

  target(target: Target | undefined, fallback: Target, path: string): Target | undefined {
    const t = target ?? fallback;
    if (!this.ctx.replicas.has(t)) {
      this.issue(`${path}.target`, `the problem has no ${t}; it has ${[...this.ctx.replicas.keys()].join(', ')}`);
      return undefined;
    }
    return t;
  }

  failure(f: FileFailure, path: string): ReplicaFailure | undefined {
    const target = this.target(f.target, this.ctx.killTarget, path);
    const w = this.window(f.from, f.to, path);
    const n = target === undefined ? undefined : this.ctx.replicas.get(target);
    if (n !== undefined && typeof f.replica === 'number' && f.replica >= n) {
      const raise = target === 'tools' ? '' : `: raise ${target}.replicas or pick one of them`;
      this.issue(`${path}.replica`, `${target} has ${n} replica${n === 1 ? '' : 's'} (0 to ${n - 1}), got ${f.replica}${raise}`);
      return undefined;
    }
    if (target === undefined || w === undefined) return undefined;
    return { target, replica: f.replica, mode: f.mode, detectAfter: f.detectAfter, from: w.from, to: w.to };
  }

  failures(list: readonly FileFailure[], path: string): ReplicaFailure[] {
    const out: ReplicaFailure[] = [];
    list.forEach((f, i) => {
      const r = this.failure(f, `${path}[${i}]`);
      if (r !== undefined) out.push(r);
    });
    return out;
  }

  slowdown(s: { target?: Target | undefined; factor?: number; from?: number | undefined; to?: number | undefined }, path: string): Slowdown | null {
    const target = this.target(s.target, this.ctx.dependency, path);
    const w = this.window(s.from, s.to, path);
    if (target === undefined || w === undefined) return null;
    const factor = s.factor ?? SLOW_DEPENDENCY_FACTOR;
    // the engines scale the target's times in u32 microseconds
    const longest = this.ctx.longest.get(target) ?? 0;
    if (longest * factor > LIMITS.horizonMicros) {
      // the built-in factor is no field of the file: blame what takes that long
      this.issue(
        s.factor === undefined ? STRETCHED_FIELD[target] : `${path}.factor`,
        `${factor}x stretches the longest time of ${STRETCHED_FIELD[target]}, ${formatDuration(longest)}, to ${formatDuration(Math.round(longest * factor))}, ` +
          `past the ${HORIZON_TEXT} the engines keep in u32 microseconds`,
      );
      return null;
    }
    return { target, factor, from: w.from, to: w.to };
  }

  /** The case's arrival rates against the limits; `where` is the field to blame. */
  traffic(name: string, rateScale: number, burst: Burst | null, where: string): void {
    const { rate, warmup, duration, kind, callsPerArrival } = this.ctx;
    const scaled = rate * rateScale;
    const burstScale = burst?.scale ?? 1;
    const peak = scaled * Math.max(1, burstScale);
    const low = scaled * Math.min(1, burstScale);
    // the burst window changes the rate inside the measured window
    const measured = expectedArrivals(scaled, duration, burst);
    const calls = expectedArrivals(scaled, warmup + duration, burst) * callsPerArrival;
    const limit = LIMITS.maxArrivals[kind];
    const what = callsPerArrival === 1 ? 'arrivals' : `model calls (arrivals x orchestrator.steps ${callsPerArrival})`;
    if (peak > LIMITS.maxRate) {
      this.issue(where, `case ${name} runs ${peak} arrivals a second, over the limit of ${LIMITS.maxRate}`);
    } else if (low < LIMITS.minRate) {
      const why = this.ctx.trace === null ? ' (the engines sample gaps between arrivals from a table of u31 microseconds)' : ` (on average: the trace's mean rate at ${scaleText(this.ctx.trace.scale * rateScale)}x)`;
      this.issue(where, `case ${name} runs ${low} arrivals a second, under the least of ${LIMITS.minRate}${why}`);
    } else if (measured < LIMITS.minArrivals) {
      this.issue(
        where,
        `case ${name} expects ${round(measured)} arrivals in the ${formatDuration(duration)} measured window, fewer than ${LIMITS.minArrivals}: raise the rate or traffic.duration`,
        ['traffic.duration'],
      );
    } else if (calls > limit) {
      this.issue(
        where,
        `case ${name} simulates ${round(calls)} ${what} per instance, warm-up included${this.ctx.warmupAuto ? ` (the ${formatDuration(warmup)} traffic.warmup: auto may choose)` : ''}, over the limit of ${limit.toLocaleString('en')} for ${kind} workloads (a few seconds of CPU each)`,
        ['traffic.duration', 'traffic.warmup', ...(callsPerArrival === 1 ? [] : ['orchestrator.steps'])],
      );
    }
  }

  burst(b: { scale: number; from?: number | undefined; to?: number | undefined }, path: string): Burst | null {
    const w = this.window(b.from, b.to, path);
    return w === undefined ? null : { scale: b.scale, from: w.from, to: w.to };
  }

  /** A case: the built-in one of that name (or as-given), changed as the file says. */
  scenario(name: string, own: readonly ReplicaFailure[], change: FileScenario | undefined): Scenario {
    const path = `scenarios.${name}`;
    let rateScale = name === 'peak-hour' ? PEAK_HOUR_SCALE : 1;
    let burst: Burst | null = null;
    let slowdown: Slowdown | null = name === 'slow-dependency' ? this.slowdown({}, path) : null;
    let extra: ReplicaFailure[] = [];
    if (name === 'server-dies') {
      const kill = this.failure({ replica: 'random', mode: 'reset', detectAfter: DEFAULT_DETECT_AFTER }, path);
      if (kill !== undefined) extra = [kill];
    }
    if (change !== undefined) {
      if (change.rateScale !== undefined) rateScale = change.rateScale;
      if (change.burst !== undefined) burst = change.burst === null ? null : this.burst(change.burst, `${path}.burst`);
      if (change.slowdown !== undefined) {
        slowdown = change.slowdown === null ? null : this.slowdown(change.slowdown, `${path}.slowdown`);
      }
      if (change.failures !== undefined) extra = this.failures(change.failures, `${path}.failures`);
    }
    const rateField = this.ctx.trace === null ? 'traffic.rate' : this.ctx.trace.scaleGiven ? 'traffic.rateScale' : 'traffic.trace';
    this.traffic(name, rateScale, burst, change?.rateScale !== undefined || change?.burst ? path : rateField);
    const failures = [...own, ...extra];
    if (failures.length > LIMITS.failures) {
      // the file's list, unless the case's own list is what passes the limit
      const field = change?.failures === undefined || own.length > LIMITS.failures ? 'failures' : `${path}.failures`;
      this.issue(field, `case ${name} has ${failures.length.toLocaleString('en')} replica failures, over the limit of ${LIMITS.failures.toLocaleString('en')} a case`);
    }
    return { name, rateScale, burst, slowdown, failures };
  }
}

/**
 * The problem's cases in the order `cases` lists them. When the file gives no `cases`, the
 * four built-in cases run, then every case the file defines under `scenarios`.
 */
export function buildCases(
  file: ProblemFile,
  ctx: CaseContext,
  casesGiven: boolean,
): { cases: Scenario[]; issues: FieldIssue[] } {
  const b = new CaseBuilder(ctx);
  const own = b.failures(file.failures, 'failures');
  const defined = Object.keys(file.scenarios);
  const names = casesGiven
    ? file.cases
    : [...BUILTIN_CASE_NAMES, ...defined.filter((n) => !isBuiltinCase(n))];
  const cases: Scenario[] = [];
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (seen.has(name)) {
      b.issues.push({ path: `cases[${i}]`, message: `"${name}" is listed twice` });
      return;
    }
    seen.add(name);
    if (name === 'all') {
      b.issues.push({ path: `cases[${i}]`, message: '"all" is not a case; leave cases out to run every case' });
      return;
    }
    if (!isBuiltinCase(name) && !Object.hasOwn(file.scenarios, name)) {
      const custom = defined.filter((n) => !isBuiltinCase(n));
      const known = [...BUILTIN_CASE_NAMES, ...custom].join(', ');
      b.issues.push({
        path: `cases[${i}]`,
        message: `unknown case "${name}"; cases are ${known}, or one defined under scenarios`,
      });
      return;
    }
    cases.push(b.scenario(name, own, file.scenarios[name]));
  });
  for (const name of defined) {
    if (name === 'all') {
      b.issues.push({ path: 'scenarios.all', message: '"all" means every case; name this case otherwise' });
    } else if (!seen.has(name) && !isBuiltinCase(name)) {
      b.issues.push({ path: `scenarios.${name}`, message: `is defined but not listed in cases` });
    }
  }
  return { cases, issues: b.issues };
}

/**
 * The problem with another warm-up: its cases' windows, held from the start of the run, move
 * with the measured window. The run's choice of `traffic.warmup: auto` (src/run/warmup.ts), at
 * most the warm-up the problem was checked at, so every limit still holds.
 */
export function withWarmup(problem: Problem, warmup: number): Problem {
  const shift = warmup - problem.traffic.warmup;
  const moved = <W extends { readonly from: number; readonly to: number }>(w: W): W => ({ ...w, from: w.from + shift, to: w.to + shift });
  return {
    ...problem,
    traffic: { ...problem.traffic, warmup, warmupAuto: false },
    cases: problem.cases.map((c) => ({
      ...c,
      burst: c.burst === null ? null : moved(c.burst),
      slowdown: c.slowdown === null ? null : moved(c.slowdown),
      failures: c.failures.map(moved),
    })),
  };
}

/**
 * The problem's cases named in `names`, in the order asked ('all', or no names: every case):
 * the cases that run, so what must hold of them all is checked here (checkTraceWindow).
 */
export function selectCases(problem: Problem, names: readonly string[] | 'all'): Scenario[] {
  const out = names === 'all' || names.length === 0 || names.includes('all') ? [...problem.cases] : pick(problem, names);
  checkTraceWindow(problem, out);
  return out;
}

function pick(problem: Problem, names: readonly string[]): Scenario[] {
  const out: Scenario[] = [];
  for (const name of names) {
    const found = problem.cases.find((c) => c.name === name);
    if (found === undefined) {
      throw new ServesimError(
        'SERVESIM_CASE_UNKNOWN',
        `unknown case '${name}'; ${problem.id} has ${problem.cases.map((c) => c.name).join(', ')}`,
      );
    }
    if (!out.includes(found)) out.push(found);
  }
  return out;
}

/**
 * A trace replayed at each case's speed must cover warm-up and the measured window: checked
 * for the cases that run (selectCases), so a case left out cannot stop the others, and
 * reported once, naming every case that needs more of the trace than there is. Throws
 * SERVESIM_PROBLEM_INVALID on traffic.trace.
 */
export function checkTraceWindow(problem: Problem, cases: readonly Scenario[]): void {
  const { trace, rateScale, warmup, duration } = problem.traffic;
  if (trace === null) return;
  const span = traceSpan(trace);
  const window = warmup + duration;
  // as compile.ts replays it: whole microseconds, the trace's times divided by the speed
  const short = cases.filter((c) => Math.floor(span / (rateScale * c.rateScale)) < window);
  if (short.length === 0) return;
  const speed = (c: Scenario): string => `${scaleText(rateScale * c.rateScale)}x (traffic.rateScale ${rateScale} x case ${c.name}'s rateScale ${c.rateScale})`;
  const needs = (c: Scenario): string => formatDuration(Math.ceil(window * rateScale * c.rateScale));
  const spans = `${trace.file} spans ${formatDuration(span)}`;
  const windowText = `traffic.warmup + traffic.duration = ${formatDuration(window)}`;
  const fix = 'shorten the window or lower the rateScale';
  const [only] = short;
  const message = short.length === 1
    ? `${spans}; case ${only!.name} replays it at ${speed(only!)}, so its window, ${windowText}, needs ${needs(only!)} of it: ${fix}`
    : `${spans}; the window, ${windowText}, needs more of it in cases ${short.map((c) => c.name).join(', ')}: ` +
      `${short.map((c) => `case ${c.name} replays it at ${speed(c)}, needing ${needs(c)}`).join('; ')}: ${fix}`;
  throw invalidProblem([{ path: 'traffic.trace', message }]);
}
