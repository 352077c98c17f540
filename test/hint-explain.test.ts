/** A learner's explanations: which goal a case misses, with numbers that show it. */
import { describe, expect, it } from 'vitest';
import { collectVary, formatHints } from '../src/cli/hint-command.js';
import type { HintResult } from '../src/hint/api.js';
import { caseMargins, whyFails } from '../src/hint/explain.js';
import { SUMMARY_COLUMNS, type CaseSummary } from '../src/model/summary.js';

const goals = { success: 0.99, p99: 3_000_000, ttftP99: null, tpotP99: null };

function row(fields: Partial<CaseSummary>): CaseSummary {
  const base: Record<string, unknown> = {};
  for (const col of SUMMARY_COLUMNS) base[col] = 0;
  return { ...(base as unknown as CaseSummary), case: 'peak-hour', success: 1, p99_ms: 1000, pass_probability: 1, passes: true, ...fields };
}

describe('whyFails', () => {
  it('names the goal missed with both numbers', () => {
    expect(whyFails(row({ case: 'server-dies', p99_ms: 4100 }), goals, 0.9)).toBe('server-dies: p99 4.1 s > 3 s');
    expect(whyFails(row({ success: 0.9725 }), goals, 0.9)).toBe('peak-hour: success 97.2% < 99%');
    expect(whyFails(row({ case: 'slow-dependency', pass_probability: 0.625 }), goals, 0.9)).toBe(
      'slow-dependency: pass probability 0.62 < 0.9',
    );
    expect(whyFails(row({ success: 0.5, p99_ms: 30_000 }), goals, 0.9)).toBe('peak-hour: success 50.0% < 99%, p99 30 s > 3 s');
  });

  it('never prints a miss as meeting the goal', () => {
    expect(whyFails(row({ success: 0.98999 }), goals, 0.9)).toBe('peak-hour: success 98.9% < 99%');
    expect(whyFails(row({ pass_probability: 0.8999 }), goals, 0.9)).toBe('peak-hour: pass probability 0.89 < 0.9');
    expect(whyFails(row({ p99_ms: 3004 }), goals, 0.9)).toBe('peak-hour: p99 3.004 s > 3 s');
    expect(whyFails(row({ p99_ms: 650 }), { ...goals, p99: 500_000 }, 0.9)).toBe('peak-hour: p99 650 ms > 500 ms');
    // no success at all: the success rate says it, the missing p99 adds nothing
    expect(whyFails(row({ success: 0, p99_ms: Number.NaN }), goals, 0.9)).toBe('peak-hour: success 0.0% < 99%');
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
    expect(whyFails(row({ p99_ms: 4100, gpu_utilization: 0.79 }), goals, 0.9)).toBe('peak-hour: p99 4.1 s > 3 s');
  });

  it('gives margins, positive with room to spare', () => {
    const [m] = caseMargins([row({ success: 0.995, p99_ms: 2500.1, pass_probability: 0.95 })], goals, 0.9);
    expect(m).toMatchObject({ passes: true, p99_margin_ms: 499.9, why: '' });
    expect(m!.success_margin).toBeCloseTo(0.005, 12);
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
  const margins = (fail: boolean) => [
    { case: 'as-given', passes: true, success: 1, p99_ms: 900, pass_probability: 1, success_margin: 0.01, p99_margin_ms: 2100, why: '' },
    {
      case: 'slow-dependency',
      passes: !fail,
      success: 1,
      p99_ms: 2900,
      pass_probability: fail ? 0.75 : 1,
      success_margin: 0.01,
      p99_margin_ms: 100,
      why: fail ? 'slow-dependency: pass probability 0.75 < 0.9' : '',
    },
  ];
  const result: HintResult = {
    problemId: 'hot-prefix',
    title: 'One replica owns the hot prefix',
    paths: ['router.policy', 'gpu.slots'],
    cost: 'gpu.replicas * gpu.slots',
    goals: { success: 0.99, p99_ms: 3000 },
    confidence: 0.9,
    seeds: 8,
    cases: ['as-given', 'slow-dependency'],
    hints: [
      {
        found: { values: { 'router.policy': 'least-loaded', 'gpu.slots': 9 }, cost: 54, cases: margins(false) },
        cheaper: [{ values: { 'router.policy': 'least-loaded', 'gpu.slots': 8 }, cost: 48, cases: margins(true) }],
      },
    ],
    failing: [{ values: { 'router.policy': 'prefix-affinity', 'gpu.slots': 24 }, cost: 144, cases: margins(true) }],
    evaluated: 7,
    rounds: 3,
    gridSize: 46,
    monotonicityViolations: [],
    engine: 'pool',
    gpuSeconds: null,
  };

  it('shows the configuration, its margins, the cheaper neighbours and the count', () => {
    const text = formatHints(result);
    expect(text).toContain('Cheapest passing: router.policy=least-loaded, gpu.slots=9 (cost 54)');
    expect(text).toMatch(/slow-dependency\s+PASS\s+100\.00\s+2\.900\s+1\.00\s+\+1\.00 pt\s+\+0\.100 s/);
    expect(text).toContain('    gpu.slots=8 (cost 48) fails:\n      slow-dependency: pass probability 0.75 < 0.9\n');
    expect(text).toContain('Nothing passes with router.policy=prefix-affinity: even gpu.slots=24 (cost 144) fails:\n');
    expect(text.endsWith('evaluated 7 of 46 grid points in 3 rounds\n')).toBe(true);
  });
});
