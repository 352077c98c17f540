/**
 * Shared by the two equivalence files (split so that vitest compiles their kernel shapes on
 * both cores): the problems' configurations, and a describe block whose `expectSame` runs
 * instances on the GPU and on the reference engine and compares them word for word.
 */
import { beforeEach, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { acquireGpu, type GpuContext } from '../src/gpu/adapter.js';
import { runGpu } from '../src/gpu/engine.js';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { R, RESULT_SCALARS, layoutConstants } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { loadProblem, parseProblem, selectCases } from '../src/problem/parse.js';
import { COMPILE_MS, describeGpu } from './gpu-support.js';
import { configFor, problemFile } from './support.js';

// Each configuration shape compiles its own pipeline (kernel-source.ts shapeConstants): a
// test's first run of a shape includes its compile, as long as a cold one may take.
export const RUN_MS = COMPILE_MS;
const SEED = 20_261_129;
// A first instance other than 0, and odd counts: not multiples of any workgroup size (powers of 2).
const FIRST = 1_000;
export const CASES = ['as-given', 'peak-hour', 'slow-dependency', 'server-dies'];
export const POLICIES = ['round-robin', 'random', 'least-loaded', 'prefix-affinity', 'bounded-affinity', 'cache-aware'];
// Seeds per combination, sized so that each file's runs (compiles aside) stay near a minute and
// a half on llvmpipe (2 cores).
export const SEEDS = { 'hot-prefix': 257, 'coding-agents': 49, mmc: 101, policy: 71, scenarios: 17, offload: 3 } as const;

// Scenario windows no problem file has: app and server failures, tool and server slowdowns.
const EXTRA_CASES: Record<string, (text: string) => string> = {
  'coding-agents': (text) =>
    text.replace(/^cases: .*$/m, 'cases: [app-dies, tools-slow, tools-burst]') +
    'scenarios:\n  app-dies: { failures: [{ target: app, replica: 1 }] }\n' +
    '  tools-slow: { slowdown: { target: tools, factor: 4 } }\n  tools-burst: { burst: { scale: 3 } }\n',
  mmc: (text) =>
    text.replace(/^cases: .*$/m, 'cases: [server-down, server-slow]').replace('replicas: 1', 'replicas: 3').replace('timeout: 0', 'timeout: 1s') +
    'scenarios:\n  server-down: { failures: [{ target: server, replica: 1 }] }\n' +
    '  server-slow: { slowdown: { target: server, factor: 3 } }\n',
};

export function extraConfigs(): [string, EngineConfig][] {
  const out: [string, EngineConfig][] = [];
  for (const [file, edit] of Object.entries(EXTRA_CASES)) {
    const problem = parseProblem(edit(readFileSync(problemFile(file), 'utf8')), file);
    for (const scenario of selectCases(problem, 'all')) out.push([`${file}, ${scenario.name}`, compile(problem, scenario)]);
  }
  // a replica that hangs until a health check finds it, and one that resets
  const hung = loadProblem(problemFile('hung-replica'));
  for (const scenario of selectCases(hung, ['as-given', 'server-dies'])) out.push([`hung-replica, ${scenario.name}`, compile(hung, scenario)]);
  // the metrics' counters: goals on TTFT and TPOT (goodput), a tool call every step with the
  // tools scarce (their queue, timeouts there), a router that rejects
  const metrics: [string, string[]][] = [
    ['coding-agents', ['orchestrator.toolCalls=every-step', 'tools.slots=2', 'goals.ttft_p99=2s', 'goals.tpot_p99=30ms']],
    ['hot-prefix', ['goals.ttft_p99=3s', 'goals.tpot_p99=20ms', 'router.slots=40']],
  ];
  for (const [file, sets] of metrics) out.push([`${file}, ${sets.join(' ')}`, configFor(file, sets).config]);
  return out;
}

const FIELD_NAMES = Object.fromEntries(
  Object.entries(layoutConstants())
    .filter(([name]) => name.startsWith('R_'))
    .map(([name, word]) => [word, name.replace('R_', 'R.')]),
);

function wordName(config: EngineConfig, word: number): string {
  if (word < RESULT_SCALARS) return FIELD_NAMES[word]!;
  if (word < RESULT_SCALARS + config.gpuReplicas) return `calls of replica ${word - RESULT_SCALARS}`;
  const [name, at] = Object.entries(config.histograms).filter(([, at]) => at >= 0 && at <= word).sort((a, b) => b[1] - a[1])[0]!;
  return `${name} histogram bucket ${word - at}`;
}

/** The first word where the two runs differ, named; null when they are identical. */
function firstDifference(config: EngineConfig, gpu: Uint32Array, ref: Uint32Array): string | null {
  if (gpu.length !== ref.length) return `${gpu.length} words from the GPU, ${ref.length} from the reference`;
  for (let i = 0; i < ref.length; i++) {
    if (gpu[i] !== ref[i]) {
      const instance = Math.floor(i / config.resultWords);
      return `instance ${FIRST + instance}, ${wordName(config, i % config.resultWords)}: GPU ${gpu[i]}, reference ${ref[i]}`;
    }
  }
  return null;
}

export function sum(config: EngineConfig, records: Uint32Array, field: number): number {
  let total = 0;
  for (let i = field; i < records.length; i += config.resultWords) total += records[i]!;
  return total;
}

/** Resolves to the records both engines gave, for checks on what the instances did. */
export type ExpectSame = (config: EngineConfig, count: number) => Promise<Uint32Array>;

/** A describe block (skipped without an adapter, unless CI is set) of equivalence tests. */
export function describeEquivalence(title: string, tests: (expectSame: ExpectSame) => void): void {
  describeGpu(title, () => {
    let ctx: GpuContext;
    let acquiring: Promise<GpuContext> | undefined;

    // Per test rather than in beforeAll: with CI set and no adapter, each GPU test then fails
    // (a failed beforeAll would report them as skipped).
    beforeEach(async () => {
      acquiring ??= acquireGpu().then(async (c) => {
        await runGpu(c, configFor('mmc').config, SEED, 0, 1);
        return c;
      });
      ctx = await acquiring;
    }, COMPILE_MS);

    async function expectSame(config: EngineConfig, count: number): Promise<Uint32Array> {
      const gpu = await runGpu(ctx, config, SEED, FIRST, count);
      const ref = runReference(config, SEED, FIRST, count);
      expect(firstDifference(config, gpu, ref)).toBeNull();
      // the instances simulated real traffic, not a run of zeros
      expect(sum(config, gpu, R.ARRIVALS)).toBeGreaterThan(count);
      expect(sum(config, gpu, R.SUCCESSES)).toBeGreaterThan(0);
      return gpu;
    }

    tests(expectSame);
  });
}
