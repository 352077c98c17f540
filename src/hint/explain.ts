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
import { unsteadyWarning } from '../run/format.js';

const MAX_DIGITS = 4;
/** A component this busy is named as the bottleneck of a failing case. */
const SATURATED = 0.8;

/**
 * Each case's margins against the goals (the summary's own verdict is kept); `margin` is the
 * hint's (src/hint/search.ts), which an undecided case's why names when it stopped short of it.
 */
export function caseMargins(rows: readonly CaseSummary[], goals: Goals, confidence: number, margin: number): CaseMargin[] {
  return rows.map((row) => {
    const latencyMargin = (goal: number | null, valueMs: number): number | null =>
      goal === null ? null : resolved(goal / 1000 - valueMs, valueMs * LATENCY_RESOLUTION);
    return {
      case: row.case,
      verdict: row.verdict,
      passes: row.passes,
      seeds: row.seeds,
      success: row.success,
      p99_ms: row.p99_ms,
      ttft_p99_ms: goals.ttftP99 === null ? null : row.ttft_p99_ms,
      tpot_p99_ms: goals.tpotP99 === null ? null : row.tpot_p99_ms,
      pass_probability: row.pass_probability,
      pass_probability_lo: row.pass_probability_lo,
      pass_probability_hi: row.pass_probability_hi,
      pass_probability_margin: resolved(row.pass_probability_lo - confidence, 0.005),
      success_margin: resolved(row.success - goals.success, (row.success_hi - row.success_lo) / 2),
      p99_margin_ms: latencyMargin(goals.p99, row.p99_ms)!,
      ttft_p99_margin_ms: latencyMargin(goals.ttftP99, row.ttft_p99_ms),
      tpot_p99_margin_ms: latencyMargin(goals.tpotP99, row.tpot_p99_ms),
      why: [row.verdict === 'PASS' ? '' : row.verdict === 'FAIL' ? whyFails(row, goals, confidence) : whyUndecided(row, goals, confidence, margin), unsteadyWarning(row) ?? '']
        .filter((w) => w !== '')
        .join('; '),
    };
  });
}

/** A latency's resolution: half a histogram bucket (docs/model.md section 5), 2^-7 of the value. */
const LATENCY_RESOLUTION = 2 ** -7;

/**
 * `value` rounded to the decimal place of `noise`'s leading digit (no finer than 1e-4): a
 * margin carries no digits its seeds cannot resolve, and no binary noise
 * (0.050000000000000044).
 */
export function resolved(value: number, noise: number): number {
  if (!Number.isFinite(value)) return value;
  const place = Math.max(-4, Math.floor(Math.log10(noise > 0 && Number.isFinite(noise) ? noise : 1e-4)));
  // tens, hundreds: rounded at that place; tenths and finer: to that many decimals
  if (place > 0) return Math.round(value / 10 ** place) * 10 ** place;
  return Number(value.toFixed(-place));
}

/**
 * "slow-dependency: undecided at 4096 seeds: pass probability 0.90 (0.89-0.91) around 0.9":
 * the goals whose intervals still straddle them, with the seeds taken; a pass probability
 * shown below confidence + `margin` says so ("..., under 0.9333: passes by less than the
 * margin, if at all").
 */
export function whyUndecided(row: CaseSummary, goals: Goals, confidence: number, margin: number): string {
  const parts = row.undecided.split(',').filter((g) => g !== '').map((goal) => {
    switch (goal) {
      case 'pass_probability': {
        const interval = `pass probability ${fixedDigits(row.pass_probability, 2)} (${fixedDigits(row.pass_probability_lo, 2)}-${fixedDigits(row.pass_probability_hi, 2)}) around ${trim(confidence)}`;
        return row.pass_probability_hi < confidence + margin ? `${interval}, under ${trim(confidence + margin)}: passes by less than the margin, if at all` : interval;
      }
      case 'success':
        return `success ${fixedDigits(row.success * 100, 2)}% (${fixedDigits(row.success_lo * 100, 2)}-${fixedDigits(row.success_hi * 100, 2)}%) around ${trim(goals.success * 100)}%`;
      case 'p99':
        return `p99 ${duration(row.p99_ms)} within noise of ${duration(goals.p99 / 1000)}`;
      case 'ttft_p99':
        return `ttft p99 ${duration(row.ttft_p99_ms)} within noise of ${duration((goals.ttftP99 ?? 0) / 1000)}`;
      default:
        return `tpot p99 ${duration(row.tpot_p99_ms)} within noise of ${duration((goals.tpotP99 ?? 0) / 1000)}`;
    }
  });
  return `${row.case}: undecided at ${row.seeds} seeds: ${parts.join(', ')}`;
}

function fixedDigits(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '–';
}

/**
 * "peak-hour: success 97.2% < 99%, p99 4.1 s > 3 s": the goals the verdict found missed (its
 * `missed`: their intervals lie wholly on the wrong side), not those whose value misses within
 * noise; an overload comes first ("as-given: overloaded: queue at server passed its capacity
 * (272 jobs) in 32 of 32 seeds, success ..."), and a row missing no goal by its intervals (an
 * overload alone) names those whose value misses, the pass probability only when it is then the
 * reason. Then where it shows: a component at 80% load or more ("tools at 97% utilization, p99
 * queue wait 31 s"; the GPU by its batches' occupancy and its KV in use, as under continuous
 * batching it iterates whenever any sequence runs), one replica taking far more than its share
 * of calls, and where most arrivals failed.
 */
