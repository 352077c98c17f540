/**
 * Finding a WebGPU adapter and opening a device on it, through Dawn's Node bindings (`webgpu`).
 *
 * Order: the adapter the user names (`--adapter`, or `SERVESIM_ADAPTER`); else Dawn's default
 * backend (Vulkan on Linux) with a high-performance adapter; else OpenGL, then OpenGL ES, at
 * the compatibility feature level (Mesa llvmpipe on a machine without a GPU).
 */

import { ServesimError } from '../errors.js';
import { installMessage, isMissingPackage } from '../optional-package.js';

type WebgpuModule = typeof import('webgpu');

// Mesa's EGL reads this once, when Dawn first opens a GL display: set later it does nothing.
// Surfaceless needs no X or Wayland display, which a server or CI box does not have.
process.env['EGL_PLATFORM'] ??= 'surfaceless';
// Mesa's llvmpipe reads this when it loads: CPU vectors of 4 lanes rather than 8 (AVX2). The
// kernel, one lane per instance and each at its own next event, gains nothing from wide
// vectors: at 4 lanes it runs faster and compiles sooner (bench/results/vector-width.md). Set it
// yourself to choose; Mesa's shader cache does not key on it, so a cache filled at another
// width keeps serving that width's code (same records, its speed).
process.env['LP_NATIVE_VECTOR_WIDTH'] ??= '128';

/** The Dawn backend a context runs on; `default` is the platform's own (Metal, D3D12). */
export type GpuBackend = 'vulkan' | 'opengl' | 'opengles' | 'default';

/** The device limits, as a plain object (spreadable, so a test can tighten one). */
export type GpuLimits = Readonly<Omit<GPUSupportedLimits, '__brand'>>;

/** The adapter's identifying strings, as Dawn reports them. */
export interface GpuAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
}

/** An open device and what callers need to know about it. */
export interface GpuContext {
  readonly device: GPUDevice;
  /** Human readable, with the backend: `llvmpipe (LLVM 15.0.6, 256 bits) via opengl`. */
  readonly adapterName: string;
  readonly backend: GpuBackend;
  /** The device's limits (the adapter's own, requested through `requiredLimits`). */
  readonly limits: GpuLimits;
  readonly info: GpuAdapterInfo;
  /** Resolves when the device is lost; reason `destroyed` after {@link GpuContext.destroy}. */
  readonly lost: Promise<GPUDeviceLostInfo>;
  /** The loss, once `lost` has resolved; null while the device lives. */
  readonly lostInfo: GPUDeviceLostInfo | null;
  /** Uncaptured errors so far (the first 16), oldest first. */
  readonly errors: readonly GPUError[];
  /** Forgets the uncaptured errors so far (after a caller has reported them). */
  clearErrors(): void;
  /**
   * Calls `listener` on every uncaptured device error; returns the unsubscribe function.
   * With no listener, an uncaptured error is written to stderr.
   */
  onError(listener: (error: GPUError) => void): () => void;
  /**
   * Throws SERVESIM_GPU_ERROR if the device was lost (other than by destroy()) or reported an
   * uncaptured error; `what` says what was running ("kernel step 40").
   */
  throwIfFailed(what: string): void;
  /** Destroys the device and lets Dawn's instance go; safe to call twice. */
  destroy(): void;
}

/** Options for {@link acquireGpu}. */
export interface AcquireOptions {
  /** A substring of an adapter name (case-insensitive); default `SERVESIM_ADAPTER`. */
  readonly adapter?: string | undefined;
}

/** The message of SERVESIM_NO_ADAPTER when nothing at all was found. */
export const NO_ADAPTER_MESSAGE =
  'no WebGPU adapter: on a machine without a GPU install Debian packages libegl1 libegl-mesa0 ' +
  'libgl1-mesa-dri (Mesa llvmpipe; Mesa 24 or newer runs the kernel several times faster, on ' +
  'Debian 12 from bookworm-backports); on an NVIDIA GPU install libvulkan1 and the driver; ' +
  'or pass --engine cpu';

// Compatibility-level defaults are far below what adapters allow (128 invocations a
// workgroup, 8 storage buffers), so ask for the adapter's own values.
const REQUESTED_LIMITS = [
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxComputeWorkgroupStorageSize',
  'maxStorageBuffersPerShaderStage',
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxUniformBuffersPerShaderStage',
  'maxUniformBufferBindingSize',
  'maxBindingsPerBindGroup',
] as const satisfies readonly (keyof GpuLimits)[];

const MAX_KEPT_ERRORS = 16;

// No adapter is called this, so Dawn rejects and lists the adapters it has for the backend.
const LISTING_NAME = 'servesim-list-adapters-sentinel';

