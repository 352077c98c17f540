/**
 * Built-in GPU speed profiles (docs/model.md section 3): t = base + perSeq x B + prefill / prefillRate.
 * These are assumptions to calibrate, not measurements; problems/README.md says where each
 * number comes from. base and perSeq are microseconds.
 */
import type { GpuProfile } from '../model/problem.js';

export const BUILTIN_PROFILES: Readonly<Record<string, GpuProfile>> = {
  // docs/model.md's default: an 8B model on one H100.
  '8b-h100': { name: '8b-h100', base: 8_000, perSeq: 250, prefillRate: 16, chunk: 2048 },
  // A 70B model (tensor-parallel over a node's H100s, seen as one replica): every iteration
  // reads about 9x the weights, so slower steps and prefill.
  '70b-h100': { name: '70b-h100', base: 25_000, perSeq: 600, prefillRate: 4, chunk: 2048 },
};

export const DEFAULT_PROFILE = '8b-h100';

export function builtinProfile(name: string): GpuProfile | undefined {
  return Object.hasOwn(BUILTIN_PROFILES, name) ? BUILTIN_PROFILES[name] : undefined;
}
