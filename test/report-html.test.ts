import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Table, tableFromArrays, tableFromIPC, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { defaultReportPath, readHint, reportCommand } from '../src/cli/report-command.js';
import { ServesimError } from '../src/errors.js';
import {
  chooseLayout, hintPoints, pointsOverCases, renderReport, reportDataFromSweep, reportDataFromTable, reportMetrics,
  reportNotes, type ReportAxis, type ReportPoint, type ReportRow,
} from '../src/report/html.js';
import { REPORT_HELPERS, REPORT_SCRIPT } from '../src/report/html-template.js';
import { SUMMARY_COLUMNS, type CaseSummary } from '../src/model/summary.js';
import type { Verdict } from '../src/model/verdict.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import { asTable, GRID, HINT, hotPrefixSweep, syntheticOutcome } from './report-fixtures.js';

const axis = (path: string, values: (number | string)[]): ReportAxis => ({
  path, kind: typeof values[0] === 'string' ? 'string' : 'number', values,
});

/** The JSON the page draws from. */
function embedded(html: string): { layout: { x: number; y: number }; hintPoints: (number[] | null)[]; meta: { title: string } } {
  const match = /<script type="application\/json" id="servesim-data">(.*?)<\/script>/s.exec(html);
  return JSON.parse(match![1]!) as never;
}

describe('which grid paths become axes', () => {
  it('puts numbers before names, longer axes first, and leaves fixed paths out', () => {
    const axes = [axis('router.policy', ['a', 'b', 'c', 'd']), axis('app.timeout', ['30s']), axis('gpu.replicas', [6, 8]), axis('gpu.slots', [4, 8, 16])];
    expect(chooseLayout(axes)).toEqual({ x: 3, y: 2, selectors: [0], fixed: [0, 0, 0, 0] });
  });

  it('keeps grid order between equal axes, and lists selectors in grid order', () => {
    const axes = [axis('a', [1, 2]), axis('b', [1, 2]), axis('c', ['x', 'y']), axis('d', [1, 2])];
    expect(chooseLayout(axes)).toEqual({ x: 0, y: 1, selectors: [2, 3], fixed: [0, 0, 0, 0] });
  });

  it('has no y axis (no heatmap) with one varying path', () => {
    expect(chooseLayout([axis('fixed', [1]), axis('gpu.slots', [4, 8])])).toEqual({ x: 1, y: -1, selectors: [], fixed: [0, 0] });
  });

  it('draws a lone point over the first path, and nothing without paths', () => {
    expect(chooseLayout([axis('a', [1]), axis('b', ['x'])])).toEqual({ x: 0, y: -1, selectors: [], fixed: [0, 0] });
    expect(chooseLayout([])).toEqual({ x: -1, y: -1, selectors: [], fixed: [] });
  });

  describe('the slice it opens on', () => {
    // slots x replicas on the axes; the policy and the timeout get selectors
    const axes = [axis('gpu.slots', [4, 8, 16]), axis('gpu.replicas', [6, 8]), axis('router.policy', ['a', 'b', 'c']), axis('app.timeout', ['10s', '30s'])];
    const at = (policy: number, timeout: number, passing: number, probability = 0.5): ReportPoint[] =>
      [0, 1, 2].flatMap((slots) => [0, 1].map((replicas) => {
        const passes = slots * 2 + replicas < passing;
        return { point: [slots, replicas, policy, timeout], passes, verdict: passes ? 'PASS' : 'FAIL', undecided: null, pass_probability: passes ? 1 : probability, overloaded: null };
      }));

    it('has the most points passing every case, not the first policy', () => {
      const points = [...at(0, 0, 0), ...at(0, 1, 0), ...at(1, 0, 2), ...at(1, 1, 1), ...at(2, 0, 1), ...at(2, 1, 4)];
      expect(chooseLayout(axes, points)).toMatchObject({ x: 0, y: 1, selectors: [2, 3], fixed: [0, 0, 2, 1] });
    });

    it('takes the higher summed pass probability among equals, then grid order', () => {
      expect(chooseLayout(axes, [...at(0, 0, 0, 0.2), ...at(1, 0, 0, 0.6), ...at(2, 0, 0, 0.4)]).fixed).toEqual([0, 0, 1, 0]);
      expect(chooseLayout(axes, [...at(2, 1, 3), ...at(1, 1, 3), ...at(1, 0, 3)]).fixed).toEqual([0, 0, 1, 0]);
    });

    it('is least-loaded on the fixture, where prefix affinity fails everywhere', () => {
      const sweep = hotPrefixSweep(GRID);
      const data = reportDataFromSweep({ sweep, outcome: syntheticOutcome(sweep) });
      expect(chooseLayout(data.axes, pointsOverCases(data)).fixed).toEqual([0, 0, 1, 0]);
    });
  });
});