interface Attempt {
  readonly backend: GpuBackend;
  readonly flags: readonly string[];
  readonly options: GPURequestAdapterOptions;
}

interface Found {
  readonly gpu: GPU;
  readonly adapter: GPUAdapter;
  readonly backend: GpuBackend;
  readonly adapterName: string;
}

/** One adapter Dawn knows of, from its "Available adapters" listing. */
export interface ListedAdapter {
  readonly backend: string;
  readonly name: string;
}

/** What a search saw, for the error when it finds nothing. */
interface SearchLog {
  readonly listed: ListedAdapter[];
  readonly failures: string[];
}

const GL_ATTEMPTS: readonly Attempt[] = [
  { backend: 'opengl', flags: ['backend=opengl'], options: { featureLevel: 'compatibility' } },
  { backend: 'opengles', flags: ['backend=opengles'], options: { featureLevel: 'compatibility' } },
];

// Dawn's node binding picks Vulkan on Linux when no backend is given (DAWNNODE_BACKEND aside).
function defaultBackend(): GpuBackend {
  return process.platform === 'linux' && !process.env['DAWNNODE_BACKEND'] ? 'vulkan' : 'default';
}

function defaultAttempt(): Attempt {
  return { backend: defaultBackend(), flags: [], options: { powerPreference: 'high-performance' } };
}

function namedAttempts(): Attempt[] {
  const native: Attempt =
    process.platform === 'linux'
      ? { backend: 'vulkan', flags: ['backend=vulkan'], options: { powerPreference: 'high-performance' } }
      : defaultAttempt();
  return [native, ...GL_ATTEMPTS];
}

let webgpu: Promise<WebgpuModule> | undefined;

// Loaded on first use, so that a CPU-only run never loads Dawn's 130 MB native module.
function loadWebgpu(): Promise<WebgpuModule> {
  webgpu ??= import('webgpu').then((mod) => {
    // GPUBufferUsage, GPUMapMode and the GPU error classes, which WebGPU code expects as globals.
    Object.assign(globalThis, mod.globals);
    return mod;
  });
  return webgpu;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Parses the `Available adapters:` lines of a Dawn adapter-selection error. */
export function parseAdapterListing(message: string): ListedAdapter[] {
  const out: ListedAdapter[] = [];
  for (const m of message.matchAll(/^\s*\* backend: '([^']*)', name: '(.*)'\s*$/gm)) {
    out.push({ backend: m[1] ?? '', name: m[2] ?? '' });
  }
  return out;
}

// Dawn's adapter info carries only a normalized device id ("llvmpipe-llvm-15-0-6-256-bits-");
// the readable name comes from the listing Dawn prints for an adapter name it cannot match.
// Cached: each Dawn instance costs an EGL display and repeats Dawn's warnings on stderr.
const listings = new Map<string, Promise<ListedAdapter[]>>();

function listAdapters(mod: WebgpuModule, attempt: Attempt): Promise<ListedAdapter[]> {
  const key = JSON.stringify([attempt.flags, attempt.options]);
  let listing = listings.get(key);
  if (listing === undefined) {
    listing = (async () => {
      try {
        const gpu = mod.create([...attempt.flags, `adapter=${LISTING_NAME}`]);
        await gpu.requestAdapter(attempt.options);
        return [];
      } catch (err) {
        return parseAdapterListing(messageOf(err));
      }
    })();
    listings.set(key, listing);
  }
  return listing;
}

/**
 * The adapter's name with its driver, for reports: one name (llvmpipe) runs at another speed
 * under another Mesa. `llvmpipe (LLVM 15.0.6, 128 bits) via opengl (driver: OpenGL version 4.5
 * (Core Profile) Mesa 25.0.7-2~bpo12+1)`.
 */
