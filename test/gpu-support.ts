/** Shared by the GPU test files: whether they run, and how long a cold compile may take. */
import { describe } from 'vitest';
import { probeGpu } from '../src/gpu/adapter.js';

// CI must not pass by skipping: there the GPU tests run, and fail without an adapter.
export const runGpuTests = (await probeGpu()) !== null || Boolean(process.env['CI']);
export const describeGpu = runGpuTests ? describe : describe.skip;

// llvmpipe compiles a configuration shape's pipeline for up to minutes when Mesa's shader cache
// is cold; later runs load it.
export const COMPILE_MS = 20 * 60_000;