describe('grid points over all the cases', () => {
  const sweep = hotPrefixSweep({ 'gpu.slots': [8, 16, 32] });
  /** [passes, pass probability] at each point, with these cases' pass probabilities (passing at 0.9). */
  const overCases = (probabilities: Record<string, number>) => {
    const outcome = syntheticOutcome(sweep);
    const rows = outcome.rows.filter((r) => r.summary.case in probabilities).map((r) => {
      const p = probabilities[r.summary.case]!;
      return { ...r, summary: { ...r.summary, pass_probability: p, passes: p >= 0.9, verdict: p >= 0.9 ? 'PASS' as const : 'FAIL' as const } };
    });
    return pointsOverCases(reportDataFromSweep({ sweep, outcome: { ...outcome, rows } })).map((p) => [p.passes, p.pass_probability]);
  };
  const passing = { 'as-given': 1, 'peak-hour': 0.95, 'slow-dependency': 0.92, 'server-dies': 0.97 };

  it('pass where every case passes, at the lowest pass probability of the cases', () => {
    expect(overCases(passing)).toEqual(Array(3).fill([true, 0.92]));
    expect(overCases({ ...passing, 'slow-dependency': 0.85 })).toEqual(Array(3).fill([false, 0.85]));
  });

  it('do not pass, and have no pass probability, where a case has no result', () => {
    expect(overCases({ 'as-given': 1, 'peak-hour': 1 })).toEqual(Array(3).fill([false, null]));
  });
});