export function adapterWithDriver(ctx: Pick<GpuContext, 'adapterName' | 'info'>): string {
  return `${ctx.adapterName} (driver: ${ctx.info.description || 'not reported'})`;
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

function infoOf(adapter: GPUAdapter): GpuAdapterInfo {
  const i = adapter.info;
  return {
    vendor: i.vendor ?? '',
    architecture: i.architecture ?? '',
    device: i.device ?? '',
    description: i.description ?? '',
  };
}

async function readableName(
  mod: WebgpuModule,
  attempt: Attempt,
  info: GpuAdapterInfo,
): Promise<string> {
  const listed = await listAdapters(mod, attempt);
  const bySlug = listed.find((a) => info.device !== '' && slug(a.name) === slug(info.device));
  const only = listed.length === 1 ? listed[0] : undefined;
  const name = (bySlug ?? only)?.name;
  if (name !== undefined && name !== '') return name;
  const parts = [info.vendor, info.architecture, info.device, info.description].filter((p) => p !== '');
  return parts.length > 0 ? parts.join(' ') : 'unnamed adapter';
}

async function tryAttempt(
  mod: WebgpuModule,
  attempt: Attempt,
  log: SearchLog,
  exactName?: string,
): Promise<Found | null> {
  const flags = exactName === undefined ? [...attempt.flags] : [...attempt.flags, `adapter=${exactName}`];
  let gpu: GPU;
  let adapter: GPUAdapter | null;
  try {
    gpu = mod.create(flags);
    adapter = await gpu.requestAdapter(attempt.options);
  } catch (err) {
    log.failures.push(`${attempt.backend}: ${messageOf(err).split('\n')[0]}`);
    return null;
  }
  if (adapter === null) return null;
  const name = exactName ?? (await readableName(mod, attempt, infoOf(adapter)));
  return { gpu, adapter, backend: attempt.backend, adapterName: `${name} via ${attempt.backend}` };
}

// Yields adapters in the order to try them; a caller stops at the first that opens a device.
async function* candidates(mod: WebgpuModule, wanted: string | undefined, log: SearchLog): AsyncGenerator<Found> {
  if (wanted !== undefined) {
    const needle = wanted.toLowerCase();
    for (const attempt of namedAttempts()) {
      const listed = await listAdapters(mod, attempt);
      log.listed.push(...listed.map((a) => ({ backend: a.backend || attempt.backend, name: a.name })));
      // Dawn matches a case-sensitive substring; match loosely here and hand Dawn the full name.
      const match = listed.find((a) => a.name.toLowerCase().includes(needle));
      if (match === undefined) continue;
      const found = await tryAttempt(mod, attempt, log, match.name);
      if (found !== null) yield found;
    }
    return;
  }
  for (const attempt of [defaultAttempt(), ...GL_ATTEMPTS]) {
    const found = await tryAttempt(mod, attempt, log);
    if (found !== null) yield found;
  }
}

function wantedAdapter(options: AcquireOptions): { name: string; source: string } | undefined {
  if (options.adapter !== undefined && options.adapter !== '') {
    return { name: options.adapter, source: 'the adapter option' };
  }
  const env = process.env['SERVESIM_ADAPTER'];
  if (env !== undefined && env !== '') return { name: env, source: '--adapter or SERVESIM_ADAPTER' };
  return undefined;
}

function noAdapterError(log: SearchLog, wanted?: { name: string; source: string }): ServesimError {
  const notes = log.failures.map((f) => `tried ${f}`);
  const egl = process.env['EGL_PLATFORM'];
  if (egl !== undefined && egl !== 'surfaceless') {
    notes.push(`EGL_PLATFORM is '${egl}': without a display, unset it or set it to 'surfaceless'`);
  }
  const tried = notes.length > 0 ? ` (${notes.join('; ')})` : '';
  if (wanted === undefined) return new ServesimError('SERVESIM_NO_ADAPTER', NO_ADAPTER_MESSAGE + tried);
  const seen = new Set<string>();
  const names: string[] = [];
  for (const a of log.listed) {
    const line = `'${a.name}' via ${a.backend}`;
    if (!seen.has(line)) names.push(line);
    seen.add(line);
  }
  const here =
    names.length > 0
      ? `adapters here: ${names.join(', ')}`
      : `no adapters here at all (${NO_ADAPTER_MESSAGE})`;
  return new ServesimError(
    'SERVESIM_NO_ADAPTER',
    `no WebGPU adapter matches '${wanted.name}' (from ${wanted.source}); ${here}${tried}`,
  );
}

function snapshotLimits(limits: GPUSupportedLimits): GpuLimits {
  const out: Record<string, number> = {};
  // Dawn's limits are accessors on the prototype: for..in sees them, Object.keys does not.
  for (const key in limits) {
    const v = (limits as unknown as Record<string, unknown>)[key];
    if (typeof v === 'number') out[key] = v;
  }
  return Object.freeze(out) as unknown as GpuLimits;
}

// Dawn tears its instance down when the GPU object is collected, so hold it while the device lives.
const liveInstances = new Map<GPUDevice, GPU>();

function makeContext(found: Found, device: GPUDevice): GpuContext {
  liveInstances.set(device, found.gpu);
  const listeners = new Set<(error: GPUError) => void>();
  const errors: GPUError[] = [];
  let lostInfo: GPUDeviceLostInfo | null = null;
  let destroyed = false;

  device.onuncapturederror = (ev) => {
    // Dawn's default action printf()s the error to stdout, where servesim writes its data.
    ev.preventDefault();
    if (errors.length < MAX_KEPT_ERRORS) errors.push(ev.error);
    if (listeners.size === 0) {
      process.stderr.write(`servesim: uncaptured GPU error on ${found.adapterName}: ${ev.error.message}\n`);
    }
    for (const listener of listeners) listener(ev.error);
  };
  const lost = device.lost.then((info) => {
    lostInfo = info;
    liveInstances.delete(device);
    return info;
  });

  return {
    device,
    adapterName: found.adapterName,
    backend: found.backend,
    limits: snapshotLimits(device.limits),
    info: infoOf(found.adapter),
    lost,
    get lostInfo() {
      return lostInfo;
    },
    errors,
    clearErrors() {
      errors.length = 0;
    },
    onError(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    throwIfFailed(what) {
      if (lostInfo !== null && lostInfo.reason !== 'destroyed') {
        throw new ServesimError(
          'SERVESIM_GPU_ERROR',
          `${what}: GPU device lost on ${found.adapterName}: ${lostInfo.message}`,
        );
      }
      const first = errors[0];
      if (first !== undefined) {
        throw new ServesimError(
          'SERVESIM_GPU_ERROR',
          `${what}: ${first.constructor.name} on ${found.adapterName}: ${first.message}`,
        );
      }
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      device.destroy();
      liveInstances.delete(device);
    },
  };
}

/**
 * Finds an adapter (see the module comment for the order) and opens a device on it with the
 * adapter's own compute and buffer limits.
 *
 * @throws ServesimError SERVESIM_NO_ADAPTER when none is found, saying what to install; when a
 *   named adapter matches nothing, the message lists the adapters that exist.
 */
export async function acquireGpu(options: AcquireOptions = {}): Promise<GpuContext> {
  const wanted = wantedAdapter(options);
  const log: SearchLog = { listed: [], failures: [] };
  let mod: WebgpuModule;
  try {
    mod = await loadWebgpu();
  } catch (err) {
    if (isMissingPackage(err, 'webgpu')) throw new ServesimError('SERVESIM_NO_ADAPTER', installMessage('the GPU engine', ['webgpu']));
    log.failures.push(`loading webgpu: ${messageOf(err)}`);
    throw noAdapterError(log);
  }
  for await (const found of candidates(mod, wanted?.name, log)) {
    const requiredLimits: Record<string, number> = {};
    for (const key of REQUESTED_LIMITS) {
      const v = found.adapter.limits[key];
      if (typeof v === 'number') requiredLimits[key] = v;
    }
    try {
      const device = await found.adapter.requestDevice({ label: 'servesim', requiredLimits });
      return makeContext(found, device);
    } catch (err) {
      log.failures.push(`${found.adapterName}: requestDevice: ${messageOf(err).split('\n')[0]}`);
    }
  }
  throw noAdapterError(log, wanted);
}

const probes = new Map<string, Promise<string | null>>();

/**
 * The name of the adapter {@link acquireGpu} would use, or null when there is none (or the
 * named one does not exist). Never throws; cached per process and adapter name.
 */
export function probeGpu(options: AcquireOptions = {}): Promise<string | null> {
  const wanted = wantedAdapter(options);
  const key = wanted?.name ?? '';
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = (async () => {
      try {
        const mod = await loadWebgpu();
        for await (const found of candidates(mod, wanted?.name, { listed: [], failures: [] })) {
          return found.adapterName;
        }
      } catch {
        // a probe answers "no GPU" rather than failing the caller's engine choice
      }
      return null;
    })();
    probes.set(key, probe);
  }
  return probe;
}

/**
 * Runs `fn` inside validation, out-of-memory and internal error scopes and throws
 * SERVESIM_GPU_ERROR naming `what` if any of them caught an error (pipeline creation,
 * a dispatch's encoding). The scopes catch what `fn` issues synchronously and what it
 * awaits; work still in flight on the queue reports through uncaptured errors.
 */
export async function captureGpuErrors<T>(
  device: GPUDevice,
  what: string,
  fn: () => T | Promise<T>,
): Promise<T> {
  device.pushErrorScope('internal');
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await fn() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  // Scopes pop innermost first; all three must pop even when fn threw.
  const caught = [
    await device.popErrorScope(),
    await device.popErrorScope(),
    await device.popErrorScope(),
  ].find((e) => e !== null);
  // The GPU's own error explains a JS failure that follows from it, so it wins.
  if (caught) {
    throw new ServesimError('SERVESIM_GPU_ERROR', `${what}: ${caught.constructor.name}: ${caught.message}`);
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
