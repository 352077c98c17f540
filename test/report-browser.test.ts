/**
 * The sweep report in a real browser (Debian's chromium, driven by playwright-core): opened
 * from disk, it must draw every chart with no console error and no request off the file.
 * Screenshots go to test/output/ (git-ignored) for a person to look at.
 * Without chromium this fails under CI (install the `chromium` package) and skips elsewhere.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
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
    expect(await texts(page, 'g[aria-label="text"] text')).toEqual(expect.arrayContaining(['goal ≥ 90%', 'goal ≤ 0.4 s']));
    expect(await count(page, 'g[aria-label="rule"] line')).toBe(2);
    await page.screenshot({ path: join(OUTPUT, 'report-real-sweep.png'), fullPage: true });
    expect(problems).toEqual([]);
  });

  it('draws three varying paths and four cases, with a selector for the third path and the hint', async () => {
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
    expect(await texts(page, 'nav#controls label > span')).toEqual(['x axis', 'y axis / series', 'router.policy']);
    expect(await page.locator('select[name="router.policy"]').inputValue()).toBe('0');
    // prefix affinity: the hint (least-loaded) is not on this slice
    expect(await count(page, 'text:text-is("★")')).toBe(0);

    await page.selectOption('select[name="router.policy"]', { label: 'least-loaded' });
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

  it('draws line charts only for one grid path, and blanks for points without results', async () => {
    const sweep = hotPrefixSweep({ 'gpu.slots': [2, 4, 8, 16, 32, 64] });
    const file = join(dir, 'one-path.html');
    writeFileSync(file, renderReport({ sweep, outcome: syntheticOutcome(sweep, (p) => p.index !== 2) }));
    const { page, problems } = await open(file);
    expect(await count(page, 'g[aria-description="pass probability"]')).toBe(0);
    expect(await texts(page, 'p.note')).toEqual([
      '5 of 6 grid points have results; the others are left blank.',
      'Only one grid path varies, so there is no heatmap: pass probability is drawn against it as a line.',
    ]);
    expect(await count(page, 'nav#controls select')).toBe(0);
    // pass probability, success and p99 for each of 4 cases, pass probability for all cases
    expect(await count(page, 'g[aria-label="line"] path')).toBe(4 * 3 + 1);
    await page.screenshot({ path: join(OUTPUT, 'report-one-path.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
