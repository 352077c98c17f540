/**
 * Buffers for the kernels: storage buffers from typed arrays, uniform buffers, and readback.
 * Sizes are checked against the device limits before anything is allocated, so that an
 * oversized run fails with a message naming the limit rather than a GPU validation error.
 */

import { ServesimError } from '../errors.js';
import type { GpuLimits } from './adapter.js';

// The spec's flag values; the same as webgpu's GPUBufferUsage / GPUMapMode globals, written
// out so this module works before (or without) those globals being installed.
const USAGE = {
  MAP_READ: 0x0001,
  COPY_SRC: 0x0004,
  COPY_DST: 0x0008,
  UNIFORM: 0x0040,
  STORAGE: 0x0080,
} as const;
const MAP_READ_MODE = 0x0001;

/** The limits the buffer helpers check. */
export type BufferLimits = Pick<
  GpuLimits,
  'maxStorageBufferBindingSize' | 'maxBufferSize' | 'maxUniformBufferBindingSize'
>;

/** A typed array whose bytes go to the GPU as they are. */
export type GpuData =
  | Uint32Array
  | Int32Array
  | Float32Array
  | Uint16Array
  | Int16Array
  | Uint8Array
  | Int8Array;

/** Options shared by the buffer constructors. */
export interface BufferOptions {
  /** Names the buffer in GPU error messages. */
  readonly label?: string;
  /** What the buffer holds, for a limit error: `state for 65,536 instances`. */
  readonly what?: string;
  /** Limits to check against; default the device's own. */
  readonly limits?: BufferLimits;
}

/** `1536` → `1.5 KiB`; `3.2 * 2**30` → `3.2 GiB`; `2**27` → `128 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  const text = Number.isInteger(v) ? String(v) : v >= 100 ? String(Math.round(v)) : v.toFixed(1);
  return `${text} ${units[u]}`;
}

/** `65536` → `65,536`. */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

// Buffer sizes and copies go in 4-byte steps, and a zero-sized binding is invalid.
function paddedSize(byteLength: number): number {
  return Math.max(4, Math.ceil(byteLength / 4) * 4);
}

function limitError(what: string, bytes: number, limit: string, value: number): ServesimError {
  return new ServesimError(
    'SERVESIM_GPU_LIMIT',
    `${what} needs ${formatBytes(bytes)}; ${limit} is ${formatBytes(value)} on this adapter`,
  );
}

/**
 * Throws SERVESIM_GPU_LIMIT if a buffer of `bytes` bound as `kind` exceeds the device's limits
 * ("state for 65,536 instances needs 3.2 GiB; maxStorageBufferBindingSize is 128 MiB on this
 * adapter"). The tighter limit exceeded is the one named.
 */
export function checkBufferSize(
  bytes: number,
  limits: BufferLimits,
  what: string,
  kind: 'storage' | 'uniform' | 'staging' = 'storage',
): void {
  if (!Number.isFinite(bytes) || bytes < 0) {
    throw new RangeError(`${what}: buffer size ${bytes} is not a byte count`);
  }
  const checks: [string, number][] = [['maxBufferSize', limits.maxBufferSize]];
  if (kind === 'storage') checks.push(['maxStorageBufferBindingSize', limits.maxStorageBufferBindingSize]);
  if (kind === 'uniform') checks.push(['maxUniformBufferBindingSize', limits.maxUniformBufferBindingSize]);
  checks.sort((a, b) => a[1] - b[1]);
  for (const [name, value] of checks) {
    if (bytes > value) throw limitError(what, bytes, name, value);
  }
}

function label(options: BufferOptions, fallback: string): string {
  return options.label ?? options.what ?? fallback;
}

/**
 * A zero-filled storage buffer (STORAGE | COPY_SRC | COPY_DST) of at least `byteLength`
 * bytes, rounded up to a multiple of 4.
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT before allocating if it would exceed the limits.
 */
export function createStorageBufferOfSize(
  device: GPUDevice,
  byteLength: number,
  options: BufferOptions = {},
): GPUBuffer {
  const size = paddedSize(byteLength);
  checkBufferSize(size, options.limits ?? device.limits, options.what ?? 'storage buffer', 'storage');
  return device.createBuffer({
    label: label(options, 'storage'),
    size,
    usage: USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST,
  });
}

