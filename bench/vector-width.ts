/**
 * `npm run bench:vector-width`: the kernel on Mesa's llvmpipe with CPU vectors of 4 lanes (128
 * bits, what src/gpu/adapter.ts asks for) and of 8 (256 bits, Mesa's default on AVX2), on the
 * same instances. Mesa reads LP_NATIVE_VECTOR_WIDTH once, when it loads, so each width runs in
 * a child process of its own, with the shader cache off (the cache does not key on the width).
 * Asserts nothing; writes bench/results/vector-width.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { acquireGpu, adapterWithDriver } from '../src/gpu/adapter.js';
import { runGpu } from '../src/gpu/engine.js';
import { configOf, hashOf } from './measure.js';

const WIDTHS = [128, 256] as const;
const PROBLEMS = ['mmc', 'hot-prefix', 'coding-agents'] as const;
const INSTANCES = 512;
const CHILD = '--child';

interface Figures {
  readonly problem: string;
  readonly compileSeconds: number;
  readonly instancesPerSecond: number;
  readonly recordsHash: number;
}

interface ChildReport {
  readonly adapter: string;
  readonly figures: readonly Figures[];
}

async function child(): Promise<void> {
  const ctx = await acquireGpu();
  const figures: Figures[] = [];
  for (const problem of PROBLEMS) {
    const config = configOf(problem, []);
    let t0 = performance.now();
    await runGpu(ctx, config, 1, 0, 1);
    const compileSeconds = (performance.now() - t0) / 1000;
    t0 = performance.now();
    const records = await runGpu(ctx, config, 1, 0, INSTANCES);
    const seconds = (performance.now() - t0) / 1000;
    figures.push({ problem, compileSeconds, instancesPerSecond: INSTANCES / seconds, recordsHash: hashOf(records) });
  }
  ctx.destroy();
  process.stdout.write(`${JSON.stringify({ adapter: adapterWithDriver(ctx), figures } satisfies ChildReport)}\n`);
}

function runWidth(width: number): ChildReport {
  process.stderr.write(`bench: kernel at ${width} bits ...\n`);
  const env = { ...process.env, LP_NATIVE_VECTOR_WIDTH: String(width), MESA_SHADER_CACHE_DISABLE: 'true' };
  const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), CHILD], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (out.status !== 0) throw new Error(`the run at ${width} bits exited with ${out.status ?? out.signal}`);
  return JSON.parse(out.stdout.trim().split('\n').at(-1)!) as ChildReport;
}

function main(): void {
  const reports = new Map(WIDTHS.map((w) => [w, runWidth(w)] as const));
  const base = reports.get(256)!;
  const rows: string[] = [];
  for (const problem of PROBLEMS) {
    const wide = base.figures.find((f) => f.problem === problem)!;
    for (const [width, report] of reports) {
      const f = report.figures.find((g) => g.problem === problem)!;
      rows.push(
        `| ${problem} | ${width} | ${f.compileSeconds.toFixed(1)} | ${f.instancesPerSecond.toFixed(1)} | ` +
          `${(f.instancesPerSecond / wide.instancesPerSecond).toFixed(2)} | ${f.recordsHash === wide.recordsHash ? 'yes' : 'NO'} |`,
      );
    }
  }
  const report = [
    '# The kernel on llvmpipe at two CPU vector widths',
    '',
    'Command: `npm run bench:vector-width`',
    '',
    `Adapters: ${[...reports.values()].map((r) => r.adapter).join('; ')}. Per width a process of its own with \`LP_NATIVE_VECTOR_WIDTH\` set and Mesa's shader cache off; per problem (as given) a compile with its first instance, then instances 0..${INSTANCES - 1} of base seed 1.`,
    '',
    '| problem | vector bits | compile and first instance, s | instances/s | instances/s against 256 bits | records equal the 256-bit run\'s |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  console.log(report);
  const out = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(out, { recursive: true });
  writeFileSync(`${out}vector-width.md`, `${report}\n`);
}

if (process.argv.includes(CHILD)) await child();
else main();
