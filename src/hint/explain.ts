/**
 * Why a configuration passes or fails, in a learner's words: each case's margins against the
 * goals, and for a failing case the goal it misses with both numbers
 * ("server-dies: p99 4.1 s > 3 s"). Numbers are printed so that a failing value never reads
 * as meeting its goal.
 */
import type { Goals } from '../model/problem.js';
import { COMPONENT_NAMES, QUEUED_COMPONENTS } from '../model/result.js';
import { busiestComponent, type CaseSummary } from '../model/summary.js';
import type { CaseMargin } from './api.js';

const MAX_DIGITS = 4;
/** A component this busy is named as the bottleneck of a failing case. */
const SATURATED = 0.8;

/** Each case's margins against the goals (the summary's own pass decision is kept). */
export function caseMargins(rows: readonly CaseSummary[], goals: Goals, confidence: number): CaseMargin[] {
  return rows.map((row) => ({
    case: row.case,
    passes: row.passes,
    success: row.success,
    p99_ms: row.p99_ms,
    pass_probability: row.pass_probability,
    success_margin: row.success - goals.success,
    // to the microsecond: the difference of two milliseconds values carries binary noise
    p99_margin_ms: Math.round((goals.p99 / 1000 - row.p99_ms) * 1000) / 1000,
    why: row.passes ? '' : whyFails(row, goals, confidence),
  }));
}

/**
 * "peak-hour: success 97.2% < 99%, p99 4.1 s > 3 s"; an overload comes first ("as-given:
 * overloaded: queue at server passed its capacity (272 jobs) in 32 of 32 seeds, success ...");
 * the pass probability is named only when the pooled goals are met and nothing overloaded,
 * since it is then the reason. Then where it shows: a component at 80% utilisation or more
 * ("tools at 97% utilization, p99 queue wait 31 s") and where most arrivals failed.
 */
export function whyFails(row: CaseSummary, goals: Goals, confidence: number): string {
  const reasons: string[] = row.overloaded_seeds > 0 ? [row.overload_reason] : [];
  if (Number.isNaN(row.success)) reasons.push('no arrivals');
  else if (row.success < goals.success) reasons.push(`success ${below(row.success * 100, goals.success * 100, 1, '%')}`);
  // NaN (no successes) compares false: the success rate has said it already
  if (row.p99_ms * 1000 > goals.p99) reasons.push(`p99 ${overLatency(row.p99_ms, goals.p99 / 1000)}`);
  if (goals.ttftP99 !== null && !(row.ttft_p99_ms * 1000 <= goals.ttftP99)) reasons.push(`ttft p99 ${overLatency(row.ttft_p99_ms, goals.ttftP99 / 1000)}`);
  if (goals.tpotP99 !== null && !(row.tpot_p99_ms * 1000 <= goals.tpotP99)) reasons.push(`tpot p99 ${overLatency(row.tpot_p99_ms, goals.tpotP99 / 1000)}`);
  if (reasons.length === 0 && row.pass_probability < confidence) {
    reasons.push(`pass probability ${below(row.pass_probability, confidence, 2, '')}`);
  }
  const where = [saturation(row), mostFailures(row)].filter((w) => w !== '');
  const why = `${row.case}: ${reasons.length === 0 ? 'fails' : reasons.join(', ')}`;
  return where.length === 0 ? why : `${why}; ${where.join('; ')}`;
}

/** "tools at 97% utilization, p99 queue wait 31 s", or '' when no component is that busy. */
function saturation(row: CaseSummary): string {
  const busiest = busiestComponent(row);
  if (busiest === null || busiest.utilization < SATURATED) return '';
  const c = busiest.component;
  const text = `${c} at ${Math.floor(busiest.utilization * 100)}% utilization`;
  const queued = (QUEUED_COMPONENTS as readonly string[]).includes(c) ? row[`${c as (typeof QUEUED_COMPONENTS)[number]}_wait_p99_ms`] : Number.NaN;
  return Number.isFinite(queued) ? `${text}, p99 queue wait ${duration(queued)}` : text;
}

/** "most failures at tools (timed out 1204)": the component where the most arrivals failed. */
function mostFailures(row: CaseSummary): string {
  let best = '';
  let most = 0;
  for (const c of COMPONENT_NAMES) {
    const rejected = row[`${c}_rejected`];
    const timedOut = row[`${c}_timed_out`];
    const n = (Number.isFinite(rejected) ? rejected : 0) + (Number.isFinite(timedOut) ? timedOut : 0);
    if (n > most) {
      most = n;
      const parts = [rejected > 0 ? `rejected ${rejected}` : '', timedOut > 0 ? `timed out ${timedOut}` : ''].filter((p) => p !== '');
      best = `most failures at ${c} (${parts.join(', ')})`;
    }
  }
  return best;
}

/** "31 s", "850 ms": a duration as people read it. */
function duration(ms: number): string {
  return ms >= 1000 ? `${trim(Number((ms / 1000).toPrecision(3)))} s` : `${trim(Number(ms.toPrecision(3)))} ms`;
}

/** "97.2% < 99%": rounded down (as the table does), so a miss never reads as the goal. */
function below(value: number, goal: number, digits: number, unit: string): string {
  const text = (Math.floor(value * 10 ** digits + 1e-9) / 10 ** digits).toFixed(digits);
  return `${text}${unit} < ${trim(goal)}${unit}`;
}

/** "4.1 s > 3 s" (milliseconds when the goal is under a second), with the digits it takes to differ. */
function overLatency(valueMs: number, goalMs: number): string {
  const inSeconds = goalMs >= 1000;
  const unit = inSeconds ? 's' : 'ms';
  const scale = inSeconds ? 1000 : 1;
  const value = valueMs / scale;
  const goal = goalMs / scale;
  if (!Number.isFinite(value)) return `∞ ${unit} > ${trim(goal)} ${unit}`;
  const magnitude = Math.max(0, Math.floor(Math.log10(Math.max(value, 1))) + 1);
  let text = '';
  for (let d = Math.max(0, 2 - magnitude); d <= MAX_DIGITS && !(Number(text) > goal); d++) text = value.toFixed(d);
  if (!(Number(text) > goal)) text = (Math.ceil(value * 10 ** MAX_DIGITS) / 10 ** MAX_DIGITS).toFixed(MAX_DIGITS);
  return `${text} ${unit} > ${trim(goal)} ${unit}`;
}

/** Up to four decimals, no trailing zeros. */
function trim(v: number): string {
  return String(Number(v.toFixed(MAX_DIGITS)));
}

/** "gpu.slots=12, router.policy=least-loaded". */
export function describeValues(values: Readonly<Record<string, number | string>>): string {
  return Object.entries(values)
    .map(([path, v]) => `${path}=${v}`)
    .join(', ');
}