describe('the report data from an Arrow table', () => {
  const sweep = hotPrefixSweep(GRID);
  const outcome = syntheticOutcome(sweep);
  const data = reportDataFromTable(asTable(sweep, outcome));

  it('reads each grid path as a numeric or named axis, in grid order for names', () => {
    expect(data.axes).toEqual([
      { path: 'gpu.replicas', kind: 'number', values: [6, 8] },
      { path: 'gpu.slots', kind: 'number', values: [4, 8, 16, 32] },
      { path: 'router.policy', kind: 'string', values: ['prefix-affinity', 'least-loaded', 'cache-aware'] },
      { path: 'app.timeout', kind: 'string', values: ['30s'] },
    ]);
    expect(data.cases).toEqual(['as-given', 'peak-hour', 'slow-dependency', 'server-dies']);
  });

  it('reads the metadata: goals, confidence, seeds, engine', () => {
    expect(data.meta).toMatchObject({
      problem: 'hot-prefix', sweep: 'hot-prefix-report', version: '0.1.0', engine: 'pool', adapter: '',
      seeds: 16, baseSeed: sweep.baseSeed, created: '2026-11-29T15:07:31.123Z', confidence: sweep.confidence,
      goals: { success: 0.99, p99_ms: 3000 },
    });
  });

  it('keeps every numeric summary column, and a row per point and case with NaN as null', () => {
    expect(data.columns).toEqual(expect.arrayContaining(['seeds', 'success', 'p99_lo_ms', 'pass_probability', 'kv_hit_rate', 'longest_queue']));
    for (const c of ['case', 'passes', 'overload_reason', ...Object.keys(GRID)]) expect(data.columns).not.toContain(c);
    expect(data.columns).toEqual(SUMMARY_COLUMNS.filter((c) => data.columns.includes(c)));
    expect(data.rows).toHaveLength(sweep.points.length * 4);
    const get = (name: string) => (r: ReportRow) => r.values[data.columns.indexOf(name)];
    const dead = data.rows.filter((r) => get('success')(r) === 0);
    expect(dead.length).toBeGreaterThan(0);
    for (const r of dead) expect(['p99_ms', 'p99_lo_ms', 'p99_hi_ms'].map((c) => get(c)(r))).toEqual([null, null, null]);
    // 6 replicas x 4 slots of prefix affinity, as given
    const row = data.rows.find((r) => r.point.join() === '0,0,0,0' && r.case === 0)!;
    const original = outcome.rows.find((r) => r.point.index === 0 && r.summary.case === 'as-given')!.summary;
    expect([get('success')(row), get('pass_probability')(row), row.passes]).toEqual([original.success, original.pass_probability, original.passes]);
  });

  it('leaves out a column without a finite value, from the Arrow table as from the sweep', () => {
    const noCache = syntheticOutcome(sweep, undefined, { kv_hit_rate: NaN });
    const fromTable = reportDataFromTable(asTable(sweep, noCache));
    expect(fromTable.columns).not.toContain('kv_hit_rate');
    expect(fromTable.columns).toContain('gpu_utilization');
    expect(fromTable.rows[0]!.values).toHaveLength(fromTable.columns.length);
    expect(reportDataFromSweep({ sweep, outcome: noCache })).toMatchObject({ columns: fromTable.columns, rows: fromTable.rows });
  });

  it('is the same as the data made straight from the sweep', () => {
    const direct = reportDataFromSweep({ sweep, outcome });
    expect(direct.axes).toEqual(data.axes);
    expect(direct.columns).toEqual(data.columns);
    expect(direct.rows).toEqual(data.rows);
    expect({ ...direct.meta, title: '' }).toEqual({ ...data.meta, title: '' });
    expect(direct.meta.title).toBe(sweep.title);
  });

  it('refuses a table that servesim sweep did not write', () => {
    const plain = tableFromIPC(tableToIPC(tableFromArrays({ a: Float64Array.from([1, 2]) }), 'stream'));
    expect(() => reportDataFromTable(plain)).toThrow(ServesimError);
    expect(() => reportDataFromTable(plain)).toThrow(/servesim\.grid/);
  });

  it("carries an overloaded case's reason to its point, from the Arrow table as from the sweep", () => {
    const reason = 'overloaded: queue at gpu passed its capacity (272 jobs) in 3 of 16 seeds';
    const overloaded = {
      ...outcome,
      rows: outcome.rows.map((r, i) => (i === 0 ? { ...r, summary: { ...r.summary, passes: false, verdict: 'FAIL' as const, overloaded_seeds: 3, overload_reason: reason } } : r)),
    };
    const fromTable = reportDataFromTable(asTable(sweep, overloaded));
    expect(fromTable.rows.filter((r) => r.overloaded !== null).map((r) => r.overloaded)).toEqual([reason]);
    expect(reportDataFromSweep({ sweep, outcome: overloaded }).rows).toEqual(fromTable.rows);
    expect(renderReport({ sweep, outcome: overloaded })).toContain(reason);
  });

  it('takes numbers for missing metadata as unknown', () => {
    const table = asTable(sweep, outcome);
    table.schema.metadata.delete('servesim.seeds');
    table.schema.metadata.set('servesim.goals', 'not json');
    expect(reportDataFromTable(table).meta).toMatchObject({ seeds: null, goals: null });
  });
});

