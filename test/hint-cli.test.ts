/**
 * `servesim hint` end to end on a tiny grid (one case, a fixed 64 seeds: enough for a verdict
 * to PASS at confidence 0.9, which 32 never are), and its usage errors.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/program.js';
import type { CliIo } from '../src/cli/run-command.js';
import type { HintResult } from '../src/hint/api.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { runCli } from './cli-support.js';

afterAll(closeEngines);

const hint = (...args: string[]) => runCli('hint', ...args);

describe('servesim hint', () => {
  const tiny = ['--set', 'router.policy=least-loaded', '--vary', 'gpu.slots=4..12:4', '--case', 'as-given', '--seeds', '64'];

  it('prints the cheapest configuration, its margins and the count; progress on stderr', async () => {
    const { code, out, err } = await hint('problems/hot-prefix.yaml', ...tiny);
    expect(code).toBe(0);
    expect(out).toContain('hot-prefix — One replica owns the hot prefix');
    expect(out).toContain('goals: success ≥ 99%, p99 ≤ 3 s, pass prob ≥ 0.9 · cost: gpu.replicas * gpu.slots\n');
    // the problem's seed, and the re-check's derived from it
    expect(out).toContain(`64 seeds from 1, re-checked from ${(1 + 0x9e3779b9) >>> 0} · each case's verdict at 95% confidence\n`);
    expect(out).toMatch(/Cheapest passing: gpu\.slots=\d+ \(cost \d+\)/);
    expect(out).toMatch(/as-given\s+PASS\s+64\s+100\.00\s/);
    expect(out).toContain(`On fresh seeds (from ${(1 + 0x9e3779b9) >>> 0}): PASS\n`);
    expect(out).toMatch(/evaluated \d of 3 grid points in \d rounds?\n$/);
    expect(err).toMatch(/^evaluated 1 \(grid 3\): gpu\.slots=12: PASS \(64 seeds\)$/m);
  });

  it('writes the result as JSON', async () => {
    const { code, out } = await hint('hot-prefix', ...tiny, '--cost', 'gpu.slots', '--recheck-seed', '7', '-f', 'json');
    expect(code).toBe(0);
    const result = JSON.parse(out) as HintResult;
    expect(result.gridSize).toBe(3);
    expect(result).toMatchObject({ seeds: 64, maxSeeds: 64, seed: 1, recheckSeed: 7 });
    expect(result.hints[0]!.found.recheck?.cases.map((m) => m.seeds)).toEqual([64]);
    // the pool ran every round: no GPU seconds
    expect(result.gpuSeconds).toBeNull();
    expect(result.hints[0]!.found.cost).toBe(result.hints[0]!.found.values['gpu.slots']);
  });

  it('holds its interrupt handler until the hints are written', async () => {
    let handler: (() => void) | undefined;
    const heldAtWrite: boolean[] = [];
    const io = {
      stdout: { write: () => heldAtWrite.push(handler !== undefined) },
      stderr: { write: () => true, isTTY: false },
      onInterrupt: (h: () => void) => ((handler = h), () => (handler = undefined)),
    } as unknown as CliIo;
    const code = await main(['node', 'servesim', 'hint', 'hot-prefix', ...tiny], { loadProblem, selectCases, runProblem }, io);
    expect(code).toBe(0);
    expect(heldAtWrite).toEqual([true]);
    expect(handler).toBeUndefined();
  });

  it('a problem given with --set is read within the input bounds (needs the build)', () => {
    const big = join(mkdtempSync(join(tmpdir(), 'servesim-hint-')), 'big.yaml');
    writeFileSync(big, `# ${'x'.repeat(2 * 1024 * 1024)}\n`);
    const hintOn = (file: string) =>
      spawnSync(process.execPath, ['dist/src/cli/main.js', 'hint', file, '--set', 'gpu.slots=4', '--vary', 'gpu.replicas=1..2'], { encoding: 'utf8', timeout: 20_000 });
    expect(hintOn('/dev/zero')).toMatchObject({ status: 2, stderr: 'servesim: cannot read problem file /dev/zero: it is a device\n' });
    expect(hintOn(big)).toMatchObject({ status: 2, stderr: `servesim: problem file ${big} is 2,097,155 bytes; the limit is 1 MiB (1,048,576 bytes)\n` });
  });

  it('says what is wrong with the input', async () => {
    let r = await hint('hot-prefix');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--vary/);
    r = await hint('hot-prefix', '--vary', 'gpu.slots=4..8', '--cost', 'gpu.slots +');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/cost: expected a number/);
    r = await hint('hot-prefix', '--vary', 'gpu.slots=4..8', '--cost', 'gpu.slot * 2');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/servesim: cost: unknown path gpu\.slot /);
    r = await hint('hot-prefix', '--vary', 'gpu.slots=4..8', '--set', 'gpu.slots=x');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/gpu\.slots.*from --set gpu\.slots=x/);
  });
});
