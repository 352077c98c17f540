/**
 * `--engine auto`: the GPU only from the batch size at which the benchmark measured the kernel
 * beating the pool, on the adapter that would run it; the reason travels with the result.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main, type CliDeps, type CliIo } from '../src/cli/program.js';
import { crossoverOf, decideAuto, loadCrossovers, type AdapterMeasurements, type CrossoverTable, type Measurement } from '../src/run/crossover.js';
import { closeEngines, runProblem } from '../src/run/run.js';
import { loadProblem } from '../src/problem/parse.js';
import { defaultPoolThreads } from '../src/pool/pool.js';
import { probeGpu } from '../src/gpu/adapter.js';
import { ServesimError } from '../src/errors.js';

const H200 = 'NVIDIA H200 via vulkan';
const LLVMPIPE = 'llvmpipe (LLVM 15.0.6, 256 bits) via opengl';

/** Rows of (instances, kernel instances/s, pool instances/s). */
function rows(...cells: [number, number | null, number | null][]): Measurement[] {
  return cells.map(([instances, kernel, pool]) => ({ instances, kernel, pool }));
}

function measured(problems: Record<string, Measurement[]>, poolThreads = 2): AdapterMeasurements {
  return { measuredAt: '2026-11-29T00:00:00Z', servesimVersion: '0.1.0', machine: 'test', driver: 'test driver', poolThreads, problems };
}

const table = (adapters: Record<string, AdapterMeasurements>): CrossoverTable => ({ about: 'test', adapters });

describe('the crossover from the benchmark', () => {
  it('is the smallest size from which the kernel wins at every larger size, on every problem', () => {
    const m = measured({
      mmc: rows([1, 10, 500], [256, 400, 500], [4096, 6000, 500], [65536, 9000, 500]),
      'hot-prefix': rows([1, 5, 900], [256, 1000, 900], [4096, 5000, 900], [65536, 8000, 900]),
    });
    expect(crossoverOf(m, 2)).toBe(4096);
  });

  it('ignores a win below a size where the kernel loses again', () => {
    const m = measured({ mmc: rows([16, 900, 500], [256, 400, 500], [4096, 600, 500]) });
    expect(crossoverOf(m, 2)).toBe(4096);
  });

  it('is none when the kernel loses at the largest size measured with both engines', () => {
    const m = measured({
      mmc: rows([256, 9000, 500], [4096, 9000, 500]),
      'coding-agents': rows([256, 1, 300], [4096, null, 300], [65536, null, null]),
    });
    expect(crossoverOf(m, 2)).toBeNull();
    expect(crossoverOf(measured({}), 2)).toBeNull();
  });

  it('holds the pool to this machine: twice the threads, twice the pool', () => {
    const m = measured({ mmc: rows([256, 700, 500], [4096, 1500, 500]) }, 2);
    expect(crossoverOf(m, 2)).toBe(256);
    expect(crossoverOf(m, 4)).toBe(4096);
    expect(crossoverOf(m, 8)).toBeNull();
  });
});