describe('undecided verdicts', () => {
  const sweep = hotPrefixSweep({ 'gpu.slots': [8, 16, 32] });
  /** Each point's cases' verdicts (and undecided goals), in case order: as-given, peak-hour, slow-dependency, server-dies. */
  const VERDICTS: Record<number, [Verdict, string][]> = {
    // a failing case outweighs an undecided one
    0: [['PASS', ''], ['UNDECIDED', 'success'], ['FAIL', ''], ['PASS', '']],
    1: [['PASS', ''], ['UNDECIDED', 'pass_probability,success'], ['PASS', ''], ['UNDECIDED', 'p99']],
    2: [['PASS', ''], ['PASS', ''], ['PASS', ''], ['PASS', '']],
  };
  const base = syntheticOutcome(sweep);
  const outcome = {
    ...base,
    rows: base.rows.map((r) => {
      const [verdict, undecided] = VERDICTS[r.point.index]![sweep.caseNames.indexOf(r.summary.case)]!;
      const summary: CaseSummary = { ...r.summary, verdict, undecided, passes: verdict === 'PASS', pass_probability: 0.91, pass_probability_lo: 0.81, pass_probability_hi: 0.96 };
      return { ...r, summary };
    }),
  };
  const table = asTable(sweep, outcome);
  /** The page script's pure functions. */
  const helpers = new Function(`${REPORT_HELPERS}; return { verdictCounts, countText, badgeText, verdictNote, withInterval };`)() as {
    verdictCounts(rows: readonly { verdict: Verdict }[]): { pass: number; undecided: number; fail: number; total: number };
    countText(counts: ReturnType<typeof helpers.verdictCounts>): string;
    badgeText(counts: ReturnType<typeof helpers.verdictCounts>): string;
    verdictNote(r: { verdict: Verdict; undecided: string | null }): string;
    withInterval(text: string, lo: number | null, hi: number | null, format: (v: number) => string): string;
  };

  it('reads each row\'s verdict and undecided goals from the table, as from the sweep', () => {
    const data = reportDataFromTable(table);
    const peakHour = data.rows.filter((r) => data.cases[r.case] === 'peak-hour');
    expect(peakHour.map((r) => [r.verdict, r.passes, r.undecided])).toEqual([
      ['UNDECIDED', false, 'success'], ['UNDECIDED', false, 'pass_probability,success'], ['PASS', true, null],
    ]);
    expect(reportDataFromSweep({ sweep, outcome }).rows).toEqual(data.rows);
    // the interval is there for the pass probability's cell titles, and is no metric of its own
    expect(data.columns).toEqual(expect.arrayContaining(['pass_probability_lo', 'pass_probability_hi']));
    expect(reportMetrics(data).map((m) => m.name)).not.toContain('pass_probability_lo');
  });

  it('makes a point FAIL where a case fails, else UNDECIDED where a case is, naming the goals', () => {
    const points = pointsOverCases(reportDataFromTable(table));
    expect(points.map((p) => [p.point, p.verdict, p.passes, p.undecided])).toEqual([
      [[0], 'FAIL', false, null],
      [[1], 'UNDECIDED', false, 'peak-hour: pass_probability,success; server-dies: p99'],
      [[2], 'PASS', true, null],
    ]);
  });

  it('counts the undecided points beside the passing ones, and says why in the titles', () => {
    const points = pointsOverCases(reportDataFromTable(table));
    const counts = helpers.verdictCounts(points);
    expect(counts).toEqual({ pass: 1, undecided: 1, fail: 1, total: 3 });
    expect(helpers.countText(counts)).toBe('1 of 3 pass, 1 undecided');
    expect(helpers.badgeText(counts)).toBe('passes at 1 of 3 points shown, 1 undecided');
    // no undecided point: as before
    expect(helpers.countText(helpers.verdictCounts([points[0]!, points[2]!]))).toBe('1 of 2 pass');
    expect(helpers.badgeText(helpers.verdictCounts([points[2]!]))).toBe('passes at 1 of 1 points shown');
    expect(points.map((p) => helpers.verdictNote(p))).toEqual(['', ' (undecided: peak-hour: pass_probability,success; server-dies: p99)', ' (passes)']);
    expect(helpers.verdictNote({ verdict: 'UNDECIDED', undecided: null })).toBe(' (undecided)');
    const format = (v: number) => String(Number(v.toPrecision(3)));
    expect(helpers.withInterval('0.91', 0.81, 0.96, format)).toBe('0.91 (0.81-0.96)');
    expect(helpers.withInterval('0.91', null, null, format)).toBe('0.91');
  });

  it('embeds the verdicts in the page, whose key names the dashed outline', () => {
    const html = renderReport(table);
    const { points } = embedded(html) as unknown as { points: ReportPoint[] };
    expect(points.map((p) => p.verdict)).toEqual(['FAIL', 'UNDECIDED', 'PASS']);
    expect(html.includes("'; dashed: undecided (within seed noise)'")).toBe(true);
    // the script parses, helpers and all (test/report-browser.test.ts runs it, where chromium is)
    expect(() => new Function(REPORT_SCRIPT)).not.toThrow();
  });

  it('reads a table written before verdicts had three values: PASS or FAIL from passes', () => {
    const big = hotPrefixSweep(GRID);
    const current = asTable(big, syntheticOutcome(big));
    expect(reportDataFromTable(current).rows.some((r) => r.verdict === 'UNDECIDED')).toBe(true);
    const newer = new Set(['verdict', 'undecided', 'pass_probability_lo', 'pass_probability_hi', 'interval_level']);
    const older = new Table(current.select(current.schema.fields.map((f) => f.name).filter((n) => !newer.has(n))).batches);
    for (const [k, v] of current.schema.metadata) older.schema.metadata.set(k, v);
    expect(older.getChild('verdict')).toBeNull();
    const data = reportDataFromTable(older);
    expect(data.rows).toHaveLength(current.numRows);
    expect(data.rows.filter((r) => r.passes).length).toBeGreaterThan(0);
    for (const r of data.rows) expect([r.verdict, r.undecided]).toEqual([r.passes ? 'PASS' : 'FAIL', null]);
    const points = pointsOverCases(data);
    expect(points.every((p) => p.verdict === (p.passes ? 'PASS' : 'FAIL') && p.undecided === null)).toBe(true);
    expect(chooseLayout(data.axes, points).fixed).toEqual([0, 0, 1, 0]);
    expect(renderReport(older)).toMatch(/^<!doctype html>/);
  });

  it('shows a hint whose case margins carry a verdict', () => {
    const cheaper = HINT.hints[0]!.cheaper.map((c, k) => (k > 0 ? c : {
      ...c, cases: c.cases.map((m) => (m.passes ? m : { ...m, verdict: 'UNDECIDED', why: 'server-dies: pass probability within seed noise' })),
    }));
    const html = renderReport(table, { hint: { ...HINT, hints: [{ ...HINT.hints[0]!, cheaper }] } as typeof HINT });
    expect(html).toContain('server-dies: pass probability within seed noise');
  });
});

