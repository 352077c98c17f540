/// <reference lib="dom" />
/**
 * The sweep report in a real browser (Debian's chromium, driven by playwright-core): opened
 * from disk, it must draw every chart with no console error and no request off the file, with
 * labels that neither collide nor hide points. Screenshots go to test/output/ (git-ignored) for
 * a person to look at.
 * Without chromium this fails under CI (install the `chromium` package) and skips elsewhere.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { renderReport } from '../src/report/html.js';
import { closeEngines } from '../src/run/run.js';
import { sweepToArrow } from '../src/sweep/arrow.js';
import { runSweep } from '../src/sweep/run.js';
import { sweepFromObject } from '../src/sweep/spec.js';
import { asTable, GRID, HINT, hotPrefixSweep, syntheticOutcome } from './report-fixtures.js';

const CHROMIUM = process.env.SERVESIM_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
const OUTPUT = fileURLToPath(new URL('./output/', import.meta.url));

it.runIf(!haveChromium && process.env.CI !== undefined)('has chromium to test the report in (CI)', () => {
  throw new Error(`no browser at ${CHROMIUM}: apt-get install chromium`);
});

type Quad = [number, number][];

/** Whether two convex quadrilaterals overlap by more than half a pixel (separating axis test). */
function overlap(a: Quad, b: Quad): boolean {
  for (const q of [a, b]) {
    for (let i = 0; i < 2; i++) {
      const [[x0, y0], [x1, y1]] = [q[i]!, q[i + 1]!];
      const length = Math.hypot(x1 - x0, y1 - y0);
      const project = (p: Quad) => p.map(([x, y]) => (x * (y0 - y1) + y * (x1 - x0)) / length);
      const [pa, pb] = [project(a), project(b)];
      if (Math.max(...pa) <= Math.min(...pb) + 0.5 || Math.max(...pb) <= Math.min(...pa) + 0.5) return false;
    }
  }
  return true;
}

interface Box {
  readonly text: string;
  /** Which svg on the page it is drawn in. */
  readonly chart: number;
  /** Its corners on the page, turned as it is. */
  readonly quad: Quad;
  /** Whether it lies wholly inside its svg. */
  readonly inside: boolean;
}

/** The boxes of the elements selector finds. */
function boxes(page: Page, selector: string): Promise<Box[]> {
  return page.locator(selector).evaluateAll((elements) => {
    const charts = Array.from(document.querySelectorAll('svg'));
    return elements.map((element) => {
      const e = element as SVGGraphicsElement;
      const svg = e.ownerSVGElement!.getBoundingClientRect();
      const b = e.getBBox();
      const m = e.getScreenCTM()!;
      const quad = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
        .map(([x, y]) => [m.a * x! + m.c * y! + m.e, m.b * x! + m.d * y! + m.f] as [number, number]);
      const inside = quad.every(([x, y]) => x >= svg.left - 0.5 && x <= svg.right + 0.5 && y >= svg.top - 0.5 && y <= svg.bottom + 0.5);
      return { text: e.textContent ?? '', chart: charts.indexOf(e.ownerSVGElement!), quad, inside };
    });
  });
}

/** "a / b" for each pair of boxes in one chart that overlap. */
function collisions(a: readonly Box[], b: readonly Box[] = a): string[] {
  return a.flatMap((x, i) => b.filter((y, j) => (a !== b || j > i) && x.chart === y.chart && overlap(x.quad, y.quad)).map((y) => `${x.text} / ${y.text}`));
}

/** No x tick label overlaps another or is cut off, and no goal label hides a point. */
async function expectClearLabels(page: Page): Promise<void> {
  const ticks = await boxes(page, 'g[aria-label="x-axis tick label"] text');
  expect(ticks.length).toBeGreaterThan(0);
  expect(ticks.filter((t) => !t.inside).map((t) => t.text)).toEqual([]);
  expect(collisions(ticks)).toEqual([]);
  const goals = (await boxes(page, 'svg text')).filter((t) => /^(goal )?[≥≤]/.test(t.text));
  expect(goals.length).toBeGreaterThan(0);
  expect(goals.filter((t) => !t.inside).map((t) => t.text)).toEqual([]);
  expect(collisions(goals, await boxes(page, 'g[aria-label="dot"] circle'))).toEqual([]);
}

interface Opened {
  readonly page: Page;
  /** Console errors, page errors and requests for anything but the file itself. */
  readonly problems: string[];
}

