/**
 * A sweep's points finish as their seeds do, whatever the shapes of their cases: stopped at a
 * quarter of its instances, on the pool, a sweep keeps the points finished by then and names
 * the rest (the CLI's own stop: the handler its signals call), and a cancelled HTTP job keeps
 * every point whose seeds had all run, losing at most the points in flight. Before, a
 * sweep's cases ran shape by shape, so no point finished before the last shape's batch began.
 * Needs `npm run build` first (the pool's workers run from dist/).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { main, type ProgramDeps, type SweepIo } from '../src/cli/program.js';
import { GpuWindows } from '../src/run/batches.js';
import { closeEngines, pool } from '../src/run/run.js';
import { buildServer } from '../src/service/server.js';
import { runSweep, type SweepProgress } from '../src/sweep/run.js';
import { parseEvents, TINY_QUEUE } from './support.js';

afterAll(closeEngines);

const POINTS = 32;
const SEEDS = 64;
const CASES = ['as-given', 'server-down'];
/** A point's instances: its cases' seeds. */
const PER_POINT = CASES.length * SEEDS;
// server-down is a shape of its own: the cases run as two batches
const SWEEP = {
  problem: { ...TINY_QUEUE, traffic: { ...TINY_QUEUE.traffic, duration: '150s' }, cases: undefined, scenarios: { 'server-down': { failures: [{ target: 'server', replica: 0 }] } } },
  grid: { 'server.slots': Array.from({ length: POINTS }, (_, i) => 2 + i) },
  cases: CASES,
  seeds: SEEDS,
  engine: 'cpu',
};

/**
 * Instances a stop may lose on the pool: those of points with seeds in flight (at most two
 * slices a thread) or not yet handed out, but not of points whose seeds all ran.
 */
const lossBound = (): number => (2 * pool().threads + 1) * PER_POINT;

describe('a sweep stopped at a quarter of its instances', () => {
  it('keeps the points finished by then, names the others, and says what ran them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'servesim-stopped-'));
    const file = join(dir, 'sweep.json');
    const out = join(dir, 'stopped.arrow');
    writeFileSync(file, JSON.stringify(SWEEP));
    let interrupt: (() => void) | undefined;
    let stderr = '';
    let doneAtStop = 0;
    const io: SweepIo = {
      stdout: { write: () => true, isTTY: false },
      stderr: { write: (t: string) => ((stderr += t), true), isTTY: false } as unknown as SweepIo['stderr'],
      // what main.ts does on SIGINT, SIGTERM and SIGHUP
      onInterrupt: (handler) => {
        interrupt = handler;
        return () => (interrupt = undefined);
      },
    };
    const unused = (): never => {
      throw new Error('not used by sweep');
    };
    const deps: ProgramDeps = {
      loadProblem: unused,
      selectCases: unused,
      runProblem: unused,
      runSweep: (sweep, options) =>
        runSweep(sweep, {
          ...options,
          onProgress: (p: SweepProgress) => {
            options?.onProgress?.(p);
            if (doneAtStop === 0 && p.instancesDone >= p.instancesTotal / 4) {
              doneAtStop = p.instancesDone;
              interrupt!();
            }
          },
        }),
    };
    expect(await main(['node', 'servesim', 'sweep', file, '--out', out], deps, io)).toBe(130);

    const table = tableFromIPC(readFileSync(out));
    const kept = [...new Set(Array.from(table.getChild('server.slots')!.toArray() as Int32Array, (slots) => slots - 2))];
    // every finished point has both its cases
    expect(table.numRows).toBe(kept.length * CASES.length);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(POINTS);
    expect(kept.length * PER_POINT).toBeGreaterThanOrEqual(doneAtStop - lossBound());
    const missing = Array.from({ length: POINTS }, (_, i) => i).filter((i) => !kept.includes(i));
    expect(stderr).toContain(`${missing.length} of ${POINTS} grid points did not finish (cancelled):\n`);
    for (const i of missing.slice(0, 20)) expect(stderr).toContain(`  ${i}: server.slots=${2 + i}\n`);
    // the batches a stopped sweep lists name the engine of the points it kept
    expect(stderr).toContain('engine: pool\n');
    expect(table.schema.metadata.get('servesim.engine')).toBe('pool');
  });
});

describe('an HTTP job cancelled part way', () => {
  it('keeps every point whose seeds all ran in its partial result and its events', async () => {
    const app = buildServer({});
    try {
      const created = await app.inject({ method: 'POST', url: '/v1/jobs', payload: SWEEP });
      expect(created.statusCode).toBe(202);
      const job = created.json();
      // a client listening from the start hears of each point as it finishes
      const listening = app.inject(job.links.events);
      const total = POINTS * PER_POINT;
      let doneAtCancel = 0;
      for (const end = Date.now() + 60_000; doneAtCancel < total / 4; await new Promise((r) => setTimeout(r, 10))) {
        if (Date.now() > end) throw new Error('the job did not reach a quarter of its instances');
        const status = (await app.inject(job.links.self)).json();
        if (status.status !== 'running' && status.status !== 'queued') throw new Error(`the job ended (${status.status}) before it was cancelled`);
        doneAtCancel = status.instances.done;
      }
      const cancelled = (await app.inject({ method: 'DELETE', url: job.links.self })).json();
      expect(cancelled.status).toBe('cancelled');
      const finished = Array.from({ length: POINTS }, (_, i) => i).filter((i) => !cancelled.unfinished.includes(i));
      expect(finished.length).toBeGreaterThan(0);
      expect(cancelled.points.done).toBe(finished.length);
      // a cancelled job counts the instances it kept: all but those of points in flight
      expect(cancelled.instances.done).toBe(finished.length * PER_POINT);
      expect(cancelled.instances.done).toBeGreaterThanOrEqual(doneAtCancel - lossBound());

      const partial = await app.inject({ url: job.links.result, headers: { accept: 'application/json' } });
      const rows: Record<string, unknown>[] = partial.json().rows;
      expect(rows.map((r) => [r['server.slots'], r['case']])).toEqual(finished.flatMap((i) => CASES.map((c) => [2 + i, c])));
      const events = parseEvents((await listening).body);
      const progress = events.filter((e) => e.event === 'progress').map((e) => e.data.point.index as number);
      expect(progress.sort((a, b) => a - b)).toEqual(finished);
      expect(events.at(-1)!.event).toBe('cancelled');
    } finally {
      await app.close();
    }
  });
});

describe('a GPU window', () => {
  it('grows towards 10 s of GPU time, at most four-fold a window, and never below its first size', () => {
    const windows = new GpuWindows(4096);
    windows.timed(4096, 1); // 10 s would hold 40,960: four-fold is 16,384
    expect(windows.instances).toBe(16_384);
    windows.timed(16_384, 5);
    expect(windows.instances).toBe(32_768);
    windows.timed(32_768, 40); // over the bound: back to what 10 s holds
    expect(windows.instances).toBe(8_192);
    windows.timed(8_192, 60); // a pass that slow is no quicker smaller: kept at the first size
    expect(windows.instances).toBe(4096);
  });
});
