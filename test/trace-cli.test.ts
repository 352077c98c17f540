/**
 * The shipped trace problem from the command line (issue 16 section 3): another Mooncake-format
 * file replaces its trace with --set alone, in run, hint and a sweep's grid, and a hint on it
 * answers in dollars per hour.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closeEngines } from '../src/run/run.js';
import { runCli } from './cli-support.js';

afterAll(closeEngines);

// the first 2,000 requests of the shipped trace: 9.8 minutes, room for a window of three
const dir = mkdtempSync(join(tmpdir(), 'servesim-trace-cli-'));
const part = join(dir, 'part.jsonl');
writeFileSync(part, readFileSync('problems/traces/mooncake-conversation.jsonl', 'utf8').split('\n').slice(0, 2_000).join('\n') + '\n');

describe('the conversation-trace problem', () => {
  it('replays another Mooncake-format file given by --set, relative to the working directory', async () => {
    const { code, out } = await runCli('run', 'conversation-trace', '--set', `traffic.trace=${relative(process.cwd(), part)}`, '--case', 'as-given', '--seeds', '2', '-f', 'json');
    expect(code).toBe(0);
    const [row] = (JSON.parse(out) as { rows: { requests: number; success: number }[] }).rows;
    expect(row!.requests).toBeGreaterThan(0);
    expect(row!.success).toBeGreaterThan(0);
  });

  it('answers a hint in dollars per hour, on a --set trace', async () => {
    // 64 seeds decide a pass at one look; 4 would leave every design UNDECIDED
    const { code, out } = await runCli('hint', 'conversation-trace', '--set', `traffic.trace=${part}`, '--vary', 'gpu.replicas=2..6', '--case', 'as-given', '--seeds', '64');
    expect(code).toBe(0);
    expect(out).toMatch(/Cheapest passing: gpu\.replicas=\d \(cost \$\d+\.\d\d\/h\)/);
  });

  it('takes a sweep grid of traces, relative to the sweep file', async () => {
    const sweep = join(dir, 'traces.yaml');
    writeFileSync(sweep, `id: traces\nproblem: ${join(process.cwd(), 'problems/conversation-trace.yaml')}\ngrid:\n  traffic.trace: [part.jsonl, ${join(process.cwd(), 'problems/traces/mooncake-conversation.jsonl')}]\ncases: [as-given]\nseeds: 2\n`);
    const { code, out } = await runCli('sweep', sweep, '-f', 'json');
    expect(code).toBe(0);
    expect((JSON.parse(out) as { rows: unknown[] }).rows).toHaveLength(2);
  });
});
