/**
 * `npm run bench:lanes`: how the kernel uses the lanes of a SIMD group, on the adapter the
 * engine picks: its instances/s at several workgroup sizes and in both state layouts, against
 * the pool on the same instances. On llvmpipe a workgroup runs on one CPU thread in vectors of
 * 4 lanes (one instance a lane): were the lanes of a vector to run at once, workgroups of 4
 * would do about 4 times the instances/s of workgroups of 1. On a GPU the interleaved layout
 * lets a SIMD group's reads of one field share a memory transaction. Asserts nothing; writes
 * bench/results/lanes.md (or --out FILE).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { acquireGpu, adapterWithDriver } from '../src/gpu/adapter.js';
import { runGpu, type StateLayout } from '../src/gpu/engine.js';
import { SimulationPool } from '../src/pool/pool.js';
import { configOf, hashOf } from './measure.js';

/** Workgroup sizes in the records layout; then each layout at llvmpipe's size (4) and a GPU's (64). */
const SIZES = [1, 2, 4, 16, 64] as const;
const LAYOUT_SIZES = [4, 64] as const;
const PROBLEMS = ['mmc', 'hot-prefix', 'coding-agents'] as const;
const INSTANCES = 1024;

interface Variant {
  readonly workgroupSize: number;
  readonly stateLayout: StateLayout;
}

const VARIANTS: readonly Variant[] = [
  ...SIZES.map((workgroupSize) => ({ workgroupSize, stateLayout: 'records' as const })),
  ...LAYOUT_SIZES.map((workgroupSize) => ({ workgroupSize, stateLayout: 'interleaved' as const })),
];

async function timed(run: () => Promise<Uint32Array>): Promise<{ instancesPerSecond: number; hash: number }> {
  const t0 = performance.now();
  const records = await run();
  return { instancesPerSecond: INSTANCES / ((performance.now() - t0) / 1000), hash: hashOf(records) };
}

async function main(): Promise<void> {
  const { out } = new Command('bench:lanes')
    .addOption(new Option('--out <file>', 'where to write the report').default(fileURLToPath(new URL('../../bench/results/lanes.md', import.meta.url))))
    .parse()
    .opts<{ out: string }>();
  const ctx = await acquireGpu();
  const pool = new SimulationPool();
  const rows: string[] = [];
  for (const problem of PROBLEMS) {
    const config = configOf(problem, []);
    await pool.run(config, 1, 0, pool.threads * 8); // warm the workers' JIT
    const pooled = await timed(() => pool.run(config, 1, 0, INSTANCES));
    rows.push(`| ${problem} | pool (${pool.threads} threads) | | | | ${pooled.instancesPerSecond.toFixed(1)} | | |`);
    let single: number | undefined;
    for (const options of VARIANTS) {
      process.stderr.write(`bench: ${problem} · workgroups of ${options.workgroupSize}, ${options.stateLayout} ...\n`);
      const t0 = performance.now();
      await runGpu(ctx, config, 1, 0, 1, options); // compiles this variant's pipelines
      const compileSeconds = (performance.now() - t0) / 1000;
      const k = await timed(() => runGpu(ctx, config, 1, 0, INSTANCES, options));
      single ??= k.instancesPerSecond;
      rows.push(
        `| ${problem} | kernel | ${options.workgroupSize} | ${options.stateLayout} | ${compileSeconds.toFixed(1)} | ${k.instancesPerSecond.toFixed(1)} | ` +
          `${(k.instancesPerSecond / single).toFixed(2)} | ${k.hash === pooled.hash ? 'yes' : 'NO'} |`,
      );
    }
  }
  await pool.close();
  ctx.destroy();
  const report = [
    '# How the kernel uses its lanes: workgroup sizes and state layouts',
    '',
    `Command: \`npm run bench:lanes${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\``,
    '',
    `Adapter: ${adapterWithDriver(ctx)}. Per problem (as given), instances 0..${INSTANCES - 1} of base seed 1: the pool once, then the kernel at each workgroup size and state layout, after a compile of that variant's pipelines with its first instance (a driver may serve it from its on-disk shader cache).`,
    '',
    '| problem | engine | workgroup size | state layout | compile and first instance, s | instances/s | against the first kernel row | records equal the pool\'s |',
    '| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  console.log(report);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${report}\n`);
}

await main();
