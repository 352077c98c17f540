/**
 * The shipped trace problem from the command line (issue 16 section 3): another Mooncake-format
 * file replaces its trace with --set alone, in run, hint and a sweep's grid, and a hint on it
 * answers in dollars per hour.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tableFromIPC } from 'apache-arrow';
import type { TraceSummary } from '../src/model/trace.js';
import { closeEngines } from '../src/run/run.js';
import { runCli } from './cli-support.js';

afterAll(closeEngines);

// the first 2,000 requests of the shipped trace: 9.8 minutes, room for a window of three
const dir = mkdtempSync(join(tmpdir(), 'servesim-trace-cli-'));
const part = join(dir, 'part.jsonl');
writeFileSync(part, readFileSync('problems/traces/mooncake-conversation.jsonl', 'utf8').split('\n').slice(0, 2_000).join('\n') + '\n');

describe('the conversation-trace problem', () => {
  it('replays another Mooncake-format file given by --set, relative to the working directory', async () => {
    const shown = relative(process.cwd(), part);
    const { code, out, err } = await runCli('run', 'conversation-trace', '--set', `traffic.trace=${shown}`, '--case', 'as-given', '--seeds', '2', '-f', 'json');
    expect(code).toBe(0);
    const result = JSON.parse(out) as { rows: { requests: number; success: number }[]; meta: { trace: TraceSummary } };
    const [row] = result.rows;
    expect(row!.requests).toBeGreaterThan(0);
    expect(row!.success).toBeGreaterThan(0);
    // the trace as loaded: once on stderr, and in the results
    expect(err.match(/^trace .*$/gm)).toEqual([expect.stringMatching(new RegExp(`^trace ${shown.replace(/[.\\/]/g, '\\$&')}: 2,000 requests over 669 s .*% of prompt tokens found by an infinite block cache$`))]);
    expect(result.meta.trace).toMatchObject({ file: shown, format: 'mooncake', requests: 2_000, spanSeconds: 669 });
  });

  it('refuses a window longer than the trace once, naming only the cases that run and fall short', async () => {
    const set = ['--set', `traffic.trace=${part}`, '--set', 'traffic.duration=500s'];
    // 560 s of window: peak-hour's 1.25x needs 700 s of the 669 s trace, the other cases fit
    const all = await runCli('run', 'conversation-trace', ...set, '--seeds', '2');
    expect(all.code).toBe(2);
    expect(all.err).toMatch(/^servesim: invalid problem: traffic\.trace: .*part\.jsonl spans 669s; case peak-hour replays it at 1\.25x .* = 560s, needs 700s of it: shorten the window or lower the rateScale\n$/);
    const longer = await runCli('run', 'conversation-trace', '--set', `traffic.trace=${part}`, '--set', 'traffic.duration=620s', '--case', 'as-given', '--case', 'server-dies');
    expect(longer.code).toBe(2);
    expect(longer.err).toMatch(/^servesim: invalid problem: traffic\.trace: .* needs more of it in cases as-given, server-dies: case as-given replays it at 1x .*; case server-dies replays it at 1x .*\n$/);
  });

  it('answers a hint in dollars per hour, on a --set trace', async () => {
    // 64 seeds decide a pass at one look; 4 would leave every design UNDECIDED
    const { code, out, err } = await runCli('hint', 'conversation-trace', '--set', `traffic.trace=${part}`, '--vary', 'gpu.replicas=2..6', '--case', 'as-given', '--seeds', '64');
    expect(code).toBe(0);
    expect(out).toMatch(/Cheapest passing: gpu\.replicas=\d \(cost \$\d+\.\d\d\/h\)/);
    expect(err.match(/^trace .*$/gm)).toEqual([expect.stringMatching(/^trace .*part\.jsonl: 2,000 requests over 669 s/)]);
  });

  it('takes a sweep grid of traces, relative to the sweep file', async () => {
    const sweep = join(dir, 'traces.yaml');
    writeFileSync(sweep, `id: traces\nproblem: ${join(process.cwd(), 'problems/conversation-trace.yaml')}\ngrid:\n  traffic.trace: [part.jsonl, ${join(process.cwd(), 'problems/traces/mooncake-conversation.jsonl')}]\ncases: [as-given]\nseeds: 2\n`);
    const { code, out, err } = await runCli('sweep', sweep, '-f', 'json');
    expect(code).toBe(0);
    const result = JSON.parse(out) as { rows: unknown[]; meta: { trace: TraceSummary | null } };
    expect(result.rows).toHaveLength(2);
    // each trace of the grid once on stderr; the results name each row's in its traffic.trace column
    expect(err.match(/^trace .*$/gm)).toEqual([
      expect.stringMatching(/^trace part\.jsonl: 2,000 requests/),
      expect.stringMatching(/^trace .*mooncake-conversation\.jsonl: 12,031 requests .* 37\.3% of prompt tokens found by an infinite block cache$/),
    ]);
    expect(result.meta.trace).toBeNull();
  });

  it('refuses a grid point whose window the trace cannot cover, before running any', async () => {
    const sweep = join(dir, 'long.yaml');
    writeFileSync(sweep, `id: long\nproblem: ${join(process.cwd(), 'problems/conversation-trace.yaml')}\ngrid:\n  traffic.trace: [part.jsonl]\n  traffic.duration: [100s, 620s]\ncases: [as-given]\nseeds: 2\n`);
    const { code, err } = await runCli('sweep', sweep, '-f', 'json');
    expect(code).toBe(2);
    expect(err).toMatch(/^servesim: grid: grid point 1 \(traffic\.trace=part\.jsonl, traffic\.duration=620s\): invalid problem: traffic\.trace: part\.jsonl spans 669s; case as-given replays it at 1x .* = 680s, needs 680s of it/);
    expect(err).not.toMatch(/^trace /m);
  });

  it("keeps a sweep's one trace in the Arrow metadata as servesim.trace", async () => {
    const sweep = join(dir, 'one.yaml');
    writeFileSync(sweep, `id: one\nproblem: ${join(process.cwd(), 'problems/conversation-trace.yaml')}\ngrid:\n  gpu.replicas: [4]\ncases: [as-given]\nseeds: 2\n`);
    const file = join(dir, 'one.arrow');
    const { code, err } = await runCli('sweep', sweep, '--out', file);
    expect(code).toBe(0);
    expect(err.match(/^trace .*$/gm)).toHaveLength(1);
    const trace = JSON.parse(tableFromIPC(readFileSync(file)).schema.metadata.get('servesim.trace')!) as TraceSummary;
    expect(trace).toMatchObject({ file: 'traces/mooncake-conversation.jsonl', requests: 12_031 });
    expect(trace.blockCacheShare).toBeCloseTo(0.373, 3);
  });
});
