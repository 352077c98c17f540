/**
 * `npm run bench:compile`: how long the adapter the engine picks takes to compile the WGSL
 * engine from cold (Mesa's shader cache off) for each configuration shape of the problem
 * files' cases (src/gpu/kernel-source.ts shapeConstants), with the shape's first instance.
 * This is what a fresh machine pays once per shape. Asserts nothing; writes
 * bench/results/compile.md.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { acquireGpu, adapterWithDriver } from '../src/gpu/adapter.js';
import { runGpu } from '../src/gpu/engine.js';
import { shapeConstants } from '../src/gpu/kernel-source.js';
import { compile, type EngineConfig } from '../src/engine/compile.js';
import { KIND, TARGET } from '../src/engine/layout.js';
import { loadProblem, selectCases } from '../src/problem/parse.js';

// Read by Mesa when the adapter is created: every compile below is a cold one.
process.env['MESA_SHADER_CACHE_DISABLE'] = 'true';

const root = new URL('../../', import.meta.url);
const KIND_NAME: Record<number, string> = { [KIND.REQUEST]: 'requests', [KIND.TASK]: 'agent tasks', [KIND.JOB]: 'M/M/c jobs' };
const TARGET_NAME: Record<number, string> = { [TARGET.NONE]: 'none', [TARGET.GPU]: 'gpu', [TARGET.SERVER]: 'server', [TARGET.TOOLS]: 'tools', [TARGET.APP]: 'app' };

function describeShape(shape: ReturnType<typeof shapeConstants>): string {
  const failures = Object.entries(TARGET_NAME)
    .filter(([code]) => (shape.FAILURE_TARGETS & (1 << Number(code))) !== 0)
    .map(([, name]) => name);
  return `${KIND_NAME[shape.KIND]}; slowdown: ${TARGET_NAME[shape.SLOW_TARGET]}; failures: ${failures.length === 0 ? 'none' : failures.join(', ')}${shape.OFFLOAD !== 0 ? '; KV offload tier' : ''}`;
}

async function main(): Promise<void> {
  const shapes = new Map<string, { shape: string; config: EngineConfig; cases: string[] }>();
  const dir = fileURLToPath(new URL('problems/', root));
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
    const problem = loadProblem(`${dir}${file}`);
    for (const scenario of selectCases(problem, 'all')) {
      const config = compile(problem, scenario);
      const shape = shapeConstants(config);
      const key = JSON.stringify(shape);
      if (!shapes.has(key)) shapes.set(key, { shape: describeShape(shape), config, cases: [] });
      shapes.get(key)!.cases.push(`${file.replace('.yaml', '')} ${scenario.name}`);
    }
  }
  const ctx = await acquireGpu();
  const rows: string[] = [];
  for (const { shape, config, cases } of shapes.values()) {
    process.stderr.write(`bench: compiling ${shape} ...\n`);
    const t0 = performance.now();
    await runGpu(ctx, config, 1, 0, 1);
    const seconds = (performance.now() - t0) / 1000;
    process.stderr.write(`bench: ${shape}: ${seconds.toFixed(1)} s\n`);
    rows.push(`| ${shape} | ${seconds.toFixed(1)} | ${cases.join(', ')} |`);
  }
  ctx.destroy();
  const report = [
    '# Compiling the WGSL engine from cold, per configuration shape',
    '',
    'Command: `npm run bench:compile`',
    '',
    `Adapter: ${adapterWithDriver(ctx)}, Mesa's shader cache off. Each row compiles the three entry points for one shape and runs one instance; the cases of the problem files that share the shape share the pipelines.`,
    '',
    '| shape | seconds | cases of that shape |',
    '| --- | ---: | --- |',
    ...rows,
  ].join('\n');
  console.log(report);
  const out = fileURLToPath(new URL('bench/results/', root));
  mkdirSync(out, { recursive: true });
  writeFileSync(`${out}compile.md`, `${report}\n`);
}

await main();