describe('auto', () => {
  const fast = table({ [H200]: measured({ mmc: rows([16, 10, 500], [256, 5000, 500]) }), [LLVMPIPE]: measured({ mmc: rows([256, 9, 500]) }) });

  it('runs the pool below every crossover without looking for an adapter', async () => {
    let probed = false;
    const d = await decideAuto(64, 2, fast, async () => ((probed = true), H200));
    expect(d.engine).toBe('pool');
    expect(probed).toBe(false);
    // the adapters measured need not be this machine's: the reason names none
    expect(d.why).toBe('auto: the CPU pool, without looking for a GPU: 64 instances is below the smallest measured crossover, 256 instances against 2 pool threads (`npm run bench` measures)');
    const slow = await decideAuto(65536, 2, table({ [LLVMPIPE]: fast.adapters[LLVMPIPE]! }), async () => ((probed = true), LLVMPIPE));
    expect(probed).toBe(false);
    expect(slow).toEqual({ engine: 'pool', why: 'auto: the CPU pool, without looking for a GPU: on every adapter measured the kernel is slower than the pool at the largest size measured (`npm run bench` measures)' });
  });

  it('runs the GPU at or above the crossover of the adapter it would use', async () => {
    const d = await decideAuto(256, 2, fast, async () => H200);
    expect(d).toEqual({ engine: 'gpu', why: `auto: the GPU, as the kernel on ${H200} beat the pool from 256 instances` });
  });

  it('runs the pool when the adapter here is not the one measured, or there is none', async () => {
    expect(await decideAuto(4096, 2, fast, async () => LLVMPIPE)).toMatchObject({ engine: 'pool', why: expect.stringContaining(`the kernel on ${LLVMPIPE} has no measured crossover`) });
    expect(await decideAuto(4096, 2, fast, async () => null)).toMatchObject({ engine: 'pool', why: expect.stringContaining('no WebGPU adapter') });
    expect(await decideAuto(4096, 2, table({}), async () => H200)).toMatchObject({ engine: 'pool', why: expect.stringContaining('no adapter measured yet') });
  });
});

describe('the crossover file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'servesim-crossover-'));

  it('is an empty table when the benchmark has not run', () => {
    expect(loadCrossovers(join(dir, 'none.json')).adapters).toEqual({});
  });

  it('names the file and the field when it is malformed', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ about: 'x', adapters: { [H200]: { ...measured({}), poolThreads: 0 } } }));
    expect(() => loadCrossovers(bad)).toThrow(expect.objectContaining({ code: 'SERVESIM_FILE_UNREADABLE', message: expect.stringContaining(`bad.json: adapters.${H200}.poolThreads`) }));
    writeFileSync(bad, '{');
    expect(() => loadCrossovers(bad)).toThrow(/bad\.json is not JSON/);
  });

  it('as shipped, parses, and every adapter in it has each scaling problem', () => {
    const shipped = loadCrossovers();
    for (const [name, m] of Object.entries(shipped.adapters)) {
      expect(Object.keys(m.problems).sort(), name).toEqual(['coding-agents', 'hot-prefix', 'mmc']);
    }
  });
});

describe('runProblem with engine auto', () => {
  afterAll(closeEngines);

  it('runs what the shipped crossover says and says why', async () => {
    const problem = loadProblem('problems/mmc.yaml', ['traffic.duration=20s']);
    const result = await runProblem(problem, { seeds: 4, baseSeed: 1, engine: 'auto' });
    const expected = await decideAuto(4, defaultPoolThreads(), loadCrossovers(), () => probeGpu());
    expect(result.meta.engine).toBe(expected.engine);
    expect(result.meta.choice).toBe(expected.why);
  });
});

describe('--adapter', () => {
  const saved = process.env['SERVESIM_ADAPTER'];
  afterAll(() => {
    if (saved === undefined) delete process.env['SERVESIM_ADAPTER'];
    else process.env['SERVESIM_ADAPTER'] = saved;
  });

  it('names the adapter the GPU engine looks for, before or after the command', async () => {
    const deps = {
      loadProblem: () => {
        throw new ServesimError('SERVESIM_FILE_UNREADABLE', 'no such file');
      },
    } as unknown as CliDeps;
    const io = { stdout: { write: () => true }, stderr: { write: () => true }, onInterrupt: () => () => {} } as unknown as CliIo;
    expect(await main(['node', 'servesim', '--adapter', 'H200', 'run', 'p.yaml'], deps, io)).toBe(2);
    expect(process.env['SERVESIM_ADAPTER']).toBe('H200');
    expect(await main(['node', 'servesim', 'run', 'p.yaml', '--adapter', 'llvmpipe'], deps, io)).toBe(2);
    expect(process.env['SERVESIM_ADAPTER']).toBe('llvmpipe');
  });
});
