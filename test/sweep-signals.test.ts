/**
 * SIGTERM and SIGHUP stop `servesim sweep` as Ctrl-C does: the grid points that finished are
 * written, as a whole Arrow file whose metadata says it is partial and which points it lacks,
 * and `servesim report` reads it and says so. Runs the built bin (`npm run build`).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from '@uwdata/flechette';
import { afterAll, describe, expect, it } from 'vitest';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { closeEngines } from '../src/run/run.js';

const BIN = 'dist/src/cli/main.js';
const POINTS = 24;
// in slices of 64 instances (one point each): the first points finish with most of the sweep
// still to run, so the signal lands before the end even on a loaded machine (at 8 seeds a slice
// spanned 8 points, the sweep took 3 s and its first progress line could come near the end; at
// 1500 s a point, once 9 s on two cores, the engine's later speed made it 2 s and the signal
// once came after the last point, under npm test's load: 3900 s, 2.6 times the work)
const SWEEP = {
  problem: 'mmc',
  grid: { 'server.slots': Array.from({ length: POINTS }, (_, i) => 4 + i), 'traffic.duration': ['3900s'] },
  seeds: 64,
  engine: 'cpu',
};

const dir = mkdtempSync(join(tmpdir(), 'servesim-signals-'));
const sweepFile = join(dir, 'long.json');
writeFileSync(sweepFile, JSON.stringify(SWEEP));

afterAll(closeEngines);

/** "1-3, 7" -> [1, 2, 3, 7]. */
function expandRanges(text: string): number[] {
  return text.split(', ').flatMap((part) => {
    const [from, to = from] = part.split('-').map(Number);
    return Array.from({ length: to! - from! + 1 }, (_, i) => from! + i);
  });
}

/** `servesim report FILE` in this process: the exit status and stderr. */
async function report(file: string): Promise<{ code: number; err: string }> {
  let err = '';
  const unused = (): never => {
    throw new Error('not used by report');
  };
  const deps: ProgramDeps = { loadProblem: unused, selectCases: unused, runProblem: unused };
  const io: SweepIo = {
    stdout: { write: () => true, isTTY: false },
    stderr: { write: (t: string) => ((err += t), true), isTTY: false } as unknown as SweepIo['stderr'],
    onInterrupt: () => () => {},
  };
  const code = await main(['node', 'servesim', 'report', file, '--out', `${file}.html`], deps, io);
  return { code, err };
}

describe.skipIf(!existsSync(BIN))('servesim sweep stopped by a signal', () => {
  it.each(['SIGTERM', 'SIGHUP'] as const)('on %s writes the finished points as a partial table', async (signal) => {
    const out = join(dir, `${signal}.arrow`);
    const child = spawn(process.execPath, [BIN, 'sweep', sweepFile, '--out', out], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // progress lines in logs: "mmc 3/24 grid points | ..."
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (chunk) => {
        stderr += String(chunk);
        if (new RegExp(` [1-9]\\d*/${POINTS} grid points`).test(stderr)) resolve();
      });
      void exited.then(() => reject(new Error(`the sweep ended before a point finished: ${stderr}`)));
    });
    child.kill(signal);
    expect(await exited).toBe(130);

    const table = tableFromIPC(readFileSync(out));
    const done = table.numRows;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(POINTS);
    const metadata = table.schema.metadata!;
    expect(metadata.get('servesim.points')).toBe(String(done));
    expect(metadata.get('servesim.grid_points')).toBe(String(POINTS));
    // the points run in batches: those missing are the ones the table lacks, in any order
    const slots = new Set(Array.from(table.getChild('server.slots')!.toArray() as Int32Array));
    const missing = Array.from({ length: POINTS }, (_, i) => i).filter((i) => !slots.has(4 + i));
    expect(missing).toHaveLength(POINTS - done);
    expect(expandRanges(metadata.get('servesim.missing_points')!)).toEqual(missing);
    expect(metadata.get('servesim.stopped')).toBe('cancelled');
    expect(stderr).toContain(`wrote ${done} rows (${done} grid point${done === 1 ? '' : 's'}) to ${out}`);
    expect(stderr).toContain(`${POINTS - done} of ${POINTS} grid points did not finish (cancelled):`);

    const read = await report(out);
    expect(read.code).toBe(0);
    expect(read.err).toContain(`${out} is partial (cancelled): ${done} of ${POINTS} grid points; missing grid points`);
    expect(readFileSync(`${out}.html`, 'utf8')).toContain(`This table is partial (cancelled): ${done} of ${POINTS} grid points`);
  }, 120_000);
});