describe('notes on what the charts cannot show', () => {
  it('counts grid points without results', () => {
    const sweep = hotPrefixSweep({ 'gpu.slots': [4, 8], 'gpu.replicas': [6, 8] });
    const data = reportDataFromSweep({ sweep, outcome: syntheticOutcome(sweep, (p) => p.index !== 3) });
    expect(reportNotes(data, chooseLayout(data.axes))).toEqual(['3 of 4 grid points have results; the others are left blank.']);
  });

  it('says when there is no heatmap, or no rows', () => {
    const sweep = hotPrefixSweep({ 'gpu.slots': [4, 8, 16] });
    const data = reportDataFromSweep({ sweep, outcome: syntheticOutcome(sweep, () => false) });
    expect(reportNotes(data, chooseLayout(data.axes))).toEqual([
      'The table has no rows: nothing was simulated.',
      'Only one grid path varies, so there is no heatmap: the metrics are drawn against it as lines.',
    ]);
  });
});

describe('the metrics the reader can pick', () => {
  const sweep = hotPrefixSweep(GRID);
  const table = asTable(sweep, syntheticOutcome(sweep, undefined, { kv_hit_rate: NaN }));

  it('lists pass probability, success and p99 first, the rest in table order, without bands or empty columns', () => {
    const data = reportDataFromTable(table);
    const names = reportMetrics(data).map((m) => m.name);
    expect(names.slice(0, 4)).toEqual(['pass_probability', 'success', 'p99_ms', 'ttft_p99_ms']);
    // preferred before table order
    expect(names.indexOf('gpu_utilization')).toBeLessThan(names.indexOf('seeds'));
    const rest = names.slice(names.indexOf('seeds'));
    expect(rest).toEqual(data.columns.filter((c) => rest.includes(c)));
    expect(rest).toEqual(expect.arrayContaining(['requests', 'p50_ms', 'p99_all_ms', 'gpu_wait_mean_ms', 'longest_queue']));
    // kv hit rate is NaN everywhere here, ttft's band and the other components' columns always
    for (const c of ['kv_hit_rate', 'success_lo', 'success_hi', 'p99_lo_ms', 'p99_hi_ms', 'ttft_p99_lo_ms', 'tpot_p99_ms', 'app_utilization']) {
      expect(names).not.toContain(c);
    }
  });

  it('offers the preemption columns after KV in use where gpu.kv is incremental, and none where they are NaN', () => {
    const incremental = asTable(sweep, syntheticOutcome(sweep, undefined, { kv_in_use: 0.9, preemptions_per_call: 0.25, recomputed_tokens_per_call: 600 }));
    const names = reportMetrics(reportDataFromTable(incremental)).map((m) => m.name);
    expect(names.slice(names.indexOf('kv_in_use'), names.indexOf('kv_in_use') + 4)).toEqual(['kv_in_use', 'preemptions_per_call', 'recomputed_tokens_per_call', 'gpu_utilization']);
    const byName = new Map(reportMetrics(reportDataFromTable(incremental)).map((m) => [m.name, m]));
    expect(byName.get('recomputed_tokens_per_call')).toMatchObject({ label: 'recomputed tokens per call', seconds: false, goal: null });
    const reserve = reportMetrics(reportDataFromTable(table)).map((m) => m.name);
    expect(reserve.filter((n) => n.endsWith('_per_call'))).toEqual([]);
  });

  it('offers each pool\'s load and the KV transfers after the GPU\'s utilisation under gpu.disaggregation, and none where co-located', () => {
    const pools = { prefill_utilization: 0.8, decode_utilization: 0.4, prefill_batch_occupancy: 0.1875, decode_batch_occupancy: 0.5, transfer_ms: 4, transfer_wait_ms: 0.5 };
    // through the Arrow table, as `servesim report` reads it
    const split = reportMetrics(reportDataFromTable(asTable(sweep, syntheticOutcome(sweep, undefined, pools))));
    const names = split.map((m) => m.name);
    const at = names.indexOf('gpu_utilization');
    expect(names.slice(at, at + 7)).toEqual(['gpu_utilization', ...Object.keys(pools)]);
    const byName = new Map(split.map((m) => [m.name, m]));
    expect(Object.keys(pools).map((n) => byName.get(n)!.label)).toEqual([
      'prefill utilization', 'decode utilization', 'prefill batch occupancy', 'decode batch occupancy', 'KV transfer time (s)', 'KV transfer wait (s)',
    ]);
    expect(byName.get('transfer_ms')).toMatchObject({ seconds: true, goal: null });
    expect(byName.get('decode_utilization')).toMatchObject({ seconds: false, goal: null });
    const colocated = reportMetrics(reportDataFromTable(table)).map((m) => m.name);
    expect(colocated.filter((n) => n in pools)).toEqual([]);
  });

  it('labels them from their names, _ms columns in seconds, with the goals they are held to', () => {
    const data = reportDataFromTable(table);
    const byName = new Map(reportMetrics(data).map((m) => [m.name, m]));
    expect(byName.get('pass_probability')).toMatchObject({ label: 'pass probability', seconds: false, goal: { value: sweep.confidence, side: 'min' } });
    expect(byName.get('success')).toMatchObject({ label: 'success', goal: { value: 0.99, side: 'min' } });
    expect(byName.get('p99_ms')).toMatchObject({ label: 'p99 (s)', seconds: true, goal: { value: 3000, side: 'max' } });
    expect(byName.get('gpu_wait_mean_ms')).toMatchObject({ label: 'gpu wait mean (s)', seconds: true, goal: null });
    expect(byName.get('top_replica_share')).toMatchObject({ label: 'top replica share', seconds: false, goal: null });
    for (const m of byName.values()) expect(data.columns[m.column]).toBe(m.name);
  });

  it('offers a column this version does not know, and the goal a table gives it', () => {
    const extra = tableFromArrays({ queue_depth_p99: Float64Array.from({ length: table.numRows }, (_, i) => 100 + i) });
    const wider = new Table(table.assign(extra).batches);
    for (const [k, v] of table.schema.metadata) wider.schema.metadata.set(k, v);
    wider.schema.metadata.set('servesim.goals', JSON.stringify({ success: 0.99, p99_ms: 3000, ttft_p99_ms: 500, queue_depth_p99: 'x' }));
    const data = reportDataFromTable(wider);
    expect(data.meta.goals).toEqual({ success: 0.99, p99_ms: 3000, ttft_p99_ms: 500 });
    const metrics = reportMetrics(data);
    expect(metrics.at(-1)).toMatchObject({ name: 'queue_depth_p99', label: 'queue depth p99', seconds: false, goal: null });
    expect(metrics.find((m) => m.name === 'ttft_p99_ms')).toMatchObject({ label: 'ttft p99 (s)', goal: { value: 500, side: 'max' } });
    expect(renderReport(wider)).toContain('success ≥ 99%, p99 ≤ 3 s, ttft p99 ≤ 0.5 s');
  });
});

