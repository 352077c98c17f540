/** Shared by the engine tests: run a problem file's case on an engine and decode the results. */
import { fileURLToPath } from 'node:url';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { ServesimError } from '../src/errors.js';
import { runReference } from '../src/engine/reference.js';
import { decodeResult } from '../src/engine/result.js';
import { loadProblem, parseProblem, problemFromObject, selectCases } from '../src/problem/parse.js';
import { SimulationPool } from '../src/pool/pool.js';
import type { Problem } from '../src/model/problem.js';
import type { InstanceResult } from '../src/model/result.js';

/** A queue small enough that a grid point takes milliseconds. */
export const TINY_QUEUE = {
  id: 'tiny-queue',
  title: 'A tiny queue',
  goals: { success: 0.9, p99: '1s' },
  traffic: { rate: 10, duration: '4s', warmup: '1s' },
  workload: { kind: 'job' },
  server: { slots: 2, service: '50ms', timeout: '80ms' },
  cases: ['as-given'],
} as const;

export function problemFile(name: string): string {
  return fileURLToPath(new URL(`../problems/${name}.yaml`, import.meta.url));
}

export interface CaseRun {
  readonly problem: Problem;
  readonly config: EngineConfig;
  readonly records: Uint32Array;
  readonly results: InstanceResult[];
}

export function configFor(name: string, sets: readonly string[] = [], caseName = 'as-given'): { problem: Problem; config: EngineConfig } {
  const problem = loadProblem(problemFile(name), sets);
  const [scenario] = selectCases(problem, [caseName]);
  return { problem, config: compile(problem, scenario!) };
}

/**
 * A plain server of 30 slots of mean service 150 s (0.2 jobs/s) fed 0.24 jobs/s for 3,990 s with
 * no deadline: about 160 jobs are queued when arrivals end, and even the 30 in service alone
 * would most likely run past 2^32 us (4,295 s, 305 s later), while the job table (496) never
 * fills. Every instance stops there (ERR.HORIZON).
 */
const PAST_HORIZON_YAML = `
id: past-horizon
title: An overloaded queue still draining when u32 microseconds end
goals: { success: 0.5, p99: 1000s }
traffic: { rate: 0.24, duration: 3970s, warmup: 20s }
workload: { kind: job }
server:
  replicas: 1
  slots: 30
  service: { dist: exponential, mean: 150s }
  timeout: 0
cases: [as-given]
`;

export function pastHorizon(): { problem: Problem; config: EngineConfig } {
  const problem = parseProblem(PAST_HORIZON_YAML, 'past-horizon');
  const [scenario] = selectCases(problem, ['as-given']);
  return { problem, config: compile(problem, scenario!) };
}

export function decodeAll(config: EngineConfig, records: Uint32Array): InstanceResult[] {
  const out: InstanceResult[] = [];
  for (let i = 0; i < records.length / config.resultWords; i++) {
    out.push(decodeResult(config, records.subarray(i * config.resultWords, (i + 1) * config.resultWords)));
  }
  return out;
}

let pool: SimulationPool | undefined;

/** One pool for a test file; closed by `closePool` in afterAll. */
export function testPool(): SimulationPool {
  pool ??= new SimulationPool(2);
  return pool;
}

export async function closePool(): Promise<void> {
  await pool?.close();
  pool = undefined;
}

/** Runs `seeds` instances of a case on the CPU pool (or in this thread with `reference`). */
export async function runCase(
  name: string,
  options: { sets?: readonly string[]; caseName?: string; seeds: number; seed?: number; engine?: 'pool' | 'reference' },
): Promise<CaseRun> {
  const { problem, config } = configFor(name, options.sets ?? [], options.caseName ?? 'as-given');
  const seed = options.seed ?? 1;
  const records = options.engine === 'reference'
    ? runReference(config, seed, 0, options.seeds)
    : await testPool().run(config, seed, 0, options.seeds);
  return { problem, config, records, results: decodeAll(config, records) };
}

export function sum(results: readonly InstanceResult[], field: keyof InstanceResult): number {
  return results.reduce((s, r) => s + (r[field] as number), 0);
}

/** The seeds' latency histograms added up. */
export function pooledLatency(results: readonly InstanceResult[]): Float64Array {
  const pooled = new Float64Array(results[0]?.latency.length ?? 0);
  for (const r of results) r.latency.forEach((c, i) => (pooled[i]! += c));
  return pooled;
}

export interface ServerEvent {
  readonly event: string;
  readonly data: Record<string, any>;
}

/** A server-sent event stream's body as its events (keep-alive comments dropped). */
export function parseEvents(text: string): ServerEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => {
      const [event, data] = block.split('\n');
      return { event: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
    });
}

/** A tiny deterministic generator (mulberry32): random test inputs that are the same every run. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The ServesimError a call throws; any other error is rethrown, and no error fails the test. */
export function thrown(f: () => unknown): ServesimError {
  try {
    f();
  } catch (err) {
    if (err instanceof ServesimError) return err;
    throw err;
  }
  throw new Error('expected a ServesimError');
}

/** A request problem of unique `prompt`-token prompts (no shared prefix) on `profile`. */
export function requestProblemOn(profile: unknown, gpu: Record<string, unknown> = {}, prompt = 1000): Problem {
  return problemFromObject({
    id: 'on-profile',
    goals: { success: 0.99, p99: '10s' },
    traffic: { rate: 5, duration: '30s' },
    workload: { kind: 'request', unique: prompt, output: 50 },
    lb: {},
    app: { slots: 100, timeout: '30s' },
    router: { policy: 'least-loaded' },
    gpu: { replicas: 2, slots: 8, profile, ...gpu },
  });
}