/**
 * A storage buffer (STORAGE | COPY_SRC | COPY_DST) holding a copy of `data`.
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT before allocating if it would exceed the limits.
 */
export function createStorageBuffer(
  device: GPUDevice,
  data: GpuData,
  options: BufferOptions = {},
): GPUBuffer {
  const size = paddedSize(data.byteLength);
  checkBufferSize(size, options.limits ?? device.limits, options.what ?? 'storage buffer', 'storage');
  const buffer = device.createBuffer({
    label: label(options, 'storage'),
    size,
    usage: USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST,
    // Mapped at creation, the data goes in without a queue write or a staging copy.
    mappedAtCreation: true,
  });
  new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  buffer.unmap();
  return buffer;
}

/**
 * A uniform buffer (UNIFORM | COPY_DST) holding `data`, its size rounded up to 16 bytes (the
 * alignment of a WGSL uniform struct). Rewrite it with {@link writeBuffer}.
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT if it exceeds maxUniformBufferBindingSize.
 */
export function createUniformBuffer(
  device: GPUDevice,
  data: GpuData,
  options: BufferOptions = {},
): GPUBuffer {
  const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
  checkBufferSize(size, options.limits ?? device.limits, options.what ?? 'uniform buffer', 'uniform');
  const buffer = device.createBuffer({
    label: label(options, 'uniform'),
    size,
    usage: USAGE.UNIFORM | USAGE.COPY_DST,
    mappedAtCreation: true,
  });
  new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  buffer.unmap();
  return buffer;
}

/** Queues a write of `data` into `buffer` at `byteOffset` (both multiples of 4 bytes). */
export function writeBuffer(device: GPUDevice, buffer: GPUBuffer, data: GpuData, byteOffset = 0): void {
  device.queue.writeBuffer(buffer, byteOffset, data.buffer, data.byteOffset, data.byteLength);
}

/** A range of a buffer to read back; both multiples of 4 bytes. */
export interface ReadRange {
  readonly byteOffset?: number;
  /** Default: the rest of the buffer. */
  readonly byteLength?: number;
}

/**
 * Copies a storage buffer (it needs COPY_SRC) into a MAP_READ staging buffer and returns the
 * bytes, after the work queued before it has finished. The staging buffer is destroyed.
 */
export async function readBufferBytes(
  device: GPUDevice,
  source: GPUBuffer,
  range: ReadRange = {},
): Promise<ArrayBuffer> {
  const byteOffset = range.byteOffset ?? 0;
  const byteLength = range.byteLength ?? source.size - byteOffset;
  if (byteOffset % 4 !== 0 || byteLength % 4 !== 0 || byteOffset + byteLength > source.size) {
    throw new RangeError(
      `readback of ${byteLength} bytes at ${byteOffset} from a ${source.size}-byte buffer: ` +
        'offset and length must be multiples of 4 within the buffer',
    );
  }
  if (byteLength === 0) return new ArrayBuffer(0);
  checkBufferSize(byteLength, device.limits, `readback of ${source.label || 'buffer'}`, 'staging');
  // MAP_READ combines only with COPY_DST, so results reach the CPU through a copy.
  const staging = device.createBuffer({
    label: `${source.label || 'buffer'} readback`,
    size: byteLength,
    usage: USAGE.MAP_READ | USAGE.COPY_DST,
  });
  try {
    const encoder = device.createCommandEncoder({ label: 'readback' });
    encoder.copyBufferToBuffer(source, byteOffset, staging, 0, byteLength);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(MAP_READ_MODE);
    // slice: the mapped range is detached by unmap().
    const bytes = staging.getMappedRange().slice(0);
    staging.unmap();
    return bytes;
  } finally {
    staging.destroy();
  }
}

/** {@link readBufferBytes} as 32-bit unsigned words. */
export async function readStorageBuffer(
  device: GPUDevice,
  source: GPUBuffer,
  range: ReadRange = {},
): Promise<Uint32Array> {
  return new Uint32Array(await readBufferBytes(device, source, range));
}