describe.skipIf(!haveChromium)('the sweep report in chromium', () => {
  let browser: Browser;
  const dir = mkdtempSync(join(tmpdir(), 'servesim-report-browser-'));

  beforeAll(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      // the machine has no network: without these chromium's own background calls fail loudly
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
        '--no-first-run', '--disable-quic', '--disable-sync'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await closeEngines();
  });

  async function open(file: string): Promise<Opened> {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const problems: string[] = [];
    const url = pathToFileURL(file).href;
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`failed request: ${r.url()}`));
    page.on('request', (r) => { if (r.url() !== url) problems.push(`request: ${r.url()}`); });
    await page.goto(url);
    await page.waitForSelector('html[data-rendered="true"]', { timeout: 20_000 });
    return { page, problems };
  }

  const count = (page: Page, selector: string) => page.locator(selector).count();
  const texts = (page: Page, selector: string) => page.locator(selector).allTextContents();

  it('draws a real sweep, written by servesim report from its Arrow file', async () => {
    // a tiny queue: two seeds of a few seconds each per grid point
    const sweep = sweepFromObject({
      id: 'tiny-queue-report',
      problem: {
        id: 'tiny-queue', title: 'A tiny queue', goals: { success: 0.9, p99: '400ms' },
        traffic: { rate: 10, duration: '4s', warmup: '1s' }, workload: { kind: 'job' },
        server: { slots: 2, service: '50ms', timeout: '1s' }, cases: ['as-given'],
      },
      grid: { 'server.slots': [1, 2], 'traffic.rate': [10, 30] },
      seeds: 2,
      engine: 'cpu',
    });
    const outcome = await runSweep(sweep);
    expect(outcome.rows).toHaveLength(4);
    const results = join(dir, 'tiny.arrow');
    const html = join(dir, 'tiny.html');
    writeFileSync(results, sweepToArrow(sweep, outcome.rows, outcome.meta));
    const stderr: string[] = [];
    const io = { stdout: { write: () => true }, stderr: { write: (t: string) => stderr.push(t) }, onInterrupt: () => () => undefined } as unknown as SweepIo;
    expect(await main(['node', 'servesim', 'report', results, '--out', html], {} as ProgramDeps, io)).toBe(0);

    const { page, problems } = await open(html);
    // one case: no "all cases" section; a heatmap of 2 x 2 cells, then success and p99
    expect(await texts(page, 'section.case h2')).toEqual([expect.stringMatching(/^as-given/)]);
    expect(await count(page, 'g[aria-description="pass probability"] rect')).toBe(4);
    expect(await count(page, 'g[aria-label="line"] path')).toBe(4);
    expect(await count(page, 'g[aria-label="area"] path')).toBe(4);
    const axisLabels = (await texts(page, 'g[aria-label="x-axis label"], g[aria-label="y-axis label"]')).join(' | ');
    expect(axisLabels).toContain('traffic.rate');
    expect(axisLabels).toContain('server.slots');
    expect(await texts(page, 'g[aria-label="text"] text')).toEqual(expect.arrayContaining(['≥ 90%', '≤ 0.4 s']));
    expect(await count(page, 'g[aria-label="rule"] line')).toBe(2);
    await page.screenshot({ path: join(OUTPUT, 'report-real-sweep.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('draws three varying paths and four cases, opening on the policy where most points pass', async () => {
    const sweep = hotPrefixSweep(GRID);
    const file = join(dir, 'grid.html');
    writeFileSync(file, renderReport(asTable(sweep, syntheticOutcome(sweep)), { hint: HINT }));
    const { page, problems } = await open(file);

    expect(await texts(page, 'section.case h2')).toEqual([
      expect.stringMatching(/^All cases/), expect.stringMatching(/^as-given/), expect.stringMatching(/^peak-hour/),
      expect.stringMatching(/^slow-dependency/), expect.stringMatching(/^server-dies/),
    ]);
    // 4 slots x 2 replicas per heatmap, 5 heatmaps (all cases, then each case)
    expect(await count(page, 'g[aria-description="pass probability"] rect')).toBe(5 * 8);
    expect(await count(page, 'g[aria-label="line"] path')).toBe(4 * 2 * 2);
    expect(await texts(page, 'nav#controls label > span')).toEqual(['metric', 'x axis', 'y axis / series', 'router.policy']);
    // prefix affinity, the first policy, fails everywhere; least-loaded and cache-aware pass alike
    expect(await page.locator('select[name="router.policy"]').inputValue()).toBe('1');
    expect(await texts(page, 'select[name="router.policy"] option')).toEqual([
      'prefix-affinity (0 of 8 pass)', 'least-loaded (3 of 8 pass, 1 undecided)', 'cache-aware (3 of 8 pass, 1 undecided)',
    ]);
    expect(await texts(page, 'section.case:nth-of-type(1) h2 .badge')).toEqual(['passes at 3 of 8 points shown, 1 undecided']);
    // undecided (dashed): one point over all cases, one of peak-hour's, one of server-dies'
    expect(await count(page, 'g[aria-description="undecided"] rect')).toBe(3);
    expect(await texts(page, 'section.case:nth-of-type(1) figcaption .hint-key')).toEqual(['outlined: passes; dashed: undecided (within seed noise); ★ the hint']);
    // the hint's 8 replicas x 16 slots of least-loaded, in all five heatmaps
    expect(await count(page, 'text:text-is("★")')).toBe(5);
    await page.screenshot({ path: join(OUTPUT, 'report-grid.png'), fullPage: true });
    await page.selectOption('select[name="x axis"]', { label: 'router.policy' });
    const axisLabels = await texts(page, 'section.case:nth-of-type(2) g[aria-label="x-axis label"]');
    expect(axisLabels.every((t) => t.includes('router.policy'))).toBe(true);
    expect(await page.locator('select[name="gpu.slots"]').count()).toBe(1);
    await page.screenshot({ path: join(OUTPUT, 'report-grid-by-policy.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it("shows a hint row's cells: its slice on the selectors, scrolled into view", async () => {
    const sweep = hotPrefixSweep(GRID);
    const file = join(dir, 'hint.html');
    writeFileSync(file, renderReport(asTable(sweep, syntheticOutcome(sweep)), { hint: HINT }));
    const { page, problems } = await open(file);
    await page.selectOption('select[name="router.policy"]', '0');
    expect(await count(page, 'text:text-is("★")')).toBe(0);

    await page.click('button[data-hint="0"]');
    expect(await page.locator('select[name="router.policy"]').inputValue()).toBe('1');
    expect(await count(page, 'text:text-is("★")')).toBe(5);
    // the first mark (the all-cases heatmap's star) in the middle of the window
    const star = (await page.locator('g[aria-description="hint"]').first().boundingBox())!;
    expect(Math.abs(star.y + star.height / 2 - 450)).toBeLessThan(60);
    // the line charts ring the hint's points: success and p99 of the four cases, at 8 replicas
    expect(await count(page, 'g[aria-label="dot"][aria-description="hint"] circle')).toBe(4 * 2);
    await page.screenshot({ path: join(OUTPUT, 'report-hint-shown.png') });
    expect(problems).toEqual([]);
  });

  it('colours the heatmaps by the metric picked, from the columns that have values', async () => {
    const sweep = hotPrefixSweep(GRID);
    const file = join(dir, 'metric.html');
    writeFileSync(file, renderReport(asTable(sweep, syntheticOutcome(sweep, undefined, { kv_hit_rate: NaN }))));
    const { page, problems } = await open(file);
    const options = await texts(page, 'select[name="metric"] option');
    expect(options.slice(0, 5)).toEqual(['pass probability', 'success', 'p99 (s)', 'ttft p99 (s)', 'gpu utilization']);
    // no value anywhere (kv hit rate here, tpot and the components the toy model lacks), or a band
    for (const absent of ['kv hit rate', 'tpot p99 (s)', 'app utilization', 'success lo', 'p99 lo (s)']) expect(options).not.toContain(absent);

    await page.selectOption('select[name="metric"]', { label: 'p99 (s)' });
    // less the 4 cells where nothing succeeds (6 x 4 slots in three cases, 8 x 4 in server-dies): no p99
    expect(await count(page, 'g[aria-description="p99 (s)"] rect')).toBe(4 * 8 - 4);
    // all cases keeps the lowest pass probability: the answer
    expect(await count(page, 'g[aria-description="pass probability"] rect')).toBe(8);
    expect(await texts(page, 'section.case:nth-of-type(2) figure.chart > figcaption')).toEqual([
      expect.stringMatching(/^p99 \(s\)/), expect.stringMatching(/^success/), expect.stringMatching(/^p99 latency/),
    ]);
    await page.screenshot({ path: join(OUTPUT, 'report-metric-p99.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('keeps x labels apart and whole, and goal labels off the points', async () => {
    // slots crowd the left of a linear axis; six policies are too wide to stand side by side
    const sweep = hotPrefixSweep({
      'gpu.slots': [1, 2, 3, 4, 6, 64],
      'router.policy': ['prefix-affinity', 'least-loaded', 'cache-aware', 'bounded-affinity', 'round-robin', 'random'],
    });
    const file = join(dir, 'labels.html');
    writeFileSync(file, renderReport({ sweep, outcome: syntheticOutcome(sweep) }));
    const { page, problems } = await open(file);
    await expectClearLabels(page);
    await page.screenshot({ path: join(OUTPUT, 'report-labels.png'), fullPage: true });
    await page.selectOption('select[name="x axis"]', { label: 'router.policy' });
    expect(await texts(page, 'section.case:nth-of-type(2) g[aria-label="x-axis tick label"] text')).toEqual(
      expect.arrayContaining(['bounded-affinity', 'round-robin']));
    await expectClearLabels(page);
    await page.screenshot({ path: join(OUTPUT, 'report-labels-by-policy.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('charts every latency goal the problem sets: TTFT and TPOT p99 beside p99, each with its goal', async () => {
    const problem = parse(readFileSync('problems/hot-prefix.yaml', 'utf8')) as { goals: Record<string, unknown> };
    problem.goals = { ...problem.goals, ttft_p99: '2s', tpot_p99: '60ms' };
    const sweep = sweepFromObject({ id: 'token-goals', problem, grid: { 'gpu.slots': [4, 8, 16, 32] }, seeds: 16 });
    const file = join(dir, 'token-goals.html');
    writeFileSync(file, renderReport(asTable(sweep, syntheticOutcome(sweep, undefined, { tpot_p99_ms: 45, tpot_p99_lo_ms: 40, tpot_p99_hi_ms: 52 }))));
    const { page, problems } = await open(file);
    expect(await texts(page, 'section.case:nth-of-type(2) figure.chart > figcaption')).toEqual([
      expect.stringMatching(/^pass probability/), expect.stringMatching(/^success/), expect.stringMatching(/^p99 latency/),
      expect.stringMatching(/^TTFT p99/), expect.stringMatching(/^TPOT p99/),
    ]);
    // each case's pass probability, success, p99, TTFT and TPOT as lines; all cases' pass probability
    expect(await count(page, 'g[aria-label="line"] path')).toBe(4 * 5 + 1);
    expect(await texts(page, 'g[aria-label="text"] text')).toEqual(expect.arrayContaining(['≤ 2 s', '≤ 0.06 s']));
    await expectClearLabels(page);
    await page.screenshot({ path: join(OUTPUT, 'report-token-goals.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('draws names on the x axis as points with interval bars, not lines', async () => {
    const sweep = hotPrefixSweep({ 'router.policy': ['prefix-affinity', 'least-loaded', 'cache-aware'], 'gpu.slots': [8, 16] });
    const file = join(dir, 'names.html');
    writeFileSync(file, renderReport(asTable(sweep, syntheticOutcome(sweep))));
    const { page, problems } = await open(file);
    // slots (numbers) start on x, as lines
    expect(await count(page, 'g[aria-label="line"] path')).toBeGreaterThan(0);
    await page.selectOption('select[name="x axis"]', { label: 'router.policy' });
    expect(await count(page, 'g[aria-label="line"] path')).toBe(0);
    expect(await count(page, 'g[aria-label="area"] path')).toBe(0);
    // success and p99 of the four cases: a bar per point with an interval, the two slot counts side by side
    const dots = await page.locator('section.case:nth-of-type(2) figure.chart:nth-of-type(2) g[aria-label="dot"] circle').evaluateAll((cs) => cs.map((c) => Number(c.getAttribute('cx'))));
    expect(dots).toHaveLength(3 * 2);
    expect(new Set(dots).size).toBe(6);
    expect(await count(page, 'section.case:nth-of-type(2) figure.chart:nth-of-type(2) g[aria-label="rule"] line')).toBe(3 * 2 + 1);
    expect(await texts(page, 'section.case:nth-of-type(2) figcaption .hint-key')).toContain('colour: gpu.slots; bars: across-seed interval; dashed: goal');
    await expectClearLabels(page);
    await page.screenshot({ path: join(OUTPUT, 'report-names-on-x.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('draws line charts only for one grid path, and blanks for points without results', async () => {
    const sweep = hotPrefixSweep({ 'gpu.slots': [2, 4, 8, 16, 32, 64] });
    const file = join(dir, 'one-path.html');
    writeFileSync(file, renderReport({ sweep, outcome: syntheticOutcome(sweep, (p) => p.index !== 2) }));
    const { page, problems } = await open(file);
    expect(await count(page, 'g[aria-description="pass probability"]')).toBe(0);
    expect(await texts(page, 'p.note')).toEqual([
      '5 of 6 grid points have results; the others are left blank.',
      'Only one grid path varies, so there is no heatmap: the metrics are drawn against it as lines.',
    ]);
    // no axes to choose: only the metric
    expect(await texts(page, 'nav#controls label > span')).toEqual(['metric']);
    // pass probability, success and p99 for each of 4 cases, pass probability for all cases
    expect(await count(page, 'g[aria-label="line"] path')).toBe(4 * 3 + 1);
    await page.screenshot({ path: join(OUTPUT, 'report-one-path.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
