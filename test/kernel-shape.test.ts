import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { compile } from '../src/engine/compile.js';
import { KIND, TARGET } from '../src/engine/layout.js';
import { runReference } from '../src/engine/reference.js';
import { kernelSource, shapeConstants } from '../src/gpu/kernel-source.js';
import { parseProblem, selectCases } from '../src/problem/parse.js';
import { configFor, problemFile } from './support.js';

function shapeOf(name: string, caseName = 'as-given', sets: readonly string[] = []) {
  return shapeConstants(configFor(name, sets, caseName).config);
}

describe('the kernel shape: which handlers a configuration can reach, as pipeline constants', () => {
  it('names the problem kind and no failure or slowdown for a case without them', () => {
    expect(shapeOf('mmc')).toEqual({ KIND: KIND.JOB, SLOW_TARGET: TARGET.NONE, FAILURE_TARGETS: 0, OFFLOAD: 0, KV_INCREMENTAL: 0, DISAGGREGATED: 0 });
    expect(shapeOf('hot-prefix')).toEqual({ KIND: KIND.REQUEST, SLOW_TARGET: TARGET.NONE, FAILURE_TARGETS: 0, OFFLOAD: 0, KV_INCREMENTAL: 0, DISAGGREGATED: 0 });
    expect(shapeOf('coding-agents', 'peak-hour')).toEqual({ KIND: KIND.TASK, SLOW_TARGET: TARGET.NONE, FAILURE_TARGETS: 0, OFFLOAD: 0, KV_INCREMENTAL: 0, DISAGGREGATED: 0 });
  });

  it('names the slowdown target and a bit for each failure target', () => {
    expect(shapeOf('hot-prefix', 'slow-dependency').SLOW_TARGET).toBe(TARGET.GPU);
    expect(shapeOf('hot-prefix', 'server-dies').FAILURE_TARGETS).toBe(1 << TARGET.GPU);
    const text = readFileSync(problemFile('coding-agents'), 'utf8').replace(/^cases: .*$/m, 'cases: [both]') +
      'scenarios:\n  both: { failures: [{ target: app, replica: 1 }, { target: gpu, replica: 0 }, { target: app, replica: 0 }] }\n';
    const problem = parseProblem(text, 'coding-agents');
    const shape = shapeConstants(compile(problem, selectCases(problem, ['both'])[0]!));
    expect(shape.FAILURE_TARGETS).toBe((1 << TARGET.APP) | (1 << TARGET.GPU));
  });

  it('says whether the replicas have a KV offload tier, and a tier of 0 tokens is none', () => {
    const offload = ['gpu.offload.tokens=800000', 'gpu.offload.bandwidth=25GB/s', 'gpu.offload.bytesPerToken=131072'];
    expect(shapeOf('hot-prefix', 'as-given', offload).OFFLOAD).toBe(1);
    expect(shapeOf('hot-prefix', 'as-given', [...offload.slice(1), 'gpu.offload.tokens=0']).OFFLOAD).toBe(0);
  });

  it('is shared by configurations that differ only in values, so they share a compiled pipeline', () => {
    const base = shapeOf('hot-prefix', 'server-dies');
    expect(shapeOf('hot-prefix', 'server-dies', ['router.policy=cache-aware', 'gpu.replicas=5', 'gpu.slots=16'])).toEqual(base);
  });

  it("runs the reference engine under each configuration's flags, which it holds as V8 constants (docs/architecture.md)", () => {
    const split = configFor('hot-prefix', ['gpu.kv=incremental', 'gpu.offload.tokens=800000', 'gpu.offload.bandwidth=25GB/s', 'gpu.offload.bytesPerToken=131072',
      'gpu.replicas=6', 'gpu.disaggregation.prefill=2', 'gpu.disaggregation.bytesPerToken=131072', 'gpu.disaggregation.bandwidth=10GB/s', 'traffic.duration=6s', 'traffic.warmup=2s']).config;
    const plain = configFor('hot-prefix', ['traffic.duration=6s', 'traffic.warmup=2s']).config;
    expect(shapeConstants(split)).toMatchObject({ OFFLOAD: 1, KV_INCREMENTAL: 1, DISAGGREGATED: 1 });
    const first = new Map<typeof split, number[]>();
    // each in turn, twice: the second run of each follows the other's flags
    for (const config of [split, plain, split, plain]) {
      const records = Array.from(runReference(config, 3, 0, 2));
      const shape = shapeConstants(config);
      expect([globalThis.SERVESIM_OFFLOAD, globalThis.SERVESIM_KV_INCREMENTAL, globalThis.SERVESIM_DISAGGREGATED]).toEqual([shape.OFFLOAD, shape.KV_INCREMENTAL, shape.DISAGGREGATED].map((flag) => flag === 1));
      expect(records).toEqual(first.get(config) ?? records);
      first.set(config, records);
    }
    expect(first.get(split)).not.toEqual(first.get(plain));
  });

  it('sets every override of the kernels but the workgroup size and the state layout, and no other name', () => {
    const overrides = [...kernelSource().matchAll(/^override (\w+)/gm)].map((m) => m[1]);
    expect(overrides.sort()).toEqual([...Object.keys(shapeOf('mmc')), 'WG', 'INTERLEAVED'].sort());
  });
});
