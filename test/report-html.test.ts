import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromArrays, tableFromIPC, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { defaultReportPath, readHint, reportCommand } from '../src/cli/report-command.js';
import { ServesimError } from '../src/errors.js';
import {
  chooseLayout, hintPoints, renderReport, reportDataFromSweep, reportDataFromTable, reportNotes,
  type ReportAxis,
} from '../src/report/html.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import { asTable, GRID, HINT, hotPrefixSweep, syntheticOutcome } from './report-fixtures.js';

const axis = (path: string, values: (number | string)[]): ReportAxis => ({
  path, kind: typeof values[0] === 'string' ? 'string' : 'number', values,
});

/** The JSON the page draws from. */
function embedded(html: string): { layout: { x: number; y: number }; hintPoints: number[][]; meta: { title: string } } {
  const match = /<script type="application\/json" id="servesim-data">(.*?)<\/script>/s.exec(html);
  return JSON.parse(match![1]!) as never;
}

describe('which grid paths become axes', () => {
  it('puts numbers before names, longer axes first, and leaves fixed paths out', () => {
    const axes = [axis('router.policy', ['a', 'b', 'c', 'd']), axis('app.timeout', ['30s']), axis('gpu.replicas', [6, 8]), axis('gpu.slots', [4, 8, 16])];
    expect(chooseLayout(axes)).toEqual({ x: 3, y: 2, selectors: [0] });
  });

  it('keeps grid order between equal axes, and lists selectors in grid order', () => {
    const axes = [axis('a', [1, 2]), axis('b', [1, 2]), axis('c', ['x', 'y']), axis('d', [1, 2])];
    expect(chooseLayout(axes)).toEqual({ x: 0, y: 1, selectors: [2, 3] });
  });

  it('has no y axis (no heatmap) with one varying path', () => {
    expect(chooseLayout([axis('fixed', [1]), axis('gpu.slots', [4, 8])])).toEqual({ x: 1, y: -1, selectors: [] });
  });

  it('draws a lone point over the first path, and nothing without paths', () => {
    expect(chooseLayout([axis('a', [1]), axis('b', ['x'])])).toEqual({ x: 0, y: -1, selectors: [] });
    expect(chooseLayout([])).toEqual({ x: -1, y: -1, selectors: [] });
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

  it('keeps a row per point and case, with NaN latencies as null', () => {
    expect(data.rows).toHaveLength(sweep.points.length * 4);
    const dead = data.rows.filter((r) => r.success === 0);
    expect(dead.length).toBeGreaterThan(0);
    for (const r of dead) expect([r.p99_ms, r.p99_lo_ms, r.p99_hi_ms]).toEqual([null, null, null]);
    // 6 replicas x 4 slots of prefix affinity, as given
    const row = data.rows.find((r) => r.point.join() === '0,0,0,0' && r.case === 0)!;
    const original = outcome.rows.find((r) => r.point.index === 0 && r.summary.case === 'as-given')!.summary;
    expect(row).toMatchObject({ success: original.success, pass_probability: original.pass_probability, passes: original.passes });
  });

  it('is the same as the data made straight from the sweep', () => {
    const direct = reportDataFromSweep({ sweep, outcome });
    expect(direct.axes).toEqual(data.axes);
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
      rows: outcome.rows.map((r, i) => (i === 0 ? { ...r, summary: { ...r.summary, passes: false, overloaded_seeds: 3, overload_reason: reason } } : r)),
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
      'Only one grid path varies, so there is no heatmap: pass probability is drawn against it as a line.',
    ]);
  });
});

describe('hint configurations on the grid', () => {
  const axes = [axis('gpu.replicas', [6, 8]), axis('gpu.slots', [4, 8, 16]), axis('router.policy', ['prefix-affinity', 'least-loaded']), axis('app.timeout', ['30s'])];
  const found = (values: Record<string, number | string>) => ({ ...HINT, hints: [{ ...HINT.hints[0]!, found: { ...HINT.hints[0]!.found, values } }] });

  it('maps each found configuration to value indices; a fixed path it leaves alone takes its one value', () => {
    expect(hintPoints(axes, HINT)).toEqual([[1, 2, 1, 0]]);
  });

  it('leaves out a configuration off the grid, or one that leaves a varying path alone', () => {
    expect(hintPoints(axes, found({ ...HINT.hints[0]!.found.values, 'gpu.slots': 12 }))).toEqual([]);
    expect(hintPoints(axes, found({ 'gpu.slots': 8, 'router.policy': 'least-loaded' }))).toEqual([]);
  });
});

describe('the page', () => {
  const sweep = hotPrefixSweep(GRID);
  const outcome = syntheticOutcome(sweep);

  it('embeds its data, Plot and d3, and loads nothing from elsewhere', () => {
    const html = renderReport(asTable(sweep, outcome), { hint: HINT });
    const data = embedded(html);
    expect(data.layout).toEqual({ x: 1, y: 0, selectors: [2] });
    expect(data.hintPoints).toEqual([[1, 2, 1, 0]]);
    // matches only: a failing toMatch would print the whole half-megabyte page
    expect(html.match(/@observablehq\/plot v0\.6\.17/)?.[0]).toBeDefined();
    expect(html.match(/<script[^>]*\ssrc=/)?.[0]).toBeUndefined();
    const markup = html.replace(/<script[^>]*>[\s\S]*?<\/script>/g, '');
    expect(markup.match(/<link|<img|<iframe|\shref=|\ssrc=|@import|url\(/i)?.[0]).toBeUndefined();
    expect(markup).toContain('Hint: the cheapest passing configurations');
    expect(markup).toContain('slow-dependency: p99 5.3 s &#62; 3 s');
    expect(markup).toContain('<code>gpu.replicas=8, gpu.slots=32, router.policy=prefix-affinity</code>: as-given: p99 4.3 s &#62; 3 s');
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
