/**
 * Dispatch shapes: one invocation per instance, in 1-D workgroups laid out over x and y
 * because one dimension holds at most maxComputeWorkgroupsPerDimension (65,535) workgroups.
 */

import { ServesimError } from '../errors.js';
import type { GpuLimits } from './adapter.js';

/** The limits {@link planDispatch} checks. */
export type DispatchLimits = Pick<
  GpuLimits,
  'maxComputeWorkgroupsPerDimension' | 'maxComputeInvocationsPerWorkgroup' | 'maxComputeWorkgroupSizeX'
>;

/** A dispatch: `pass.dispatchWorkgroups(x, y)` runs `x * y * workgroupSize` invocations. */
export interface DispatchPlan {
  readonly x: number;
  readonly y: number;
  /** Workgroups needed (x * y may exceed it by fewer than y). */
  readonly workgroups: number;
  readonly workgroupSize: number;
  /** Invocations to do work; the kernel returns for an index at or past this. */
  readonly count: number;
}

/**
 * The WGSL for a kernel's linear instance index over a {@link DispatchPlan}'s x-by-y grid of
 * 1-D workgroups of `wg_size` invocations. Use with
 * `@builtin(global_invocation_id)` and `@builtin(num_workgroups)`, then
 * `if (i >= count) { return; }`.
 */
export const WGSL_LINEAR_INDEX = /* wgsl */ `
fn linear_index(gid: vec3<u32>, nwg: vec3<u32>, wg_size: u32) -> u32 {
  return gid.y * (nwg.x * wg_size) + gid.x;
}
`;

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

/**
 * Splits `workgroups` over x and y, each at most `limits.maxComputeWorkgroupsPerDimension`,
 * with x * y >= workgroups and fewer than y to spare. Zero workgroups give [0, 1] (a
 * dispatch that does nothing).
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT if even a square grid cannot hold them.
 */
export function dispatchShape(
  workgroups: number,
  limits: Pick<GpuLimits, 'maxComputeWorkgroupsPerDimension'>,
): [x: number, y: number] {
  if (!isCount(workgroups)) {
    throw new RangeError(`dispatchShape: workgroup count ${workgroups} is not a non-negative integer`);
  }
  const max = limits.maxComputeWorkgroupsPerDimension;
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new RangeError(`dispatchShape: maxComputeWorkgroupsPerDimension ${max} is not a positive integer`);
  }
  if (workgroups <= max) return [workgroups, 1];
  const y = Math.ceil(workgroups / max);
  if (y > max) {
    throw new ServesimError(
      'SERVESIM_GPU_LIMIT',
      `${formatInt(workgroups)} workgroups do not fit in one dispatch; ` +
        `maxComputeWorkgroupsPerDimension is ${formatInt(max)} on this adapter ` +
        `(at most ${formatInt(max * max)} over x and y)`,
    );
  }
  // The smallest x for this y: spare workgroups (which return at once) stay below y.
  const x = Math.ceil(workgroups / y);
  return [x, y];
}

/**
 * Plans a dispatch of `count` invocations in workgroups of `workgroupSize`.
 *
 * @throws ServesimError SERVESIM_GPU_LIMIT if the workgroup size exceeds
 *   maxComputeInvocationsPerWorkgroup or maxComputeWorkgroupSizeX, if the workgroups do not fit
 *   in x and y, or if the invocation index would pass 2^32 (WGSL has no 64-bit integers).
 */
export function planDispatch(count: number, workgroupSize: number, limits: DispatchLimits): DispatchPlan {
  if (!isCount(count)) throw new RangeError(`planDispatch: count ${count} is not a non-negative integer`);
  if (!Number.isSafeInteger(workgroupSize) || workgroupSize < 1) {
    throw new RangeError(`planDispatch: workgroup size ${workgroupSize} is not a positive integer`);
  }
  for (const name of ['maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX'] as const) {
    if (workgroupSize > limits[name]) {
      throw new ServesimError(
        'SERVESIM_GPU_LIMIT',
        `workgroup size ${formatInt(workgroupSize)} exceeds ${name}, ${formatInt(limits[name])} on this adapter`,
      );
    }
  }
  const workgroups = Math.ceil(count / workgroupSize);
  const [x, y] = dispatchShape(workgroups, limits);
  if (x * y * workgroupSize > 2 ** 32) {
    throw new ServesimError(
      'SERVESIM_GPU_LIMIT',
      `${formatInt(count)} invocations overflow a 32-bit invocation index ` +
        `(${formatInt(x)} x ${formatInt(y)} workgroups of ${formatInt(workgroupSize)}); split the work`,
    );
  }
  return { x, y, workgroups, workgroupSize, count };
}

function formatInt(n: number): string {
  return n.toLocaleString('en-US');
}
