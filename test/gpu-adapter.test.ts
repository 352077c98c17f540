import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { globals } from 'webgpu';
import { ServesimError } from '../src/errors.js';
import {
  NO_ADAPTER_MESSAGE,
  acquireGpu,
  captureGpuErrors,
  parseAdapterListing,
  probeGpu,
  type GpuContext,
} from '../src/gpu/adapter.js';
import {
  checkBufferSize,
  createStorageBuffer,
  createStorageBufferOfSize,
  createUniformBuffer,
  formatBytes,
  readStorageBuffer,
} from '../src/gpu/buffers.js';
import { WGSL_LINEAR_INDEX, dispatchShape, planDispatch, type DispatchLimits } from '../src/gpu/dispatch.js';

Object.assign(globalThis, globals);

const adapterName = await probeGpu();
// CI must not pass by skipping: there the GPU tests run, and fail without an adapter.
const runGpu = adapterName !== null || Boolean(process.env['CI']);
const describeGpu = runGpu ? describe : describe.skip;

/** The JS mirror of the kernel's PCG hash, in u32 arithmetic. */
function pcgHash(v: number): number {
  const state = (Math.imul(v, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

const PCG_KERNEL = /* wgsl */ `
override WG: u32 = 64u;

struct Params { count: u32, seed: u32 }

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;

fn pcg_hash(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}
${WGSL_LINEAR_INDEX}
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = linear_index(gid, nwg, WG);
  if (i >= params.count) { return; }
  out[i] = pcg_hash(i ^ params.seed);
}
`;

const SENTINEL = 0xdeadbeef;

describe('dispatchShape', () => {
  const limits = { maxComputeWorkgroupsPerDimension: 65_535 };

  it('keeps counts that fit in x', () => {
    expect(dispatchShape(0, limits)).toEqual([0, 1]);
    expect(dispatchShape(1, limits)).toEqual([1, 1]);
    expect(dispatchShape(65_535, limits)).toEqual([65_535, 1]);
  });

  it('splits over y just past the limit, with fewer than y spare', () => {
    expect(dispatchShape(65_536, limits)).toEqual([32_768, 2]);
    for (const n of [65_536, 100_003, 1_000_000, 65_535 * 65_535 - 1, 65_535 * 65_535]) {
      const [x, y] = dispatchShape(n, limits);
      expect(x).toBeLessThanOrEqual(65_535);
      expect(y).toBeLessThanOrEqual(65_535);
      expect(x * y).toBeGreaterThanOrEqual(n);
      expect(x * y - n).toBeLessThan(y);
    }
    expect(dispatchShape(65_535 * 65_535, limits)).toEqual([65_535, 65_535]);
  });

  it('refuses what cannot fit, naming the limit', () => {
    expect(() => dispatchShape(65_535 * 65_535 + 1, limits)).toThrow(/maxComputeWorkgroupsPerDimension is 65,535/);
    try {
      dispatchShape(10, { maxComputeWorkgroupsPerDimension: 3 });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ServesimError);
      expect((err as ServesimError).code).toBe('SERVESIM_GPU_LIMIT');
    }
    expect(dispatchShape(9, { maxComputeWorkgroupsPerDimension: 3 })).toEqual([3, 3]);
    expect(() => dispatchShape(-1, limits)).toThrow(RangeError);
    expect(() => dispatchShape(1.5, limits)).toThrow(RangeError);
  });

  it('plans invocations into workgroups and checks the workgroup size', () => {
    const l: DispatchLimits = {
      maxComputeWorkgroupsPerDimension: 100,
      maxComputeInvocationsPerWorkgroup: 256,
      maxComputeWorkgroupSizeX: 256,
    };
    expect(planDispatch(100_003, 64, l)).toEqual({ x: 98, y: 16, workgroups: 1563, workgroupSize: 64, count: 100_003 });
    expect(() => planDispatch(10, 512, l)).toThrow(/maxComputeInvocationsPerWorkgroup, 256 on this adapter/);
    const big = {
      maxComputeWorkgroupsPerDimension: 65_535,
      maxComputeInvocationsPerWorkgroup: 1024,
      maxComputeWorkgroupSizeX: 1024,
    };
    expect(() => planDispatch(2 ** 32 + 1, 1024, big)).toThrow(/32-bit invocation index/);
  });
});

describe('buffer limits', () => {
  const limits = {
    maxStorageBufferBindingSize: 128 * 2 ** 20,
    maxBufferSize: 2 * 2 ** 30,
    maxUniformBufferBindingSize: 16_384,
  };

  it('formats sizes', () => {
    expect(formatBytes(128 * 2 ** 20)).toBe('128 MiB');
    expect(formatBytes(3.2 * 2 ** 30)).toBe('3.2 GiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(12)).toBe('12 bytes');
  });

  it('names the tighter limit and the numbers', () => {
    expect(() => checkBufferSize(3.2 * 2 ** 30, limits, 'state for 65,536 instances')).toThrow(
      'state for 65,536 instances needs 3.2 GiB; maxStorageBufferBindingSize is 128 MiB on this adapter',
    );
    expect(() => checkBufferSize(3 * 2 ** 30, limits, 'readback', 'staging')).toThrow(
      'readback needs 3 GiB; maxBufferSize is 2 GiB on this adapter',
    );
    expect(() => checkBufferSize(32_768, limits, 'params', 'uniform')).toThrow(/maxUniformBufferBindingSize is 16 KiB/);
    expect(() => checkBufferSize(128 * 2 ** 20, limits, 'ok')).not.toThrow();
  });
});

describe('adapter errors without a device', () => {
  it('parses Dawn adapter listings', () => {
    const msg =
      "no adapter with backend 'opengl' and name 'x' found\nAvailable adapters:\n" +
      " * backend: 'opengl', name: 'llvmpipe (LLVM 15.0.6, 256 bits)'\n * backend: 'vulkan', name: 'NVIDIA H200'";
    expect(parseAdapterListing(msg)).toEqual([
      { backend: 'opengl', name: 'llvmpipe (LLVM 15.0.6, 256 bits)' },
      { backend: 'vulkan', name: 'NVIDIA H200' },
    ]);
  });

  it('says what to install when there is no adapter', () => {
    expect(NO_ADAPTER_MESSAGE).toMatch(/libegl1 libegl-mesa0 libgl1-mesa-dri/);
    expect(NO_ADAPTER_MESSAGE).toMatch(/--engine cpu/);
  });
});

describeGpu('WebGPU device', () => {
  let ctx: GpuContext;
  let acquiring: Promise<GpuContext> | undefined;

  // Per test rather than in beforeAll: with CI set and no adapter, each GPU test then fails
  // (a failed beforeAll would report them as skipped).
  beforeEach(async () => {
    acquiring ??= acquireGpu({});
    ctx = await acquiring;
  });

  afterAll(async () => {
    if (ctx === undefined) return;
    ctx.destroy();
    ctx.destroy();
    const info = await ctx.lost;
    expect(info.reason).toBe('destroyed');
    expect(() => ctx.throwIfFailed('after destroy')).not.toThrow();
  });

  it('finds an adapter and names it with its backend (llvmpipe: and its vector width)', () => {
    expect(ctx.adapterName).toBe(adapterName);
    expect(ctx.adapterName).toMatch(/ via (vulkan|opengl|opengles|default)$/);
    expect(ctx.adapterName).not.toMatch(/^unnamed/);
    // the readable name is the one Dawn's normalized device id was made from
    const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
    if (ctx.info.device !== '') expect(slug(ctx.adapterName.replace(/ via \w+$/, ''))).toBe(slug(ctx.info.device));
    if (ctx.adapterName.startsWith('llvmpipe')) {
      // no GPU: Mesa llvmpipe, through OpenGL first, at the vector width adapter.ts asks for
      expect(ctx.adapterName).toMatch(/^llvmpipe \(LLVM [\d.]+, \d+ bits\) via opengl$/);
      expect(ctx.adapterName).toContain(`, ${process.env['LP_NATIVE_VECTOR_WIDTH']} bits)`);
    }
  });

  it('asks for the adapter limits, not the compatibility defaults', () => {
    expect(ctx.limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
    expect(ctx.limits.maxStorageBuffersPerShaderStage).toBeGreaterThanOrEqual(8);
    expect(ctx.limits.maxComputeWorkgroupsPerDimension).toBeGreaterThanOrEqual(65_535);
    expect(ctx.limits.maxStorageBufferBindingSize).toBe(ctx.device.limits.maxStorageBufferBindingSize);
  });

  async function runPcg(count: number, seed: number, limits: DispatchLimits): Promise<Uint32Array> {
    const { device } = ctx;
    const wg = 64;
    const plan = planDispatch(count, wg, limits);
    const padding = 37;
    const out = createStorageBuffer(device, new Uint32Array(count + padding).fill(SENTINEL), { label: 'pcg out' });
    const params = createUniformBuffer(device, new Uint32Array([count, seed]), { label: 'pcg params' });
    try {
      const pipeline = await captureGpuErrors(device, 'pcg pipeline', () =>
        device.createComputePipelineAsync({
          layout: 'auto',
          compute: { module: device.createShaderModule({ code: PCG_KERNEL }), constants: { WG: wg } },
        }),
      );
      const bindGroup = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: out } },
          { binding: 1, resource: { buffer: params } },
        ],
      });
      await captureGpuErrors(device, 'pcg dispatch', () => {
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, bindGroup);
        pass.dispatchWorkgroups(plan.x, plan.y);
        pass.end();
        device.queue.submit([encoder.finish()]);
      });
      const words = await readStorageBuffer(device, out);
      ctx.throwIfFailed('pcg kernel');
      for (let i = count; i < count + padding; i++) expect(words[i]).toBe(SENTINEL);
      return words.subarray(0, count);
    } finally {
      out.destroy();
      params.destroy();
    }
  }

  function expectMirror(words: Uint32Array, seed: number): void {
    let mismatches = 0;
    let first = -1;
    for (let i = 0; i < words.length; i++) {
      if (words[i] !== pcgHash((i ^ seed) >>> 0)) {
        mismatches++;
        if (first < 0) first = i;
      }
    }
    expect({ mismatches, first }).toEqual({ mismatches: 0, first: -1 });
  }

  it('runs a PCG hash over 100,003 invocations bit-identical to the JS mirror', async () => {
    const count = 100_003;
    const plan = planDispatch(count, 64, ctx.limits);
    expect([plan.x, plan.y]).toEqual([1563, 1]);
    const words = await runPcg(count, 0x9e3779b9, ctx.limits);
    expect(words.length).toBe(count);
    expectMirror(words, 0x9e3779b9);
  });

  it('gives the same words with the workgroups split over x and y', async () => {
    const count = 100_003;
    const tight = { ...ctx.limits, maxComputeWorkgroupsPerDimension: 100 };
    const plan = planDispatch(count, 64, tight);
    expect(plan.y).toBeGreaterThan(1);
    expect(plan.x * plan.y).toBeGreaterThan(plan.workgroups);
    const words = await runPcg(count, 12345, tight);
    expectMirror(words, 12345);
  });

  it('refuses an oversized storage buffer before allocating, naming the limit', () => {
    const limit = ctx.limits.maxStorageBufferBindingSize;
    expect(() =>
      createStorageBufferOfSize(ctx.device, limit + 4, { what: 'state for 65,536 instances' }),
    ).toThrow(new RegExp(`state for 65,536 instances needs .*; maxStorageBufferBindingSize is ${formatBytes(limit)} on this adapter`));
    expect(ctx.errors).toHaveLength(0);
  });

  it('reports uncaptured errors to onError listeners and throwIfFailed', async () => {
    const seen = new Promise<GPUError>((resolve) => {
      const off = ctx.onError((e) => {
        off();
        resolve(e);
      });
    });
    // MAP_READ combines only with COPY_DST: an invalid buffer.
    ctx.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE });
    const error = await seen;
    expect(error).toBeInstanceOf(GPUValidationError);
    expect(ctx.errors).toContain(error);
    expect(() => ctx.throwIfFailed('bad buffer')).toThrow(/^bad buffer: GPUValidationError on /);
    ctx.clearErrors();
    expect(() => ctx.throwIfFailed('cleared')).not.toThrow();
  });

  it('turns a scoped validation error into SERVESIM_GPU_ERROR', async () => {
    await expect(
      captureGpuErrors(ctx.device, 'bad shader', () => ctx.device.createShaderModule({ code: 'fn main( {' })),
    ).rejects.toMatchObject({ code: 'SERVESIM_GPU_ERROR', message: expect.stringMatching(/^bad shader: /) });
  });

  it('lists the adapters that exist when the named one does not', async () => {
    const err = await acquireGpu({ adapter: 'no-such-adapter-xyz' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ServesimError);
    expect((err as ServesimError).code).toBe('SERVESIM_NO_ADAPTER');
    const name = ctx.adapterName.replace(/ via \w+$/, '');
    expect((err as Error).message).toContain(`no WebGPU adapter matches 'no-such-adapter-xyz'`);
    expect((err as Error).message).toContain(`'${name}' via ${ctx.backend}`);
    expect(await probeGpu({ adapter: 'no-such-adapter-xyz' })).toBeNull();
  });

  it('finds a named adapter by a case-insensitive substring, also through SERVESIM_ADAPTER', async () => {
    const name = ctx.adapterName.replace(/ via \w+$/, '');
    const fragment = name.slice(0, Math.min(6, name.length)).toUpperCase();
    const named = await acquireGpu({ adapter: fragment });
    try {
      expect(named.adapterName.replace(/ via \w+$/, '')).toBe(name);
    } finally {
      named.destroy();
    }
    const saved = process.env['SERVESIM_ADAPTER'];
    process.env['SERVESIM_ADAPTER'] = 'no-such-adapter-xyz';
    try {
      await expect(acquireGpu()).rejects.toThrow(/from --adapter or SERVESIM_ADAPTER/);
    } finally {
      if (saved === undefined) delete process.env['SERVESIM_ADAPTER'];
      else process.env['SERVESIM_ADAPTER'] = saved;
    }
  });
});
