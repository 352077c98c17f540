/**
 * When `--engine auto` runs the WGSL kernel: from the batch size on which the kernel beat the
 * CPU pool in `npm run bench` on the same adapter, never a guessed threshold. The benchmark
 * writes its measurements to bench/results/crossover.json; this module reads them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ServesimError } from '../errors.js';
import { packageRoot } from '../package-root.js';

/** Instances per second of each engine on the same instances; null where not run. */
const measurementSchema = z.object({
  instances: z.number().int().positive(),
  kernel: z.number().positive().nullable(),
  pool: z.number().positive().nullable(),
});

const adapterSchema = z.object({
  measuredAt: z.string(),
  servesimVersion: z.string(),
  machine: z.string(),
  /** The driver as Dawn describes it: one adapter name (llvmpipe) runs the kernel at another speed under another Mesa. */
  driver: z.string(),
  /** The pool's worker threads in that run. */
  poolThreads: z.number().int().positive(),
  /** Per problem, by instance count. */
  problems: z.record(z.string(), z.array(measurementSchema)),
});

const tableSchema = z.object({
  about: z.string(),
  adapters: z.record(z.string(), adapterSchema),
});

export type Measurement = z.infer<typeof measurementSchema>;
export type AdapterMeasurements = z.infer<typeof adapterSchema>;
export type CrossoverTable = z.infer<typeof tableSchema>;

/** Where the benchmark writes the table, relative to the package root. */
export const CROSSOVER_PATH = 'bench/results/crossover.json';

export const CROSSOVER_ABOUT =
  'Written by `npm run bench`: per WebGPU adapter, instances/s of the WGSL kernel and of the CPU pool on the same ' +
  'instances. `--engine auto` runs the kernel on a batch at least as large as the smallest size from which the kernel ' +
  'beat the pool (scaled to this machine\'s threads) on every problem, at every size measured with both.';

/** The benchmark's table; an empty one when the file does not exist (no benchmark run yet). */
export function loadCrossovers(file: string = join(packageRoot()?.dir ?? '.', CROSSOVER_PATH)): CrossoverTable {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { about: CROSSOVER_ABOUT, adapters: {} };
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `cannot read ${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${file} is not JSON: ${(err as Error).message}`);
  }
  const parsed = tableSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ServesimError('SERVESIM_FILE_UNREADABLE', `${file}: ${issue.path.join('.') || '(top)'}: ${issue.message} (rerun \`npm run bench\` to rewrite it)`);
  }
  return parsed.data;
}

/**
 * The smallest batch from which the kernel is at least as fast as a pool of `threads`
 * threads on every problem measured, at that size and every larger one measured with both
 * engines; null when on some problem it never is. The pool's figures scale linearly from the
 * threads they were measured with (the benchmark's pool/reference ratios bear that out).
 */
export function crossoverOf(measured: AdapterMeasurements, threads: number): number | null {
  const scale = threads / measured.poolThreads;
  let crossover = 0;
  for (const rows of Object.values(measured.problems)) {
    const both = rows.filter((r) => r.kernel !== null && r.pool !== null).sort((a, b) => a.instances - b.instances);
    let from: number | null = null;
    // walk down from the largest size while the kernel keeps winning
    for (let i = both.length - 1; i >= 0 && both[i]!.kernel! >= both[i]!.pool! * scale; i--) from = both[i]!.instances;
    if (from === null) return null;
    crossover = Math.max(crossover, from);
  }
  return Object.keys(measured.problems).length === 0 ? null : crossover;
}

export type EngineDecision = { readonly engine: 'gpu' | 'pool'; readonly why: string };

/**
 * What `auto` runs a batch of `batch` instances on. `probe` names the adapter the GPU engine
 * would use (null: none); it is only called when some adapter's crossover is within reach, so
 * a batch below them all runs on the pool without WebGPU being loaded, and the reason names
 * no adapter (the measured ones need not be this machine's).
 */
export async function decideAuto(
  batch: number,
  threads: number,
  table: CrossoverTable,
  probe: () => Promise<string | null>,
): Promise<EngineDecision> {
  const measured = Object.entries(table.adapters).map(([name, m]) => [name, crossoverOf(m, threads)] as const);
  const reachable = measured.filter(([, c]) => c !== null && c <= batch);
  if (reachable.length === 0) {
    const crossovers = measured.flatMap(([, c]) => (c === null ? [] : [c]));
    const why =
      measured.length === 0
        ? 'no adapter measured yet'
        : crossovers.length === 0
          ? 'on every adapter measured the kernel is slower than the pool at the largest size measured'
          : `${batch} instances is below the smallest measured crossover, ${Math.min(...crossovers)} instances against ${threads} pool threads`;
    return { engine: 'pool', why: `auto: the CPU pool, without looking for a GPU: ${why} (\`npm run bench\` measures)` };
  }
  const adapter = await probe();
  if (adapter === null) return { engine: 'pool', why: 'auto: the CPU pool, as no WebGPU adapter was found' };
  const entry = reachable.find(([name]) => name === adapter);
  if (entry === undefined) {
    return { engine: 'pool', why: `auto: the CPU pool, as the kernel on ${adapter} has no measured crossover at or below ${batch} instances (\`npm run bench\` measures)` };
  }
  return { engine: 'gpu', why: `auto: the GPU, as the kernel on ${adapter} beat the pool from ${entry[1]} instances` };
}