export function whyFails(row: CaseSummary, goals: Goals, confidence: number): string {
  const reasons: string[] = row.overloaded_seeds > 0 ? [row.overload_reason] : [];
  const missed = new Set(row.missed.split(',').filter((g) => g !== ''));
  const named = (goal: string, misses: boolean): boolean => (missed.size > 0 ? missed.has(goal) : misses);
  if (Number.isNaN(row.success)) reasons.push('no arrivals');
  else if (named('success', row.success < goals.success)) reasons.push(`success ${below(row.success * 100, goals.success * 100, 1, '%')}`);
  // NaN (no successes) compares false: the success rate has said it already
  if (named('p99', row.p99_ms * 1000 > goals.p99) && !Number.isNaN(row.p99_ms)) reasons.push(`p99 ${overLatency(row.p99_ms, goals.p99 / 1000)}`);
  if (goals.ttftP99 !== null && named('ttft_p99', !(row.ttft_p99_ms * 1000 <= goals.ttftP99))) reasons.push(`ttft p99 ${overLatency(row.ttft_p99_ms, goals.ttftP99 / 1000)}`);
  if (goals.tpotP99 !== null && named('tpot_p99', !(row.tpot_p99_ms * 1000 <= goals.tpotP99))) reasons.push(`tpot p99 ${overLatency(row.tpot_p99_ms, goals.tpotP99 / 1000)}`);
  if (named('pass_probability', reasons.length === 0 && row.pass_probability < confidence)) {
    // three digits: an upper end just under the goal must not print as the goal
    const interval = `(${fixedDigits(row.pass_probability_lo, 3)}-${fixedDigits(row.pass_probability_hi, 3)} at ${row.seeds} seeds)`;
    reasons.push(`pass probability ${below(row.pass_probability, confidence, 2, '')} ${interval}`);
  }
  const where = [saturation(row), imbalance(row), mostFailures(row)].filter((w) => w !== '');
  const why = `${row.case}: ${reasons.length === 0 ? 'fails' : reasons.join(', ')}`;
  return where.length === 0 ? why : `${why}; ${where.join('; ')}`;
}

/**
 * "tools at 97% utilization, p99 queue wait 31 s" ("gpu batches 91% full, KV 64% in use (peak
 * 100%), ..."), or '' when no component is that busy.
 */
function saturation(row: CaseSummary): string {
  const busiest = busiestComponent(row);
  if (busiest === null || busiest.load < SATURATED) return '';
  const c = busiest.component;
  const text = busiest.measure === 'utilization' ? `${c} at ${percent(busiest.load)}% utilization` : gpuSaturation(row, busiest.measure);
  const queued = (QUEUED_COMPONENTS as readonly string[]).includes(c) ? row[`${c as (typeof QUEUED_COMPONENTS)[number]}_wait_p99_ms`] : Number.NaN;
  return Number.isFinite(queued) ? `${text}, p99 queue wait ${duration(queued)}` : text;
}

/**
 * "gpu batches 91% full, KV 64% in use (peak 100%)": the GPU's two saturations, the one that
 * binds (`measure`) first. Its batches fill before its KV when calls are short, its KV first when
 * their prompts and outputs are long (a queued call then waits for memory, not for a slot); with
 * the KV, what running out of it cost under gpu.kv incremental ("0.73 preemptions a call").
 */
function gpuSaturation(row: CaseSummary, measure: 'batch' | 'kv'): string {
  const batches = Number.isFinite(row.batch_occupancy) ? `batches ${percent(row.batch_occupancy)}% full` : '';
  const preempted = row.preemptions_per_call > 0 ? `, ${fixedDigits(row.preemptions_per_call, 2)} preemptions a call` : '';
  const kv = Number.isFinite(row.kv_in_use) ? `KV ${percent(row.kv_in_use)}% in use (peak ${percent(row.kv_in_use_peak)}%)${preempted}` : '';
  const parts = measure === 'kv' ? [kv, batches] : [batches, kv];
  return `gpu ${parts.filter((p) => p !== '').join(', ')}`;
}

/** A share as a whole percent, rounded down (0.999 is 99%, never full), binary noise aside (0.29 is 29%). */
function percent(share: number): number {
  return Math.floor(share * 100 + 1e-9);
}

/** One replica takes this many times its fair share of calls: named as an imbalance. */
const IMBALANCED = 1.5;

/** "one gpu replica takes 87% of calls (fair share 17%)", or '' when calls spread evenly. */
function imbalance(row: CaseSummary): string {
  const fair = 1 / row.routed_replicas;
  if (!(row.routed_replicas > 1) || !(row.top_replica_share >= IMBALANCED * fair)) return '';
  return `one gpu replica takes ${Math.round(row.top_replica_share * 100)}% of calls (fair share ${Math.round(fair * 100)}%)`;
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
