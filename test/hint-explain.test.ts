/** A learner's explanations: which goal a case misses, with numbers that show it. */
import { describe, expect, it } from 'vitest';
import { collectVary, formatHints } from '../src/cli/hint-command.js';
import type { CaseMargin, HintResult, HintRun } from '../src/hint/api.js';
import { caseMargins, whyFails } from '../src/hint/explain.js';
import { hintMargin } from '../src/hint/search.js';
import { SUMMARY_COLUMNS, type CaseSummary } from '../src/model/summary.js';
import type { Verdict } from '../src/model/verdict.js';

const goals = { success: 0.99, p99: 3_000_000, ttftP99: null, tpotP99: null };
const margin09 = hintMargin(0.9);

/** A passing row (its text columns empty), with `fields` over it. */
function row(fields: Partial<CaseSummary>): CaseSummary {
  const base: Record<string, unknown> = {};
  for (const col of SUMMARY_COLUMNS) base[col] = 0;
  // a co-located pool's: no prefill and decode pools
  for (const col of ['prefill_utilization', 'decode_utilization', 'prefill_batch_occupancy', 'decode_batch_occupancy', 'transfer_ms', 'transfer_wait_ms']) base[col] = Number.NaN;
  const text = { verdict: 'PASS' as const, undecided: '', missed: '', overload_reason: '', longest_queue_at: '' };
  return { ...(base as unknown as CaseSummary), ...text, case: 'peak-hour', success: 1, p99_ms: 1000, pass_probability: 1, passes: true, ...fields };
}