describe('hint configurations on the grid', () => {
  const axes = [axis('gpu.replicas', [6, 8]), axis('gpu.slots', [4, 8, 16]), axis('router.policy', ['prefix-affinity', 'least-loaded']), axis('app.timeout', ['30s'])];
  const found = (values: Record<string, number | string>) => ({ ...HINT, hints: [{ ...HINT.hints[0]!, found: { ...HINT.hints[0]!.found, values } }] });

  it('maps each found configuration to value indices; a fixed path it leaves alone takes its one value', () => {
    expect(hintPoints(axes, HINT)).toEqual([[1, 2, 1, 0]]);
  });

  it('leaves out a configuration off the grid, or one that leaves a varying path alone', () => {
    expect(hintPoints(axes, found({ ...HINT.hints[0]!.found.values, 'gpu.slots': 12 }))).toEqual([null]);
    expect(hintPoints(axes, found({ 'gpu.slots': 8, 'router.policy': 'least-loaded' }))).toEqual([null]);
  });
});

describe('the page', () => {
  const sweep = hotPrefixSweep(GRID);
  const outcome = syntheticOutcome(sweep);

  it('embeds its data, Plot and d3, and loads nothing from elsewhere', () => {
    const html = renderReport(asTable(sweep, outcome), { hint: HINT });
    const data = embedded(html);
    expect(data.layout).toEqual({ x: 1, y: 0, selectors: [2], fixed: [0, 0, 1, 0] });
    expect(data.hintPoints).toEqual([[1, 2, 1, 0]]);
    // matches only: a failing toMatch would print the whole half-megabyte page
    expect(html.match(/@observablehq\/plot v0\.6\.17/)?.[0]).toBeDefined();
    expect(html.match(/<script[^>]*\ssrc=/)?.[0]).toBeUndefined();
    const markup = html.replace(/<script[^>]*>[\s\S]*?<\/script>/g, '');
    expect(markup.match(/<link|<img|<iframe|\shref=|\ssrc=|@import|url\(/i)?.[0]).toBeUndefined();
    expect(markup).toContain('Hint: the cheapest passing configurations');
    expect(markup).toContain('slow-dependency: p99 5.3 s &#62; 3 s');
    // the hint's row can show its cells on the charts
    expect(markup).toContain('<button type="button" data-hint="0">show</button>');
    expect(markup).toContain('<code>gpu.replicas=8, gpu.slots=32, router.policy=prefix-affinity</code>: as-given: p99 4.3 s &#62; 3 s');
  });

  it('says so when a hint is off the grid, and has nothing to show for it', () => {
    const found = { ...HINT.hints[0]!.found, values: { ...HINT.hints[0]!.found.values, 'gpu.slots': 12 } };
    const html = renderReport({ sweep, outcome }, { hint: { ...HINT, hints: [{ ...HINT.hints[0]!, found }] } });
    expect(html).toContain('<td>not on the grid</td>');
    expect(html).not.toContain('data-hint="');
  });

  it('escapes what it shows, in HTML and in the embedded JSON', () => {
    const title = '</script><script>alert(1)</script> & "co"';
    const html = renderReport({ sweep: { ...sweep, title }, outcome });
    expect(html.includes('<script>alert(1)')).toBe(false);
    expect(html.includes('<h1>&#60;/script&#62;&#60;script&#62;alert(1)&#60;/script&#62; &#38; &#34;co&#34;</h1>')).toBe(true);
    expect(embedded(html).meta.title).toBe(title);
  });
});

describe('servesim report', () => {
  const dir = mkdtempSync(join(tmpdir(), 'servesim-report-'));
  const sweep = hotPrefixSweep({ 'gpu.slots': [4, 8], 'router.policy': ['prefix-affinity', 'least-loaded'] });
  const outcome = syntheticOutcome(sweep);
  const results = join(dir, 'results.arrow');
  writeFileSync(results, sweepToArrow(sweep, outcome.rows, outcome.meta));
  const io = () => {
    const out = { stdout: '', stderr: '' };
    return { out, io: { stdout: { write: (t: string) => (out.stdout += t) }, stderr: { write: (t: string) => (out.stderr += t) } } };
  };

  it('writes results.html beside results.arrow by default', () => {
    expect(defaultReportPath('/a/results.arrow')).toBe('/a/results.html');
    expect(defaultReportPath('results')).toBe('results.html');
    const { out, io: streams } = io();
    expect(reportCommand(results, {}, streams)).toBe(0);
    expect(out.stderr).toBe(`wrote ${join(dir, 'results.html')}\n`);
    expect(readFileSync(join(dir, 'results.html'), 'utf8')).toMatch(/^<!doctype html>/);
  });

  it('writes to stdout with --out -, and shows a hint', () => {
    const hintFile = join(dir, 'hint.json');
    writeFileSync(hintFile, JSON.stringify(HINT));
    const { out, io: streams } = io();
    reportCommand(results, { out: '-', hint: hintFile }, streams);
    expect(out.stdout.includes('one step cheaper')).toBe(true);
    expect(out.stderr).toBe('');
  });

  it('says what is wrong with its inputs', () => {
    const { io: streams } = io();
    expect(() => reportCommand(join(dir, 'missing.arrow'), {}, streams)).toThrow(/cannot read results file/);
    writeFileSync(join(dir, 'junk.arrow'), 'not arrow at all');
    expect(() => reportCommand(join(dir, 'junk.arrow'), {}, streams)).toThrow(/is not an Arrow IPC file/);
    writeFileSync(join(dir, 'bad-hint.json'), JSON.stringify({ ...HINT, hints: [{ found: {} }] }));
    expect(() => readHint(join(dir, 'bad-hint.json'))).toThrow(/is not a hint result.*hints\.0\.found\.values/);
    writeFileSync(join(dir, 'junk.json'), '{');
    expect(() => readHint(join(dir, 'junk.json'))).toThrow(/is not JSON/);
  });

  it('warns when the hint is for another problem', () => {
    const hintFile = join(dir, 'other-hint.json');
    writeFileSync(hintFile, JSON.stringify({ ...HINT, problemId: 'mmc' }));
    const { out, io: streams } = io();
    reportCommand(results, { out: join(dir, 'other.html'), hint: hintFile }, streams);
    expect(out.stderr).toContain('the hint is for problem mmc, the results for hot-prefix');
  });
});
