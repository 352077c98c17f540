/**
 * `traffic.warmup: auto` (docs/model.md section 1): each case's warm-up comes from a pilot, a
 * few seeds of the case from an empty system with no warm-up and a measured window as long as
 * the most auto may choose and the problem's window together, on the case's traffic without its
 * slowdown, failures and burst (warm-up is for reaching the traffic's steady state before them).
 * MSER's truncation point of the pilot's pooled intervals, rounded up to whole seconds, is the
 * warm-up; where the pilot cannot place it (too few intervals with arrivals, or steady state
 * not reached in the first half of the pilot), the most auto may choose.
 */
import { compile, type EngineConfig } from '../engine/compile.js';
import type { Problem, Scenario } from '../model/problem.js';
import type { InstanceResult } from '../model/result.js';
import { truncationOf } from '../model/steady.js';

/** Seeds of a pilot: pooled, they average out the seed noise of its intervals. */
export const PILOT_SEEDS = 8;

/** The pilot of a case of a problem with `traffic.warmup: auto` (whose warm-up is the most auto may choose). */
export function pilotConfig(problem: Problem, scenario: Scenario): EngineConfig {
  const { traffic } = problem;
  const pilot: Problem = { ...problem, traffic: { ...traffic, warmup: 0, duration: traffic.warmup + traffic.duration, warmupAuto: false } };
  return compile(pilot, { name: scenario.name, rateScale: scenario.rateScale, burst: null, slowdown: null, failures: [] });
}

/** The warm-up a case's pilot seeds give, microseconds (whole seconds), at most the problem's most. */
export function pilotWarmup(problem: Problem, results: readonly InstanceResult[]): number {
  const most = problem.traffic.warmup;
  const first = results[0];
  if (first === undefined) return most;
  const resolved = new Float64Array(first.intervalResolved.length);
  const sojourn = new Float64Array(first.intervalSojourn.length);
  for (const r of results) {
    for (let k = 0; k < resolved.length; k++) {
      resolved[k]! += r.intervalResolved[k]!;
      sojourn[k]! += r.intervalSojourn[k]!;
    }
  }
  const t = truncationOf(resolved, sojourn, first.judgedIntervals);
  if (t === null || t.atLimit) return most;
  return Math.min(most, Math.ceil((t.truncated * first.intervalMicros) / 1e6) * 1e6);
}
