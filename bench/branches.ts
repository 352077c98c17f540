/**
 * `npm run bench:branches`: what a branch that no invocation takes costs on the adapter the
 * engine picks. On Mesa llvmpipe it costs as much as one that every invocation takes: a SIMD
 * group steps through every branch under a lane mask, which is why the WGSL engine compiles
 * one pipeline per configuration shape, its event loop holding only the handlers that shape
 * can reach (docs/architecture.md). Asserts nothing; writes bench/results/branches.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { acquireGpu, adapterWithDriver } from '../src/gpu/adapter.js';
import { createStorageBuffer } from '../src/gpu/buffers.js';

const ITERATIONS = 20_000; // under llvmpipe's cap of 65,535 loop iterations per invocation
const WORKGROUPS = 64;
const WORKGROUP_SIZE = 8;

// 60 dependent loads and multiply-adds: the "handler" a branch guards.
const HANDLER = Array.from({ length: 60 }, (_, k) => `acc = acc * 1664525u + data[(acc + ${k}u) & 1023u];`).join('\n      ');

const VARIANTS: readonly { name: string; body: string }[] = [
  { name: 'no handler in the loop', body: '' },
  { name: 'a handler no invocation runs', body: `if (flag == 7u) {\n      ${HANDLER}\n    }` },
  { name: 'a handler one invocation in 512 runs', body: `if (flag == 1u) {\n      ${HANDLER}\n    }` },
  { name: 'a handler every invocation runs', body: `if (flag != 7u) {\n      ${HANDLER}\n    }` },
];

function shader(body: string): string {
  return `
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(${WORKGROUP_SIZE}) fn main(@builtin(global_invocation_id) id: vec3u) {
  var acc = id.x;
  let flag = data[id.x & 1023u];
  for (var i = 0u; i < ${ITERATIONS}u; i++) {
    ${body}
    acc = acc + 1u;
  }
  data[1024u + id.x] = acc;
}`;
}

async function main(): Promise<void> {
  const ctx = await acquireGpu();
  const { device } = ctx;
  // flags: 1 for invocation 0 alone, 0 for every other
  const init = new Uint32Array(1024 + WORKGROUPS * WORKGROUP_SIZE);
  init[0] = 1;
  const rows: string[] = [];
  for (const { name, body } of VARIANTS) {
    const data = createStorageBuffer(device, init, { label: name });
    const pipeline = await device.createComputePipelineAsync({
      label: name,
      layout: 'auto',
      compute: { module: device.createShaderModule({ code: shader(body) }), entryPoint: 'main' },
    });
    const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: data } }] });
    const dispatch = async (): Promise<void> => {
      const encoder = device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(WORKGROUPS);
      pass.end();
      device.queue.submit([encoder.finish()]);
      await device.queue.onSubmittedWorkDone();
    };
    await dispatch(); // warm
    const t0 = performance.now();
    for (let i = 0; i < 3; i++) await dispatch();
    const ms = (performance.now() - t0) / 3;
    data.destroy();
    rows.push(`| ${name} | ${ms.toFixed(1)} |`);
    process.stderr.write(`bench: ${name}: ${ms.toFixed(1)} ms\n`);
  }
  ctx.destroy();
  const text = [
    `Adapter: ${adapterWithDriver(ctx)}. ${WORKGROUPS} workgroups of ${WORKGROUP_SIZE} invocations, each looping ${ITERATIONS.toLocaleString('en')} times over the body below; mean of 3 dispatches after a warm-up.`,
    '',
    '| loop body | ms per dispatch |',
    '| --- | ---: |',
    ...rows,
  ].join('\n');
  console.log(text);
  const out = new URL('../../bench/results/', import.meta.url);
  mkdirSync(out, { recursive: true });
  writeFileSync(new URL('branches.md', out), `# What an untaken branch costs\n\nCommand: \`npm run bench:branches\`\n\n${text}\n`);
}

await main();