describe('whyFails', () => {
  it('names the goal missed with both numbers', () => {
    expect(whyFails(row({ case: 'server-dies', p99_ms: 4100 }), goals, 0.9)).toBe('server-dies: p99 4.1 s > 3 s');
    expect(whyFails(row({ success: 0.9725 }), goals, 0.9)).toBe('peak-hour: success 97.2% < 99%');
    // the pass probability with its interval and the seeds behind it
    expect(
      whyFails(row({ case: 'slow-dependency', verdict: 'FAIL', pass_probability: 0.625, pass_probability_lo: 0.47, pass_probability_hi: 0.76, seeds: 32 }), goals, 0.9),
    ).toBe('slow-dependency: pass probability 0.62 < 0.9 (0.470-0.760 at 32 seeds)');
    expect(
      whyFails(row({ case: 'slow-dependency', verdict: 'FAIL', pass_probability: 0.8803, pass_probability_lo: 0.8651, pass_probability_hi: 0.8942, seeds: 2048 }), goals, 0.9),
    ).toBe('slow-dependency: pass probability 0.88 < 0.9 (0.865-0.894 at 2048 seeds)');
    expect(whyFails(row({ success: 0.5, p99_ms: 30_000 }), goals, 0.9)).toBe('peak-hour: success 50.0% < 99%, p99 30 s > 3 s');
  });

  it('never prints a miss as meeting the goal', () => {
    expect(whyFails(row({ success: 0.98999 }), goals, 0.9)).toBe('peak-hour: success 98.9% < 99%');
    expect(whyFails(row({ pass_probability: 0.8999, pass_probability_lo: 0.8, pass_probability_hi: 0.8, seeds: 64 }), goals, 0.9)).toMatch(
      /^peak-hour: pass probability 0\.89 < 0\.9 \(/,
    );
    expect(whyFails(row({ p99_ms: 3004 }), goals, 0.9)).toBe('peak-hour: p99 3.004 s > 3 s');
    expect(whyFails(row({ p99_ms: 650 }), { ...goals, p99: 500_000 }, 0.9)).toBe('peak-hour: p99 650 ms > 500 ms');
    // no success at all: the success rate says it, the missing p99 adds nothing
    expect(whyFails(row({ success: 0, p99_ms: Number.NaN }), goals, 0.9)).toBe('peak-hour: success 0.0% < 99%');
  });

  it('names the goals the verdict missed, not those that miss only within noise', () => {
    // decided by the pass probability's interval; success's value is under its goal, but its
    // interval straddles it: success is no reason the case fails
    const byPassProbability = row({ verdict: 'FAIL', missed: 'pass_probability', success: 0.989, pass_probability: 0.75, pass_probability_lo: 0.6, pass_probability_hi: 0.85, seeds: 64 });
    expect(whyFails(byPassProbability, goals, 0.9)).toBe('peak-hour: pass probability 0.75 < 0.9 (0.600-0.850 at 64 seeds)');
    // both missed: both named
    expect(whyFails(row({ verdict: 'FAIL', missed: 'pass_probability,success', success: 0.5, pass_probability: 0.1, pass_probability_lo: 0.05, pass_probability_hi: 0.2, seeds: 64 }), goals, 0.9)).toBe(
      'peak-hour: success 50.0% < 99%, pass probability 0.10 < 0.9 (0.050-0.200 at 64 seeds)',
    );
  });

  it('names a missed TTFT or TPOT goal', () => {
    const tight = { ...goals, ttftP99: 500_000, tpotP99: 50_000 };
    expect(whyFails(row({ ttft_p99_ms: 650, tpot_p99_ms: 20 }), tight, 0.9)).toBe('peak-hour: ttft p99 650 ms > 500 ms');
    expect(whyFails(row({ ttft_p99_ms: 100, tpot_p99_ms: 50.5 }), tight, 0.9)).toBe('peak-hour: tpot p99 51 ms > 50 ms');
    // no model call finished: a goal on it is missed, not met
    expect(whyFails(row({ ttft_p99_ms: Number.NaN, tpot_p99_ms: 20 }), tight, 0.9)).toBe('peak-hour: ttft p99 ∞ ms > 500 ms');
  });

  it('names the saturated component and where arrivals failed', () => {
    const saturated = row({ success: 0.01, tools_utilization: 0.974, tools_wait_p99_ms: 31_200, gpu_utilization: 0.3, tools_timed_out: 1204, app_rejected: 3 });
    expect(whyFails(saturated, goals, 0.9)).toBe(
      'peak-hour: success 1.0% < 99%; tools at 97% utilization, p99 queue wait 31.2 s; most failures at tools (timed out 1204)',
    );
    // below 80% no component is named
    expect(whyFails(row({ p99_ms: 4100, tools_utilization: 0.79 }), goals, 0.9)).toBe('peak-hour: p99 4.1 s > 3 s');
  });

  it("names the GPU's saturation by how full its batches and its KV are, not its utilization", () => {
    // under continuous batching the GPU iterates whenever any sequence runs: utilization near 1 says little
    expect(whyFails(row({ p99_ms: 4100, gpu_utilization: 0.99, batch_occupancy: 0.79, kv_in_use: 0.5 }), goals, 0.9)).toBe('peak-hour: p99 4.1 s > 3 s');
    expect(whyFails(row({ p99_ms: 4100, gpu_utilization: 0.99, batch_occupancy: 0.913, kv_in_use: 0.42, kv_in_use_peak: 0.7, gpu_wait_p99_ms: 2400 }), goals, 0.9)).toBe(
      'peak-hour: p99 4.1 s > 3 s; gpu batches 91% full, KV 42% in use (peak 70%), p99 queue wait 2.4 s',
    );
    // memory binds first: its KV is named first, however empty the batches
    expect(whyFails(row({ p99_ms: 4100, gpu_utilization: 0.99, batch_occupancy: 0.29, kv_in_use: 0.8, kv_in_use_peak: 0.999, gpu_wait_p99_ms: 5100 }), goals, 0.9)).toBe(
      'peak-hour: p99 4.1 s > 3 s; gpu KV 80% in use (peak 99%), batches 29% full, p99 queue wait 5.1 s',
    );
    // under gpu.kv incremental, what running out of KV cost
    expect(whyFails(row({ p99_ms: 4100, gpu_utilization: 0.99, batch_occupancy: 0.4, kv_in_use: 0.96, kv_in_use_peak: 1, preemptions_per_call: 0.7314, gpu_wait_p99_ms: 5100 }), goals, 0.9)).toBe(
      'peak-hour: p99 4.1 s > 3 s; gpu KV 96% in use (peak 100%), 0.73 preemptions a call, batches 40% full, p99 queue wait 5.1 s',
    );
    // without those columns (a row summarized without the configuration), its utilization
    expect(whyFails(row({ p99_ms: 4100, gpu_utilization: 0.99, batch_occupancy: Number.NaN, kv_in_use: Number.NaN, gpu_wait_p99_ms: 2400 }), goals, 0.9)).toBe(
      'peak-hour: p99 4.1 s > 3 s; gpu at 99% utilization, p99 queue wait 2.4 s',
    );
  });

  it('names one GPU replica taking far more than its share of calls', () => {
    expect(whyFails(row({ success: 0.5, gpu_replicas: 6, routed_replicas: 6, top_replica_share: 0.874 }), goals, 0.9)).toBe(
      'peak-hour: success 50.0% < 99%; one gpu replica takes 87% of calls (fair share 17%)',
    );
    // under 1.5 times the fair share, or a single replica, is no imbalance
    expect(whyFails(row({ success: 0.5, gpu_replicas: 6, routed_replicas: 6, top_replica_share: 0.24 }), goals, 0.9)).toBe('peak-hour: success 50.0% < 99%');
    expect(whyFails(row({ success: 0.5, gpu_replicas: 1, routed_replicas: 1, top_replica_share: 1 }), goals, 0.9)).toBe('peak-hour: success 50.0% < 99%');
  });

  it('gives margins, positive with room to spare, to the digits the seeds resolve', () => {
    const passing = row({
      success: 0.995,
      success_lo: 0.993,
      success_hi: 0.997,
      p99_ms: 2500.1,
      pass_probability: 0.97,
      pass_probability_lo: 0.913,
      pass_probability_hi: 0.99,
      seeds: 128,
    });
    const [m] = caseMargins([passing], goals, 0.9, margin09);
    expect(m).toEqual({
      case: 'peak-hour',
      verdict: 'PASS',
      passes: true,
      seeds: 128,
      success: 0.995,
      p99_ms: 2500.1,
      ttft_p99_ms: null,
      tpot_p99_ms: null,
      pass_probability: 0.97,
      pass_probability_lo: 0.913,
      pass_probability_hi: 0.99,
      // lo - 0.9, to the 0.005 a probability is read to
      pass_probability_margin: 0.013,
      // to the interval's half-width (0.002)
      success_margin: 0.005,
      // 499.9 ms, to the histogram's resolution at 2.5 s (about 20 ms)
      p99_margin_ms: 500,
      ttft_p99_margin_ms: null,
      tpot_p99_margin_ms: null,
      why: '',
    });
    // no binary noise: 1 - 0.99 is 0.010000000000000009 in floating point
    expect(caseMargins([row({ success: 1 })], goals, 0.9, margin09)[0]!.success_margin).toBe(0.01);
    // a p99 of 2.703 s resolves to about 21 ms (half a histogram bucket): its margin to 3 s is 300 ms, not 297
    expect(caseMargins([row({ p99_ms: 2703 })], goals, 0.9, margin09)[0]!.p99_margin_ms).toBe(300);
    // TTFT and TPOT margins where those goals are set
    const [t] = caseMargins([row({ ttft_p99_ms: 412.34, tpot_p99_ms: 20 })], { ...goals, ttftP99: 500_000, tpotP99: 50_000 }, 0.9, margin09);
    expect(t).toMatchObject({ ttft_p99_ms: 412.34, tpot_p99_ms: 20, ttft_p99_margin_ms: 88, tpot_p99_margin_ms: 30 });
  });

  it('says why a case is undecided: each goal still within noise, and the seeds it took', () => {
    const undecided = row({
      verdict: 'UNDECIDED',
      passes: false,
      undecided: 'pass_probability,p99',
      p99_ms: 2900,
      pass_probability: 0.91,
      pass_probability_lo: 0.81,
      pass_probability_hi: 0.96,
      seeds: 64,
    });
    const [m] = caseMargins([undecided], goals, 0.9, margin09);
    expect(m).toMatchObject({ verdict: 'UNDECIDED', passes: false, seeds: 64 });
    expect(m!.why).toBe('peak-hour: undecided at 64 seeds: pass probability 0.91 (0.81-0.96) around 0.9, p99 2.9 s within noise of 3 s');
    // shown below confidence + the hint's margin: it can pass by no more than that
    const short = row({ verdict: 'UNDECIDED', passes: false, undecided: 'pass_probability', pass_probability: 0.88, pass_probability_lo: 0.85, pass_probability_hi: 0.92, seeds: 512 });
    expect(caseMargins([short], goals, 0.9, margin09)[0]!.why).toBe(
      'peak-hour: undecided at 512 seeds: pass probability 0.88 (0.85-0.92) around 0.9, under 0.9333: passes by less than the margin, if at all',
    );
    // a failing row's why is whyFails'
    const [f] = caseMargins([row({ verdict: 'FAIL', passes: false, p99_ms: 4100 })], goals, 0.9, margin09);
    expect(f!.why).toBe('peak-hour: p99 4.1 s > 3 s');
  });
});

describe('--vary', () => {
  it('takes ranges, stepped ranges and lists', () => {
    let v = collectVary('gpu.slots=4..32');
    v = collectVary('gpu.replicas=2..8:2', v);
    v = collectVary('router.policy=least-loaded, cache-aware', v);
    v = collectVary('app.slots=100,200.5', v);
    expect(v).toEqual({
      'gpu.slots': { from: 4, to: 32, step: 1 },
      'gpu.replicas': { from: 2, to: 8, step: 2 },
      'router.policy': ['least-loaded', 'cache-aware'],
      'app.slots': [100, 200.5],
    });
  });

  it('refuses what it cannot read', () => {
    for (const bad of ['gpu.slots', '=4..8', 'gpu.slots=', 'gpu.slots=8..4', 'gpu.slots=4..8:0', 'gpu.slots=a..b', 'gpu.slots=1,,2']) {
      expect(() => collectVary(bad), bad).toThrow(/--vary/);
    }
    expect(() => collectVary('gpu.slots=4', { 'gpu.slots': [8] })).toThrow(/twice/);
  });
});

describe('formatHints', () => {
  const margin = (verdict: Verdict, failing: string): CaseMargin[] => [
    {
      case: 'as-given',
      verdict: 'PASS',
      passes: true,
      seeds: 64,
      success: 1,
      p99_ms: 900,
      ttft_p99_ms: null,
      tpot_p99_ms: null,
      pass_probability: 1,
      pass_probability_lo: 0.944,
      pass_probability_hi: 1,
      pass_probability_margin: 0.044,
      success_margin: 0.01,
      p99_margin_ms: 2100,
      ttft_p99_margin_ms: null,
      tpot_p99_margin_ms: null,
      why: '',
    },
    {
      case: 'slow-dependency',
      verdict,
      passes: verdict === 'PASS',
      seeds: verdict === 'PASS' ? 512 : 2048,
      success: 1,
      p99_ms: 2900,
      ttft_p99_ms: null,
      tpot_p99_ms: null,
      pass_probability: verdict === 'PASS' ? 0.96 : 0.88,
      pass_probability_lo: verdict === 'PASS' ? 0.931 : 0.866,
      pass_probability_hi: verdict === 'PASS' ? 0.977 : 0.894,
      pass_probability_margin: verdict === 'PASS' ? 0.031 : -0.034,
      success_margin: 0.01,
      p99_margin_ms: 100,
      ttft_p99_margin_ms: null,
      tpot_p99_margin_ms: null,
      why: failing,
    },
  ];
  const fails = 'slow-dependency: pass probability 0.88 < 0.9 (0.865-0.894 at 2048 seeds)';
  const undecided = 'slow-dependency: undecided at 4096 seeds: pass probability 0.90 (0.89-0.91) around 0.9';
  const run = (verdict: Verdict, why = ''): HintRun => ({ verdict, cases: margin(verdict, why) });
  const result: HintResult = {
    problemId: 'hot-prefix',
    title: 'One replica owns the hot prefix',
    paths: ['router.policy', 'gpu.slots'],
    cost: 'gpu.replicas * gpu.slots',
    goals: { success: 0.99, p99_ms: 3000 },
    confidence: 0.9,
    seeds: 32,
    maxSeeds: 4096,
    seed: 1,
    recheckSeed: 2654435770,
    verdictLevel: 0.95,
    margin: margin09,
    cases: ['as-given', 'slow-dependency'],
    hints: [
      {
        found: { values: { 'router.policy': 'least-loaded', 'gpu.slots': 10 }, cost: 60, ...run('PASS'), recheck: run('PASS') },
        cheaper: [{ values: { 'router.policy': 'least-loaded', 'gpu.slots': 9 }, cost: 54, ...run('FAIL', fails), recheck: run('FAIL', fails) }],
        holds: true,
      },
    ],
    failing: [{ values: { 'router.policy': 'cache-aware', 'gpu.slots': 32 }, cost: 192, ...run('FAIL', fails) }],
    evaluated: 7,
    instances: 1000,
    rounds: 3,
    gridSize: 62,
    monotonicityViolations: [],
    engine: 'pool',
    gpuSeconds: null,
  };

  it('shows the goals, the seeds, the configuration, its margins, its re-check, the cheaper neighbours and the count', () => {
    const text = formatHints(result);
    expect(text).toContain('hot-prefix — One replica owns the hot prefix\n');
    expect(text).toContain('goals: success ≥ 99%, p99 ≤ 3 s, pass prob ≥ 0.9 · cost: gpu.replicas * gpu.slots\n');
    expect(text).toContain('32 to 4096 seeds until decided from 1, re-checked from 2654435770 · each case\'s verdict at 95% confidence; a pass probability shown under 0.9333 takes no more seeds\n');
    expect(text).toContain('Cheapest passing: router.policy=least-loaded, gpu.slots=10 (cost 60)\n');
    expect(text).toMatch(/ {2}case +result +seeds +success % +p99 s +pass prob \(interval\) +success margin +p99 margin\n/);
    expect(text).toMatch(/ {2}as-given +PASS +64 +100\.00 +0\.900 +1\.00 \(0\.94-1\.00\) +\+1 pt +\+2\.1 s\n/);
    expect(text).toMatch(/ {2}slow-dependency +PASS +512 +100\.00 +2\.900 +0\.96 \(0\.93-0\.98\) +\+1 pt +\+0\.1 s\n/);
    expect(text).toContain('  On fresh seeds (from 2654435770): PASS\n  One step cheaper:\n');
    expect(text).toContain(`    gpu.slots=9 (cost 54) fails:\n      ${fails}\n      on fresh seeds: FAIL\n`);
    expect(text).not.toContain('does not agree');
    // the most generous point of a family where nothing passes, without a re-check
    expect(text).toContain(`Nothing passes with router.policy=cache-aware: even gpu.slots=32 (cost 192) fails:\n  ${fails}\n\n`);
    expect(text.endsWith('evaluated 7 of 62 grid points in 3 rounds\n')).toBe(true);
  });

  it('says when the re-check does not agree, and names what is undecided', () => {
    const unsettled: HintResult = {
      ...result,
      seeds: 64,
      maxSeeds: 64,
      hints: [
        {
          found: { ...result.hints[0]!.found, recheck: run('UNDECIDED', undecided) },
          cheaper: [{ ...result.hints[0]!.cheaper[0]!, ...run('UNDECIDED', undecided), recheck: run('PASS') }],
          holds: false,
        },
      ],
      failing: [],
    };
    const text = formatHints(unsettled);
    expect(text).toContain('64 seeds from 1, re-checked from 2654435770 · each case\'s verdict at 95% confidence\n');
    expect(text).toContain(`  On fresh seeds (from 2654435770): UNDECIDED\n    ${undecided}\n`);
    expect(text).toContain(`    gpu.slots=9 (cost 54) is undecided:\n      ${undecided}\n      on fresh seeds: PASS\n`);
    expect(text).toContain('  The re-check on fresh seeds does not agree: treat this answer as unsettled (more seeds: --max-seeds).\n');
  });
});
